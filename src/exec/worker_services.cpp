// What a worker's report and its git/PR actions do to the domain: all through the Engine, so the
// result message and the PR leave through the outbox, after the acknowledgement.
#include <spdlog/spdlog.h>

#include "superagent/worker.h"

namespace superagent::exec {

using nlohmann::json;

Result<WorkerReport> ParseReport(const json& j) {
  if (!j.is_object()) return Status::InvalidArgument("a report must be a JSON object");
  WorkerReport r;
  const std::string stage = j.contains("stage") && j["stage"].is_string() ? j["stage"].get<std::string>() : "";
  if (stage == "ready") r.stage = Stage::kReady;
  else if (stage == "blocked") r.stage = Stage::kBlocked;
  else if (stage == "waiting_for_person") r.stage = Stage::kWaitingForPerson;
  else return Status::InvalidArgument("report.stage must be ready, blocked or waiting_for_person");
  if (!j.contains("summary") || !j["summary"].is_string() || j["summary"].get<std::string>().empty())
    return Status::InvalidArgument("report.summary must be a non-empty string");
  r.summary = j["summary"];
  if (j.contains("question") && !j["question"].is_null()) {
    if (!j["question"].is_string()) return Status::InvalidArgument("report.question must be a string or null");
    r.question = j["question"].get<std::string>();
  }
  if (r.stage == Stage::kWaitingForPerson && (!r.question || r.question->empty()))
    return Status::InvalidArgument("report.question is required when stage is waiting_for_person");
  if (j.contains("pr") && !j["pr"].is_null()) {
    const json& pr = j["pr"];
    if (!pr.is_object() || !pr.contains("title") || !pr["title"].is_string() || pr["title"].get<std::string>().empty())
      return Status::InvalidArgument("report.pr must be null or {\"title\": \"...\", \"body\": \"...\"}");
    r.pr = PullRequestSpec{pr["title"], pr.contains("body") && pr["body"].is_string() ? pr["body"].get<std::string>() : ""};
  }
  return r;
}

Result<int> WorkerServices::CommitAndPush(const WorkerTask& task, const std::string& message) {
  auto committed = workspaces_->CommitAll(task.workspace, message.empty() ? "Work on ticket " + std::to_string(task.ticket) : message);
  if (!committed.ok()) return committed.status();
  auto ahead = workspaces_->CommitsAhead(task.workspace);
  if (!ahead.ok()) return ahead.status();
  if (*ahead > 0) RETURN_IF_ERROR(workspaces_->Push(task.workspace));
  return *ahead;
}

Result<json> WorkerServices::PreparePullRequest(const WorkerTask& task, const PullRequestSpec& pr) {
  if (pr.title.empty()) return Status::InvalidArgument("a pull request needs a title");
  auto ahead = CommitAndPush(task, pr.title);
  if (!ahead.ok()) return ahead.status();
  if (*ahead == 0)
    return Status::Conflict("branch " + task.workspace.branch + " has no commits over " + task.workspace.base);
  auto base = workspaces_->DefaultBranch();
  if (!base.ok()) return base.status();
  spdlog::info("pull request requested ticket={} head={} base={}", task.ticket, task.workspace.branch, *base);
  return json{{"channel", "github:repo"},
              {"idempotency_key", "pr:ticket:" + std::to_string(task.ticket)},
              {"ticket", task.ticket},
              {"head", task.workspace.branch},
              {"base", *base},
              {"title", pr.title},
              {"body", pr.body}};
}

Status WorkerServices::OpenPullRequest(const WorkerTask& task, const PullRequestSpec& pr) {
  auto action = PreparePullRequest(task, pr);
  if (!action.ok()) return action.status();
  return engine_->EnqueueAction("open_pull_request", *action);
}

TurnEnd WorkerServices::EndFor(const WorkerTask& task, const WorkerReport& report) {
  TurnEnd end;
  end.assignment = task.assignment;
  end.reported = report.stage;
  end.summary = report.summary;
  end.question = report.question.value_or("");
  if (report.stage == Stage::kReady && report.pr) {
    // The push happens here, before the turn's transaction; the PR itself is an outbox action
    // enqueued with the result, so both or neither are recorded.
    auto action = PreparePullRequest(task, *report.pr);
    if (action.ok()) {
      end.actions.emplace_back("open_pull_request", std::move(*action));
    } else {
      end.reported = Stage::kBlocked;
      end.summary += "\n\nThe pull request could not be opened: " + action.status().message();
    }
  }
  return end;
}

}  // namespace superagent::exec

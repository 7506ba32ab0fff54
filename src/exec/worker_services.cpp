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

Status WorkerServices::OpenPullRequest(const WorkerTask& task, const PullRequestSpec& pr) {
  if (pr.title.empty()) return Status::InvalidArgument("a pull request needs a title");
  auto ahead = CommitAndPush(task, pr.title);
  if (!ahead.ok()) return ahead.status();
  if (*ahead == 0)
    return Status::Conflict("branch " + task.workspace.branch + " has no commits over " + task.workspace.base);
  auto base = workspaces_->DefaultBranch();
  if (!base.ok()) return base.status();
  json action = {{"channel", "github:repo"},
                 {"idempotency_key", "pr:ticket:" + std::to_string(task.ticket)},
                 {"ticket", task.ticket},
                 {"head", task.workspace.branch},
                 {"base", *base},
                 {"title", pr.title},
                 {"body", pr.body}};
  RETURN_IF_ERROR(engine_->EnqueueAction("open_pull_request", action));
  spdlog::info("pull request requested ticket={} head={} base={}", task.ticket, task.workspace.branch, *base);
  return Status::Ok();
}

Status WorkerServices::ApplyReport(const WorkerTask& task, const WorkerReport& report_in) {
  WorkerReport report = report_in;
  auto ticket = engine_->GetTicket(task.ticket);
  if (!ticket.ok()) return ticket.status();
  if (!ticket->open()) return Status::Ok();  // stopped meanwhile: nothing more is said
  const std::string suffix = ":ticket:" + std::to_string(task.ticket) + ":assignment:" + std::to_string(task.assignment);
  if (report.stage == Stage::kReady && report.pr) {
    Status pr = OpenPullRequest(task, *report.pr);
    if (!pr.ok()) {
      report.stage = Stage::kBlocked;
      report.summary += "\n\nThe pull request could not be opened: " + pr.message();
    }
  }
  if (report.stage == Stage::kWaitingForPerson) {
    HumanAction action;
    action.thread = task.thread;
    action.actor = task.mandate.sender.value_or("");
    action.question = *report.question;
    if (!action.actor.empty()) {
      Status asked = engine_->AskPerson(task.ticket, action, "ask" + suffix);
      if (asked.ok()) return asked;
      spdlog::warn("question not asked ticket={} error=\"{}\"", task.ticket, asked.message());
    }
    report.stage = Stage::kBlocked;
    report.summary += "\n\nQuestion: " + *report.question;
  }
  Status sent = engine_->Send({"result" + suffix, task.ticket, task.thread, MessageKind::kResult, report.summary});
  if (!sent.ok()) {
    // Never cut silently: the Ticket says why the result did not go out.
    RETURN_IF_ERROR(engine_->SetStage(task.ticket, Stage::kBlocked, "result not sent: " + sent.message()));
    return sent;
  }
  return engine_->SetStage(task.ticket, report.stage, std::string("reported ") + StageName(report.stage));
}

}  // namespace superagent::exec

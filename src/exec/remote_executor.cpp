// The daemon's side of a turn run on another machine (issue 36): offered to the WorkerPool with
// the Ticket's repository, waited for, and taken back as data.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "exec/cli_adapter.h"
#include "superagent/assign_or_return.h"
#include "superagent/json_read.h"
#include "superagent/text.h"
#include "superagent/worker.h"
#include "superagent/worker_pool.h"
#include "superagent/workspace.h"

namespace superagent::exec {

using nlohmann::json;

json TaskToJson(const WorkerTask& task) {
  json rules = json::array();
  for (const auto& [name, instructions] : task.rules) rules.push_back({{"name", name}, {"instructions", instructions}});
  return json{{"ticket", task.ticket},
              {"assignment", task.assignment},
              {"thread", task.thread},
              {"scope", task.mandate.scope},
              {"request_text", task.request_text},
              {"rules", rules},
              {"inputs", task.inputs},
              {"agents_md", task.agents_md},
              {"first_turn", task.first_turn},
              {"branch", task.workspace.branch},
              {"base", task.workspace.base}};
}

namespace {

class RemoteExecutor : public Executor {
 public:
  RemoteExecutor(RemoteExecutorOptions options, WorkerPool* pool, Workspaces* workspaces, WorkerServices* services,
                 Clock* clock)
      : options_(std::move(options)), pool_(pool), workspaces_(workspaces), services_(services), clock_(clock) {}

  std::string name() const override { return options_.executor; }

  Result<TurnResult> RunTurn(const WorkerTask& task) override {
    // A remote worker is handed one repository's bundle and hands one back; a Ticket across
    // repositories would lose the others' work on the way, so it is refused in so many words.
    if (!task.other_workspaces.empty())
      return Status::InvalidArgument("a Ticket that changes " + std::to_string(task.other_workspaces.size() + 1) +
                                     " repositories runs on this machine's workers only; remote workers take one "
                                     "repository");
    OfferedTurn turn;
    turn.assignment = task.assignment;
    turn.ticket = task.ticket;
    turn.executor = options_.executor;
    turn.task = TaskToJson(task);
    ASSIGN_OR_RETURN(turn.code, workspaces_->CodeBundle(task.workspace));
    turn.task["prompt"] = Prompt(task);
    turn.task["cli"] = {{"model", options_.model},
                        {"allowed_commands", options_.allowed_commands},
                        {"args", options_.args},
                        {"turn_ms", options_.turn_ms}};
    if (services_ != nullptr)
      services_->engine()->AppendSessionEvent(task.session, task.assignment, "input",
                                              {{"role", "user"}, {"content", turn.task["prompt"]}});
    // The model key stays here: the worker's CLI gets a pass that dies with this turn.
    std::string pass;
    if (options_.gateway != nullptr) {
      GatewayPass p = options_.gateway->Open(task.ticket, task.session, options_.turn_ms + kPassGraceMs);
      pass = p.token;
      const std::string origin = "http://127.0.0.1:" + std::to_string(options_.gateway->port());
      turn.task["model"] = {{"pass", p.token},
                            {"path", p.base_url.rfind(origin, 0) == 0 ? p.base_url.substr(origin.size()) : ""}};
    }
    const TimeMs offered_at = clock_->NowMs();
    const TimeMs deadline = offered_at + options_.turn_ms;
    bool warned = false;
    const std::int64_t offer = pool_->Offer(std::move(turn));
    // The offer is forgotten and the pass closed however this returns.
    struct Forget {
      WorkerPool* pool;
      std::int64_t offer;
      ModelGateway* gateway;
      const std::string& pass;
      std::int64_t refused_budget = 0;
      std::int64_t Close() {
        if (gateway != nullptr && !pass.empty()) refused_budget += gateway->Close(pass);
        return refused_budget;
      }
      ~Forget() {
        Close();
        pool->Forget(offer);
      }
    } forget{pool_, offer, options_.gateway, pass};
    for (;;) {
      ASSIGN_OR_RETURN(OfferOutcome out, pool_->Outcome(offer));
      Transcribe(task, pool_->TakeEvents(offer));
      if (out.kind == OfferOutcome::Kind::kReturned) {
        auto took = Took(task, out);
        if (took.ok()) took->budget_spent = forget.Close() > 0;
        return took;
      }
      if (out.kind == OfferOutcome::Kind::kWithdrawn) return Status::Unavailable("the remote turn was withdrawn");
      if (task.cancel != nullptr && task.cancel->load()) {
        pool_->Withdraw(offer, "the Ticket was stopped or the daemon is stopping");
        return TurnResult{};
      }
      if (clock_->NowMs() >= deadline) {
        pool_->Withdraw(offer, "the turn's time is up");
        return Status::Unavailable("the remote turn did not end within " + std::to_string(options_.turn_ms / 60'000) +
                                        " minutes");
      }
      pool_->ExpireLeases();
      if (!warned && out.attempts == 0 && clock_->NowMs() - offered_at >= kUnservedWarnMs && !Offered()) {
        // Nothing else says it in the log: the turn would wait its whole time for nobody.
        spdlog::warn("remote turn waits for a worker ticket={} executor={} waited_s={}: no connected worker offers it; "
                     "start one (superagent worker) or set execution.placement: any",
                     task.ticket, options_.executor, (clock_->NowMs() - offered_at) / 1000);
        warned = true;
      }
      pool_->WaitForChange(offer, options_.wait_ms);
    }
  }

 private:
  // A pass outlives its turn's limit by this much (the worker needs a moment to return).
  static constexpr TimeMs kPassGraceMs = 60'000;
  // A turn no connected worker can take is said in the log after this long.
  static constexpr TimeMs kUnservedWarnMs = 60'000;

  // Whether a connected worker offers this executor.
  bool Offered() const {
    for (const PoolWorker& w : pool_->View().workers)
      if (std::find(w.executors.begin(), w.executors.end(), options_.executor) != w.executors.end()) return true;
    return false;
  }

  // The prompt as a local CLI's first turn gets it: a CLI on another machine cannot resume the
  // session it had here, so every remote turn starts one with the whole context. The directory
  // it names is the worker's, which the daemon does not know.
  std::string Prompt(const WorkerTask& task) const {
    WorkerTask t = task;
    t.workspace.dir = "the current working directory";
    const std::string skills = services_ == nullptr ? "" : TeamSkillsText(services_->Team(), kCliSkillChars);
    return CliPrompt(t, /*resumed=*/false, skills, /*skills_new=*/true);
  }

  // The worker's streamed events into the session's transcript: only the kinds a CLI's turn
  // makes (the pool's caller checked their shapes and sizes).
  void Transcribe(const WorkerTask& task, std::vector<TurnEvent> events) {
    if (services_ == nullptr) return;
    for (auto& [kind, body] : events) services_->engine()->AppendSessionEvent(task.session, task.assignment, kind, body);
  }

  // The worker's commits made the repository's HEAD, its report read as any executor's.
  Result<TurnResult> Took(const WorkerTask& task, const OfferOutcome& out) {
    if (!out.returned.bundle.empty()) {
      if (Status s = workspaces_->ApplyBundle(task.workspace, out.returned.bundle); !s.ok()) {
        spdlog::warn("remote turn's commits refused ticket={} worker={} error=\"{}\"", task.ticket, out.worker,
                     s.message());
        return Status::InvalidArgument("the worker's commits were refused: " + s.message());
      }
    }
    TurnResult result;
    if (!out.returned.report.is_null()) {
      auto report = ParseReport(out.returned.report);
      if (!report.ok()) return Status::InvalidArgument("the worker's report: " + report.status().message());
      result.report = *report;
      // The worker's account of a failure (its CLI's stderr): the log's and the panel's, never the
      // discussion's — as a local turn's WorkerReport::failure. A worker's text, so cut and repaired.
      if (const auto* f = json_read::Find(out.returned.report, "failure"); f != nullptr && f->is_string() &&
          result.report->stage == Stage::kBlocked)
        result.report->failure = text::Cut(text::Repair(f->get<std::string>()), 1500);
      if (services_ != nullptr)
        services_->engine()->AppendSessionEvent(task.session, task.assignment, "report", out.returned.report);
    }
    spdlog::info("remote turn taken ticket={} worker={} attempts={} report={}", task.ticket, out.worker, out.attempts,
                 result.report ? StageName(result.report->stage) : "none");
    return result;
  }

  const RemoteExecutorOptions options_;
  WorkerPool* const pool_;
  Workspaces* const workspaces_;
  WorkerServices* const services_;
  Clock* const clock_;
};

}  // namespace

std::unique_ptr<Executor> MakeRemoteExecutor(RemoteExecutorOptions options, WorkerPool* pool, Workspaces* workspaces,
                                             WorkerServices* services, Clock* clock) {
  return std::make_unique<RemoteExecutor>(std::move(options), pool, workspaces, services, clock);
}

}  // namespace superagent::exec

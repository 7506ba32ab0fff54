// The daemon's side of a turn run on another machine (issue 36): offered to the WorkerPool with
// the Ticket's repository, waited for, and taken back as data.
#include <spdlog/spdlog.h>

#include "superagent/assign_or_return.h"
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
  RemoteExecutor(RemoteExecutorOptions options, WorkerPool* pool, Workspaces* workspaces, Clock* clock)
      : options_(std::move(options)), pool_(pool), workspaces_(workspaces), clock_(clock) {}

  std::string name() const override { return options_.executor; }

  Result<TurnResult> RunTurn(const WorkerTask& task) override {
    OfferedTurn turn;
    turn.assignment = task.assignment;
    turn.ticket = task.ticket;
    turn.executor = options_.executor;
    turn.task = TaskToJson(task);
    ASSIGN_OR_RETURN(turn.code, workspaces_->CodeBundle(task.workspace));
    const TimeMs deadline = clock_->NowMs() + options_.turn_ms;
    const std::int64_t offer = pool_->Offer(std::move(turn));
    // The offer is forgotten however this returns.
    struct Forget {
      WorkerPool* pool;
      std::int64_t offer;
      ~Forget() { pool->Forget(offer); }
    } forget{pool_, offer};
    for (;;) {
      ASSIGN_OR_RETURN(OfferOutcome out, pool_->Outcome(offer));
      if (out.kind == OfferOutcome::Kind::kReturned) return Took(task, out);
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
      pool_->WaitForChange(offer, options_.wait_ms);
    }
  }

 private:
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
    }
    spdlog::info("remote turn taken ticket={} worker={} attempts={} report={}", task.ticket, out.worker, out.attempts,
                 result.report ? StageName(result.report->stage) : "none");
    return result;
  }

  const RemoteExecutorOptions options_;
  WorkerPool* const pool_;
  Workspaces* const workspaces_;
  Clock* const clock_;
};

}  // namespace

std::unique_ptr<Executor> MakeRemoteExecutor(RemoteExecutorOptions options, WorkerPool* pool, Workspaces* workspaces,
                                             Clock* clock) {
  return std::make_unique<RemoteExecutor>(std::move(options), pool, workspaces, clock);
}

}  // namespace superagent::exec

// The slots scheduler. Domain state changes go through the Engine; this class only holds what
// is live in this process: turn threads, their slots, and the sessions' shells.
#include "superagent/scheduler.h"

#include "superagent/beneath.h"
#include "superagent/catch_all.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>

namespace superagent::exec {

using nlohmann::json;

namespace {

// The repository's AGENTS.md, read beneath the worktree: a link that points out of it (to
// ~/.ssh/id_rsa, /etc/passwd, the daemon's config) must not carry that file into the prompt, so
// the prompt says what happened instead. "" when there is none.
std::string ReadAgentsMd(const std::string& worktree, TicketId ticket) {
  auto text = beneath::ReadFile(worktree, "AGENTS.md");
  if (text.ok()) return std::move(*text);
  if (text.status().code() == Status::Code::kNotFound) return "";
  spdlog::warn("AGENTS.md not read ticket={} reason=\"{}\"", ticket, text.status().message());
  return "(AGENTS.md was not read: " + text.status().message() +
         ". Only files inside the Ticket's directory are read into this prompt.)";
}

}  // namespace

Scheduler::Scheduler(Engine* engine, Workspaces* workspaces, Executor* executor, WorkerServices* services,
                     ProcessRunner* runner, Clock* clock, Sleeper sleeper, SchedulerOptions options)
    : engine_(engine), workspaces_(workspaces), executor_(executor), services_(services), runner_(runner),
      clock_(clock), sleeper_(std::move(sleeper)), options_(std::move(options)) {}

Scheduler::~Scheduler() { Stop(); }

bool Scheduler::PersonCause(const std::string& cause) {
  return cause == "answer" || cause == "resume" || cause == "follow_up";
}

std::shared_ptr<Jobs> Scheduler::JobsOf(TicketId ticket) {
  auto& j = jobs_[ticket];
  if (!j) j = std::make_shared<Jobs>(runner_, clock_, sleeper_, options_.jobs_dir, workspaces_->ScopeFor(ticket));
  return j;
}

Jobs* Scheduler::JobsFor(TicketId ticket) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(ticket);
  return it == jobs_.end() ? nullptr : it->second.get();
}

SlotsView Scheduler::Slots() {
  std::lock_guard<std::mutex> lock(mu_);
  SlotsView v;
  v.worker_slots = options_.slots;
  for (auto& [id, run] : runs_) {
    if (run->reserved) v.reserved_used = true;
    else ++v.worker_used;
  }
  v.queued = static_cast<int>(engine_->AssignmentsInState("pending").size());
  return v;
}

void Scheduler::ReapLocked(std::vector<std::thread>* to_join) {
  for (auto& [id, run] : runs_) {
    if (run->in_turn && run->turn_done) {
      run->in_turn = false;
      to_join->push_back(std::move(run->thread));
    }
  }
}

Result<int> Scheduler::Tick() {
  std::vector<std::thread> to_join;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ReapLocked(&to_join);
  }
  for (auto& t : to_join) t.join();

  auto followups = engine_->AssignFollowUps();
  if (!followups.ok()) return followups.status();

  std::lock_guard<std::mutex> lock(mu_);
  const TimeMs now = clock_->NowMs();
  // Runs whose turn ended: release the slot when handed over or when no shell is left running;
  // kill background work past the limit and say so in the Ticket.
  for (auto it = runs_.begin(); it != runs_.end();) {
    Run& run = *it->second;
    auto ticket = engine_->GetTicket(run.ticket);
    const bool ended = !ticket.ok() || !ticket->open();
    if (ended) {
      run.cancel = true;
      if (auto j = jobs_.find(run.ticket); j != jobs_.end()) j->second->KillAll();
    }
    if (run.in_turn) {
      ++it;
      continue;
    }
    auto jobs = JobsOf(run.ticket);
    bool release = ended || run.handed_over || jobs->RunningCount() == 0;
    if (!release && now - run.turn_ended_at >= options_.background_limit_ms) {
      std::vector<JobInfo> killed = jobs->KillAll();
      std::string list;
      for (const JobInfo& k : killed) list += (list.empty() ? "" : "; ") + k.command;
      engine_->NoteTicket(run.ticket, "background jobs killed after " +
                                          std::to_string(options_.background_limit_ms / 60'000) + " min: " + list);
      if (auto s = engine_->SessionForTicket(run.ticket))
        engine_->AppendSessionEvent(s->id, run.assignment, "jobs_killed",
                                    {{"jobs", list}, {"count", killed.size()}, {"limit_ms", options_.background_limit_ms}});
      spdlog::warn("background jobs killed ticket={} count={} reason=limit", run.ticket, killed.size());
      release = true;
    }
    if (release) it = runs_.erase(it);
    else ++it;
  }

  // Start queued Assignments in order while slots allow.
  int started = 0;
  int worker_used = 0;
  bool reserved_used = false;
  for (auto& [id, run] : runs_) {
    if (run->reserved) reserved_used = true;
    else ++worker_used;
  }
  for (const Assignment& a : engine_->AssignmentsInState("pending")) {
    if (stopping_) break;
    auto existing = runs_.find(a.ticket);
    if (existing != runs_.end() && existing->second->in_turn) continue;  // one turn at a time per Ticket
    // A Ticket waiting for a person resumes with their answer, not before.
    if (auto t = engine_->GetTicket(a.ticket); t.ok() && t->stage == Stage::kWaitingForPerson) continue;
    bool reserved = false;
    if (existing == runs_.end()) {
      if (worker_used < options_.slots) {
        ++worker_used;
      } else if (PersonCause(a.cause) && !reserved_used) {
        reserved = reserved_used = true;
      } else {
        continue;  // new work waits; it never takes the reserved slot
      }
    }
    Status s = engine_->StartAssignment(a.id, executor_->name());
    if (!s.ok()) {
      spdlog::warn("assignment not started id={} ticket={} error=\"{}\"", a.id, a.ticket, s.message());
      engine_->FinishAssignment(a.id);
      if (existing == runs_.end()) {
        if (reserved) reserved_used = false;
        else --worker_used;
      }
      continue;
    }
    Run* run;
    if (existing == runs_.end()) {
      auto r = std::make_unique<Run>();
      r->ticket = a.ticket;
      r->reserved = reserved;
      run = r.get();
      runs_[a.ticket] = std::move(r);
    } else {
      run = existing->second.get();  // background work kept the slot: the next turn uses it
    }
    run->assignment = a.id;
    run->in_turn = true;
    run->turn_done = false;
    run->handed_over = false;
    run->cancel = false;
    JobsOf(a.ticket);
    run->thread = std::thread([this, run, a] {
      // What the turn's own catch did not cover (its bookkeeping): the slot is freed, the
      // Assignment ended, and the daemon goes on.
      Status turn = CatchAll("the turn of ticket " + std::to_string(a.ticket), [&] { RunTurn(run, a); });
      if (turn.ok()) return;
      spdlog::error("worker turn failed unexpectedly ticket={} assignment={} error=\"{}\"", a.ticket, a.id,
                    turn.message());
      CatchAll("ending the assignment", [&] { return engine_->FinishAssignment(a.id); });
      std::lock_guard<std::mutex> done(mu_);
      run->turn_done = true;
      run->turn_ended_at = clock_->NowMs();
      cv_.notify_all();
    });
    ++started;
  }

  // Workspaces of Tickets that can never resume: their directory and branch go.
  for (const WorkspaceRecord& w : engine_->WorkspacesToRemove()) {
    if (runs_.count(w.ticket)) continue;
    if (auto j = jobs_.find(w.ticket); j != jobs_.end()) {
      j->second->KillAll();
      jobs_.erase(j);
    }
    if (workspaces_->Remove(w).ok()) engine_->MarkWorkspaceRemoved(w.ticket);
  }
  return started;
}

std::vector<json> Scheduler::TakeInputsOf(TicketId ticket, std::int64_t origin_trigger_seq) {
  std::vector<json> out;
  auto inputs = engine_->TakeInputs(ticket);
  if (!inputs.ok()) {
    spdlog::warn("inputs not taken ticket={} error=\"{}\"", ticket, inputs.status().message());
    return out;
  }
  for (const TicketInput& in : *inputs) {
    json j = in.body.is_object() ? in.body : json::object();
    j["kind"] = in.kind;
    if (in.trigger_seq) {
      if (auto tr = engine_->GetTriggerBySeq(*in.trigger_seq); tr.ok()) {
        j["text"] = tr->trigger.text;
        j["from"] = tr->trigger.actor.value_or("");
        j["message_id"] = tr->trigger.id;
        if (*in.trigger_seq == origin_trigger_seq) j["request"] = true;
      }
    }
    out.push_back(std::move(j));
  }
  return out;
}

void Scheduler::RunTurn(Run* run, Assignment a) {
  std::shared_ptr<Jobs> jobs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs = JobsOf(a.ticket);
  }
  WorkerTask task;
  task.ticket = a.ticket;
  task.assignment = a.id;
  task.jobs = jobs.get();
  task.cancel = &run->cancel;
  task.intercom = intercom_.load();
  bool handed_over = false;
  auto finish = [&] {
    std::lock_guard<std::mutex> lock(mu_);
    run->turn_done = true;
    run->handed_over = handed_over;
    run->turn_ended_at = clock_->NowMs();
    cv_.notify_all();
  };
  auto blocked = [&](const std::string& why) {
    spdlog::warn("worker turn failed ticket={} assignment={} error=\"{}\"", a.ticket, a.id, why);
    // The inputs this turn was for are answered by the report below; left pending, they would
    // start the same failing turn again at once, and post the same report every second.
    if (auto taken = engine_->TakeInputs(a.ticket); !taken.ok())
      spdlog::warn("inputs not taken ticket={} error=\"{}\"", a.ticket, taken.status().message());
    WorkerReport r;
    r.stage = Stage::kBlocked;
    r.summary = "I could not work on this: " + why;
    Status s = services_->ApplyReport(task, r);
    if (!s.ok()) spdlog::warn("report not applied ticket={} error=\"{}\"", a.ticket, s.message());
  };

  auto ticket = engine_->GetTicket(a.ticket);
  auto mandate = engine_->GetMandate(a.ticket);
  if (!ticket.ok() || !mandate.ok()) {
    engine_->FinishAssignment(a.id);
    return finish();
  }
  task.thread = ticket->thread;
  task.scope = ticket->scope;
  task.mandate = *mandate;
  const Policy policy = engine_->CurrentPolicy();
  for (const std::string& name : mandate->matched_rules)
    for (const Rule& rule : policy.rules)
      if (rule.name == name) task.rules.emplace_back(name, rule.instructions);
  if (auto origin = engine_->GetTriggerBySeq(mandate->origin_trigger_seq); origin.ok())
    task.request_text = origin->trigger.text;

  // Workspace: prepared once per Ticket (10-minute limit), reused after a restart.
  auto ws = engine_->WorkspaceFor(a.ticket);
  if (!ws || ws->removed_at || !std::filesystem::exists(ws->dir)) {
    auto prepared = workspaces_->Prepare(a.ticket, &run->cancel);
    // Stopped or shutting down while preparing: not a failure to report (as after a turn below).
    if (run->cancel.load()) return finish();
    if (!prepared.ok()) {
      const std::string why = "the workspace could not be prepared: " + prepared.status().message();
      blocked(why);
      engine_->FinishTurn(a.id, why);
      return finish();
    }
    engine_->RecordWorkspace(*prepared);
    ws = *prepared;
  }
  task.workspace = *ws;
  task.agents_md = ReadAgentsMd(ws->dir, a.ticket);

  auto session = engine_->OpenSession(a.ticket, "Ticket " + std::to_string(a.ticket) + ": " + ticket->scope,
                                      executor_->name());
  if (!session.ok()) {
    blocked(session.status().message());
    engine_->FinishTurn(a.id, session.status().message());
    return finish();
  }
  task.session = session->id;
  task.first_turn = engine_->SessionEvents(session->id).empty();
  engine_->SetSessionStatus(session->id, "running");

  task.inputs = TakeInputsOf(a.ticket, mandate->origin_trigger_seq);
  task.take_inputs = [this, ticket = a.ticket, origin = mandate->origin_trigger_seq] {
    return TakeInputsOf(ticket, origin);
  };

  // An executor that throws ends this turn as blocked, with the reason, not the daemon.
  Result<TurnResult> result = Status::Internal("the turn did not run");
  if (Status thrown = CatchAll("the worker turn", [&] { result = executor_->RunTurn(task); }); !thrown.ok())
    result = thrown;
  if (run->cancel.load()) {
    // Stopped (Ticket ended) or shutting down: a stop ended the Assignment already; a shutdown
    // leaves it running so the next start resumes it.
    engine_->SetSessionStatus(session->id, "idle");
    return finish();
  }
  if (!result.ok()) {
    blocked(result.status().message());
  } else if (result->report) {
    Status s = services_->ApplyReport(task, *result->report);
    if (!s.ok()) spdlog::warn("report not applied ticket={} error=\"{}\"", a.ticket, s.message());
    handed_over = result->report->stage == Stage::kWaitingForPerson;
  } else {
    engine_->SetStage(a.ticket, Stage::kIdle, "turn ended without a report");
  }
  if (auto t = engine_->GetTicket(a.ticket); t.ok()) handed_over = t->stage == Stage::kWaitingForPerson;
  // The same failure turn after turn sets the Ticket's turns aside (the Engine decides when).
  engine_->FinishTurn(a.id, result.ok() ? "" : result.status().message());
  engine_->SetSessionStatus(session->id, "idle");
  spdlog::info("worker turn ended ticket={} assignment={} background_jobs={} handed_over={}", a.ticket, a.id,
               jobs->RunningCount(), handed_over);
  finish();
}

void Scheduler::WaitForTurns(std::optional<TicketId> ticket) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] {
    for (auto& [id, run] : runs_)
      if ((!ticket || *ticket == id) && run->in_turn && !run->turn_done) return false;
    return true;
  });
}

Status Scheduler::Start() {
  auto recovered = engine_->RecoverInterruptedWork();
  if (!recovered.ok()) return recovered.status();
  loop_ = std::thread([this] {
    LoopGuard guard("the scheduler", engine_);
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      lock.unlock();
      Result<int> r = 0;
      guard.Run([&] { r = Tick(); });  // a throw is logged and recorded there
      if (!r.ok()) spdlog::warn("scheduler tick failed error=\"{}\"", r.status().message());
      lock.lock();
      cv_.wait_for(lock, std::chrono::milliseconds(options_.tick_ms), [&] { return stopping_ || wake_; });
      wake_ = false;
    }
  });
  spdlog::info("scheduler started slots={} reserved=1 executor={} resumed={}", options_.slots, executor_->name(),
               recovered->size());
  return Status::Ok();
}

void Scheduler::Wake() {
  std::lock_guard<std::mutex> lock(mu_);
  wake_ = true;
  cv_.notify_all();
}

void Scheduler::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && runs_.empty() && jobs_.empty()) return;
    stopping_ = true;
    cv_.notify_all();
  }
  if (loop_.joinable()) loop_.join();
  std::vector<std::thread> to_join;
  {
    std::unique_lock<std::mutex> lock(mu_);
    for (auto& [id, run] : runs_) {
      if (!run->in_turn) continue;
      run->cancel = true;
      // SPEC §6: at most 10 s per worker, then its shells are killed so the turn returns.
      if (!cv_.wait_for(lock, std::chrono::milliseconds(options_.shutdown_wait_ms), [&r = run] { return r->turn_done; }))
        if (auto j = jobs_.find(id); j != jobs_.end()) j->second->KillAll();
    }
    for (auto& [id, run] : runs_)
      if (run->thread.joinable()) to_join.push_back(std::move(run->thread));
  }
  for (auto& t : to_join) t.join();
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [id, jobs] : jobs_) jobs->KillAll();
  runs_.clear();
  jobs_.clear();
}

}  // namespace superagent::exec

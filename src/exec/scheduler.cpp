// The slots scheduler. Domain state changes go through the Engine; this class only holds what
// is live in this process: turn threads, their slots, and the sessions' shells.
#include "superagent/scheduler.h"

#include "superagent/beneath.h"
#include "superagent/catch_all.h"
#include "superagent/github_threads.h"
#include "superagent/views.h"

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

Scheduler::Scheduler(Engine* engine, Views* views, Workspaces* workspaces, Executor* executor, WorkerServices* services,
                     ProcessRunner* runner, Clock* clock, Sleeper sleeper, SchedulerOptions options)
    : engine_(engine), views_(views), workspaces_(workspaces), executor_(executor), services_(services), runner_(runner),
      clock_(clock), sleeper_(std::move(sleeper)), options_(std::move(options)),
      loop_({"the scheduler", options_.tick_ms, engine_}, [this]() -> std::optional<TimeMs> {
        Result<int> r = Tick();  // a throw is logged and recorded by the loop's guard
        if (!r.ok()) spdlog::warn("scheduler tick failed error=\"{}\"", r.status().message());
        return std::nullopt;
      }) {}

Scheduler::~Scheduler() { Stop(); }

bool Scheduler::PersonCause(const std::string& cause) {
  return cause == "answer" || cause == "resume" || cause == "follow_up";
}

std::string Scheduler::RepositoryOf(TicketId ticket) {
  // A workspace made before keeps its repository; a new one is made in the Ticket's home
  // repository (its Thread's, or the first configured for a chat's). An unreadable Ticket gets
  // the home repository's scope, which shows no other repository's code.
  if (auto ws = views_->WorkspaceFor(ticket); ws.ok() && *ws && !(*ws)->repo.empty()) return (*ws)->repo;
  auto tk = views_->GetTicket(ticket);
  // A chat's Ticket works in the repository its asker chose, else the first its Mandate names.
  if (tk.ok() && !github_threads::PlaceOf(tk->thread)) {
    if (auto chosen = views_->ChosenRepository(ticket); chosen.ok() && *chosen) return **chosen;
    if (auto m = views_->GetMandate(ticket); m.ok() && !m->repos.empty()) return m->repos.front();
  }
  return github_threads::HomeRepository(tk.ok() ? tk->thread : "", workspaces_->options().repo);
}

std::vector<std::string> Scheduler::RepositoriesOf(TicketId ticket) {
  std::vector<std::string> repos{RepositoryOf(ticket)};
  // One chosen among its chat's repositories is the only one worked in.
  if (auto chosen = views_->ChosenRepository(ticket); chosen.ok() && *chosen) return repos;
  if (auto m = views_->GetMandate(ticket); m.ok())
    for (const std::string& r : m->repos)
      if (std::find(repos.begin(), repos.end(), r) == repos.end()) repos.push_back(r);
  return repos;
}

std::shared_ptr<Jobs> Scheduler::JobsOf(TicketId ticket) {
  auto& j = jobs_[ticket];
  // The worker's shells see every repository of its Ticket: each other one's mirror too.
  if (!j)
    j = std::make_shared<Jobs>(runner_, clock_, sleeper_, options_.jobs_dir,
                               workspaces_->ScopeFor(ticket, RepositoriesOf(ticket)));
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
  // -1: the store could not be read (never "nothing queued").
  auto pending = views_->AssignmentsInState("pending");
  if (pending.ok()) {
    v.queued = static_cast<int>(pending->size());
  } else {
    spdlog::error("pending assignments could not be read error=\"{}\"", pending.status().message());
    v.queued = -1;
  }
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
    auto ticket = views_->GetTicket(run.ticket);
    const bool ended = !ticket.ok() || !ticket->open();
    if (ended) {
      run.cancel = true;
      if (auto j = jobs_.find(run.ticket); j != jobs_.end()) j->second->KillAll();
    }
    if (run.in_turn) {
      // Budgets (issue 22): usage recorded during the turn can reach a limit. The Engine ends the
      // Assignment and asks; the turn is stopped as a panel Stop stops it, the Ticket stays open.
      if (!ended && !run.turn_done && !run.cancel.load() && BudgetStops(run.ticket, run.assignment)) {
        run.cancel = true;
        if (auto j = jobs_.find(run.ticket); j != jobs_.end()) j->second->KillAll();
      }
      ++it;
      continue;
    }
    auto jobs = JobsOf(run.ticket);
    bool release = ended || run.handed_over || jobs->RunningCount() == 0;
    std::string why = "background work ended";
    if (!release && now - run.turn_ended_at >= options_.background_limit_ms) {
      std::vector<JobInfo> killed = jobs->KillAll();
      std::string list;
      for (const JobInfo& k : killed) list += (list.empty() ? "" : "; ") + k.command;
      why = "background jobs killed after " + std::to_string(options_.background_limit_ms / 60'000) + " min: " + list;
      if (!run.deferred) engine_->NoteTicket(run.ticket, why);  // else the stage change below says it
      if (auto s = views_->SessionForTicket(run.ticket); !s.ok())
        spdlog::error("session not read; jobs_killed not recorded ticket={} error=\"{}\"", run.ticket,
                      s.status().message());
      else if (*s)
        engine_->AppendSessionEvent((*s)->id, run.assignment, "jobs_killed",
                                    {{"jobs", list}, {"count", killed.size()}, {"limit_ms", options_.background_limit_ms}});
      spdlog::warn("background jobs killed ticket={} count={} reason=limit", run.ticket, killed.size());
      release = true;
    }
    if (release) {
      // Background work that kept the Ticket working is over: the stage its report asked for.
      if (run.deferred && !ended && !run.handed_over) engine_->EndBackgroundWork(run.ticket, *run.deferred, why);
      it = runs_.erase(it);
    } else {
      ++it;
    }
  }

  // Start queued Assignments in order while slots allow.
  int started = 0;
  int worker_used = 0;
  bool reserved_used = false;
  for (auto& [id, run] : runs_) {
    if (run->reserved) reserved_used = true;
    else ++worker_used;
  }
  // A failed read starts nothing this pass (the loop logs it); the next tick reads again.
  auto pending = views_->AssignmentsInState("pending");
  if (!pending.ok()) return pending.status();
  for (const Assignment& a : *pending) {
    if (stopping_) break;
    auto existing = runs_.find(a.ticket);
    if (existing != runs_.end() && existing->second->in_turn) continue;  // one turn at a time per Ticket
    // A Ticket waiting for a person resumes with their answer, not before.
    if (auto t = views_->GetTicket(a.ticket); t.ok() && t->stage == Stage::kWaitingForPerson) continue;
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
    // Budgets (issue 22): a reached limit asks the requester instead of starting the turn. Asked
    // only of a turn that would start now, so a queued one costs no transaction per tick.
    if (BudgetStops(a.ticket, a.id)) {
      if (existing != runs_.end()) existing->second->handed_over = true;  // waiting for a person: slot free
      else if (reserved) reserved_used = false;
      else --worker_used;
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
    run->deferred.reset();
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
  // A failed read removes nothing this pass; what started above stays started.
  auto to_remove = views_->WorkspacesToRemove();
  if (!to_remove.ok()) {
    spdlog::error("workspaces to remove could not be read error=\"{}\"", to_remove.status().message());
    return started;
  }
  for (const WorkspaceRecord& w : *to_remove) {
    if (runs_.count(w.ticket)) continue;
    if (auto j = jobs_.find(w.ticket); j != jobs_.end()) {
      j->second->KillAll();
      jobs_.erase(j);
    }
    // The other repositories' first: theirs are refs in their mirrors, their files the Ticket's.
    if (auto others = views_->OtherWorkspacesFor(w.ticket); others.ok())
      for (const WorkspaceRecord& o : *others) (void)workspaces_->Remove(o);
    if (workspaces_->Remove(w).ok()) engine_->MarkWorkspaceRemoved(w.ticket);
  }
  return started;
}

bool Scheduler::BudgetStops(TicketId ticket, std::int64_t assignment) {
  auto check = engine_->EnforceBudget(ticket, assignment);
  if (!check.ok()) {
    // Not a reason to stop work: the next tick asks again.
    spdlog::warn("budget not checked ticket={} assignment={} error=\"{}\"", ticket, assignment,
                 check.status().message());
    return false;
  }
  return check->verdict != BudgetVerdict::kGo;
}

std::vector<json> Scheduler::InputsJson(const std::vector<TakenInput>& inputs) {
  std::vector<json> out;
  for (const TakenInput& in : inputs) {
    json j = in.input.body.is_object() ? in.input.body : json::object();
    j["kind"] = in.input.kind;
    if (in.trigger) {
      j["text"] = in.trigger->text;
      j["from"] = in.trigger->actor.value_or("");
      j["message_id"] = in.trigger->id;
      if (in.request) j["request"] = true;
    }
    if (in.context) j["earlier"] = true;
    // The person let the work go on after a budget question: the worker hears only that its last
    // turn was interrupted and it may continue (the limit is the daemon's business, not its).
    if (in.input.kind == "resume" && in.input.body.value("continue", false)) {
      j = json{{"kind", "resume"},
               {"from", in.input.body.value("from", "")},
               {"text", "Your last turn was interrupted. Continue the work where it stopped; check the directory and "
                        "git history before repeating anything."}};
    }
    out.push_back(std::move(j));
  }
  return out;
}

// A failed turn in the daemon's words, by kind: the executor's message itself may name hosts,
// paths or a peer's reply, which belong on the panel, not in a discussion (issue 34).
namespace {
std::string TurnFailureWords(const Status& s) {
  if (s.code() == Status::Code::kUnavailable) return "the model (or a service the work needs) could not be reached";
  return "the worker stopped with an error";
}
}  // namespace

void Scheduler::RunTurn(Run* run, Assignment a) {
  std::shared_ptr<Jobs> jobs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs = JobsOf(a.ticket);
  }
  bool handed_over = false;
  std::optional<Stage> deferred;
  auto finish = [&] {
    std::lock_guard<std::mutex> lock(mu_);
    run->turn_done = true;
    run->handed_over = handed_over;
    run->deferred = deferred;
    run->turn_ended_at = clock_->NowMs();
    cv_.notify_all();
  };
  // Ends the turn in one Engine transaction, whatever happened in it.
  auto end_turn = [&](TurnEnd end) {
    end.assignment = a.id;
    end.background_running = jobs->RunningCount() > 0;
    auto out = engine_->FinishTurn(end);
    if (!out.ok()) {
      spdlog::warn("turn end not recorded ticket={} assignment={} error=\"{}\"", a.ticket, a.id, out.status().message());
      return;
    }
    if (!out->not_sent.empty())
      spdlog::warn("result not sent ticket={} reason=\"{}\"", a.ticket, out->not_sent);
    handed_over = out->handed_over;
    deferred = out->deferred;
  };
  // `words`: what the requester hears (the daemon's); `why`: the raw cause, for the log and the card.
  auto failed = [&](const std::string& words, const std::string& why) {
    spdlog::warn("worker turn failed ticket={} assignment={} error=\"{}\"", a.ticket, a.id, why);
    TurnEnd end;
    end.reported = Stage::kBlocked;
    end.summary = "I could not work on this: " + words + ".";
    end.error = why;
    end_turn(std::move(end));
  };

  // Workspace: prepared once per Ticket (10-minute limit), reused after a restart. It is git work
  // outside any transaction, so it comes before the turn begins.
  std::optional<WorkspaceRecord> prepared;
  std::string prepare_error;
  auto recorded = views_->WorkspaceFor(a.ticket);
  if (!recorded.ok()) {
    // Not "no workspace": preparing one over a live one could lose its work. The Assignment stays
    // pending and the next tick tries again.
    spdlog::error("workspace not read; turn not begun ticket={} assignment={} error=\"{}\"", a.ticket, a.id,
                  recorded.status().message());
    return finish();
  }
  const std::optional<WorkspaceRecord>& ws = *recorded;
  if (!ws || ws->removed_at || !std::filesystem::exists(ws->dir)) {
    // A Ticket whose workspace was removed keeps the branch it had (its pull request is on it).
    const std::string repo = ws && !ws->repo.empty() ? ws->repo : RepositoryOf(a.ticket);
    auto p = workspaces_->Prepare(a.ticket, &run->cancel, ws ? ws->branch : "", repo);
    // Stopped or shutting down while preparing: not a failure to report (as after a turn below).
    if (run->cancel.load()) return finish();
    if (p.ok()) prepared = *p;
    else prepare_error = "the workspace could not be prepared: " + p.status().message();
  }
  // The Mandate's other repositories (issue 37), each inside the Ticket's directory.
  std::vector<WorkspaceRecord> prepared_others;
  if (prepare_error.empty() && (prepared || (ws && !ws->removed_at))) {
    const WorkspaceRecord& primary = prepared ? *prepared : *ws;
    auto others = views_->OtherWorkspacesFor(a.ticket);
    if (!others.ok()) {
      spdlog::error("workspaces not read; turn not begun ticket={} assignment={} error=\"{}\"", a.ticket, a.id,
                    others.status().message());
      return finish();
    }
    const std::vector<std::string> repos = RepositoriesOf(a.ticket);
    for (std::size_t i = 1; i < repos.size(); ++i) {
      const std::string& repo = repos[i];
      if (repo == workspaces_->RepositoryOf(primary)) continue;
      const bool live = std::any_of(others->begin(), others->end(), [&](const WorkspaceRecord& o) {
        return o.repo == repo && std::filesystem::is_directory(o.dir);
      });
      if (live) continue;
      auto p = workspaces_->PrepareAlso(primary, repo, &run->cancel);
      if (run->cancel.load()) return finish();
      if (!p.ok()) {
        prepare_error = "the workspace of " + repo + " could not be prepared: " + p.status().message();
        break;
      }
      prepared_others.push_back(*p);
    }
    // The session's shells may have begun before these mirrors existed: they see them now.
    if (!prepared_others.empty()) jobs->ShowAlso(workspaces_->ScopeFor(a.ticket, repos).readable);
  }
  auto begun = engine_->BeginTurn(a.id, executor_->name(), prepared, prepared_others);
  if (!begun.ok()) {
    spdlog::warn("assignment not started id={} ticket={} error=\"{}\"", a.id, a.ticket, begun.status().message());
    return finish();
  }
  TurnContext& c = *begun;
  if (!prepare_error.empty() || !c.workspace) {
    failed("its working copy of the repository could not be prepared",
           prepare_error.empty() ? "the Ticket has no workspace" : prepare_error);
    return finish();
  }

  WorkerTask task;
  task.ticket = a.ticket;
  task.assignment = a.id;
  task.jobs = jobs.get();
  task.cancel = &run->cancel;
  task.intercom = intercom_.load();
  task.thread = c.ticket.thread;
  task.scope = c.ticket.scope;
  task.mandate = c.mandate;
  task.rules = c.rules;
  task.request_text = c.request_text;
  task.workspace = *c.workspace;
  task.other_workspaces = c.other_workspaces;
  task.agents_md = ReadAgentsMd(c.workspace->dir, a.ticket);
  task.session = c.session.id;
  task.first_turn = c.first_turn;
  task.inputs = InputsJson(c.inputs);
  task.take_inputs = [this, ticket = a.ticket] {
    auto taken = engine_->TakeInputs(ticket);
    if (!taken.ok()) {
      spdlog::warn("inputs not taken ticket={} error=\"{}\"", ticket, taken.status().message());
      return std::vector<json>();
    }
    return InputsJson(*taken);
  };

  // An executor that throws ends this turn as blocked, with the reason, not the daemon.
  Result<TurnResult> result = Status::Internal("the turn did not run");
  if (Status thrown = CatchAll("the worker turn", [&] { result = executor_->RunTurn(task); }); !thrown.ok())
    result = thrown;
  if (run->cancel.load()) {
    // Stopped (the Stop ended the Assignment and idled the session) or shutting down (the
    // Assignment stays running so the next start resumes it; its session is idle meanwhile).
    if (auto s = views_->GetSession(c.session.id); s.ok() && s->status == "running")
      engine_->SetSessionStatus(c.session.id, "idle");
    return finish();
  }
  if (result.ok() && result->budget_spent && BudgetStops(a.ticket, a.id)) {
    // The model gateway refused the turn's calls at the budget: the Engine ended the Assignment
    // and asked the requester, as when the limit is found while the turn runs.
    return finish();
  }
  if (!result.ok()) {
    failed(TurnFailureWords(result.status()), result.status().message());
  } else if (result->report) {
    end_turn(services_->EndFor(task, *result->report));
  } else {
    end_turn(TurnEnd{});  // no report: the Ticket goes idle, nothing is said
  }
  spdlog::info("worker turn ended ticket={} assignment={} background_jobs={} handed_over={}", a.ticket, a.id,
               jobs->RunningCount(), handed_over);
  if (options_.on_turn_end) options_.on_turn_end();
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
  loop_.Start();
  spdlog::info("scheduler started slots={} reserved=1 executor={} resumed={}", options_.slots, executor_->name(),
               recovered->size());
  return Status::Ok();
}

void Scheduler::Wake() { loop_.Wake(); }

void Scheduler::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && runs_.empty() && jobs_.empty()) return;
    stopping_ = true;
  }
  loop_.Stop();  // a tick in progress finishes; it starts no turn now
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

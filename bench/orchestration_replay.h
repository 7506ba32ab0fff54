// Benchmark 6, replayed: the seed's working day through the daemon's own Engine (Intake, Gate,
// Eval, Tickets, Subscriptions, Assignments in a real SQLite store) and exec::Scheduler (slots,
// the reserved slot, real git worktrees of a local origin), on a simulated clock.
//
// What is simulated, and only that: the model's latency (the Assessor answers from the message's
// marker after a log-normal delay) and the work of a turn (SimExecutor: a turn is a run of model
// steps of `step_s` each; between steps it takes new inputs through WorkerTask::take_inputs, as
// the built-in worker does). Everything else — who is admitted, which message becomes a Ticket
// or a follow-up input, which turn gets which slot, when a queued turn starts — is the daemon's
// code deciding. Turn threads are real; the driver lets one of them act at a time, so a seed
// gives the same run every time.
#pragma once

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <deque>
#include <map>
#include <mutex>
#include <queue>
#include <random>
#include <thread>
#include <utility>

#include "bench_common.h"
#include "superagent/engine.h"
#include "superagent/views.h"
#include "superagent/eval.h"
#include "superagent/policy.h"
#include "superagent/process.h"
#include "superagent/scheduler.h"
#include "superagent/worker.h"
#include "superagent/workspace.h"

namespace superagent::bench {

struct ReplayParams {
  int slots = 3;
  int messages = 300;               // ASSUMPTION (seed): ~300 messages a day …
  int requests = 20;                // … of which ~20 are real requests
  int burst = 8;                    // ASSUMPTION: 8 of them in the 30 minutes after stand-up
  double admitted_noise = 0.35;     // ASSUMPTION: share of other messages the Gate admits
  double eval_median_s = 3.0;       // ASSUMPTION: model latency, log-normal, sigma 0.5
  double prepare_s = 15.0;          // ASSUMPTION: added to a first turn (the real worktree is made too)
  double work_median_min = 6.0;     // ASSUMPTION: a Ticket's first turn, log-normal …
  double work_sigma = 0.5;          // … p95 ≈ 13.7 min of work
  double step_s = 10.0;             // ASSUMPTION: one model step (call + a tool ≤ 5 s before it backgrounds)
  double followup_share = 0.6;      // ASSUMPTION: 60 % of Tickets get a follow-up, 1–2 each,
  double followup_min_after = 2;    //   2–25 min after the request
  double followup_max_after = 25;
  double followup_turn_median_s = 45;  // a turn that answers a status question or a small change
};

struct ReplayResult {
  std::vector<double> request_to_result_min;
  std::vector<double> followup_taken_s;          // until a session read it
  std::vector<double> followup_answered_s;       // until the turn that read it reported
  std::vector<double> followup_busy_taken_s;     // … of those arriving while every worker slot was taken
  std::vector<double> followup_busy_answered_s;
  // … of those, by their Ticket's state when they arrived: 0 its turn running (the session reads
  // it between steps), 1 its first turn still queued (it waits with the Ticket), 2 between turns
  // (a turn must start for it: on the reserved slot)
  std::vector<double> followup_busy_taken_s_by[3];
  std::vector<double> followup_busy_answered_s_by[3];
  int tickets = 0, model_calls = 0, expected_model_calls = 0, turns = 0, reserved_turns = 0;
  int max_worker_used = 0;
  std::string problem;  // non-empty: the replay could not run as intended (printed, pass=0)
};

// A settable clock shared by the Engine, the Scheduler and the turn threads.
class SimClock : public Clock {
 public:
  TimeMs NowMs() const override { return now_.load(); }
  void Set(TimeMs t) { now_.store(t); }

 private:
  std::atomic<TimeMs> now_{1'767'254'400'000};  // a Thursday, 09:00 UTC
};

// Answers from the marker the driver put in the text: "[request k]" is accepted, anything else
// is ignored. Counts its calls: a message the Gate did not admit must never reach it.
class MarkerAssessor : public Assessor {
 public:
  Result<Assessment> Assess(const EvalJob&, const std::vector<const Candidate*>& candidates, const Policy&) override {
    ++calls;
    Assessment a;
    a.rules = {{"wording", false, "not a wording fix"}};
    for (const Candidate* c : candidates) {
      if (c->trigger.text.find("[request ") == std::string::npos) continue;
      a.decision = DecisionOutcome::kAccept;
      a.implementation_requested = true;
      a.target_basis = "stated";
      a.evidence = c->trigger.text.substr(0, 40);
      a.scope = "Fix what " + c->trigger.id + " asks";
      a.acknowledgement = "On it.";
    }
    return a;
  }
  int calls = 0;
};

// A turn of simulated work that the driver steps: it registers when it starts, then waits for
// the driver to let it take each step.
class SimExecutor : public exec::Executor {
 public:
  struct Turn {
    TicketId ticket = 0;
    TimeMs end_at = 0, next_at = 0;
    bool go = false, done = false;
  };
  // How long a turn works: `first_turn_ms(request text)` for the turn that reads the request,
  // `later_turn_ms(ticket, n)` for its n-th later turn. Both are seeded draws that do not depend
  // on which turn thread asks first.
  SimExecutor(SimClock* clock, std::function<TimeMs(const std::string&)> first_turn_ms,
              std::function<TimeMs(TicketId, int)> later_turn_ms, TimeMs step_ms,
              std::function<void(const nlohmann::json&, TimeMs)> on_taken)
      : clock_(clock), first_turn_ms_(std::move(first_turn_ms)), later_turn_ms_(std::move(later_turn_ms)),
        step_ms_(step_ms), on_taken_(std::move(on_taken)) {}
  std::string name() const override { return "simulated"; }

  Result<exec::TurnResult> RunTurn(const exec::WorkerTask& t) override {
    std::vector<nlohmann::json> taken = t.inputs;
    std::unique_lock<std::mutex> lock(mu_);
    const TimeMs now = clock_->NowMs();
    for (const auto& in : taken) on_taken_(in, now);
    bool reads_request = false;
    for (const auto& in : taken) reads_request = reads_request || in.value("request", false);
    const TimeMs works = reads_request ? first_turn_ms_(t.request_text) : later_turn_ms_(t.ticket, ++later_turns_[t.ticket]);
    Turn& turn = turns_[t.ticket];
    turn = Turn{t.ticket, now + works, 0, false, false};
    turn.next_at = std::min(turn.end_at, now + step_ms_);
    ++registered_;
    cv_.notify_all();
    while (true) {
      cv_.wait(lock, [&] { return turn.go || (t.cancel != nullptr && t.cancel->load()); });
      if (t.cancel != nullptr && t.cancel->load()) break;
      turn.go = false;
      const TimeMs at = clock_->NowMs();
      if (at >= turn.end_at) break;
      lock.unlock();
      std::vector<nlohmann::json> later = t.take_inputs ? t.take_inputs() : std::vector<nlohmann::json>{};
      lock.lock();
      for (const auto& in : later) on_taken_(in, at);
      taken.insert(taken.end(), later.begin(), later.end());
      turn.next_at = std::min(turn.end_at, at + step_ms_);
      ++acks_;
      cv_.notify_all();
    }
    turns_.erase(t.ticket);
    answered_.push_back({std::move(taken), clock_->NowMs()});
    exec::TurnResult r;
    r.report = exec::WorkerReport{Stage::kReady, "Done.", std::nullopt, std::nullopt};
    return r;  // the scheduler applies the report; the driver waits for the turn to end
  }

  // Waits until `n` turns in all have registered; false after 60 s (a turn failed before it ran).
  bool WaitRegistered(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(60), [&] { return registered_ >= n; });
  }
  bool Running(TicketId ticket) {
    std::lock_guard<std::mutex> lock(mu_);
    return turns_.count(ticket) > 0;
  }
  int registered() {
    std::lock_guard<std::mutex> lock(mu_);
    return registered_;
  }
  // The earliest step or end among running turns; 0 when none.
  std::pair<TimeMs, TicketId> NextStep() {
    std::lock_guard<std::mutex> lock(mu_);
    std::pair<TimeMs, TicketId> best{0, 0};
    for (auto& [id, turn] : turns_)
      if (best.first == 0 || turn.next_at < best.first) best = {turn.next_at, id};
    return best;
  }
  // Lets `ticket` take the step due now. Returns true when the turn ended (then the caller waits
  // for the scheduler to finish it); otherwise waits until the step is taken.
  bool Step(TicketId ticket) {
    std::unique_lock<std::mutex> lock(mu_);
    auto it = turns_.find(ticket);
    if (it == turns_.end()) return true;
    const bool ends = clock_->NowMs() >= it->second.end_at;
    const int acks = acks_;
    it->second.go = true;
    cv_.notify_all();
    if (!ends) cv_.wait(lock, [&] { return acks_ > acks; });
    return ends;
  }
  // Each ended turn: the inputs it read and when it reported.
  std::vector<std::pair<std::vector<nlohmann::json>, TimeMs>> TakeAnswered() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(answered_, {});
  }

 private:
  SimClock* clock_;
  std::function<TimeMs(const std::string&)> first_turn_ms_;
  std::function<TimeMs(TicketId, int)> later_turn_ms_;
  std::map<TicketId, int> later_turns_;
  TimeMs step_ms_;
  std::function<void(const nlohmann::json&, TimeMs)> on_taken_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<TicketId, Turn> turns_;
  std::vector<std::pair<std::vector<nlohmann::json>, TimeMs>> answered_;
  int registered_ = 0, acks_ = 0;
};

// One seeded working day.
class Replay {
 public:
  Replay(ReplayParams p, std::uint64_t seed, std::filesystem::path dir)
      : p_(p), seed_(seed), rng_(seed), dir_(std::move(dir)) {}

  ReplayResult Run() {
    if (!Open()) return r_;
    Generate();
    const TimeMs start = clock_.NowMs();
    while (true) {
      // The next thing to happen: a message, an Eval finishing, or a turn's step.
      TimeMs next = 0;
      int kind = -1;  // 0 message, 1 eval, 2 step
      if (!arrivals_.empty()) next = arrivals_.front().at, kind = 0;
      if (eval_done_at_ && (kind < 0 || eval_done_at_ < next)) next = eval_done_at_, kind = 1;
      auto [step_at, step_ticket] = executor_->NextStep();
      if (step_at && (kind < 0 || step_at < next)) next = step_at, kind = 2;
      if (kind < 0) break;
      clock_.Set(std::max(next, clock_.NowMs()));
      if (kind == 0) Arrive();
      if (kind == 1) FinishEval();
      if (kind == 2 && executor_->Step(step_ticket)) {
        scheduler_->WaitForTurns(step_ticket);
        Collect();
      }
      if (!Tick()) return r_;
      if (clock_.NowMs() - start > 3 * 24 * 3'600'000LL) {
        r_.problem = "the day did not end within three days of simulated time";
        return r_;
      }
    }
    scheduler_->Stop();
    for (const auto& [ticket, requested] : requested_at_)
      if (!result_at_.count(ticket)) r_.problem = "Ticket " + std::to_string(ticket) + " never reported";
    for (const auto& [ticket, at] : result_at_) r_.request_to_result_min.push_back((at - requested_at_[ticket]) / 60'000.0);
    r_.tickets = static_cast<int>(requested_at_.size());
    r_.model_calls = assessor_.calls;
    return r_;
  }

 private:
  struct Arrival {
    TimeMs at;
    Trigger trigger;
    bool model;  // admitted by the Gate: its Eval calls the model
    int followup = -1, request = -1;
    int of_request = -1;  // a follow-up's request
  };
  struct FollowUp {
    TimeMs at;
    bool all_busy;
    int state;  // its Ticket's, as ReplayResult::followup_busy_taken_s_by counts them
  };

  bool Open() {
    std::filesystem::create_directories(dir_);
    const std::string seed = (dir_ / "seed").string(), origin = (dir_ / "origin.git").string();
    const std::string git = "git init -q -b main " + seed + " && cd " + seed +
                            " && echo hello > README.md && git add -A && git -c user.name=b -c user.email=b@b"
                            " commit -q -m init && git clone -q --bare . " + origin;
    if (std::system(git.c_str()) != 0) return Fail("cannot make the local git origin");
    std::vector<Problem> problems;
    auto policy = ParsePolicy(
        "mode: observe\nsources:\n  github:\n    people: [alice, bob]\n    scopes:\n"
        "      comments: { receive_all: true, allowed_unaddressed: inferred, others_addressed: ignore, "
        "others_unaddressed: ignore }\nrules:\n  - name: wording\n    enabled: true\n"
        "    when: Fix wording and typos.\n    instructions: Keep the change small.\n",
        "policy.yaml", &problems);
    if (!policy) return Fail("the replay's policy does not parse: " + (problems.empty() ? "" : problems[0].ToString()));
    auto engine = Engine::Open((dir_ / "superagent.db").string(), &clock_, *policy, "policy.yaml", {});
    if (!engine.ok()) return Fail(engine.status().ToString());
    engine_ = std::move(*engine);
    auto views = Views::Open((dir_ / "superagent.db").string());
    if (!views.ok()) return Fail(views.status().ToString());
    views_ = std::move(*views);
    runner_ = exec::MakePosixProcessRunner();
    exec::Sleeper sleeper = [](TimeMs) { std::this_thread::sleep_for(std::chrono::milliseconds(1)); };
    exec::WorkspaceOptions wo;
    wo.root = (dir_ / "work").string();
    wo.remote = origin;
    workspaces_ = std::make_unique<exec::Workspaces>(wo, runner_.get(), &clock_, sleeper);
    services_ = std::make_unique<exec::WorkerServices>(engine_.get(), workspaces_.get());
    executor_ = std::make_unique<SimExecutor>(
        &clock_,
        [this](const std::string& request) {
          const auto k = request.find("[request ");
          return k == std::string::npos ? Ms(p_.prepare_s) : first_turn_ms_[std::stoul(request.substr(k + 9))];
        },
        [this](TicketId ticket, int n) {
          std::mt19937_64 rng(seed_ * 1'000'003 + static_cast<std::uint64_t>(ticket) * 1'009 + static_cast<std::uint64_t>(n));
          return Ms(std::lognormal_distribution<double>(std::log(p_.followup_turn_median_s), 0.5)(rng));
        },
        Ms(p_.step_s),
        [this](const nlohmann::json& in, TimeMs at) { Taken(in, at); });
    exec::SchedulerOptions so;
    so.slots = p_.slots;
    so.jobs_dir = (dir_ / "jobs").string();
    std::filesystem::create_directories(so.jobs_dir);
    scheduler_ = std::make_unique<exec::Scheduler>(engine_.get(), views_.get(), workspaces_.get(), executor_.get(), services_.get(),
                                                   runner_.get(), &clock_, sleeper, so);
    return true;
  }
  bool Fail(const std::string& why) {
    r_.problem = why;
    return false;
  }

  static TimeMs Ms(double seconds) { return static_cast<TimeMs>(seconds * 1000.0); }
  double LogNormal(double median, double sigma) {
    std::lognormal_distribution<double> d(std::log(median), sigma);
    return d(rng_);
  }

  Trigger Comment(const std::string& id, const std::string& actor, bool addressed, int issue, const std::string& text) {
    Trigger t;
    t.id = id;
    t.source = "github";
    t.scope = "comments";
    t.actor = actor;
    t.human = true;
    t.addressed = addressed;
    t.text = text;
    t.threads = {"github:issue:" + std::to_string(issue)};
    t.channel = t.threads[0];
    t.meta = {{"html_url", "https://github.com/o/r/issues/" + std::to_string(issue) + "#" + id}};
    return t;
  }

  // The day's messages, drawn once from the seed: requests (each in its own issue), follow-ups
  // in a request's issue, and other talk in other issues — by people (admitted: an Eval with a
  // model call, then ignored) or by anyone else (not admitted: no model call).
  void Generate() {
    const TimeMs day0 = clock_.NowMs();
    std::uniform_real_distribution<double> day(0, 8 * 3600.0), burst(30 * 60.0, 60 * 60.0), u(0, 1);
    std::vector<Arrival> all;
    int followups = 0;
    for (int k = 0; k < p_.requests; ++k) {
      const double at = k < p_.burst ? burst(rng_) : day(rng_);
      first_turn_ms_.push_back(Ms(p_.prepare_s + LogNormal(p_.work_median_min, p_.work_sigma) * 60.0));
      Arrival a{day0 + Ms(at), Comment("req-" + std::to_string(k), "alice", true, 1000 + k,
                                       "@agent [request " + std::to_string(k) + "] " + Words(rng_, 160)),
                true, -1, k};
      all.push_back(a);
      if (u(rng_) < p_.followup_share) {
        const int n = u(rng_) < 0.5 ? 1 : 2;
        for (int j = 0; j < n; ++j) {
          const double after = std::uniform_real_distribution<double>(p_.followup_min_after, p_.followup_max_after)(rng_);
          const int f = followups++;
          all.push_back({day0 + Ms(at + after * 60.0),
                         Comment("fu-" + std::to_string(f), "alice", false, 1000 + k,
                                 "[follow-up " + std::to_string(f) + "] how is it going? " + Words(rng_, 60)),
                         false, f, -1, k});
        }
      }
    }
    for (int i = p_.requests; i < p_.messages; ++i) {
      const bool admitted = u(rng_) < p_.admitted_noise;
      const int issue = 1 + static_cast<int>(u(rng_) * 50);
      all.push_back({day0 + Ms(day(rng_)),
                     Comment("talk-" + std::to_string(i), admitted ? "bob" : "carol", false, issue, Words(rng_, 120)),
                     admitted, -1, -1});
    }
    std::stable_sort(all.begin(), all.end(), [](const Arrival& a, const Arrival& b) { return a.at < b.at; });
    arrivals_.assign(all.begin(), all.end());
  }

  void Arrive() {
    Arrival a = arrivals_.front();
    arrivals_.pop_front();
    a.trigger.at = clock_.NowMs();
    auto got = engine_->Receive(a.trigger, "replay");
    if (!got.ok()) {
      r_.problem = "Receive failed: " + got.status().ToString();
      return;
    }
    if (a.followup >= 0) {
      const SlotsView slots = scheduler_->Slots();
      int state = 1;  // no turn of its Ticket has started yet
      for (const auto& [ticket, request] : ticket_request_)
        if (request == a.of_request) state = executor_->Running(ticket) ? 0 : 2;
      followups_[a.trigger.id] = {clock_.NowMs(), slots.worker_used >= p_.slots, state};
    }
    if (a.request >= 0) request_of_trigger_[a.trigger.id] = a.request, request_trigger_at_[a.trigger.id] = clock_.NowMs();
    if (a.model) ++r_.expected_model_calls;
    // The Eval loop is serial: this one runs when the model has answered the previous one.
    evals_.push_back(a.model ? Ms(LogNormal(p_.eval_median_s, 0.5)) : 0);
    if (!eval_done_at_) StartEval();
  }
  void StartEval() {
    if (evals_.empty()) return;
    eval_done_at_ = clock_.NowMs() + std::max<TimeMs>(1, evals_.front());
    evals_.pop_front();
  }
  // Runs the Eval as the model answers, so its Decision (and the Ticket) is stamped then.
  void FinishEval() {
    eval_done_at_ = 0;
    auto ran = RunOneEval(*engine_, assessor_);
    if (!ran.ok()) r_.problem = "Eval failed: " + ran.status().ToString();
    StartEval();
  }

  bool Tick() {
    const int before = executor_->registered();
    const bool reserved_before = scheduler_->Slots().reserved_used;
    auto started = scheduler_->Tick();
    if (!started.ok()) return Fail("scheduler tick failed: " + started.status().ToString());
    if (*started > 0) {
      r_.turns += *started;
      if (!executor_->WaitRegistered(before + *started)) return Fail("a turn did not reach the executor");
      const SlotsView slots = scheduler_->Slots();
      r_.max_worker_used = std::max(r_.max_worker_used, slots.worker_used);
      if (slots.reserved_used && !reserved_before) ++r_.reserved_turns;
      auto running = views_->AssignmentsInState("running");
      if (!running.ok()) return Fail("running assignments not read: " + running.status().ToString());
      for (const Assignment& a : *running)
        if (!requested_at_.count(a.ticket)) NoteTicket(a.ticket);
    }
    return r_.problem.empty();
  }
  void NoteTicket(TicketId ticket) {
    auto mandate = views_->GetMandate(ticket);
    if (!mandate.ok()) return;
    auto origin = views_->GetTriggerBySeq(mandate->origin_trigger_seq);
    if (!origin.ok()) return;
    requested_at_[ticket] = request_trigger_at_[origin->trigger.id];
    ticket_request_[ticket] = request_of_trigger_[origin->trigger.id];
  }

  void Taken(const nlohmann::json& input, TimeMs at) {
    auto f = followups_.find(input.value("message_id", ""));
    if (f == followups_.end()) return;
    const double s = (at - f->second.at) / 1000.0;
    r_.followup_taken_s.push_back(s);
    if (f->second.all_busy) r_.followup_busy_taken_s.push_back(s);
    if (f->second.all_busy) r_.followup_busy_taken_s_by[f->second.state].push_back(s);
  }
  void Collect() {
    for (auto& [inputs, at] : executor_->TakeAnswered()) {
      for (const nlohmann::json& in : inputs) {
        const std::string id = in.value("message_id", "");
        if (in.value("request", false)) {
          for (auto& [ticket, request] : ticket_request_)
            if ("req-" + std::to_string(request) == id && !result_at_.count(ticket)) result_at_[ticket] = at;
          continue;
        }
        auto f = followups_.find(id);
        if (f == followups_.end()) continue;
        const double s = (at - f->second.at) / 1000.0;
        r_.followup_answered_s.push_back(s);
        if (f->second.all_busy) r_.followup_busy_answered_s.push_back(s);
        if (f->second.all_busy) r_.followup_busy_answered_s_by[f->second.state].push_back(s);
      }
    }
  }

  ReplayParams p_;
  std::uint64_t seed_;
  std::mt19937_64 rng_;
  std::filesystem::path dir_;
  SimClock clock_;
  MarkerAssessor assessor_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<Views> views_;
  std::unique_ptr<exec::ProcessRunner> runner_;
  std::unique_ptr<exec::Workspaces> workspaces_;
  std::unique_ptr<exec::WorkerServices> services_;
  std::unique_ptr<SimExecutor> executor_;
  std::unique_ptr<exec::Scheduler> scheduler_;
  std::deque<Arrival> arrivals_;
  std::deque<TimeMs> evals_;
  TimeMs eval_done_at_ = 0;
  std::vector<TimeMs> first_turn_ms_;
  std::map<std::string, FollowUp> followups_;
  std::map<std::string, int> request_of_trigger_;
  std::map<std::string, TimeMs> request_trigger_at_;
  std::map<TicketId, TimeMs> requested_at_, result_at_;
  std::map<TicketId, int> ticket_request_;
  ReplayResult r_;
};

}  // namespace superagent::bench

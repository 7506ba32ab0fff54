// Benchmark 6 (issue 10): orchestration under the seed's workload, as a discrete-event
// simulation on a fake clock.
//
// Two parts. The measurement is the replay (orchestration_replay.h): the day's messages through
// the daemon's own Engine and exec::Scheduler, with only the model's latency and the turns' work
// simulated. Below it, the model this benchmark began as: it encodes the slot rules of SPEC §6
// by hand, and stays for what the real code cannot be asked — the same day without the reserved
// slot (the ablation). Its rules:
//   * N worker slots (configured, default 3) run Ticket work; new work waits FIFO for one.
//   * 1 more slot is reserved for a person's follow-up to an existing Ticket (a message or a
//     status question); new work never takes it, so a person is never locked out.
//   * A follow-up to a Ticket whose session is running is taken by that session (it backgrounds
//     its shell after 5 s and reads the next input): it needs no second slot.
//   * Evals (the assessment call) run one at a time, as the daemon's Eval loop does today.
// Everything below marked ASSUMPTION is an input, not a measurement; docs/008-performance.md
// explains how the result depends on it. Five seeded runs, like the prototype's five.
#include <cmath>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <queue>
#include <random>

#include "bench_common.h"
#include "orchestration_replay.h"

using namespace superagent::bench;

namespace {

constexpr double kMin = 60.0;
constexpr double kDay = 8 * 3600.0;  // a working day, 09:00–17:00

struct Params {
  int slots = 3;
  bool reserved = true;                 // the +1 slot of SPEC §6
  int messages = 300;                   // ASSUMPTION (seed): ~300 messages a day …
  int requests = 20;                    // … of which ~20 are real requests
  int burst = 8;                        // ASSUMPTION: 8 of them in the 30 minutes after stand-up
  double admitted_noise = 0.35;         // ASSUMPTION: share of other messages the Gate admits (cost an Eval)
  double eval_median_s = 3.0;           // ASSUMPTION: fake model, log-normal, sigma 0.5
  double prepare_s = 15.0;              // ASSUMPTION: git worktree prepare
  double work_median_min = 6.0;         // ASSUMPTION: simulated tools, log-normal …
  double work_sigma = 0.5;              // … p95 ≈ 13.7 min of work
  double followup_share = 0.6;          // ASSUMPTION: 60 % of Tickets get a follow-up, 1–2 each
  double followup_session_median_s = 45;  // a short session answering a status question
  double in_session_reply_s = 5;          // a running session takes the input after ≤ 5 s
};

struct Result {
  std::vector<double> request_to_result_min;
  std::vector<double> wait_for_slot_min;
  std::vector<double> followup_s;
  std::vector<double> followup_when_busy_s;  // arrived while every worker slot was taken
};

struct Event {
  double at;
  int seq;
  std::function<void()> run;
  bool operator>(const Event& o) const { return at != o.at ? at > o.at : seq > o.seq; }
};

class Sim {
 public:
  Sim(Params p, std::uint64_t seed) : p_(p), rng_(seed) {}

  Result Run() {
    std::uniform_real_distribution<double> day(0, kDay), burst(30 * kMin, 60 * kMin);
    for (int i = 0; i < p_.requests; ++i) {
      const double at = i < p_.burst ? burst(rng_) : day(rng_);
      At(at, [this, at] { Eval(at, [this, at] { NewTicket(at); }); });
    }
    std::uniform_real_distribution<double> u(0, 1);
    for (int i = p_.requests; i < p_.messages; ++i) {
      const double at = day(rng_);
      if (u(rng_) < p_.admitted_noise) At(at, [this, at] { Eval(at, [] {}); });  // Eval, then ignore
      // not admitted: the Gate drops it in code, no model call, nothing scheduled
    }
    while (!events_.empty()) {
      Event e = events_.top();
      events_.pop();
      now_ = e.at;
      e.run();
    }
    return r_;
  }

 private:
  struct Ticket {
    double requested_at = 0;
    bool running = false, done = false;
  };

  void At(double t, std::function<void()> f) { events_.push({t, seq_++, std::move(f)}); }
  double LogNormal(double median, double sigma) {
    std::lognormal_distribution<double> d(std::log(median), sigma);
    return d(rng_);
  }

  // The serial Eval loop: one assessment at a time.
  void Eval(double arrived, std::function<void()> then) {
    (void)arrived;
    eval_queue_.push_back(std::move(then));
    if (!eval_busy_) NextEval();
  }
  void NextEval() {
    if (eval_queue_.empty()) {
      eval_busy_ = false;
      return;
    }
    eval_busy_ = true;
    auto then = std::move(eval_queue_.front());
    eval_queue_.pop_front();
    At(now_ + LogNormal(p_.eval_median_s, 0.5), [this, then] {
      then();
      NextEval();
    });
  }

  void NewTicket(double requested_at) {
    const int id = static_cast<int>(tickets_.size());
    tickets_.push_back({requested_at});
    work_queue_.push_back(id);
    std::uniform_real_distribution<double> u(0, 1);
    if (u(rng_) < p_.followup_share) {
      const int n = u(rng_) < 0.5 ? 1 : 2;
      for (int k = 0; k < n; ++k) {
        // The requester asks how it goes some minutes later (ASSUMPTION: 2–25 min after acceptance).
        const double at = now_ + std::uniform_real_distribution<double>(2 * kMin, 25 * kMin)(rng_);
        At(at, [this, id, at] { FollowUp(id, at); });
      }
    }
    Schedule();
  }

  void Schedule() {
    while (!work_queue_.empty() && busy_workers_ < p_.slots) {
      const int id = work_queue_.front();
      work_queue_.pop_front();
      ++busy_workers_;
      Ticket& t = tickets_[id];
      t.running = true;
      r_.wait_for_slot_min.push_back((now_ - t.requested_at) / kMin);
      const double took = p_.prepare_s + LogNormal(p_.work_median_min, p_.work_sigma) * kMin;
      At(now_ + took, [this, id] {
        Ticket& tk = tickets_[id];
        tk.running = false;
        tk.done = true;
        r_.request_to_result_min.push_back((now_ - tk.requested_at) / kMin);
        --busy_workers_;
        Schedule();
        ScheduleFollowUps();
      });
    }
  }

  void FollowUp(int id, double at) {
    const bool all_busy = busy_workers_ >= p_.slots;
    if (tickets_[id].running) {  // its own session answers
      At(now_ + p_.in_session_reply_s + LogNormal(p_.eval_median_s, 0.5), [this, at, all_busy] {
        Record(at, all_busy);
      });
      return;
    }
    followups_.push_back({at, all_busy});
    ScheduleFollowUps();
  }

  void ScheduleFollowUps() {
    while (!followups_.empty()) {
      bool use_reserved = p_.reserved && !reserved_busy_;
      if (!use_reserved && busy_workers_ >= p_.slots) return;
      auto [at, all_busy] = followups_.front();
      followups_.pop_front();
      if (use_reserved) reserved_busy_ = true;
      else ++busy_workers_;
      At(now_ + LogNormal(p_.followup_session_median_s, 0.5), [this, at = at, all_busy = all_busy, use_reserved] {
        Record(at, all_busy);
        if (use_reserved) reserved_busy_ = false;
        else --busy_workers_;
        ScheduleFollowUps();
        Schedule();
      });
    }
  }

  void Record(double at, bool all_busy) {
    r_.followup_s.push_back(now_ - at);
    if (all_busy) r_.followup_when_busy_s.push_back(now_ - at);
  }

  Params p_;
  std::mt19937_64 rng_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  int seq_ = 0;
  double now_ = 0;
  Result r_;
  std::vector<Ticket> tickets_;
  std::deque<int> work_queue_;
  std::deque<std::pair<double, bool>> followups_;
  std::deque<std::function<void()>> eval_queue_;
  bool eval_busy_ = false, reserved_busy_ = false;
  int busy_workers_ = 0;
};

Result RunMany(const Params& p, int runs) {
  Result all;
  for (int i = 0; i < runs; ++i) {
    Result r = Sim(p, 1000 + static_cast<std::uint64_t>(i)).Run();
    auto add = [](std::vector<double>& to, const std::vector<double>& from) { to.insert(to.end(), from.begin(), from.end()); };
    add(all.request_to_result_min, r.request_to_result_min);
    add(all.wait_for_slot_min, r.wait_for_slot_min);
    add(all.followup_s, r.followup_s);
    add(all.followup_when_busy_s, r.followup_when_busy_s);
  }
  return all;
}

void Print(const char* label, const Result& r) {
  std::printf("%s\n", label);
  std::printf("  request -> result: p50 %.1f min, p95 %.1f min (n=%zu)\n", Percentile(r.request_to_result_min, 0.5),
              Percentile(r.request_to_result_min, 0.95), r.request_to_result_min.size());
  std::printf("  wait for a worker slot: p50 %.1f min, p95 %.1f min\n", Percentile(r.wait_for_slot_min, 0.5),
              Percentile(r.wait_for_slot_min, 0.95));
  std::printf("  follow-up answered: p50 %.0f s, p95 %.0f s (n=%zu); while all worker slots busy: p50 %.0f s, p95 %.0f s (n=%zu)\n",
              Percentile(r.followup_s, 0.5), Percentile(r.followup_s, 0.95), r.followup_s.size(),
              Percentile(r.followup_when_busy_s, 0.5), Percentile(r.followup_when_busy_s, 0.95),
              r.followup_when_busy_s.size());
}

}  // namespace

void Add(std::vector<double>& to, const std::vector<double>& from) { to.insert(to.end(), from.begin(), from.end()); }

// Five seeded days through the daemon's code; the same seeds every time.
ReplayResult ReplayMany(const ReplayParams& p, int runs, const ScratchDir& dir, const std::string& name) {
  ReplayResult all;
  for (int i = 0; i < runs; ++i) {
    ReplayResult r = Replay(p, 1000 + static_cast<std::uint64_t>(i), dir.path() / (name + "-" + std::to_string(i))).Run();
    if (!r.problem.empty() && all.problem.empty()) all.problem = "seed " + std::to_string(1000 + i) + ": " + r.problem;
    Add(all.request_to_result_min, r.request_to_result_min);
    Add(all.followup_taken_s, r.followup_taken_s);
    Add(all.followup_answered_s, r.followup_answered_s);
    Add(all.followup_busy_taken_s, r.followup_busy_taken_s);
    Add(all.followup_busy_answered_s, r.followup_busy_answered_s);
    for (int k = 0; k < 3; ++k) {
      Add(all.followup_busy_taken_s_by[k], r.followup_busy_taken_s_by[k]);
      Add(all.followup_busy_answered_s_by[k], r.followup_busy_answered_s_by[k]);
    }
    all.tickets += r.tickets;
    all.model_calls += r.model_calls;
    all.expected_model_calls += r.expected_model_calls;
    all.turns += r.turns;
    all.reserved_turns += r.reserved_turns;
    all.max_worker_used = std::max(all.max_worker_used, r.max_worker_used);
  }
  return all;
}

void PrintReplay(const ReplayResult& r) {
  std::printf("replayed through the daemon's Engine and exec::Scheduler (real SQLite, real git worktrees):\n");
  if (!r.problem.empty()) std::printf("  PROBLEM: %s\n", r.problem.c_str());
  std::printf("  Tickets %d, turns %d (%d on the reserved slot), at most %d worker slots busy\n", r.tickets, r.turns,
              r.reserved_turns, r.max_worker_used);
  std::printf("  model calls by Evals: %d (the admitted messages: %d; the rest cost none)\n", r.model_calls,
              r.expected_model_calls);
  std::printf("  request -> result: p50 %.1f min, p95 %.1f min (n=%zu)\n", Percentile(r.request_to_result_min, 0.5),
              Percentile(r.request_to_result_min, 0.95), r.request_to_result_min.size());
  std::printf("  follow-up read by a session: p50 %.0f s, p95 %.0f s (n=%zu); answered: p50 %.0f s, p95 %.0f s\n",
              Percentile(r.followup_taken_s, 0.5), Percentile(r.followup_taken_s, 0.95), r.followup_taken_s.size(),
              Percentile(r.followup_answered_s, 0.5), Percentile(r.followup_answered_s, 0.95));
  std::printf("  … arriving while every worker slot was busy: read p50 %.0f s, p95 %.0f s; answered p50 %.0f s, "
              "p95 %.0f s (n=%zu)\n",
              Percentile(r.followup_busy_taken_s, 0.5), Percentile(r.followup_busy_taken_s, 0.95),
              Percentile(r.followup_busy_answered_s, 0.5), Percentile(r.followup_busy_answered_s, 0.95),
              r.followup_busy_taken_s.size());
  const char* by[3] = {"its Ticket working (read between steps)", "its Ticket still queued (waits with it)",
                       "its Ticket between turns (a turn starts: the reserved slot)"};
  for (int k = 0; k < 3; ++k)
    std::printf("    %s: read p50 %.0f s, p95 %.0f s; answered p50 %.0f s, p95 %.0f s (n=%zu)\n", by[k],
                Percentile(r.followup_busy_taken_s_by[k], 0.5), Percentile(r.followup_busy_taken_s_by[k], 0.95),
                Percentile(r.followup_busy_answered_s_by[k], 0.5), Percentile(r.followup_busy_answered_s_by[k], 0.95),
                r.followup_busy_taken_s_by[k].size());
}

int main(int argc, char** argv) {
  const int runs = static_cast<int>(Arg(argc, argv, "runs", 5));
  Params p;
  p.slots = static_cast<int>(Arg(argc, argv, "slots", 3));
  ScratchDir dir("orchestration");
  LogToFile(dir / "replay.log");  // the daemon's own log lines, as it would write them
  ReplayParams rp;
  rp.slots = p.slots;
  const double replay_started = NowSeconds();
  ReplayResult replay = ReplayMany(rp, runs, dir, "day");
  const double replay_s = NowSeconds() - replay_started;
  PrintReplay(replay);
  std::printf("  (%d simulated days in %.1f s)\n", runs, replay_s);
  // The seed's day rarely fills every slot; a day with twice the requests shows the reserved
  // slot at work.
  ReplayParams busy = rp;
  busy.requests = 40;
  busy.burst = 16;
  ReplayResult busy_day = ReplayMany(busy, runs, dir, "busy-day");
  std::printf("the same, on a busy day (40 requests, 16 in the burst):\n");
  PrintReplay(busy_day);
  std::printf("\n");
  std::printf("orchestration model: %d messages/day, %d requests (%d in a burst), slots %d+1, %d runs\n", p.messages,
              p.requests, p.burst, p.slots, runs);
  std::printf("  assumed work per Ticket: log-normal median %.1f min, sigma %.1f (+%.0f s prepare)\n", p.work_median_min,
              p.work_sigma, p.prepare_s);
  Result with = RunMany(p, runs);
  Print("with the reserved slot (SPEC §6):", with);
  Params without = p;
  without.reserved = false;
  Result no = RunMany(without, runs);
  Print("ablation, no reserved slot (follow-ups queue for a worker slot):", no);
  const double p95 = Percentile(with.request_to_result_min, 0.95);
  std::printf("  prototype self-reported end-to-end p95: 15.7 min (different assumptions, see docs/008-performance.md)\n");
  (void)p95;
  Summary("orchestration")
      .Add("runs", runs)
      .Add("slots", p.slots)
      .Add("result_p50_min", Percentile(replay.request_to_result_min, 0.5))
      .Add("result_p95_min", Percentile(replay.request_to_result_min, 0.95))
      .Add("prototype_p95_min", 15.7)
      .Add("followup_busy_read_p95_s", Percentile(replay.followup_busy_taken_s, 0.95))
      .Add("followup_busy_answered_p50_s", Percentile(replay.followup_busy_answered_s, 0.5))
      .Add("followup_busy_answered_p95_s", Percentile(replay.followup_busy_answered_s, 0.95))
      .Add("busy_day_result_p95_min", Percentile(busy_day.request_to_result_min, 0.95))
      .Add("busy_day_reserved_read_p95_s", Percentile(busy_day.followup_busy_taken_s_by[2], 0.95))
      .Add("busy_day_reserved_answered_p95_s", Percentile(busy_day.followup_busy_answered_s_by[2], 0.95))
      .Add("model_followup_busy_p95_s", Percentile(with.followup_when_busy_s, 0.95))
      .Add("model_followup_busy_p95_s_no_reserve", Percentile(no.followup_when_busy_s, 0.95))
      .Add("unadmitted_model_calls", replay.model_calls - replay.expected_model_calls)
      .Add("pass", replay.problem.empty() && busy_day.problem.empty() &&
                       replay.model_calls == replay.expected_model_calls)
      .Print();
  return 0;
}

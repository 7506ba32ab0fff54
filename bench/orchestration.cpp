// Benchmark 6 (issue 10): orchestration under the seed's workload, as a discrete-event
// simulation on a fake clock.
//
// THIS IS A MODEL, not the daemon's scheduler (which is being built separately). It encodes the
// slot rules of SPEC §6 so the workload can later be replayed against the real scheduler:
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

int main(int argc, char** argv) {
  const int runs = static_cast<int>(Arg(argc, argv, "runs", 5));
  Params p;
  p.slots = static_cast<int>(Arg(argc, argv, "slots", 3));
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
  Summary("orchestration")
      .Add("runs", runs)
      .Add("slots", p.slots)
      .Add("result_p50_min", Percentile(with.request_to_result_min, 0.5))
      .Add("result_p95_min", p95)
      .Add("prototype_p95_min", 15.7)
      .Add("followup_busy_p50_s", Percentile(with.followup_when_busy_s, 0.5))
      .Add("followup_busy_p95_s", Percentile(with.followup_when_busy_s, 0.95))
      .Add("followup_busy_p95_s_no_reserve", Percentile(no.followup_when_busy_s, 0.95))
      .Print();
  return 0;
}

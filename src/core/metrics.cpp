#include "superagent/metrics.h"
#include "superagent/quarantine.h"

#include <algorithm>
#include <charconv>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "superagent/domain.h"

namespace superagent::metrics {

void Runtime::AddModelUsage(const std::string& purpose, std::int64_t prompt, std::int64_t completion,
                            std::int64_t cache_hit) {
  std::lock_guard<std::mutex> lock(mu_);
  ModelTokens& m = model_[purpose.empty() ? "unknown" : purpose];
  ++m.calls;
  m.prompt += prompt;
  m.completion += completion;
  m.cache_hit += cache_hit;
}

void Runtime::ObserveSourceRound(const std::string& source, TimeMs duration_ms, bool ok) {
  std::lock_guard<std::mutex> lock(mu_);
  SourceRounds& r = rounds_[source];
  ++r.rounds;
  if (!ok) ++r.failed;
  r.last_seconds = static_cast<double>(duration_ms) / 1000.0;
  r.seconds_sum += r.last_seconds;
}

void Runtime::CountRefusedDelivery(const std::string& hook) {
  std::lock_guard<std::mutex> lock(mu_);
  ++refused_[hook];
}

std::map<std::string, std::int64_t> Runtime::RefusedDeliveries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return refused_;
}

void Runtime::CountGatewayRefusal(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  ++gateway_refused_[reason];
}

std::map<std::string, std::int64_t> Runtime::GatewayRefusals() const {
  std::lock_guard<std::mutex> lock(mu_);
  return gateway_refused_;
}

std::map<std::string, ModelTokens> Runtime::ModelUsage() const {
  std::lock_guard<std::mutex> lock(mu_);
  return model_;
}

std::map<std::string, SourceRounds> Runtime::Rounds() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rounds_;
}

Runtime& ProcessRuntime() {
  static Runtime runtime;
  return runtime;
}

namespace {

std::string Escape(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out.push_back(c);
  }
  return out;
}

class Writer {
 public:
  void Family(const char* name, const char* type, const char* help) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += help;
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }
  void Sample(const std::string& name, const std::vector<std::pair<std::string, std::string>>& labels,
              std::int64_t value) {
    Line(name, labels, std::to_string(value));
  }
  void Sample(const std::string& name, const std::vector<std::pair<std::string, std::string>>& labels, double value) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", value);
    Line(name, labels, buf);
  }
  // A sample with every digit kept (a histogram's _sum: %.6g would show 12345678 tokens as 1.23457e+07).
  void Exact(const std::string& name, const std::vector<std::pair<std::string, std::string>>& labels, double value) {
    Line(name, labels, Number(value));
  }
  // `v` as bucket bounds and sums are written: as Go's strconv.FormatFloat(v, 'g', -1, 64), like
  // Prometheus' own clients — the shortest digits that read back as `v`, in exponent form from
  // 1e+06 on ("0.01", "604800", "1e+06"), so a query's le="300000" finds the bucket.
  static std::string Number(double v) {
    if (!std::isfinite(v)) return std::isnan(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf";
    char buf[64];
    const auto sci = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
    // The exponent read within what to_chars wrote (buf is not NUL-terminated).
    const char* e = std::find(buf, sci.ptr, 'e');
    int exponent = 0;
    if (e != sci.ptr) std::from_chars(e + 1 + (e + 1 < sci.ptr && e[1] == '+'), sci.ptr, exponent);
    if (exponent < -4 || exponent >= 6) return std::string(buf, sci.ptr);
    const auto fixed = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
    return std::string(buf, fixed.ptr);
  }
  std::string Take() { return std::move(out_); }

 private:
  void Line(const std::string& name, const std::vector<std::pair<std::string, std::string>>& labels,
            const std::string& value) {
    out_ += name;
    if (!labels.empty()) {
      out_ += '{';
      for (std::size_t i = 0; i < labels.size(); ++i) {
        if (i) out_ += ',';
        out_ += labels[i].first + "=\"" + Escape(labels[i].second) + "\"";
      }
      out_ += '}';
    }
    out_ += ' ' + value + '\n';
  }
  std::string out_;
};

using Labels = std::vector<std::pair<std::string, std::string>>;
using Observations = std::vector<std::pair<Labels, double>>;

// One histogram family: each distinct label set's observations as cumulative buckets (each of
// `bounds`, then +Inf), _sum and _count. Label sets come out sorted, so two scrapes diff line by
// line. A label set with no observation has no series (a Ticket that never opened a pull request
// is not a zero-second one); a value that is not finite is left out, as it would poison _sum.
void Histogram(Writer& w, const char* name, const char* help, const std::vector<double>& bounds,
               const Observations& observations) {
  w.Family(name, "histogram", help);
  std::map<Labels, std::vector<double>> by_labels;
  for (const auto& [labels, value] : observations)
    if (std::isfinite(value)) by_labels[labels].push_back(value);
  const std::string family = name;
  for (const auto& [labels, values] : by_labels) {
    Labels bucket = labels;
    bucket.emplace_back("le", "");
    for (double bound : bounds) {
      bucket.back().second = Writer::Number(bound);
      w.Sample(family + "_bucket", bucket,
               static_cast<std::int64_t>(std::count_if(values.begin(), values.end(), [&](double v) { return v <= bound; })));
    }
    bucket.back().second = "+Inf";
    w.Sample(family + "_bucket", bucket, static_cast<std::int64_t>(values.size()));
    double sum = 0;
    for (double v : values) sum += v;
    w.Exact(family + "_sum", labels, sum);
    w.Sample(family + "_count", labels, static_cast<std::int64_t>(values.size()));
  }
}

// Issue 38 §4: every Ticket's outcome and what it cost, labelled by rule, executor and outcome.
// The families are always there (HELP and TYPE), so an alert or a dashboard finds them before the
// first Ticket.
// Counters and histograms only grow, so they count a Ticket once its outcome is settled (merged,
// closed, answered, stopped, ended); Tickets still at work (live, pr_open) are a gauge, as their
// outcome will move.
void TicketOutcomes(Writer& w, const std::vector<TicketOutcome>& all) {
  auto labels = [](const TicketOutcome& t) {
    return Labels{{"rule", t.rule}, {"executor", t.executor}, {"outcome", t.outcome},
                  {"repo", t.repo.empty() ? "none" : t.repo}};
  };
  std::vector<TicketOutcome> tickets;
  std::map<Labels, std::int64_t> counts, unsettled;
  for (const TicketOutcome& t : all) {
    if (t.outcome == "live" || t.outcome == "pr_open") {
      ++unsettled[labels(t)];
      continue;
    }
    ++counts[labels(t)];
    tickets.push_back(t);
  }
  w.Family("superagent_ticket_outcomes_total", "counter",
           "Tickets by rule, executor of their first turn, settled outcome (merged, closed, answered, stopped, "
           "ended) and repository.");
  for (const auto& [l, n] : counts) w.Sample("superagent_ticket_outcomes_total", l, n);
  w.Family("superagent_tickets_unsettled", "gauge",
           "Tickets whose outcome is not settled yet, by rule, executor, outcome (live, pr_open) and repository.");
  for (const auto& [l, n] : unsettled) w.Sample("superagent_tickets_unsettled", l, n);

  // The Tickets where a moment happened, each observed once with its seconds.
  auto seconds = [&](std::optional<double> TicketOutcome::*moment) {
    Observations o;
    for (const TicketOutcome& t : tickets)
      if (t.*moment) o.emplace_back(labels(t), *(t.*moment));
    return o;
  };
  // Every Ticket, observed once with `figure` of it.
  auto every = [&](auto figure) {
    Observations o;
    for (const TicketOutcome& t : tickets) o.emplace_back(labels(t), static_cast<double>(figure(t)));
    return o;
  };
  static const std::vector<double> kSeconds = {1, 5, 15, 30, 60, 300, 900, 1800, 3600, 14400, 86400, 604800};
  Histogram(w, "superagent_ticket_acknowledgement_seconds", "Seconds from a Ticket's request to its acknowledgement.",
            kSeconds, seconds(&TicketOutcome::seconds_to_acknowledgement));
  Histogram(w, "superagent_ticket_first_commit_seconds", "Seconds from a Ticket's request to its first commit.",
            kSeconds, seconds(&TicketOutcome::seconds_to_first_commit));
  Histogram(w, "superagent_ticket_pull_request_seconds", "Seconds from a Ticket's request to its first pull request.",
            kSeconds, seconds(&TicketOutcome::seconds_to_pull_request));
  Histogram(w, "superagent_ticket_merge_seconds", "Seconds from a Ticket's request to its first merged pull request.",
            kSeconds, seconds(&TicketOutcome::seconds_to_merge));
  Histogram(w, "superagent_ticket_turns", "Turns a Ticket took.", {1, 2, 3, 5, 10, 20, 40},
            every([](const TicketOutcome& t) { return t.turns; }));
  Histogram(w, "superagent_ticket_tokens", "Model tokens a Ticket's turns used.", {1e3, 1e4, 1e5, 3e5, 1e6, 3e6, 1e7},
            every([](const TicketOutcome& t) { return t.tokens; }));
  Histogram(w, "superagent_ticket_cost_usd", "What a Ticket's model calls cost, in US dollars.",
            {0.01, 0.1, 0.5, 1, 2, 5, 10, 50}, every([](const TicketOutcome& t) { return t.cost_usd; }));
  Histogram(w, "superagent_ticket_person_asks", "Questions a Ticket put to a person.", {0, 1, 2, 3, 5, 10},
            every([](const TicketOutcome& t) { return t.person_asks; }));
}

// Each rule's (and explicit-request path's) verdicts and precision over the judgement window, in
// PrecisionByRule's order.
void RulePrecisions(Writer& w, const std::vector<RulePrecision>& rules) {
  // Gauges: the window moves, so these figures go down as well as up.
  w.Family("superagent_rule_verdicts", "gauge",
           "Decisions each rule (or explicit:<admission> path) matched in the judgement window, by verdict: yes, no, "
           "unknown, or unanswered.");
  for (const RulePrecision& r : rules) {
    w.Sample("superagent_rule_verdicts", Labels{{"rule", r.rule}, {"verdict", "yes"}}, std::int64_t{r.yes});
    w.Sample("superagent_rule_verdicts", Labels{{"rule", r.rule}, {"verdict", "no"}}, std::int64_t{r.no});
    w.Sample("superagent_rule_verdicts", Labels{{"rule", r.rule}, {"verdict", "unknown"}}, std::int64_t{r.unknown});
    w.Sample("superagent_rule_verdicts", Labels{{"rule", r.rule}, {"verdict", "unanswered"}},
             std::int64_t{r.unanswered});
  }
  w.Family("superagent_rule_precision_lower_bound", "gauge",
           "Lower bound of the 95 % Wilson interval of a rule's precision, yes / (yes + no); 0 with no answers.");
  for (const RulePrecision& r : rules)
    w.Sample("superagent_rule_precision_lower_bound", Labels{{"rule", r.rule}}, r.lower_bound);
  w.Family("superagent_rule_missed", "gauge",
           "Explicit requests that came soon after the daemon declined under a rule (missed) in the judgement window.");
  for (const RulePrecision& r : rules)
    w.Sample("superagent_rule_missed", Labels{{"rule", r.rule}}, std::int64_t{r.missed});
}

}  // namespace

std::string RenderPrometheus(const Snapshot& s) {
  Writer w;
  using L = std::vector<std::pair<std::string, std::string>>;
  w.Family("superagent_info", "gauge", "Build and policy in force (always 1).");
  w.Sample("superagent_info", L{{"version", s.version}, {"mode", s.mode}}, std::int64_t{1});
  w.Family("superagent_policy_version", "gauge", "Version of the policy in force.");
  w.Sample("superagent_policy_version", L{}, s.policy_version);

  w.Family("superagent_triggers_total", "counter", "Triggers received, by Source and intake outcome.");
  for (const auto& [key, n] : s.triggers)
    w.Sample("superagent_triggers_total", L{{"source", key.first}, {"outcome", key.second}}, n);
  w.Family("superagent_decisions_total", "counter", "Decisions recorded, by outcome.");
  for (const char* o : {"accept", "ignore", "stop", "unavailable"}) {
    auto it = s.decisions.find(o);
    w.Sample("superagent_decisions_total", L{{"outcome", o}}, it == s.decisions.end() ? 0 : it->second);
  }
  w.Family("superagent_decisions_would_accept_total", "counter",
           "Ignore decisions that would have accepted in auto mode (observe review).");
  w.Sample("superagent_decisions_would_accept_total", L{}, s.would_accept);
  w.Family("superagent_eval_queue", "gauge", "Triggers waiting for an Eval.");
  w.Sample("superagent_eval_queue", L{}, s.eval_queue);

  w.Family("superagent_tickets", "gauge", "Tickets by stage.");
  for (Stage st : {Stage::kWorking, Stage::kIdle, Stage::kWaitingForPerson, Stage::kReady, Stage::kBlocked,
                   Stage::kEnded}) {
    auto it = s.tickets.find(StageName(st));
    w.Sample("superagent_tickets", L{{"stage", StageName(st)}}, it == s.tickets.end() ? 0 : it->second);
  }
  w.Family("superagent_slots_configured", "gauge", "Worker slots configured (one more is reserved for people).");
  w.Sample("superagent_slots_configured", L{}, std::int64_t{s.slots_configured});
  w.Family("superagent_slots_busy", "gauge", "Worker slots in use (turns running, or background jobs holding them).");
  w.Sample("superagent_slots_busy", L{}, s.slots_busy);
  if (s.reserved_slot_busy) {
    w.Family("superagent_reserved_slot_busy", "gauge", "1 while a person's message uses the slot kept for people.");
    w.Sample("superagent_reserved_slot_busy", L{}, std::int64_t{*s.reserved_slot_busy ? 1 : 0});
  }

  w.Family("superagent_effects", "gauge", "Outbox effects not yet done, by state.");
  w.Sample("superagent_effects", L{{"state", "pending"}}, s.effects_pending);
  w.Sample("superagent_effects", L{{"state", "in_flight"}}, s.effects_in_flight);
  w.Sample("superagent_effects", L{{"state", "failed"}}, s.effects_failed);
  w.Family("superagent_system_problems", "gauge", "System problems currently raised (panel: what needs me).");
  w.Sample("superagent_system_problems", L{}, s.system_problems);
  w.Family("superagent_set_aside_items", "gauge", "Poison items set aside until a person retries them, by kind.");
  for (const char* kind : {kQuarantineEffect, kQuarantineEval, kQuarantineTurn}) {
    auto it = s.set_aside.find(kind);
    w.Sample("superagent_set_aside_items", L{{"kind", kind}}, it == s.set_aside.end() ? std::int64_t{0} : it->second);
  }

  w.Family("superagent_source_consecutive_failures", "gauge", "Consecutive failures of a Source's read path.");
  for (const SourceHealth& h : s.sources)
    w.Sample("superagent_source_consecutive_failures", L{{"source", h.source}, {"path", h.path}},
             std::int64_t{h.consecutive_failures});
  w.Family("superagent_source_last_success_timestamp_seconds", "gauge", "When a Source's read path last succeeded.");
  for (const SourceHealth& h : s.sources)
    if (h.last_success_at)
      w.Sample("superagent_source_last_success_timestamp_seconds", L{{"source", h.source}, {"path", h.path}},
               static_cast<double>(*h.last_success_at) / 1000.0);
  w.Family("superagent_source_skipped_items_total", "counter", "Malformed items a Source skipped.");
  for (const SourceHealth& h : s.sources)
    w.Sample("superagent_source_skipped_items_total", L{{"source", h.source}, {"path", h.path}}, h.skipped_items);

  w.Family("superagent_source_poll_seconds", "summary", "Duration of whole polling rounds since the process started.");
  for (const auto& [source, r] : s.rounds) {
    w.Sample("superagent_source_poll_seconds_sum", L{{"source", source}}, r.seconds_sum);
    w.Sample("superagent_source_poll_seconds_count", L{{"source", source}}, r.rounds);
  }
  w.Family("superagent_source_poll_last_seconds", "gauge", "Duration of the last polling round.");
  for (const auto& [source, r] : s.rounds) w.Sample("superagent_source_poll_last_seconds", L{{"source", source}}, r.last_seconds);
  w.Family("superagent_source_poll_failures_total", "counter", "Polling rounds with at least one failed path.");
  for (const auto& [source, r] : s.rounds) w.Sample("superagent_source_poll_failures_total", L{{"source", source}}, r.failed);

  w.Family("superagent_webhook_refused_total", "counter",
           "Webhook deliveries refused for a bad or missing signature, timestamp, token or encryption.");
  for (const auto& [hook, n] : s.webhook_refused) w.Sample("superagent_webhook_refused_total", L{{"hook", hook}}, n);

  w.Family("superagent_model_gateway_refused_total", "counter",
           "Model calls of coding CLIs the model gateway refused, by reason (pass, budget, path, upstream).");
  for (const auto& [reason, n] : s.gateway_refused)
    w.Sample("superagent_model_gateway_refused_total", L{{"reason", reason}}, n);

  if (s.worker_pool) {
    // Every executor the pool knows, in all three families: a series that drops out when its
    // queue drains would read as "no data" to an alert or an autoscaler, not as 0.
    const Snapshot::WorkerPool& p = *s.worker_pool;
    std::set<std::string> executors;
    for (const auto* m : {&p.queued, &p.running, &p.free_slots})
      for (const auto& [executor, n] : *m) executors.insert(executor);
    auto of = [](const std::map<std::string, std::int64_t>& m, const std::string& executor) {
      auto it = m.find(executor);
      return it == m.end() ? std::int64_t{0} : it->second;
    };
    w.Family("superagent_worker_turns_queued", "gauge",
             "Turns waiting for a remote worker to claim them, by executor.");
    for (const std::string& executor : executors)
      w.Sample("superagent_worker_turns_queued", L{{"executor", executor}}, of(p.queued, executor));
    w.Family("superagent_worker_turns_running", "gauge", "Turns leased to a remote worker now, by executor.");
    for (const std::string& executor : executors)
      w.Sample("superagent_worker_turns_running", L{{"executor", executor}}, of(p.running, executor));
    w.Family("superagent_worker_slots_free", "gauge",
             "Free slots of the remote workers offering an executor (counted once per executor a worker offers).");
    for (const std::string& executor : executors)
      w.Sample("superagent_worker_slots_free", L{{"executor", executor}}, of(p.free_slots, executor));
    w.Family("superagent_workers_connected", "gauge",
             "Remote workers the pool knows (it forgets one silent for twice the lease time with no lease).");
    w.Sample("superagent_workers_connected", L{}, p.connected);
  }

  w.Family("superagent_secrets_redacted_total", "counter",
           "Occasions the outbound filter replaced a secret in what the daemon published, by path.");
  for (const auto& [path, n] : s.secrets_redacted) w.Sample("superagent_secrets_redacted_total", L{{"path", path}}, n);

  if (s.github_rate && s.github_rate->remaining >= 0) {
    w.Family("superagent_github_rate_limit_remaining", "gauge", "GitHub primary rate limit: requests left in this window.");
    w.Sample("superagent_github_rate_limit_remaining", L{}, s.github_rate->remaining);
    w.Family("superagent_github_rate_limit_limit", "gauge", "GitHub primary rate limit: requests per window.");
    w.Sample("superagent_github_rate_limit_limit", L{}, s.github_rate->limit);
    w.Family("superagent_github_rate_limit_reset_timestamp_seconds", "gauge", "When the GitHub rate-limit window resets.");
    w.Sample("superagent_github_rate_limit_reset_timestamp_seconds", L{}, static_cast<double>(s.github_rate->reset_at) / 1000.0);
  }

  w.Family("superagent_model_calls_total", "counter", "Successful model calls since the process started, by purpose.");
  for (const auto& [purpose, t] : s.model_tokens) w.Sample("superagent_model_calls_total", L{{"purpose", purpose}}, t.calls);
  w.Family("superagent_model_tokens_total", "counter", "Model tokens since the process started, by purpose and kind.");
  for (const auto& [purpose, t] : s.model_tokens) {
    w.Sample("superagent_model_tokens_total", L{{"purpose", purpose}, {"kind", "prompt"}}, t.prompt);
    w.Sample("superagent_model_tokens_total", L{{"purpose", purpose}, {"kind", "completion"}}, t.completion);
    w.Sample("superagent_model_tokens_total", L{{"purpose", purpose}, {"kind", "cache_hit"}}, t.cache_hit);
  }

  TicketOutcomes(w, s.ticket_outcomes);
  RulePrecisions(w, s.rule_precision);
  return w.Take();
}

}  // namespace superagent::metrics

// Evals (SPEC §5): the Engine's side of judging, each step one transaction. BeginEval takes a
// Thread's due Triggers as one batch; FinishEval records the Decision — on accept with its Ticket,
// Mandate and acknowledgement; ExpireEvals and RecordEvalError requeue a batch with backoff (or end
// it `unavailable`, or set a poison Thread aside). What the outcome is, from the Gate and the
// Assessment, is decided in eval.cpp; this file only records it.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "core/engine_internal.h"
#include "core/ticket_stage.h"
#include "store/store.h"
#include "superagent/chat.h"
#include "superagent/engine.h"
#include "superagent/gate.h"
#include "superagent/github_threads.h"
#include "superagent/json_read.h"
#include "superagent/question.h"
#include "superagent/text.h"

namespace superagent {

using nlohmann::json;

namespace {

// An acknowledgement is never refused (that would lose the Decision): one that is too long is
// cut to the limit, visibly ("…"), and the log says so.
std::string WithinLimit(const std::string& channel, const std::string& body, const EngineOptions& o) {
  const std::string why = TooLong(channel, body, o);
  if (why.empty()) return body;
  spdlog::warn("acknowledgement cut to the limit channel={} reason=\"{}\"", channel, why);
  return CutToLimit(channel, body, o);
}

// The Eval retry schedule: eval_backoff_ms doubled per attempt, capped.
TimeMs EvalRetryDelay(const EngineOptions& o, int attempts) {
  return DoublingDelay(o.eval_backoff_ms, attempts - 1, o.eval_backoff_max_ms);
}

// What a person hears when their request could not be judged: the daemon's words, never the
// model's or the transport's (those are on the panel and in the log).
std::string UnableWords(const std::string& why) {
  return "I could not take this request: " + why +
         ". Mention me here again to retry; the maintainers see it on the panel too.";
}

// Issue 37: the repositories a new Mandate may change, in merge order, and whether its asker is
// asked which one to work in.
struct MandateRepos {
  std::vector<std::string> repos;
  // A chat of several repositories (feishu.chat_repos) and a request naming none: the Mandate may
  // change any of them; an explicit request's asker is asked which, inferred work takes the first.
  bool choose = false;
  // Served repositories the request named that it may not change, each with why ("acme/infra
  // (its mode is off)"): said in the acknowledgement, so the asker hears it, not only the log.
  std::vector<std::string> passed_over;
};

// A person's request (explicit) names them ("owner/name" or a GitHub address) — only repositories
// this daemon serves, whose mode is not off, that do not keep their own people list without the
// asker on it, and, in a chat listed in feishu.chat_repos, only that chat's: a name cannot reach a
// repository the team did not connect, turned off or kept to others. A rule relates a set, which
// counts when the request's repository is in it. The request's own repository goes first unless
// the request placed it; a list of it alone is none.
MandateRepos MandateRepositories(const Policy& policy, const EngineOptions& o, const Trigger& request,
                                 Strength strength, const std::vector<std::string>& matched_rules) {
  const std::string home = Policy::RepositoryOf(request);
  const std::vector<std::string>* chat = nullptr;
  if (home.empty())
    if (auto it = o.chat_repositories.find(json_read::StringOr(request.meta, "chat_id")); it != o.chat_repositories.end())
      chat = &it->second;
  const std::string thread = request.threads.empty() ? "" : request.threads.front();
  MandateRepos out;
  std::vector<std::string>& repos = out.repos;
  auto add = [&](const std::string& repo) {
    if (repos.size() < kMaxRuleRepositories && std::find(repos.begin(), repos.end(), repo) == repos.end())
      repos.push_back(repo);
  };
  if (strength == Strength::kExplicit && o.serves_repository)
    for (const std::string& repo : github_threads::RepositoriesNamed(request.text, 4 * kMaxRuleRepositories)) {
      if (!o.serves_repository(repo)) continue;
      if (chat != nullptr && std::find(chat->begin(), chat->end(), repo) == chat->end()) {
        spdlog::info("repository named outside its chat's list repo={} thread={}", repo, thread);
        out.passed_over.push_back(repo + " (not one of this chat's)");
        continue;
      }
      if (policy.ModeIn(repo) == Mode::kOff) {
        spdlog::info("repository named but off repo={} thread={}", repo, thread);
        out.passed_over.push_back(repo + " (its mode is off)");
        continue;
      }
      // A repository with its own people list admits only them there, whoever asks elsewhere:
      // naming it must not be a way around it (a chat's sender is no GitHub person at all).
      if (auto own = policy.repos.find(repo); repo != home && own != policy.repos.end() && own->second.github &&
                                              (request.source != "github" || !request.actor ||
                                               !own->second.github->IsPerson(*request.actor))) {
        spdlog::info("repository named but the asker is not among its people repo={} thread={}", repo, thread);
        out.passed_over.push_back(repo + " (you are not among its people)");
        continue;
      }
      add(repo);
    }
  for (const std::string& name : matched_rules) {
    const Rule* rule = policy.FindRule(name);
    if (rule == nullptr || home.empty() || std::find(rule->repos.begin(), rule->repos.end(), home) == rule->repos.end())
      continue;
    for (const std::string& repo : rule->repos) add(repo);
  }
  if (!home.empty() && !repos.empty() && std::find(repos.begin(), repos.end(), home) == repos.end()) {
    if (repos.size() == kMaxRuleRepositories) repos.pop_back();
    repos.insert(repos.begin(), home);
  }
  if (repos.size() == 1 && repos.front() == home) repos.clear();
  if (repos.empty() && chat != nullptr) {
    for (const std::string& repo : *chat) add(repo);
    out.choose = repos.size() > 1;
  }
  return out;
}

}  // namespace

Status Engine::TellUnableLocked(const std::string& thread, const std::vector<std::int64_t>& batch, const std::string& why,
                                TimeMs now) {
  ASSIGN_OR_RETURN(auto channel, store_->ThreadChannel(thread));
  if (!channel) return Status::Ok();  // nowhere to say it: the panel's "Not answered" card names it
  for (std::int64_t seq : batch) {
    ASSIGN_OR_RETURN(auto rec, store_->FindTriggerBySeq(seq));
    if (!rec || !rec->trigger.human || !rec->trigger.addressed) continue;
    // Only who may ask is owed the answer; the Gate decides that, as it would have.
    if (EvaluateGate(policy_, rec->trigger, false).strength != Strength::kExplicit) continue;
    RETURN_IF_ERROR(SendLocked({"unable:trigger:" + Num(seq), std::nullopt, thread, MessageKind::kAnswer,
                                CutToLimit(*channel, UnableWords(why), options_)},
                               now));
    spdlog::info("request not taken, told trigger={} thread={} why=\"{}\"", rec->trigger.id, thread, why);
  }
  return Status::Ok();
}

Status Engine::TellNotAllowedLocked(const std::string& thread, const Trigger& t, TimeMs now) {
  auto src = policy_.sources.find(t.source);
  if (src == policy_.sources.end() || !src->second.tell_others || !t.human || !t.addressed || !t.actor) return Status::Ok();
  ASSIGN_OR_RETURN(auto channel, store_->ThreadChannel(thread));
  if (!channel) return Status::Ok();
  // One line a day per person and Source: the receipt id is the rate limit (a repeated id is
  // ignored), so a person who keeps asking is not answered every time.
  const std::string id = "not-allowed:" + t.source + ":" + text::Cut(*t.actor, 80) + ":" + Num(now / 86'400'000);
  return SendLocked({id, std::nullopt, thread, MessageKind::kAnswer,
                     CutToLimit(*channel,
                                "I can't take requests from you here: this team's policy names who may ask me for work. "
                                "A maintainer can add you.",
                                options_)},
                    now);
}

Result<std::optional<EvalJob>> Engine::BeginEval() {
  MutexLock lock(&mu_);
  const TimeMs now = clock_->NowMs();
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  ASSIGN_OR_RETURN(auto thread, store_->NextDueThread(now));
  if (!thread) return std::optional<EvalJob>();
  auto eval = store_->InsertEval(*thread, policy_version_, now, now + options_.eval_timeout_ms);
  if (!eval.ok()) return eval.status();
  RETURN_IF_ERROR(store_->ClaimBatch(*eval, *thread, now));

  EvalJob job;
  job.id = *eval;
  job.thread = *thread;
  job.policy_version = policy_version_;
  job.policy = policy_;
  ASSIGN_OR_RETURN(auto queued, store_->Batch(*eval));
  for (const store::QueueRow& row : queued) {
    ASSIGN_OR_RETURN(auto rec, store_->FindTriggerBySeq(row.seq));
    if (!rec) return Status::Internal("queued trigger " + std::to_string(row.seq) + " is missing");
    Candidate c;
    c.seq = row.seq;
    c.trigger = rec->trigger;
    c.handback = row.handback.empty() ? json(nullptr) : json::parse(row.handback, nullptr, false);
    job.batch.push_back(std::move(c));
  }
  ASSIGN_OR_RETURN(job.history, store_->ThreadHistory(*thread, options_.history_limit));
  ASSIGN_OR_RETURN(auto subscribed, store_->SubscribedTickets({*thread}));
  for (TicketId id : subscribed) {
    ASSIGN_OR_RETURN(auto tk, store_->GetTicket(id));
    ASSIGN_OR_RETURN(auto m, store_->MandateForTicket(id));
    if (tk) job.tickets.push_back({id, tk->stage, tk->scope, m && m->ended_as.empty()});
  }
  RETURN_IF_ERROR(tx->Commit());
  spdlog::debug("eval started id={} thread={} batch={}", job.id, job.thread, job.batch.size());
  return std::optional<EvalJob>(std::move(job));
}

Result<FinishResult> Engine::FinishEval(EvalId eval_id, const EvalOutcome& out) {
  MutexLock lock(&mu_);
  const TimeMs now = clock_->NowMs();
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  ASSIGN_OR_RETURN(auto eval, store_->GetEval(eval_id));
  if (!eval) return Status::NotFound("eval " + std::to_string(eval_id) + " does not exist");
  if (eval->status != "running")
    return Status::Conflict("eval " + std::to_string(eval_id) + " is " + eval->status + "; its outcome is dropped");

  ASSIGN_OR_RETURN(std::vector<store::QueueRow> batch, store_->Batch(eval_id));
  for (const Candidate& c : out.gated)
    RETURN_IF_ERROR(store_->InsertGateRow({eval_id, c.seq, StrengthName(c.gate.strength), c.gate.reason, c.gate.candidate}));

  FinishResult result;
  Decision d;
  d.eval = eval_id;
  d.thread = eval->thread;
  d.outcome = out.outcome;
  d.would_accept = out.would_accept;
  d.strength = out.strength;
  d.reason = out.reason;
  d.assessment = out.assessment ? AssessmentToJson(*out.assessment) : json(nullptr);
  if (d.assessment.is_object() && !out.checks.is_null()) d.assessment["checks"] = out.checks;
  d.policy_version = eval->policy_version;
  d.created_at = now;

  // Which Ticket does this Decision concern? Computed before the Decision row is written.
  std::optional<TicketId> attach;
  if (out.outcome == DecisionOutcome::kAccept) {
    ASSIGN_OR_RETURN(auto existing, store_->TicketByOrigin(out.request_seq));
    if (existing) {
      attach = *existing;  // the same Trigger accepted twice still yields one Ticket
    } else if (out.related_ticket) {
      ASSIGN_OR_RETURN(auto tk, store_->GetTicket(*out.related_ticket));
      ASSIGN_OR_RETURN(auto m, store_->MandateForTicket(*out.related_ticket));
      if (tk && tk->open() && m && m->ended_as.empty()) attach = tk->id;
    }
  }

  ASSIGN_OR_RETURN(auto request, store_->FindTriggerBySeq(out.request_seq));
  TicketId new_ticket = 0;
  std::string held_why, held_as;  // logged once the hold is committed: a person tailing reads what is true
  if (out.outcome == DecisionOutcome::kAccept && !attach) {
    if (!request) return Status::InvalidArgument("accept names request trigger " + std::to_string(out.request_seq) + " which does not exist");
    // Decision first (the Ticket references it), then Ticket, Mandate, Subscriptions, ack.
    auto did = store_->InsertDecision(d);
    if (!did.ok()) return did.status();
    result.decision_id = *did;
    Ticket tk;
    tk.thread = eval->thread;
    tk.stage = Stage::kIdle;
    tk.scope = text::Repair(out.scope.empty() ? text::FirstLine(request->trigger.text, 120) : out.scope);
    tk.decision_id = *did;
    tk.created_at = tk.updated_at = now;
    auto tid = store_->InsertTicket(tk, out.request_seq);
    if (!tid.ok()) return tid.status();
    new_ticket = *tid;
    RETURN_IF_ERROR(store_->InsertTicketEvent(new_ticket, now, std::nullopt, Stage::kIdle, "accepted"));
    Mandate m;
    m.ticket = new_ticket;
    m.policy_version = eval->policy_version;
    m.scope = tk.scope;
    m.strength = out.strength;
    m.matched_rules = out.matched_rules;
    m.source = request->trigger.source;
    m.sender = request->trigger.actor;
    m.admission = out.admission;
    m.origin_trigger_seq = out.request_seq;
    m.created_at = now;
    m.budget = policy_.budgets.For(out.strength);
    const MandateRepos repos = MandateRepositories(policy_, options_, request->trigger, out.strength, out.matched_rules);
    m.repos = repos.repos;
    // Counted before this Mandate is written: the limit is how many may start unasked.
    ASSIGN_OR_RETURN(std::string held, CircuitBreakerLocked(m, now));
    const char* held_by = "the circuit breaker";
    if (held.empty()) {
      ASSIGN_OR_RETURN(held, DemotedLocked(m, now));
      held_by = "judgement";
    }
    auto mid = store_->InsertMandate(m);
    if (!mid.ok()) return mid.status();
    attach = new_ticket;
    ASSIGN_OR_RETURN(auto channel, store_->ThreadChannel(eval->thread));
    const std::string ack_channel = channel.value_or(request->trigger.channel);
    // Work across repositories says where, so a misread name is caught before the work is done.
    std::string where = m.repos.empty() || repos.choose ? "" : " (in " + text::Join(m.repos, ", ") + ")";
    if (!repos.passed_over.empty()) where += " Not in " + text::Join(repos.passed_over, ", ") + ".";
    // Which of its chat's repositories: an explicit request's asker says, before any work.
    const bool ask_which = repos.choose && out.strength == Strength::kExplicit && request->trigger.actor;
    const std::string ack =
        out.silent ? std::string()
                   : WithinLimit(ack_channel,
                                 text::Repair(out.acknowledgement.empty() ? "On it: " + tk.scope + where
                                                                          : out.acknowledgement + where),
                                 options_);
    if (repos.choose && !ask_which)
      RETURN_IF_ERROR(store_->ChooseRepository(new_ticket, m.repos.front(), "the daemon (inferred work)", now));
    if (!held.empty()) {
      tk.id = new_ticket;
      RETURN_IF_ERROR(HoldLocked(&tk, held_by, held, ack, now, ask_which ? *request->trigger.actor : ""));
      held_why = held;
      held_as = held_by;
    } else if (ask_which) {
      // The question is the acknowledgement: one message, and the work starts with its answer.
      tk.id = new_ticket;
      RETURN_IF_ERROR(AskRepositoryLocked(&tk, *request->trigger.actor, m.repos, now));
    } else {
      auto aid = store_->InsertAssignment(new_ticket, "worker", "accepted", now);
      if (!aid.ok()) return aid.status();
    }
    if (!ack.empty() && held.empty() && !ask_which) {
      Receipt r;
      r.id = "ack:ticket:" + std::to_string(new_ticket);
      r.ticket = new_ticket;
      r.thread = eval->thread;
      r.channel = ack_channel;
      r.kind = MessageKind::kAcknowledgement;
      r.body = ack;
      r.created_at = now;
      auto inserted = store_->InsertReceipt(r);
      if (!inserted.ok()) return inserted.status();
      if (*inserted) RETURN_IF_ERROR(store_->InsertEffect(r.id, "post_message", json{{"receipt", r.id}}.dump(), now));
    }
  } else {
    d.ticket = attach;
    auto did = store_->InsertDecision(d);
    if (!did.ok()) return did.status();
    result.decision_id = *did;
  }

  if (attach) {
    // Subscriptions: every Thread the batch touched; the batch becomes the Ticket's input.
    result.ticket = attach;
    for (const store::QueueRow& row : batch) {
      ASSIGN_OR_RETURN(auto threads, store_->TriggerThreads(row.seq));
      for (const std::string& th : threads) RETURN_IF_ERROR(store_->Subscribe(th, *attach, now));
      ASSIGN_OR_RETURN(auto message, store_->FindTriggerBySeq(row.seq));
      TicketInput in;
      in.ticket = *attach;
      in.kind = "trigger";
      in.trigger_seq = row.seq;
      in.body = json{{"request", row.seq == out.request_seq}};
      in.state = "pending";
      in.created_at = now;
      in.from_person = message && message->trigger.human && message->trigger.scope != "ci";
      if (*attach != new_ticket && message) {  // an existing Ticket: older messages are context
        ASSIGN_OR_RETURN(auto mandate, store_->MandateForTicket(*attach));
        if (mandate) {
          ASSIGN_OR_RETURN(const bool older, OlderThanRequest(store_.get(), *mandate, message->trigger.at));
          if (older) in.state = "context";
        }
      }
      auto id = store_->InsertInput(in);
      if (!id.ok()) return id.status();
    }
  }

  if (out.outcome == DecisionOutcome::kStop) {
    std::vector<TicketId> targets;
    if (out.related_ticket) targets.push_back(*out.related_ticket);
    else {
      ASSIGN_OR_RETURN(targets, store_->SubscribedTickets({eval->thread}));
    }
    for (TicketId id : targets) {
      ASSIGN_OR_RETURN(auto tk, store_->GetTicket(id));
      if (!tk || !tk->open()) continue;
      tk->end_reason = "stopped in conversation";
      RETURN_IF_ERROR(ChangeStage(store_.get(), options_, &*tk, Stage::kEnded, StageCause::kStopped, "decision stop", now));
      RETURN_IF_ERROR(store_->EndAssignments(id, now));
      result.stopped.push_back(id);
    }
  }
  std::string verdict_note;
  if (out.verb == "verdict-yes" || out.verb == "verdict-no") {
    // Issue 38: the verdict goes on the newest Decision of this Thread still without one: what
    // observe mode would have done, or what a rule in auto did.
    ASSIGN_OR_RETURN(auto said_by, store_->FindTriggerBySeq(out.request_seq));
    const std::string who = said_by && said_by->trigger.actor ? *said_by->trigger.actor : "?";
    ASSIGN_OR_RETURN(auto pending, store_->NewestUnjudged(eval->thread));
    const Verdict verdict = out.verb == "verdict-yes" ? Verdict::kYes : Verdict::kNo;
    if (!pending) {
      verdict_note = "Nothing here waits for a verdict: no rule did, or would have done, anything on this thread "
                     "that has not been judged.";
    } else {
      ASSIGN_OR_RETURN(auto judged, store_->DecisionById(*pending));
      const bool done = judged && !judged->would_accept;
      ASSIGN_OR_RETURN(bool inserted, store_->InsertVerdict(*pending, VerdictName(verdict), who, "thread", now));
      verdict_note = !inserted ? "That already has a verdict."
                     : verdict == Verdict::kYes
                         ? std::string("Noted: that was a request. It counts for the rule that ") +
                               (done ? "took it." : "would have taken it.")
                     : done ? "Noted: not a request. It counts against the rule that took it; say stop if its work "
                              "should end."
                            : "Noted: not a request. It counts against the rule that would have taken it.";
      if (inserted)
        spdlog::info("verdict recorded decision={} thread={} verdict={} by=\"{}\" via=thread", *pending, eval->thread,
                     VerdictName(verdict), who);
    }
  }
  if (!out.verb.empty())
    RETURN_IF_ERROR(AnswerVerbLocked(eval_id, eval->thread, out.verb, result.stopped, now, verdict_note));

  if (out.outcome == DecisionOutcome::kIgnore)
    for (const Candidate& c : out.gated)
      if (c.gate.reason == "ignored:others_addressed") RETURN_IF_ERROR(TellNotAllowedLocked(eval->thread, c.trigger, now));

  const int attempts = batch.empty() ? 0 : batch.front().attempts + 1;
  if (out.outcome == DecisionOutcome::kUnavailable && out.retry && attempts < options_.eval_max_attempts) {
    const TimeMs delay = EvalRetryDelay(options_, attempts);
    RETURN_IF_ERROR(store_->ReleaseBatch(eval_id, now + delay, 1));
    result.requeued = true;
  } else {
    RETURN_IF_ERROR(store_->DequeueBatch(eval_id));
    if (out.outcome == DecisionOutcome::kUnavailable) {
      std::vector<std::int64_t> seqs;
      for (const store::QueueRow& row : batch) seqs.push_back(row.seq);
      RETURN_IF_ERROR(TellUnableLocked(eval->thread, seqs,
                                       "the model I read requests with did not give a usable answer (" + Num(attempts) +
                                           (attempts == 1 ? " attempt)" : " attempts)"),
                                       now));
    }
  }
  RETURN_IF_ERROR(store_->SetEvalStatus(eval_id, "done", now));
  RETURN_IF_ERROR(ClearedLocked(kQuarantineEval, eval->thread));  // an Eval finished: the Thread is not poison
  RETURN_IF_ERROR(tx->Commit());
  spdlog::info("decision eval={} thread={} outcome={}{} strength={} reason=\"{}\"{}", eval_id, eval->thread,
               DecisionOutcomeName(out.outcome), out.would_accept ? " would_accept=true" : "",
               StrengthName(out.strength), out.reason,
               result.ticket ? " ticket=" + std::to_string(*result.ticket) : std::string());
  if (!held_why.empty())
    spdlog::warn("ticket held ticket={} thread={} by=\"{}\" why=\"{}\"", new_ticket, eval->thread, held_as, held_why);
  return result;
}

Result<int> Engine::ExpireEvals() {
  MutexLock lock(&mu_);
  const TimeMs now = clock_->NowMs();
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  int expired = 0;
  ASSIGN_OR_RETURN(auto running, store_->RunningEvals());
  for (const store::EvalRow& e : running) {
    if (e.deadline_at > now) continue;
    ++expired;
    ASSIGN_OR_RETURN(std::vector<store::QueueRow> batch, store_->Batch(e.id));
    const int attempts = batch.empty() ? 0 : batch.front().attempts + 1;
    RETURN_IF_ERROR(store_->SetEvalStatus(e.id, "timed_out", now));
    if (attempts < options_.eval_max_attempts) {
      const TimeMs delay = EvalRetryDelay(options_, attempts);
      RETURN_IF_ERROR(store_->ReleaseBatch(e.id, now + delay, 1));
      spdlog::warn("eval timed out id={} thread={} attempt={} requeued=true", e.id, e.thread, attempts);
    } else {
      Decision d;
      d.eval = e.id;
      d.thread = e.thread;
      d.outcome = DecisionOutcome::kUnavailable;
      d.reason = "eval timed out " + std::to_string(attempts) + (attempts == 1 ? " time" : " times");
      d.policy_version = e.policy_version;
      d.created_at = now;
      auto did = store_->InsertDecision(d);
      if (!did.ok()) return did.status();
      RETURN_IF_ERROR(store_->DequeueBatch(e.id));
      std::vector<std::int64_t> seqs;
      for (const store::QueueRow& row : batch) seqs.push_back(row.seq);
      RETURN_IF_ERROR(TellUnableLocked(e.thread, seqs,
                                       "reading it timed out " + Num(attempts) + (attempts == 1 ? " time" : " times"), now));
      spdlog::warn("eval timed out id={} thread={} attempt={} outcome=unavailable", e.id, e.thread, attempts);
    }
  }
  RETURN_IF_ERROR(tx->Commit());
  return expired;
}

Status Engine::RecordEvalError(EvalId eval_id, const std::string& error) {
  MutexLock lock(&mu_);
  const TimeMs now = clock_->NowMs();
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  ASSIGN_OR_RETURN(auto e, store_->GetEval(eval_id));
  if (!e) return Status::NotFound("eval " + std::to_string(eval_id) + " does not exist");
  if (e->status != "running") return Status::Conflict("eval " + std::to_string(eval_id) + " is " + e->status);
  ASSIGN_OR_RETURN(std::vector<store::QueueRow> batch, store_->Batch(eval_id));
  const int attempts = batch.empty() ? 0 : batch.front().attempts + 1;
  // Each Trigger's story shows the attempt and why it was not judged.
  for (const store::QueueRow& row : batch)
    RETURN_IF_ERROR(store_->InsertGateRow({eval_id, row.seq, StrengthName(Strength::kNone), "not judged: " + error, false}));
  RETURN_IF_ERROR(store_->SetEvalStatus(eval_id, "discarded", now));
  auto q = ChargeLocked(kQuarantineEval, e->thread, error, false, now);
  if (!q.ok()) return q.status();
  if (DueForQuarantine(*q)) {
    // Queued, not judged: the Thread waits for a person's Retry; other Threads go on.
    RETURN_IF_ERROR(store_->ReleaseBatch(eval_id, now, 1));
    RETURN_IF_ERROR(SetAsideLocked(*q, now));
  } else if (attempts < options_.eval_max_attempts) {
    RETURN_IF_ERROR(store_->ReleaseBatch(eval_id, now + EvalRetryDelay(options_, attempts), 1));
    spdlog::warn("eval failed id={} thread={} attempt={} requeued=true error=\"{}\"", eval_id, e->thread, attempts, error);
  } else {
    Decision d;
    d.eval = eval_id;
    d.thread = e->thread;
    d.outcome = DecisionOutcome::kUnavailable;
    d.reason = "eval failed " + std::to_string(attempts) + (attempts == 1 ? " time: " : " times: ") + error;
    d.policy_version = e->policy_version;
    d.created_at = now;
    auto did = store_->InsertDecision(d);
    if (!did.ok()) return did.status();
    RETURN_IF_ERROR(store_->DequeueBatch(eval_id));
    std::vector<std::int64_t> seqs;
    for (const store::QueueRow& row : batch) seqs.push_back(row.seq);
    RETURN_IF_ERROR(TellUnableLocked(e->thread, seqs,
                                     "reading it failed " + Num(attempts) + (attempts == 1 ? " time" : " times"), now));
    spdlog::warn("eval failed id={} thread={} attempt={} outcome=unavailable error=\"{}\"", eval_id, e->thread,
                 attempts, error);
  }
  return tx->Commit();
}

}  // namespace superagent

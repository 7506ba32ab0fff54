// The Engine: intake, fan-out, Eval bookkeeping, Ticket lifecycle and policy versions.
// Each public method is one transaction; the outside world is only ever told through the outbox.
#include "superagent/engine.h"

#include <algorithm>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "core/revalidate.h"
#include "core/logged_read.h"
#include "core/ticket_stage.h"
#include "store/store.h"
#include "superagent/chat.h"
#include "superagent/text.h"

namespace superagent {

using nlohmann::json;

namespace {

// The length rules of every message the Engine enqueues, in one place: SPEC §1's word limit for
// chats (counted by text::CountWords, so Chinese is bounded too) and GitHub's character cap
// (characters, not bytes: a Chinese comment is three times longer in UTF-8). "" when `body` may
// go to `channel`, else why not.
std::string TooLong(const std::string& channel, const std::string& body, const EngineOptions& o) {
  if (IsChat(channel)) {
    if (std::size_t words = text::CountWords(body); words > o.chat_word_limit)
      return "chat messages may have at most " + std::to_string(o.chat_word_limit) + " words; this one has " +
             std::to_string(words);
  } else if (channel.rfind("github", 0) == 0) {
    if (std::size_t chars = text::CountCodePoints(body); chars > o.github_char_limit)
      return "GitHub messages may have at most " + std::to_string(o.github_char_limit) + " characters; this one has " +
             std::to_string(chars);
  }
  return "";
}

// An acknowledgement is never refused (that would lose the Decision): one that is too long is
// cut to the limit, visibly ("…"), and the log says so.
std::string WithinLimit(const std::string& channel, const std::string& body, const EngineOptions& o) {
  if (TooLong(channel, body, o).empty()) return body;
  spdlog::warn("acknowledgement cut to the limit channel={} reason=\"{}\"", channel, TooLong(channel, body, o));
  return IsChat(channel) ? text::CutWords(body, o.chat_word_limit) : text::Cut(body, o.github_char_limit);
}

// What comes from outside (a Source, a process, a model) may be invalid UTF-8; the store and the
// panel hold only valid text (json's dump() throws on anything else), so it is repaired here.
Trigger Repaired(Trigger t) {
  for (std::string* s : {&t.id, &t.source, &t.scope, &t.text, &t.channel}) *s = text::Repair(*s);
  if (t.actor) t.actor = text::Repair(*t.actor);
  for (std::string& th : t.threads) th = text::Repair(th);
  text::RepairJson(&t.meta);
  return t;
}

// Whether a message sent at `at` is older than the request that made the Mandate's Ticket.
Result<bool> OlderThanRequest(store::Store* store, const Mandate& m, TimeMs at) {
  ASSIGN_OR_RETURN(auto origin, store->FindTriggerBySeq(m.origin_trigger_seq));
  return origin && at < origin->trigger.at;
}

// The Eval retry schedule: eval_backoff_ms doubled per attempt, capped.
TimeMs EvalRetryDelay(const EngineOptions& o, int attempts) {
  return std::min(o.eval_backoff_ms << std::min(attempts - 1, 20), o.eval_backoff_max_ms);
}

}  // namespace

Engine::Engine(std::unique_ptr<store::Store> store, Clock* clock, EngineOptions options)
    : store_(std::move(store)), clock_(clock), options_(options) {}

Engine::~Engine() = default;

Result<std::unique_ptr<Engine>> Engine::Open(const std::string& db_path, Clock* clock, const Policy& policy,
                                             const std::string& policy_origin, EngineOptions options) {
  auto store = store::Store::Open(db_path);
  if (!store.ok()) return store.status();
  std::unique_ptr<Engine> engine(new Engine(std::move(*store), clock, options));
  // Resume from the last stored version so a restart with an unchanged file makes no new version.
  ASSIGN_OR_RETURN(auto latest, engine->store_->LatestPolicyVersion());
  if (latest) {
    auto stored = PolicyFromJson(json::parse(latest->body, nullptr, false));
    if (stored.ok()) {
      engine->policy_ = *stored;
      engine->policy_version_ = latest->version;
    }
  }
  auto change = engine->ApplyPolicy(policy, policy_origin);
  if (!change.ok()) return change.status();
  return engine;
}

Result<std::unique_ptr<Engine>> Engine::OpenExisting(const std::string& db_path, Clock* clock,
                                                     EngineOptions options) {
  if (!std::filesystem::exists(db_path))
    return Status::NotFound("no database at " + db_path + " (has `superagent serve` run with this config?)");
  auto store = store::Store::Open(db_path);
  if (!store.ok()) return store.status();
  std::unique_ptr<Engine> engine(new Engine(std::move(*store), clock, options));
  ASSIGN_OR_RETURN(auto latest, engine->store_->LatestPolicyVersion());
  if (!latest) return Status::NotFound("the database at " + db_path + " has no policy version yet");
  auto stored = PolicyFromJson(json::parse(latest->body, nullptr, false));
  if (!stored.ok()) return stored.status();
  engine->policy_ = *stored;
  engine->policy_version_ = latest->version;
  return engine;
}

Policy Engine::CurrentPolicy() const {
  std::lock_guard<std::mutex> lock(mu_);
  return policy_;
}

std::int64_t Engine::PolicyVersion() const {
  std::lock_guard<std::mutex> lock(mu_);
  return policy_version_;
}

// ---------------------------------------------------------------------------------------------
// Intake

Result<IntakeResult> Engine::Receive(const Trigger& trigger, const std::string& via, const std::string& filter_reason,
                                     const SourceUpdate* with) {
  const Trigger t = Repaired(trigger);
  std::lock_guard<std::mutex> lock(mu_);
  if (t.id.empty() || t.threads.empty()) return Status::InvalidArgument("trigger needs an id and at least one thread");
  // A Trigger that would not read back (a chat message without a sender, say) must not be stored:
  // every later Eval of its Thread would fail on it.
  RETURN_IF_ERROR(ValidateTrigger(t));
  if (with && with->source.empty()) return Status::InvalidArgument("source update needs a source name");
  const TimeMs now = clock_->NowMs();
  IntakeResult result;
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  bool raised = false;
  if (with) {
    ASSIGN_OR_RETURN(raised, UpdateSourceLocked(*with, now));
  }
  ASSIGN_OR_RETURN(auto existing, store_->FindTrigger(t.id));
  if (existing) {
    result.outcome = IntakeOutcome::kDuplicate;
    if (!with) return result;  // nothing else happens; the transaction rolls back having written nothing
    RETURN_IF_ERROR(tx->Commit());
    LogSourceUpdate(*with, raised);
    return result;
  }

  TriggerRecord rec{0, t, via, now, filter_reason.empty() ? IntakeOutcome::kStored : IntakeOutcome::kFiltered,
                    filter_reason};
  auto seq = store_->InsertTrigger(rec);
  if (!seq.ok()) return seq.status();
  for (std::size_t i = 0; i < t.threads.size(); ++i) {
    RETURN_IF_ERROR(store_->UpsertThread(t.threads[i], t.source, t.channel, t.at));
    RETURN_IF_ERROR(store_->InsertTriggerThread(*seq, t.threads[i], static_cast<int>(i)));
  }
  if (!filter_reason.empty()) {
    RETURN_IF_ERROR(tx->Commit());
    if (with) LogSourceUpdate(*with, raised);
    result.outcome = IntakeOutcome::kFiltered;
    result.filter_reason = filter_reason;
    spdlog::info("trigger filtered id={} source={} reason={}", t.id, t.source, filter_reason);
    return result;
  }

  // Fan-out (SPEC §4.1). Follow-up ownership first: a Ticket waiting for exactly this person on
  // this Thread owns their next message there, and nobody else receives it.
  ASSIGN_OR_RETURN(std::vector<TicketId> subscribed, store_->SubscribedTickets(t.threads));
  std::vector<Ticket> tickets;
  for (TicketId id : subscribed) {
    ASSIGN_OR_RETURN(auto tk, store_->GetTicket(id));
    if (tk) tickets.push_back(*tk);
  }

  std::vector<TicketId> owners;
  if (t.human && t.actor) {
    for (const Ticket& tk : tickets) {
      if (tk.stage == Stage::kWaitingForPerson && tk.waiting && tk.waiting->actor == *t.actor &&
          std::find(t.threads.begin(), t.threads.end(), tk.waiting->thread) != t.threads.end())
        owners.push_back(tk.id);
    }
  }

  // Only a person's message (not a bot's, not CI's) may take the slot kept for people.
  const bool from_person = t.human && t.scope != "ci";
  auto deliver = [&](TicketId ticket, const char* kind, const char* state = "pending") -> Status {
    TicketInput in;
    in.ticket = ticket;
    in.kind = kind;
    in.trigger_seq = *seq;
    in.body = json{{"trigger_id", t.id}};
    in.state = state;
    in.created_at = now;
    in.from_person = from_person;
    auto id = store_->InsertInput(in);
    if (!id.ok()) return id.status();
    // A turn already queued for a bot's or CI's input becomes this person's (SPEC §6).
    if (from_person && in.state == "pending") RETURN_IF_ERROR(store_->PromoteQueuedUpdate(ticket));
    result.delivered_to.push_back(ticket);
    return Status::Ok();
  };

  if (!owners.empty()) {
    for (TicketId id : owners) {
      ASSIGN_OR_RETURN(auto owner, store_->GetTicket(id));
      if (!owner) return Status::Internal("ticket " + std::to_string(id) + " vanished during intake");
      Ticket tk = *owner;
      RETURN_IF_ERROR(deliver(id, "answer"));
      // Resumes: the scheduler gives it a slot.
      RETURN_IF_ERROR(ChangeStage(store_.get(), &tk, Stage::kIdle, StageCause::kAnswered, "answer from " + *t.actor, now));
      auto a = store_->InsertAssignment(id, "worker", "answer", now);
      if (!a.ok()) return a.status();
    }
  } else {
    for (Ticket& tk : tickets) {
      ASSIGN_OR_RETURN(auto mandate, store_->MandateForTicket(tk.id));
      if (!mandate || !mandate->ended_as.empty()) continue;  // stopped or revoked: receives nothing
      if (tk.open()) {
        // A message older than the Ticket's request (an issue's opening text that arrives by
        // polling after the webhook's mention was worked on) is context for its next turn, never
        // a reason for one: the work it could ask for was already asked for later.
        ASSIGN_OR_RETURN(const bool older, OlderThanRequest(store_.get(), *mandate, t.at));
        RETURN_IF_ERROR(deliver(tk.id, "trigger", older ? "context" : "pending"));
        continue;
      }
      // An ended Ticket: only a person's message resumes it in place, after revalidation; one
      // older than its request is context for a later resume, not a resume.
      if (!from_person) continue;
      ASSIGN_OR_RETURN(const bool older, OlderThanRequest(store_.get(), *mandate, t.at));
      if (older) {
        RETURN_IF_ERROR(deliver(tk.id, "trigger", "context"));
        continue;
      }
      ASSIGN_OR_RETURN(auto origin, store_->FindTriggerBySeq(mandate->origin_trigger_seq));
      std::string why_not = origin ? RevalidateMandate(*mandate, origin->trigger, policy_) : "origin trigger missing";
      if (!why_not.empty()) {
        RETURN_IF_ERROR(store_->EndMandate(mandate->id, "revoked", why_not, "revalidation", now));
        result.revoked.push_back(tk.id);
        spdlog::info("mandate revoked ticket={} reason=\"{}\"", tk.id, why_not);
        continue;
      }
      RETURN_IF_ERROR(deliver(tk.id, "resume"));
      RETURN_IF_ERROR(ChangeStage(store_.get(), &tk, Stage::kIdle, StageCause::kResumed,
                                  "resumed by " + t.actor.value_or("?"), now));
      auto a = store_->InsertAssignment(tk.id, "worker", "resume", now);
      if (!a.ok()) return a.status();
      result.resumed.push_back(tk.id);
    }
  }

  if (result.delivered_to.empty()) {
    RETURN_IF_ERROR(store_->Enqueue(*seq, t.threads.front(), now, now, 0, ""));
    result.queued_for_eval = true;
  }
  RETURN_IF_ERROR(tx->Commit());
  if (with) LogSourceUpdate(*with, raised);
  if (result.queued_for_eval && options_.on_eval_queued) options_.on_eval_queued();
  spdlog::info("trigger stored id={} source={} actor={} delivered={} eval={}", t.id, t.source,
               t.actor.value_or("-"), result.delivered_to.size(), result.queued_for_eval ? "queued" : "no");
  return result;
}

// ---------------------------------------------------------------------------------------------
// Eval

Result<std::optional<EvalJob>> Engine::BeginEval() {
  std::lock_guard<std::mutex> lock(mu_);
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
  std::lock_guard<std::mutex> lock(mu_);
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
    auto mid = store_->InsertMandate(m);
    if (!mid.ok()) return mid.status();
    auto aid = store_->InsertAssignment(new_ticket, "worker", "accepted", now);
    if (!aid.ok()) return aid.status();
    attach = new_ticket;
    if (!out.silent) {
      Receipt r;
      r.id = "ack:ticket:" + std::to_string(new_ticket);
      r.ticket = new_ticket;
      r.thread = eval->thread;
      ASSIGN_OR_RETURN(auto channel, store_->ThreadChannel(eval->thread));
      r.channel = channel.value_or(request->trigger.channel);
      r.kind = MessageKind::kAcknowledgement;
      r.body = WithinLimit(r.channel, text::Repair(out.acknowledgement.empty() ? "On it: " + tk.scope : out.acknowledgement),
                           options_);
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
      RETURN_IF_ERROR(ChangeStage(store_.get(), &*tk, Stage::kEnded, StageCause::kStopped, "decision stop", now));
      RETURN_IF_ERROR(store_->EndAssignments(id, now));
      result.stopped.push_back(id);
    }
  }

  const int attempts = batch.empty() ? 0 : batch.front().attempts + 1;
  if (out.outcome == DecisionOutcome::kUnavailable && out.retry && attempts < options_.eval_max_attempts) {
    const TimeMs delay = EvalRetryDelay(options_, attempts);
    RETURN_IF_ERROR(store_->ReleaseBatch(eval_id, now + delay, 1));
    result.requeued = true;
  } else {
    RETURN_IF_ERROR(store_->DequeueBatch(eval_id));
  }
  RETURN_IF_ERROR(store_->SetEvalStatus(eval_id, "done", now));
  RETURN_IF_ERROR(ClearedLocked(kQuarantineEval, eval->thread));  // an Eval finished: the Thread is not poison
  RETURN_IF_ERROR(tx->Commit());
  spdlog::info("decision eval={} thread={} outcome={}{} strength={} reason=\"{}\"{}", eval_id, eval->thread,
               DecisionOutcomeName(out.outcome), out.would_accept ? " would_accept=true" : "",
               StrengthName(out.strength), out.reason,
               result.ticket ? " ticket=" + std::to_string(*result.ticket) : std::string());
  return result;
}

Result<int> Engine::ExpireEvals() {
  std::lock_guard<std::mutex> lock(mu_);
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
      d.reason = "eval timed out " + std::to_string(attempts) + " times";
      d.policy_version = e.policy_version;
      d.created_at = now;
      auto did = store_->InsertDecision(d);
      if (!did.ok()) return did.status();
      RETURN_IF_ERROR(store_->DequeueBatch(e.id));
      spdlog::warn("eval timed out id={} thread={} attempt={} outcome=unavailable", e.id, e.thread, attempts);
    }
  }
  RETURN_IF_ERROR(tx->Commit());
  return expired;
}

Status Engine::RecordEvalError(EvalId eval_id, const std::string& error) {
  std::lock_guard<std::mutex> lock(mu_);
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
    d.reason = "eval failed " + std::to_string(attempts) + " times: " + error;
    d.policy_version = e->policy_version;
    d.created_at = now;
    auto did = store_->InsertDecision(d);
    if (!did.ok()) return did.status();
    RETURN_IF_ERROR(store_->DequeueBatch(eval_id));
    spdlog::warn("eval failed id={} thread={} attempt={} outcome=unavailable error=\"{}\"", eval_id, e->thread,
                 attempts, error);
  }
  return tx->Commit();
}

// ---------------------------------------------------------------------------------------------
// Tickets

Status Engine::Handback(TicketId ticket, const std::string& trigger_id, HandbackKind kind, const std::string& reason_in) {
  const std::string reason = text::Repair(reason_in);
  std::lock_guard<std::mutex> lock(mu_);
  const TimeMs now = clock_->NowMs();
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  ASSIGN_OR_RETURN(auto rec, store_->FindTrigger(trigger_id));
  if (!rec) return Status::NotFound("trigger " + trigger_id + " does not exist");
  ASSIGN_OR_RETURN(std::vector<TicketInput> inputs, store_->InputsForTrigger(rec->seq));
  auto mine = std::find_if(inputs.begin(), inputs.end(), [&](const TicketInput& in) { return in.ticket == ticket; });
  if (mine == inputs.end())
    return Status::NotFound("trigger " + trigger_id + " never reached ticket " + std::to_string(ticket));
  if (mine->state == "handed_back")
    return Status::Conflict("ticket " + std::to_string(ticket) + " already handed back " + trigger_id);
  RETURN_IF_ERROR(store_->MarkHandedBack(mine->id, HandbackKindName(kind), reason));
  mine->state = "handed_back";
  mine->handback_kind = HandbackKindName(kind);
  mine->handback_reason = reason;

  bool still_held = std::any_of(inputs.begin(), inputs.end(), [](const TicketInput& in) { return in.state != "handed_back"; });
  bool queued = false;
  ASSIGN_OR_RETURN(auto queue_row, store_->QueueRowFor(rec->seq));
  if (!still_held && !queue_row) {
    json reasons = json::array();
    for (const TicketInput& in : inputs)
      reasons.push_back({{"ticket", in.ticket}, {"kind", in.handback_kind}, {"reason", in.handback_reason}});
    RETURN_IF_ERROR(store_->Enqueue(rec->seq, rec->trigger.threads.front(), now, now, 0, reasons.dump()));
    queued = true;
  }
  RETURN_IF_ERROR(tx->Commit());
  if (queued && options_.on_eval_queued) options_.on_eval_queued();
  spdlog::info("handback ticket={} trigger={} kind={} to_eval={}", ticket, trigger_id, HandbackKindName(kind), queued);
  return Status::Ok();
}

Status Engine::AskPerson(TicketId ticket, const HumanAction& action, const std::string& message_id) {
  std::lock_guard<std::mutex> lock(mu_);
  const TimeMs now = clock_->NowMs();
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  ASSIGN_OR_RETURN(auto tk, store_->GetTicket(ticket));
  if (!tk) return Status::NotFound("ticket " + std::to_string(ticket) + " does not exist");
  RETURN_IF_ERROR(AskPersonLocked(&*tk, action, message_id, now));
  return tx->Commit();
}

Status Engine::AskPersonLocked(Ticket* tk, const HumanAction& action_in, const std::string& message_id, TimeMs now) {
  HumanAction action = action_in;
  for (std::string* s : {&action.thread, &action.actor, &action.question}) *s = text::Repair(*s);
  text::RepairJson(&action.form);
  if (action.thread.empty() || action.actor.empty() || action.question.empty())
    return Status::InvalidArgument("human_action needs thread, actor and question");
  if (!tk->open()) return Status::Conflict("ticket " + std::to_string(tk->id) + " has ended");
  ASSIGN_OR_RETURN(auto channel, store_->ThreadChannel(action.thread));
  if (!channel) return Status::InvalidArgument("thread " + action.thread + " is unknown");
  if (std::string why = TooLong(*channel, action.question, options_); !why.empty()) return Status::InvalidArgument(why);
  const bool was_waiting = tk->stage == Stage::kWaitingForPerson;
  tk->waiting = action;  // also when it was waiting already: the newest question is the one open
  if (was_waiting) RETURN_IF_ERROR(store_->UpdateTicket(*tk));
  else RETURN_IF_ERROR(ChangeStage(store_.get(), tk, Stage::kWaitingForPerson, StageCause::kAsked, "asked " + action.actor, now));
  RETURN_IF_ERROR(store_->Subscribe(action.thread, tk->id, now));
  Receipt r;
  r.id = message_id;
  r.ticket = tk->id;
  r.thread = action.thread;
  r.channel = *channel;
  r.kind = MessageKind::kAttention;
  r.body = action.question;
  r.created_at = now;
  auto inserted = store_->InsertReceipt(r);
  if (!inserted.ok()) return inserted.status();
  if (*inserted) RETURN_IF_ERROR(store_->InsertEffect(r.id, "post_message", json{{"receipt", r.id}}.dump(), now));
  return Status::Ok();
}

Status Engine::SetStage(TicketId ticket, Stage stage, const std::string& cause) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stage == Stage::kEnded || stage == Stage::kWaitingForPerson)
    return Status::InvalidArgument(std::string("stage ") + StageName(stage) + " is set by EndTicket/StopTicket/AskPerson");
  const TimeMs now = clock_->NowMs();
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  ASSIGN_OR_RETURN(auto tk, store_->GetTicket(ticket));
  if (!tk) return Status::NotFound("ticket " + std::to_string(ticket) + " does not exist");
  if (!tk->open()) return Status::Conflict("ticket " + std::to_string(ticket) + " has ended");
  const StageCause why = stage == Stage::kWorking ? StageCause::kTurnStarted : StageCause::kReported;
  RETURN_IF_ERROR(ChangeStage(store_.get(), &*tk, stage, why, cause, now));
  return tx->Commit();
}

Status Engine::EndTicket(TicketId ticket, const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  const TimeMs now = clock_->NowMs();
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  ASSIGN_OR_RETURN(auto tk, store_->GetTicket(ticket));
  if (!tk) return Status::NotFound("ticket " + std::to_string(ticket) + " does not exist");
  if (!tk->open()) return Status::Ok();
  tk->end_reason = text::Repair(reason);
  RETURN_IF_ERROR(ChangeStage(store_.get(), &*tk, Stage::kEnded, StageCause::kEnded, tk->end_reason, now));
  RETURN_IF_ERROR(store_->EndAssignments(ticket, now));
  RETURN_IF_ERROR(tx->Commit());
  spdlog::info("ticket ended id={} reason=\"{}\"", ticket, reason);
  return Status::Ok();
}

Status Engine::StopTicket(TicketId ticket, const std::string& who) {
  std::lock_guard<std::mutex> lock(mu_);
  if (who.empty()) return Status::InvalidArgument("a stop must say who pressed it");
  const TimeMs now = clock_->NowMs();
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  ASSIGN_OR_RETURN(auto tk, store_->GetTicket(ticket));
  if (!tk) return Status::NotFound("ticket " + std::to_string(ticket) + " does not exist");
  ASSIGN_OR_RETURN(auto m, store_->MandateForTicket(ticket));
  if (!m) return Status::Internal("ticket " + std::to_string(ticket) + " has no mandate");
  if (tk->open()) {
    tk->end_reason = "stopped by " + who;
    RETURN_IF_ERROR(ChangeStage(store_.get(), &*tk, Stage::kEnded, StageCause::kStopped, "panel stop by " + who, now));
    RETURN_IF_ERROR(store_->EndAssignments(ticket, now));
  }
  // A turn that started before this Stop leaves no running session behind for an ended Ticket.
  ASSIGN_OR_RETURN(auto session, store_->SessionForTicket(ticket));
  if (session && session->status == "running") RETURN_IF_ERROR(store_->SetSessionStatus(session->id, "idle", now));
  RETURN_IF_ERROR(store_->EndMandate(m->id, "withdrawn", "stopped in the panel", who, now));
  RETURN_IF_ERROR(store_->InsertCommand(now, who, "stop", "ticket:" + std::to_string(ticket), ""));
  RETURN_IF_ERROR(tx->Commit());
  spdlog::info("ticket stopped id={} by={} mandate=withdrawn", ticket, who);
  return Status::Ok();
}

Status Engine::Send(const MessageSpec& message) {
  std::lock_guard<std::mutex> lock(mu_);
  const TimeMs now = clock_->NowMs();
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  RETURN_IF_ERROR(SendLocked(message, now));
  return tx->Commit();
}

Status Engine::SendLocked(const MessageSpec& message_in, TimeMs now) {
  MessageSpec message = message_in;
  message.body = text::Repair(message.body);
  if (message.id.empty()) return Status::InvalidArgument("message id is required (it is the idempotency key)");
  if (message.body.empty()) return Status::InvalidArgument("message body is empty");
  ASSIGN_OR_RETURN(auto channel, store_->ThreadChannel(message.thread));
  if (!channel) return Status::InvalidArgument("thread " + message.thread + " is unknown");
  if (std::string why = TooLong(*channel, message.body, options_); !why.empty()) return Status::InvalidArgument(why);
  Receipt r;
  r.id = message.id;
  r.ticket = message.ticket;
  r.thread = message.thread;
  r.channel = *channel;
  r.kind = message.kind;
  r.body = message.body;
  r.created_at = now;
  auto inserted = store_->InsertReceipt(r);
  if (!inserted.ok()) return inserted.status();
  if (*inserted) RETURN_IF_ERROR(store_->InsertEffect(r.id, "post_message", json{{"receipt", r.id}}.dump(), now));
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// Policy

Result<PolicyChange> Engine::ApplyPolicy(const Policy& policy, const std::string& origin) {
  std::lock_guard<std::mutex> lock(mu_);
  PolicyChange change;
  const std::string fingerprint = policy.Fingerprint();
  if (policy_version_ != 0 && fingerprint == policy_.Fingerprint()) {
    change.version = policy_version_;
    return change;
  }
  const TimeMs now = clock_->NowMs();
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  auto version = store_->InsertPolicyVersion(fingerprint, policy.ToJson().dump(), origin, now);
  if (!version.ok()) return version.status();
  change.changed = true;
  change.version = *version;

  if (policy_version_ != 0) {
    // Running Evals judged under the old policy: discard, requeue their Triggers (no attempt used).
    ASSIGN_OR_RETURN(auto running, store_->RunningEvals());
    for (const store::EvalRow& e : running) {
      RETURN_IF_ERROR(store_->SetEvalStatus(e.id, "discarded", now));
      RETURN_IF_ERROR(store_->ReleaseBatch(e.id, now, 0));
      ++change.discarded_evals;
    }
    // Live Tickets whose Mandate the change touches get one notice; Mandates are not revoked here.
    ASSIGN_OR_RETURN(auto open, store_->OpenTickets());
    for (TicketId id : open) {
      ASSIGN_OR_RETURN(auto m, store_->MandateForTicket(id));
      if (!m || !m->ended_as.empty()) continue;
      ASSIGN_OR_RETURN(auto origin_rec, store_->FindTriggerBySeq(m->origin_trigger_seq));
      if (!origin_rec) continue;
      std::vector<std::string> reasons = PolicyChangeReasons(*m, origin_rec->trigger, policy_, policy);
      if (reasons.empty()) continue;
      TicketInput in;
      in.ticket = id;
      in.kind = "policy_changed";
      in.body = json{{"policy_version", *version}, {"reasons", reasons}};
      in.state = "pending";
      in.created_at = now;
      auto iid = store_->InsertInput(in);
      if (!iid.ok()) return iid.status();
      change.notified.push_back(id);
    }
  }
  RETURN_IF_ERROR(tx->Commit());
  policy_ = policy;
  policy_version_ = *version;
  spdlog::info("policy version={} mode={} rules={} origin=\"{}\" discarded_evals={} notified_tickets={}", *version,
               ModeName(policy.mode), policy.rules.size(), origin, change.discarded_evals, change.notified.size());
  return change;
}

// ---------------------------------------------------------------------------------------------
// Reading

Result<Ticket> Engine::GetTicket(TicketId id) {
  std::lock_guard<std::mutex> lock(mu_);
  ASSIGN_OR_RETURN(auto t, store_->GetTicket(id));
  if (!t) return Status::NotFound("ticket " + std::to_string(id) + " does not exist");
  return *t;
}

Result<Mandate> Engine::GetMandate(TicketId ticket) {
  std::lock_guard<std::mutex> lock(mu_);
  ASSIGN_OR_RETURN(auto m, store_->MandateForTicket(ticket));
  if (!m) return Status::NotFound("ticket " + std::to_string(ticket) + " has no mandate");
  return *m;
}

std::vector<TicketInput> Engine::TicketInputs(TicketId ticket) {
  std::lock_guard<std::mutex> lock(mu_);
  return LoggedRead(store_->InputsForTicket(ticket), "ticket inputs");
}

std::vector<Assignment> Engine::Assignments(TicketId ticket) {
  std::lock_guard<std::mutex> lock(mu_);
  return LoggedRead(store_->AssignmentsFor(ticket), "assignments");
}

std::vector<Receipt> Engine::Receipts(std::optional<TicketId> ticket) {
  std::lock_guard<std::mutex> lock(mu_);
  return LoggedRead(store_->ReceiptsFor(ticket), "receipts");
}

std::vector<Decision> Engine::Decisions(const std::string& thread) {
  std::lock_guard<std::mutex> lock(mu_);
  return LoggedRead(store_->DecisionsForThread(thread), "decisions");
}

Result<TriggerRecord> Engine::GetTrigger(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  ASSIGN_OR_RETURN(auto r, store_->FindTrigger(id));
  if (!r) return Status::NotFound("trigger " + id + " does not exist");
  return *r;
}

json Engine::Stats() {
  std::lock_guard<std::mutex> lock(mu_);
  json s = LoggedRead(store_->Stats(), "stats");
  s["policy_version"] = policy_version_;
  s["mode"] = ModeName(policy_.mode);
  return s;
}

std::int64_t Engine::WriteTransactions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return store_->WriteTransactions();
}

}  // namespace superagent

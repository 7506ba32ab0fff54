// Intake (SPEC §3.2, §4.1): a Source's delivery and a worker's handback, each one transaction.
// Receive stores the Trigger and routes it — to the Tickets subscribed to its Thread (resuming an
// ended one in place when its Mandate still holds), or to an Eval — and applies the delivering
// Source's bookkeeping in the same transaction, so a webhook delivery is one write. Handback returns
// a message a worker finds outside its Mandate to Eval once no Ticket holds it.
#include <algorithm>
#include <cctype>

#include <spdlog/spdlog.h>

#include "core/engine_internal.h"
#include "core/revalidate.h"
#include "core/ticket_stage.h"
#include "store/store.h"
#include "superagent/engine.h"
#include "superagent/eval.h"
#include "superagent/json_read.h"
#include "superagent/judgement.h"
#include "superagent/question.h"
#include "superagent/text.h"

namespace superagent {

using nlohmann::json;

namespace {

// What comes from outside (a Source, a process, a model) may be invalid UTF-8; the store and the
// panel hold only valid text (json's dump() throws on anything else), so it is repaired here.
Trigger Repaired(Trigger t) {
  for (std::string* s : {&t.id, &t.source, &t.scope, &t.text, &t.channel}) *s = text::Repair(*s);
  if (t.actor) t.actor = text::Repair(*t.actor);
  for (std::string& th : t.threads) th = text::Repair(th);
  text::RepairJson(&t.meta);
  return t;
}

// The asked person's reply, read against the question's form: the worker (and a purpose's code,
// such as a budget's) gets the structured answer — the option chosen, or the words — beside the
// message itself. A reply that answers nothing the form accepts is delivered as the message alone.
json AnswerBody(const HumanAction& asked, const Trigger& t) {
  json body{{"from", t.actor.value_or("")}, {"via", t.source}, {"question", asked.question}};
  auto form = ParseQuestionForm(asked.form);
  if (!form.ok()) return body;
  if (auto answer = MatchAnswer(*form, t.text)) body["answer"] = *answer;
  return body;
}

// Whether `text` quotes `url` as itself: ".../pull/12" is not quoted by ".../pull/123".
bool Quotes(const std::string& text, const std::string& url) {
  if (url.size() < 12) return false;  // not a link worth matching
  for (std::size_t at = text.find(url); at != std::string::npos; at = text.find(url, at + 1)) {
    const std::size_t end = at + url.size();
    if (end == text.size() || text[end] < '0' || text[end] > '9') return true;
  }
  return false;
}

// The Feishu topic ids ("omt_…") `text` names, at most a few. Feishu's "copy link" gives an opaque
// applink token that names no topic, so the id itself (shown in the panel's "Discussed in") is the
// only reference to a topic a message elsewhere can carry.
std::vector<std::string> QuotedTopicIds(const std::string& text) {
  constexpr std::size_t kMaxTopics = 5, kMaxIdLength = 64;
  std::vector<std::string> out;
  for (std::size_t at = text.find("omt_"); at != std::string::npos && out.size() < kMaxTopics;
       at = text.find("omt_", at + 1)) {
    if (at > 0 && (std::isalnum(static_cast<unsigned char>(text[at - 1])) || text[at - 1] == '_')) continue;
    std::size_t end = at + 4;
    while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) ++end;
    if (end == at + 4 || end - at > kMaxIdLength) continue;
    std::string id = text.substr(at, end - at);
    if (std::find(out.begin(), out.end(), id) == out.end()) out.push_back(std::move(id));
  }
  return out;
}

// The open Tickets whose pull request, whose request's GitHub discussion, or whose Feishu topic
// `text` refers to (issue 23, SPEC §5: an explicit reference attaches a message to existing work).
// Read only when the text holds a link or a topic id; a Ticket counts once.
Result<std::vector<TicketId>> QuotedTickets(store::Store* store, const std::string& text) {
  std::vector<TicketId> out;
  auto add = [&](TicketId id) {
    if (std::find(out.begin(), out.end(), id) == out.end()) out.push_back(id);
  };
  for (const std::string& topic : QuotedTopicIds(text)) {
    ASSIGN_OR_RETURN(auto held, store->SubscribedTickets({"feishu:thread:" + topic}));
    for (TicketId id : held) add(id);
  }
  if (text.find("://") == std::string::npos) return out;
  ASSIGN_OR_RETURN(auto pulls, store->OpenTicketPulls());
  for (const TicketPull& p : pulls)
    if (Quotes(text, p.url)) add(p.ticket);
  ASSIGN_OR_RETURN(auto open, store->OpenTickets());
  for (TicketId id : open) {
    ASSIGN_OR_RETURN(auto m, store->MandateForTicket(id));
    if (!m) continue;
    ASSIGN_OR_RETURN(auto origin, store->FindTriggerBySeq(m->origin_trigger_seq));
    if (!origin || origin->trigger.source != "github") continue;
    std::string url = TriggerUrl(origin->trigger);
    url = url.substr(0, url.find('#'));  // the discussion, not the one comment
    if (Quotes(text, url)) add(id);
  }
  return out;
}

}  // namespace

Result<IntakeResult> Engine::Receive(const Trigger& trigger, const std::string& via, const std::string& filter_reason,
                                     const SourceUpdate* with) {
  const Trigger t = Repaired(trigger);
  MutexLock lock(&mu_);
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

  // A person's verb ("@agent stop") is for the Eval, which decides it by code; a Ticket that
  // received it instead would have to judge it with its model (docs/002).
  if (t.human && t.addressed && VerbOf(t)) tickets.clear();

  // A message its Source marks as asking for nothing (a bare approval, docs/006), or a person's
  // thanks and nothing more, is context for the Tickets it reaches: it starts no turn, resumes
  // nothing and answers no question. (The thanks still counts for the rule: judgement.h.)
  const bool asks_nothing = json_read::BoolOr(t.meta, "asks_nothing") || (t.human && IsThanks(t.text));

  std::vector<TicketId> owners;
  if (t.human && t.actor && !asks_nothing) {
    for (const Ticket& tk : tickets) {
      if (tk.stage == Stage::kWaitingForPerson && tk.waiting && tk.waiting->actor == *t.actor &&
          std::find(t.threads.begin(), t.threads.end(), tk.waiting->thread) != t.threads.end())
        owners.push_back(tk.id);
    }
  }

  // Only a person's message (not a bot's, not CI's) may take the slot kept for people.
  const bool from_person = t.human && t.scope != "ci";
  auto deliver = [&](TicketId ticket, const char* kind, const char* state = "pending", json body = json::object()) -> Status {
    mu_.AssertHeld();  // a lambda of a locked method: Clang analyses it on its own
    TicketInput in;
    in.ticket = ticket;
    in.kind = kind;
    in.trigger_seq = *seq;
    body["trigger_id"] = t.id;
    in.body = std::move(body);
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
      const json body = AnswerBody(*owner->waiting, t);
      if (auto form = ParseQuestionForm(owner->waiting->form);
          !body.contains("answer") && form.ok() && form->purpose == "repository") {
        // Work cannot start without a repository: a reply naming none of the options is kept as
        // context, and the question is asked again in reply to it.
        RETURN_IF_ERROR(deliver(id, "answer", "context", body));
        RETURN_IF_ERROR(AskPersonLocked(&tk, *owner->waiting, "ask:repository:ticket:" + std::to_string(id) + ":" + t.id, now));
        continue;
      }
      RETURN_IF_ERROR(deliver(id, "answer", "pending", body));
      if (body.contains("answer")) RETURN_IF_ERROR(AnsweredLocked(id, *owner->waiting, body["answer"], now));
      // Resumes: the scheduler gives it a slot.
      RETURN_IF_ERROR(ChangeStage(store_.get(), options_, &tk, Stage::kIdle, StageCause::kAnswered, "answer from " + *t.actor, now));
      auto a = store_->InsertAssignment(id, "worker", "answer", now);
      if (!a.ok()) return a.status();
    }
  } else {
    for (Ticket& tk : tickets) {
      ASSIGN_OR_RETURN(auto mandate, store_->MandateForTicket(tk.id));
      if (!mandate || !mandate->ended_as.empty()) continue;  // stopped or revoked: receives nothing
      // The Ticket's own PR: its CI, its merge or close (pulls.cpp). A merge never resumes it.
      ASSIGN_OR_RETURN(const bool on_pull, RouteOnPullLocked(&tk, t, [&](const char* state) {
        return deliver(tk.id, "trigger", state);
      }, now));
      if (on_pull) continue;
      if (tk.open()) {
        // A message older than the Ticket's request (an issue's opening text that arrives by
        // polling after the webhook's mention was worked on) is context for its next turn, never
        // a reason for one: the work it could ask for was already asked for later.
        ASSIGN_OR_RETURN(const bool older, OlderThanRequest(store_.get(), *mandate, t.at));
        RETURN_IF_ERROR(deliver(tk.id, "trigger", older || asks_nothing ? "context" : "pending"));
        continue;
      }
      // An ended Ticket: only a person's message resumes it in place, after revalidation; one
      // older than its request is context for a later resume, not a resume.
      if (!from_person) continue;
      ASSIGN_OR_RETURN(const bool older, OlderThanRequest(store_.get(), *mandate, t.at));
      if (older || asks_nothing) {
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
      RETURN_IF_ERROR(ChangeStage(store_.get(), options_, &tk, Stage::kIdle, StageCause::kResumed,
                                  "resumed by " + t.actor.value_or("?"), now));
      auto a = store_->InsertAssignment(tk.id, "worker", "resume", now);
      if (!a.ok()) return a.status();
      result.resumed.push_back(tk.id);
    }
  }

  // A message elsewhere that quotes a live Ticket's PR or discussion link, or names its Feishu
  // topic, reaches that Ticket by the rules of a Subscription — data for its next turn, no new
  // authority — instead of starting a new Eval; an ended Ticket is never resumed from afar
  // (SPEC §4.5). A verb is the Eval's.
  if (result.delivered_to.empty() && owners.empty() && !(t.human && t.addressed && VerbOf(t))) {
    ASSIGN_OR_RETURN(auto quoted, QuotedTickets(store_.get(), t.text));
    for (TicketId id : quoted) {
      if (std::find(subscribed.begin(), subscribed.end(), id) != subscribed.end()) continue;  // its own Threads decided
      ASSIGN_OR_RETURN(auto tk, store_->GetTicket(id));
      ASSIGN_OR_RETURN(auto mandate, store_->MandateForTicket(id));
      if (!tk || !tk->open() || !mandate || !mandate->ended_as.empty()) continue;
      RETURN_IF_ERROR(deliver(id, "trigger", "pending", json{{"quoted_link", true}}));
      spdlog::info("trigger reached ticket by its link id={} ticket={}", t.id, id);
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

Status Engine::Handback(TicketId ticket, const std::string& trigger_id, HandbackKind kind, const std::string& reason_in) {
  const std::string reason = text::Repair(reason_in);
  MutexLock lock(&mu_);
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

}  // namespace superagent

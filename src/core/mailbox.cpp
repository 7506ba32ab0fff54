// The intercom mailbox (SPEC §10): the Engine's side of the intercom — its durable mailbox, wake
// budgets and groups. The rules that need stored state live here, inside the transaction that
// stores the message, so two sends at once cannot both pass a limit.
#include <algorithm>

#include <spdlog/spdlog.h>

#include "core/revalidate.h"
#include "core/ticket_stage.h"
#include "store/store.h"
#include "superagent/engine.h"

namespace superagent {

using nlohmann::json;

namespace {
constexpr TimeMs kMinute = 60'000;
constexpr const char* kAutoGroup = "auto";
}  // namespace

Result<IntercomMessage> Engine::PostIntercom(IntercomMessage m, bool target_idle, const IntercomLimits& limits) {
  MutexLock lock(&mu_);
  const TimeMs now = clock_->NowMs();
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  auto posted = PostIntercomLocked(std::move(m), target_idle, limits, now);
  if (!posted.ok()) return posted.status();
  RETURN_IF_ERROR(tx->Commit());
  return posted;
}

Result<IntercomMessage> Engine::PostIntercomLocked(IntercomMessage m, bool target_idle, const IntercomLimits& limits,
                                                   TimeMs now) {
  // The per-minute limits keep sessions from flooding a session; a person is always heard
  // (SPEC §10), so their message is neither refused by them nor counted in them.
  const bool person = !m.from_person.empty();
  ASSIGN_OR_RETURN(int to_target, store_->CountIntercomSince(m.to_session, std::nullopt, now - kMinute));
  if (!person && to_target >= limits.per_target_per_minute)
    return Status::Conflict("rate limit: " + m.to_session + " has received " +
                            std::to_string(limits.per_target_per_minute) + " messages in the last minute; try later");
  ASSIGN_OR_RETURN(int in_pair, store_->CountIntercomSince(m.to_session, m.from_session, now - kMinute));
  if (!person && in_pair >= limits.per_pair_per_minute)
    return Status::Conflict("rate limit: you have sent " + std::to_string(limits.per_pair_per_minute) + " messages to " +
                            m.to_session + " in the last minute; try later");
  if (!m.reply_to.empty()) {
    ASSIGN_OR_RETURN(auto asked, store_->GetIntercomMessage(m.reply_to));
    if (!asked || asked->to_session != m.from_session || asked->from_session != m.to_session)
      return Status::InvalidArgument("reply_to " + m.reply_to + " is not a message " + m.to_session + " sent you");
  }
  ASSIGN_OR_RETURN(int spent, store_->WakesSpent(m.to_session));
  if (person) {
    // Only a person's message refills the budget (SPEC §10), and a person is always heard.
    RETURN_IF_ERROR(store_->SetWakesSpent(m.to_session, 0));
    m.applied = target_idle ? "wake" : (m.delivery == "steer" ? "steer" : "queue");
  } else if (spent >= limits.wake_budget) {
    m.applied = "queue";  // no wakes left: it waits for the target's next step
  } else if (m.delivery == "steer") {
    RETURN_IF_ERROR(store_->SetWakesSpent(m.to_session, spent + 1));
    m.applied = target_idle ? "wake" : "steer";
  } else if (target_idle) {
    RETURN_IF_ERROR(store_->SetWakesSpent(m.to_session, spent + 1));
    m.applied = "wake";
  } else {
    m.applied = "queue";  // a working target reads it at its next step; no wake spent
  }
  ASSIGN_OR_RETURN(std::int64_t count, store_->IntercomMessageCount());
  m.id = "icm-" + std::to_string(count + 1);
  m.state = "queued";
  m.created_at = now;
  m.delivered_at.reset();
  RETURN_IF_ERROR(store_->InsertIntercomMessage(m));
  if (!m.reply_to.empty()) RETURN_IF_ERROR(store_->MarkIntercomAnswered(m.reply_to));
  if (!m.from_session.empty()) {
    RETURN_IF_ERROR(store_->AddIntercomMember(kAutoGroup, m.from_session, now));
    RETURN_IF_ERROR(store_->AddIntercomMember(kAutoGroup, m.to_session, now));
  }
  return m;
}

namespace {
// Whether the Ticket already has a turn coming or running (then the inbox is read by it).
Result<bool> HasActiveAssignment(store::Store& store, TicketId ticket) {
  ASSIGN_OR_RETURN(auto assignments, store.AssignmentsFor(ticket));
  for (const Assignment& a : assignments)
    if (a.state != "ended") return true;
  return false;
}
}  // namespace

Status Engine::WakeForIntercom(TicketId ticket, bool from_person) {
  MutexLock lock(&mu_);
  const TimeMs now = clock_->NowMs();
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  ASSIGN_OR_RETURN(auto tk, store_->GetTicket(ticket));
  if (!tk) return Status::NotFound("ticket " + std::to_string(ticket) + " does not exist");
  if (!tk->open()) return Status::Conflict("ticket " + std::to_string(ticket) + " has ended");
  if (tk->stage == Stage::kWaitingForPerson) return Status::Ok();
  bool doorbell = false;
  ASSIGN_OR_RETURN(auto inputs, store_->InputsForTicket(ticket));
  for (const TicketInput& in : inputs) doorbell |= in.kind == "intercom" && in.state == "pending";
  if (!doorbell) {
    TicketInput in;
    in.ticket = ticket;
    in.kind = "intercom";
    in.body = json{{"from_person", from_person}};
    in.state = "pending";
    in.created_at = now;
    auto id = store_->InsertInput(in);
    if (!id.ok()) return id.status();
  }
  ASSIGN_OR_RETURN(bool active, HasActiveAssignment(*store_, ticket));
  if (!active) {
    auto a = store_->InsertAssignment(ticket, "worker", from_person ? "follow_up" : "intercom", now);
    if (!a.ok()) return a.status();
  }
  return tx->Commit();
}

Result<IntercomMessage> Engine::ResumeForPersonsMessage(TicketId ticket, IntercomMessage m, const IntercomLimits& limits) {
  MutexLock lock(&mu_);
  const TimeMs now = clock_->NowMs();
  if (m.from_person.empty()) return Status::InvalidArgument("only a person's message can reopen an ended Ticket");
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  const std::string name = "Ticket #" + std::to_string(ticket);
  ASSIGN_OR_RETURN(auto tk, store_->GetTicket(ticket));
  if (!tk) return Status::NotFound(name + " does not exist");
  ASSIGN_OR_RETURN(auto mandate, store_->MandateForTicket(ticket));
  if (!mandate) return Status::NotFound(name + " has no Mandate");
  if (!mandate->ended_as.empty())
    return Status::Conflict(name + " cannot resume: its Mandate was " + mandate->ended_as +
                            (mandate->ended_reason.empty() ? "" : " (" + mandate->ended_reason + ")") +
                            "; nothing was sent");
  if (!tk->open()) {
    ASSIGN_OR_RETURN(auto origin, store_->FindTriggerBySeq(mandate->origin_trigger_seq));
    std::string why_not = origin ? RevalidateMandate(*mandate, origin->trigger, policy_) : "its origin Trigger is missing";
    if (!why_not.empty()) {
      // SPEC §4.5: a failed revalidation revokes the Mandate, as it does for a message in the
      // Ticket's own discussion; the message itself is not stored.
      RETURN_IF_ERROR(store_->EndMandate(mandate->id, "revoked", why_not, "revalidation", now));
      RETURN_IF_ERROR(tx->Commit());
      spdlog::info("mandate revoked ticket={} reason=\"{}\" via=panel", ticket, why_not);
      return Status::Conflict(name + " cannot resume: revalidation failed (SPEC §4.5): " + why_not +
                              "; its Mandate is revoked and nothing was sent");
    }
    RETURN_IF_ERROR(ChangeStage(store_.get(), options_, &*tk, Stage::kIdle, StageCause::kResumed,
                                "resumed by " + m.from_person + "'s message in the panel", now));
    TicketInput in;
    in.ticket = ticket;
    in.kind = "intercom";
    in.body = json{{"from_person", true}, {"resumed", true}};
    in.state = "pending";
    in.from_person = true;
    in.created_at = now;
    auto iid = store_->InsertInput(in);
    if (!iid.ok()) return iid.status();
    ASSIGN_OR_RETURN(bool active, HasActiveAssignment(*store_, ticket));
    if (!active) {
      auto a = store_->InsertAssignment(ticket, "worker", "resume", now);
      if (!a.ok()) return a.status();
    }
  }
  // The session is idle now: a person's message wakes it.
  auto posted = PostIntercomLocked(std::move(m), /*target_idle=*/true, limits, now);
  if (!posted.ok()) return posted.status();
  RETURN_IF_ERROR(tx->Commit());
  spdlog::info("ticket resumed ticket={} by=\"{}\" via=panel", ticket, posted->from_person);
  return posted;
}

Result<std::vector<IntercomMessage>> Engine::TakeIntercomInbox(const std::string& session) {
  MutexLock lock(&mu_);
  const TimeMs now = clock_->NowMs();
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  ASSIGN_OR_RETURN(std::vector<IntercomMessage> out, store_->QueuedIntercomFor(session));
  for (IntercomMessage& m : out) {
    RETURN_IF_ERROR(store_->MarkIntercomDelivered(m.id, now));
    m.state = "delivered";
    m.delivered_at = now;
  }
  RETURN_IF_ERROR(tx->Commit());
  return out;
}

Result<std::vector<IntercomMessage>> Engine::TakeIntercomReplies(const std::string& from, const std::string& to) {
  MutexLock lock(&mu_);
  const TimeMs now = clock_->NowMs();
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  ASSIGN_OR_RETURN(std::vector<IntercomMessage> out, store_->IntercomRepliesBetween(from, to));
  for (IntercomMessage& m : out) {
    if (m.state != "queued") continue;
    RETURN_IF_ERROR(store_->MarkIntercomDelivered(m.id, now));
  }
  RETURN_IF_ERROR(tx->Commit());
  return out;
}

Result<IntercomGroup> Engine::CreateIntercomGroup(const std::string& name, const std::vector<std::string>& members) {
  MutexLock lock(&mu_);
  const TimeMs now = clock_->NowMs();
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  IntercomGroup g;
  std::size_t n = 0;
  ASSIGN_OR_RETURN(auto groups, store_->IntercomGroups());
  for (const IntercomGroup& existing : groups) {
    if (existing.name == name) return Status::Conflict("a group named \"" + name + "\" exists: " + existing.id);
    if (existing.id.rfind("group-", 0) == 0) n = std::max<std::size_t>(n, std::stoul(existing.id.substr(6)));
  }
  g.id = "group-" + std::to_string(n + 1);
  g.name = name;
  RETURN_IF_ERROR(store_->InsertIntercomGroup(g, now));
  for (const std::string& m : members) {
    RETURN_IF_ERROR(store_->AddIntercomMember(g.id, m, now));
    if (std::find(g.members.begin(), g.members.end(), m) == g.members.end()) g.members.push_back(m);
  }
  RETURN_IF_ERROR(tx->Commit());
  return g;
}

Status Engine::AddIntercomMember(const std::string& group, const std::string& session) {
  MutexLock lock(&mu_);
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  ASSIGN_OR_RETURN(auto all, store_->IntercomGroups());
  if (!FindGroup(all, group)) return Status::NotFound("no group " + group);
  RETURN_IF_ERROR(store_->AddIntercomMember(group, session, clock_->NowMs()));
  return tx->Commit();
}

Status Engine::RemoveIntercomMember(const std::string& group, const std::string& session) {
  MutexLock lock(&mu_);
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  ASSIGN_OR_RETURN(auto all, store_->IntercomGroups());
  const IntercomGroup* g = FindGroup(all, group);
  if (!g) return Status::NotFound("no group " + group);
  if (std::find(g->members.begin(), g->members.end(), session) == g->members.end())
    return Status::NotFound(session + " is not a member of " + group);
  RETURN_IF_ERROR(store_->RemoveIntercomMember(group, session));
  return tx->Commit();
}

Status Engine::DeleteIntercomGroup(const std::string& group) {
  MutexLock lock(&mu_);
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  ASSIGN_OR_RETURN(auto all, store_->IntercomGroups());
  const IntercomGroup* g = FindGroup(all, group);
  if (!g) return Status::NotFound("no group " + group);
  if (g->automatic) return Status::InvalidArgument("the automatic group cannot be deleted");
  RETURN_IF_ERROR(store_->DeleteIntercomGroup(group));
  return tx->Commit();
}

}  // namespace superagent

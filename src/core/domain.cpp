#include "superagent/domain.h"

namespace superagent {
namespace {

template <typename E, size_t N>
bool ParseByName(const std::string& text, const E (&values)[N], const char* (*name)(E), E* out) {
  for (E v : values) {
    if (text == name(v)) {
      *out = v;
      return true;
    }
  }
  return false;
}

}  // namespace

const char* IntakeOutcomeName(IntakeOutcome o) {
  switch (o) {
    case IntakeOutcome::kDuplicate: return "duplicate";
    case IntakeOutcome::kFiltered: return "filtered";
    case IntakeOutcome::kStored: return "stored";
  }
  return "?";
}

nlohmann::json MandateJson(const Mandate& m, const std::string& ended_by, std::optional<TimeMs> ended_at) {
  using nlohmann::json;
  json j{{"policy_version", m.policy_version},
         {"scope", m.scope},
         {"strength", StrengthName(m.strength)},
         {"matched_rules", m.matched_rules},
         {"source", m.source},
         {"sender", m.sender ? json(*m.sender) : json(nullptr)},
         {"admission", m.admission},
         {"budget", m.budget ? m.budget->ToJson() : json(nullptr)},
         {"repos", m.repos},
         {"created_at", FormatTime(m.created_at)},
         {"status", m.ended_as.empty() ? "active" : m.ended_as}};
  if (!m.ended_as.empty())
    j["ended"] = {{"reason", m.ended_reason}, {"by", ended_by}, {"at", ended_at ? json(FormatTime(*ended_at)) : json(nullptr)}};
  return j;
}

const char* StageName(Stage s) {
  switch (s) {
    case Stage::kWorking: return "working";
    case Stage::kIdle: return "idle";
    case Stage::kWaitingForPerson: return "waiting_for_person";
    case Stage::kReady: return "ready";
    case Stage::kBlocked: return "blocked";
    case Stage::kEnded: return "ended";
  }
  return "?";
}

bool ParseStage(const std::string& text, Stage* out) {
  static const Stage kAll[] = {Stage::kWorking, Stage::kIdle, Stage::kWaitingForPerson,
                               Stage::kReady,   Stage::kBlocked, Stage::kEnded};
  return ParseByName(text, kAll, StageName, out);
}

const char* DecisionOutcomeName(DecisionOutcome d) {
  switch (d) {
    case DecisionOutcome::kAccept: return "accept";
    case DecisionOutcome::kStop: return "stop";
    case DecisionOutcome::kIgnore: return "ignore";
    case DecisionOutcome::kUnavailable: return "unavailable";
  }
  return "?";
}

bool ParseDecisionOutcome(const std::string& text, DecisionOutcome* out) {
  static const DecisionOutcome kAll[] = {DecisionOutcome::kAccept, DecisionOutcome::kStop, DecisionOutcome::kIgnore,
                                         DecisionOutcome::kUnavailable};
  return ParseByName(text, kAll, DecisionOutcomeName, out);
}

const char* MessageKindName(MessageKind k) {
  switch (k) {
    case MessageKind::kAcknowledgement: return "acknowledgement";
    case MessageKind::kAnswer: return "answer";
    case MessageKind::kResult: return "result";
    case MessageKind::kAttention: return "attention";
  }
  return "?";
}

const char* HandbackKindName(HandbackKind k) {
  switch (k) {
    case HandbackKind::kOutOfScope: return "out_of_scope";
    case HandbackKind::kOtherTicket: return "other_ticket";
    case HandbackKind::kUnrelatedThread: return "unrelated_thread";
  }
  return "?";
}

bool ParseHandbackKind(const std::string& text, HandbackKind* out) {
  static const HandbackKind kAll[] = {HandbackKind::kOutOfScope, HandbackKind::kOtherTicket,
                                      HandbackKind::kUnrelatedThread};
  return ParseByName(text, kAll, HandbackKindName, out);
}

nlohmann::json TicketPullJson(const TicketPull& p) {
  return nlohmann::json{{"repo", p.repo},
                        {"number", p.number},
                        {"url", p.url},
                        {"head_branch", p.head_branch},
                        {"state", p.state},
                        {"ci_fix_attempts", p.ci_fix_attempts},
                        {"created_at", FormatTime(p.created_at)},
                        {"updated_at", FormatTime(p.updated_at)}};
}

}  // namespace superagent

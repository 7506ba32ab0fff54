// A Ticket's own pull request (SPEC §6: "Ready means the result can be used/reviewed; a linked open
// PR keeps being tracked"). When the daemon opens a PR for a Ticket, the Ticket is subscribed to the
// PR's Thread and to its head branch's CI Thread, so reviews and CI reach it as inputs like any
// message; this file decides what the PR-specific ones do: a failing check starts a fix turn at most
// `ci_fix_attempts` times (per push), then a person is asked; passing checks are context; a merged or
// closed PR ends the Ticket with that reason. All inside the caller's transaction.
#include <algorithm>
#include <cctype>
#include <iterator>

#include <spdlog/spdlog.h>

#include "core/engine_internal.h"
#include "core/ticket_stage.h"
#include "store/store.h"
#include "superagent/digest.h"
#include "superagent/engine.h"
#include "superagent/github_threads.h"
#include "superagent/json_read.h"
#include "superagent/question.h"
#include "superagent/text.h"

namespace superagent {

using nlohmann::json;

namespace {

std::string PullLink(const TicketPull& p) { return p.url.empty() ? "#" + std::to_string(p.number) : p.url; }

// A check that says the change is broken; "cancelled" and "skipped" are a person's or the
// workflow's choice, not a failure to fix.
bool CheckFailed(const std::string& conclusion) {
  return conclusion == "failure" || conclusion == "timed_out" || conclusion == "action_required" ||
         conclusion == "startup_failure";
}

// The issues of this repository a PR's title or body says it closes ("Fixes #12", "closes: #7"),
// with GitHub's own closing keywords, at most a few: the Ticket follows their discussion as it
// follows its PR's. A plain "#12" is only a mention, and another repository's issue is not ours.
std::vector<std::int64_t> ClosedIssues(const std::string& text) {
  constexpr std::size_t kMaxIssues = 5;
  static const char* const kKeywords[] = {"close", "closes", "closed", "fix", "fixes", "fixed", "resolve", "resolves", "resolved"};
  std::string lower = text;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  std::vector<std::int64_t> out;
  for (std::size_t hash = lower.find('#'); hash != std::string::npos && out.size() < kMaxIssues;
       hash = lower.find('#', hash + 1)) {
    std::size_t end = hash + 1;
    while (end < lower.size() && end - hash <= 10 && std::isdigit(static_cast<unsigned char>(lower[end]))) ++end;
    if (end == hash + 1 || end - hash > 10 || (end < lower.size() && word_char(lower[end]))) continue;
    std::size_t before = hash;  // back over "Fixes: " to the keyword
    while (before > 0 && (lower[before - 1] == ' ' || lower[before - 1] == '\t')) --before;
    if (before > 0 && lower[before - 1] == ':') --before;
    while (before > 0 && (lower[before - 1] == ' ' || lower[before - 1] == '\t')) --before;
    if (before == hash) continue;  // "fixes#12" is not GitHub's syntax
    std::size_t start = before;
    while (start > 0 && word_char(lower[start - 1])) --start;
    const std::string word = lower.substr(start, before - start);
    if (std::find(std::begin(kKeywords), std::end(kKeywords), word) == std::end(kKeywords)) continue;
    const std::int64_t number = std::stoll(lower.substr(hash + 1, end - hash - 1));
    if (number > 0 && std::find(out.begin(), out.end(), number) == out.end()) out.push_back(number);
  }
  return out;
}

// "owner/name#12": how GitHub itself names a pull request of any repository.
std::string PullName(const TicketPull& p) { return p.repo + "#" + std::to_string(p.number); }

// The Ticket's pull requests in the order its Mandate lists their repositories — the order they
// merge in; one of a repository it does not list comes after, in the order they were opened.
std::vector<TicketPull> InMandateOrder(std::vector<TicketPull> pulls, const std::optional<Mandate>& mandate) {
  auto rank = [&](const TicketPull& p) {
    if (!mandate) return std::size_t{0};
    auto it = std::find(mandate->repos.begin(), mandate->repos.end(), p.repo);
    return static_cast<std::size_t>(it - mandate->repos.begin());
  };
  std::stable_sort(pulls.begin(), pulls.end(), [&](const TicketPull& a, const TicketPull& b) { return rank(a) < rank(b); });
  return pulls;
}

std::vector<TicketPull> OpenOnes(const std::vector<TicketPull>& pulls) {
  std::vector<TicketPull> out;
  for (const TicketPull& p : pulls)
    if (p.state == "open") out.push_back(p);
  return out;
}

std::string MetaString(const Trigger& t, const char* key) {
  auto it = t.meta.find(key);
  return it != t.meta.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

namespace {

// The payload of a merge_pull_request action for `pull` under `rule`: the guard's bounds.
json MergePayload(const Ticket& tk, const TicketPull& pull, const Rule& rule, const std::string& head_sha) {
  json payload{{"channel", github_threads::Repository(pull.repo)},
               {"ticket", tk.id},
               {"number", pull.number},
               {"head_sha", head_sha},
               {"max_changed_lines", rule.auto_merge.max_changed_lines},
               {"required_approvals", rule.auto_merge.required_approvals}};
  if (!rule.approver.empty()) payload["approver"] = rule.approver;
  return payload;
}

}  // namespace

Result<const Rule*> Engine::AutoMergeRuleLocked(const Ticket& tk) {
  // SPEC §6: only ready work, and only under a rule that allows it now (the policy may have changed).
  if (tk.stage != Stage::kReady) return static_cast<const Rule*>(nullptr);
  ASSIGN_OR_RETURN(auto mandate, store_->MandateForTicket(tk.id));
  if (!mandate || !mandate->ended_as.empty()) return static_cast<const Rule*>(nullptr);
  for (const std::string& name : mandate->matched_rules)
    if (const Rule* r = policy_.FindRule(name); r && r->enabled && r->auto_merge.enabled) return r;
  return static_cast<const Rule*>(nullptr);
}

Result<std::string> Engine::PullKeyLocked(TicketId ticket, const TicketPull& pull) {
  // As WorkerServices keyed the PR: the Ticket's own repository's plainly, another's with its name.
  ASSIGN_OR_RETURN(auto ws, store_->GetWorkspace(ticket));
  const std::string key = "pr:ticket:" + Num(ticket);
  return !ws || ws->repo.empty() || ws->repo == pull.repo ? key : key + ":" + pull.repo;
}

Status Engine::AutoMergeLocked(const Ticket& tk, const TicketPull& pull, const std::string& head_sha,
                               const std::string& approver, TimeMs now) {
  if (head_sha.empty()) return Status::Ok();
  ASSIGN_OR_RETURN(const Rule* rule, AutoMergeRuleLocked(tk));
  if (rule == nullptr) return Status::Ok();
  ASSIGN_OR_RETURN(auto pulls, store_->TicketPulls(tk.id));
  const std::vector<TicketPull> open = OpenOnes(pulls);
  if (open.size() > 1) {
    // Issue 37: a change across repositories merges all or none. Each pull request's guard is
    // asked first (check_only), in one round; only when every one passed does the first merge,
    // and each merge done asks for the next, in the Mandate's order (PullDeliveredLocked).
    const std::string round =
        Sha256Hex(PullName(pull) + "\n" + head_sha + "\n" + text::AsciiLower(approver)).substr(0, 16);
    ASSIGN_OR_RETURN(auto mandate, store_->MandateForTicket(tk.id));
    for (const TicketPull& p : InMandateOrder(open, mandate)) {
      json payload = MergePayload(tk, p, *rule, p.number == pull.number && p.repo == pull.repo ? head_sha : "");
      payload["idempotency_key"] = "merge-check:ticket:" + Num(tk.id) + ":" + round + ":" + PullName(p);
      payload["check_only"] = true;
      payload["round"] = round;
      ASSIGN_OR_RETURN(payload["pull_key"], PullKeyLocked(tk.id, p));
      RETURN_IF_ERROR(EnqueueActionLocked("merge_pull_request", payload, now));
    }
    RETURN_IF_ERROR(store_->InsertTicketEvent(tk.id, now, tk.stage, tk.stage,
                                              "auto-merge of " + Num(static_cast<std::int64_t>(open.size())) +
                                                  " pull requests asked, all or none (rule " + rule->name +
                                                  "): each one's guard first"));
    spdlog::info("auto-merge asked ticket={} pulls={} rule={} round={}", tk.id, open.size(), rule->name, round);
    return Status::Ok();
  }
  // One attempt per head commit and approving person: a new push is a new version that needs its
  // own approval, and each approval of it asks the guard again (which counts only writers'), so a
  // stranger who approves first cannot use up the attempt a writer's approval makes.
  json payload = MergePayload(tk, pull, *rule, head_sha);
  payload["idempotency_key"] = "merge:ticket:" + Num(tk.id) + ":" + head_sha + ":" + text::AsciiLower(approver);
  RETURN_IF_ERROR(EnqueueActionLocked("merge_pull_request", payload, now));
  RETURN_IF_ERROR(store_->InsertTicketEvent(tk.id, now, tk.stage, tk.stage,
                                            "auto-merge of #" + Num(pull.number) + " asked (rule " + rule->name + ")"));
  spdlog::info("auto-merge asked ticket={} number={} rule={} head={}", tk.id, pull.number, rule->name, head_sha);
  return Status::Ok();
}

Status Engine::MergeRoundDeliveredLocked(Ticket* tk, const json& payload, const Delivery& d, TimeMs now) {
  const std::string round = json_read::StringOr(payload, "round");
  const bool check_only = json_read::BoolOr(payload, "check_only");
  const auto place = github_threads::PlaceOf(json_read::StringOr(payload, "channel"));
  auto number_it = payload.find("number");
  const std::int64_t number =
      number_it != payload.end() && number_it->is_number_integer() ? number_it->get<std::int64_t>() : 0;
  if (d.outcome != Delivery::Outcome::kDone && d.outcome != Delivery::Outcome::kFailed) return Status::Ok();
  ASSIGN_OR_RETURN(auto pulls, store_->TicketPulls(tk->id));
  ASSIGN_OR_RETURN(auto mandate, store_->MandateForTicket(tk->id));
  TicketPull* pull = nullptr;
  for (TicketPull& p : pulls)
    if (place && p.repo == place->repo && p.number == number) pull = &p;
  if (pull == nullptr) return Status::Ok();
  const std::string name = PullName(*pull);
  auto next_merge = [&]() -> Status {
    mu_.AssertHeld();  // a lambda of a locked method: Clang analyses it on its own
    // The first open pull request, in the Mandate's order, that this round's guard passed.
    for (const TicketPull& p : InMandateOrder(OpenOnes(pulls), mandate)) {
      if (p.merge_check.rfind(round + " ", 0) != 0) continue;
      const std::string sha = p.merge_check.substr(round.size() + 1);
      if (sha == "refused" || sha.empty()) return Status::Ok();
      ASSIGN_OR_RETURN(const Rule* rule, AutoMergeRuleLocked(*tk));
      if (rule == nullptr) {
        RETURN_IF_ERROR(store_->InsertTicketEvent(tk->id, now, tk->stage, tk->stage,
                                                  "auto-merge stopped: no rule allows it now"));
        return Status::Ok();
      }
      json merge = MergePayload(*tk, p, *rule, sha);
      merge["idempotency_key"] = "merge:ticket:" + Num(tk->id) + ":" + round + ":" + PullName(p);
      merge["round"] = round;
      ASSIGN_OR_RETURN(merge["pull_key"], PullKeyLocked(tk->id, p));
      RETURN_IF_ERROR(EnqueueActionLocked("merge_pull_request", merge, now));
      spdlog::info("auto-merge next ticket={} pull={} round={}", tk->id, PullName(p), round);
      return Status::Ok();
    }
    return Status::Ok();
  };
  if (check_only) {
    if (pull->state != "open") return Status::Ok();
    pull->merge_check = round + " " + (d.outcome == Delivery::Outcome::kDone ? d.external_id : "refused");
    pull->updated_at = now;
    RETURN_IF_ERROR(store_->UpdateTicketPull(*pull));
    if (d.outcome == Delivery::Outcome::kFailed) {
      // One refusal holds them all: nothing of this round merges.
      return store_->InsertTicketEvent(tk->id, now, tk->stage, tk->stage,
                                       "auto-merge held, none merged: " + name + ": " + text::Cut(d.error, 240));
    }
    for (const TicketPull& p : OpenOnes(pulls))
      if (p.merge_check.rfind(round + " ", 0) != 0 || p.merge_check == round + " refused") return Status::Ok();
    RETURN_IF_ERROR(store_->InsertTicketEvent(tk->id, now, tk->stage, tk->stage,
                                              "auto-merge: every pull request's guard passed; merging in order"));
    return next_merge();
  }
  if (d.outcome == Delivery::Outcome::kFailed) {
    std::string merged;
    for (const TicketPull& p : pulls)
      if (p.state == "merged") merged += (merged.empty() ? "" : ", ") + PullName(p);
    spdlog::warn("auto-merge stopped ticket={} pull={} merged_before=\"{}\" error=\"{}\"", tk->id, name, merged,
                 text::Cut(d.error, 200));
    return store_->InsertTicketEvent(
        tk->id, now, tk->stage, tk->stage,
        text::Cut((merged.empty() ? "auto-merge stopped, none merged: " : "auto-merge stopped after " + merged + ": ") +
                      name + " was not merged (" + d.error + "); a person merges the rest",
                  300));
  }
  if (pull->state == "open") {
    pull->state = "merged";
    pull->updated_at = now;
    RETURN_IF_ERROR(store_->UpdateTicketPull(*pull));
  }
  RETURN_IF_ERROR(store_->InsertTicketEvent(tk->id, now, tk->stage, tk->stage, "pull request " + name + " merged by the auto-merge guard"));
  if (!OpenOnes(pulls).empty()) return next_merge();
  if (tk->open()) {
    tk->end_reason = "pull requests merged by the auto-merge guard";
    RETURN_IF_ERROR(ChangeStage(store_.get(), options_, tk, Stage::kEnded, StageCause::kEnded, tk->end_reason, now));
    RETURN_IF_ERROR(store_->EndAssignments(tk->id, now));
    spdlog::info("ticket ended id={} reason=\"{}\"", tk->id, tk->end_reason);
  }
  return Status::Ok();
}

Status Engine::LinkPullsLocked(TicketId ticket, TimeMs now) {
  // Once every pull request of the turn is opened: each one names the others, so a reviewer of one
  // finds the rest (and GitHub shows the link on both sides).
  ASSIGN_OR_RETURN(bool pending, store_->ActionPendingFor(ticket, "open_pull_request"));
  if (pending) return Status::Ok();
  ASSIGN_OR_RETURN(auto pulls, store_->TicketPulls(ticket));
  ASSIGN_OR_RETURN(auto mandate, store_->MandateForTicket(ticket));
  const std::vector<TicketPull> open = InMandateOrder(OpenOnes(pulls), mandate);
  if (open.size() < 2) return Status::Ok();
  std::string set;
  for (const TicketPull& p : open) set += PullName(p) + "\n";
  const std::string version = Sha256Hex(set).substr(0, 12);
  for (const TicketPull& p : open) {
    json links = json::array();
    for (const TicketPull& o : open)
      if (&o != &p) links.push_back({{"repo", o.repo}, {"number", o.number}});
    RETURN_IF_ERROR(EnqueueActionLocked("link_pull_requests",
                                        {{"channel", github_threads::Repository(p.repo)},
                                         {"idempotency_key", "links:ticket:" + Num(ticket) + ":" + version + ":" + PullName(p)},
                                         {"ticket", ticket},
                                         {"number", p.number},
                                         {"links", links}},
                                        now));
  }
  spdlog::info("pull requests linked ticket={} pulls=\"{}\"", ticket, text::Join([&] {
                 std::vector<std::string> names;
                 for (const TicketPull& p : open) names.push_back(PullName(p));
                 return names;
               }(), " "));
  return Status::Ok();
}

Status Engine::PullDeliveredLocked(const std::string& kind, const json& payload, const Delivery& d, TimeMs now) {
  if ((kind != "open_pull_request" && kind != "merge_pull_request") || !payload.is_object()) return Status::Ok();
  auto ticket_it = payload.find("ticket");
  if (ticket_it == payload.end() || !ticket_it->is_number_integer()) return Status::Ok();
  const TicketId ticket = ticket_it->get<TicketId>();
  ASSIGN_OR_RETURN(auto tk, store_->GetTicket(ticket));
  if (!tk) return Status::Ok();
  if (kind == "merge_pull_request") {
    // A round across repositories (issue 37) has its own course: check, then merge in order.
    if (payload.contains("round")) return MergeRoundDeliveredLocked(&*tk, payload, d, now);
    auto number_it = payload.find("number");
    const std::int64_t number = number_it != payload.end() && number_it->is_number_integer() ? number_it->get<std::int64_t>() : 0;
    if (d.outcome == Delivery::Outcome::kFailed) {
      // A refusal is the guard doing its work, recorded on the Ticket; a person merges.
      return store_->InsertTicketEvent(ticket, now, tk->stage, tk->stage, text::Cut(d.error, 300));
    }
    if (d.outcome != Delivery::Outcome::kDone) return Status::Ok();
    ASSIGN_OR_RETURN(auto pulls, store_->TicketPulls(ticket));
    const auto place = github_threads::PlaceOf(json_read::StringOr(payload, "channel"));
    for (TicketPull& p : pulls) {
      if (p.number != number || p.state != "open" || !place || p.repo != place->repo) continue;
      p.state = "merged";
      p.updated_at = now;
      RETURN_IF_ERROR(store_->UpdateTicketPull(p));
    }
    // The merge may be the agent's own (merge_as_agent), which the Source never reads back.
    if (tk->open() && OpenOnes(pulls).empty()) {
      tk->end_reason = "pull request #" + Num(number) + " merged by the auto-merge guard";
      RETURN_IF_ERROR(ChangeStage(store_.get(), options_, &*tk, Stage::kEnded, StageCause::kEnded, tk->end_reason, now));
      RETURN_IF_ERROR(store_->EndAssignments(ticket, now));
      spdlog::info("ticket ended id={} reason=\"{}\"", ticket, tk->end_reason);
    }
    return Status::Ok();
  }

  std::string line;
  if (d.outcome == Delivery::Outcome::kDone) {
    TicketPull p;
    p.ticket = ticket;
    const auto place = github_threads::PlaceOf(json_read::StringOr(payload, "channel"));
    if (!place) {
      spdlog::warn("pull request opened on no known repository ticket={} channel=\"{}\"", ticket,
                   text::Cut(json_read::StringOr(payload, "channel"), 120));
      return Status::Ok();
    }
    p.repo = place->repo;
    try {
      p.number = std::stoll(d.external_id);
    } catch (const std::exception&) {
      p.number = 0;
    }
    if (p.number <= 0) {
      spdlog::warn("pull request opened without a number ticket={} external_id=\"{}\"", ticket, d.external_id);
      return Status::Ok();
    }
    p.head_branch = text::Repair(json_read::StringOr(payload, "head"));
    p.url = text::Repair(d.url);
    p.created_at = p.updated_at = now;
    RETURN_IF_ERROR(store_->InsertTicketPull(p));
    // Its reviews and its CI reach the Ticket by Subscription, as any message on its Threads.
    const std::string pull_thread = github_threads::Pull(p.repo, p.number);
    RETURN_IF_ERROR(store_->UpsertThread(pull_thread, "github", pull_thread, now));
    RETURN_IF_ERROR(store_->Subscribe(pull_thread, ticket, now));
    if (!p.head_branch.empty()) {
      const std::string ci = github_threads::Ci(p.repo, p.head_branch);
      ASSIGN_OR_RETURN(auto ci_channel, store_->ThreadChannel(ci));
      if (!ci_channel) RETURN_IF_ERROR(store_->UpsertThread(ci, "github", "", now));
      RETURN_IF_ERROR(store_->Subscribe(ci, ticket, now));
    }
    for (std::int64_t issue : ClosedIssues(json_read::StringOr(payload, "title") + "\n" + json_read::StringOr(payload, "body"))) {
      const std::string thread = github_threads::Issue(p.repo, issue);
      RETURN_IF_ERROR(store_->UpsertThread(thread, "github", thread, now));
      RETURN_IF_ERROR(store_->Subscribe(thread, ticket, now));
      spdlog::info("issue linked ticket={} number={} named_by=pull_request_{}", ticket, issue, p.number);
    }
    ASSIGN_OR_RETURN(auto mandate, store_->MandateForTicket(ticket));
    // A change across repositories names each pull request as GitHub does, repository and all.
    const bool across = mandate && !mandate->repos.empty();
    RETURN_IF_ERROR(store_->InsertTicketEvent(ticket, now, tk->stage, tk->stage,
                                              "pull request " + (across ? PullName(p) : "#" + Num(p.number)) + " opened"));
    RETURN_IF_ERROR(EnqueueCheckRuns(store_.get(), options_, *tk, "pull request opened",
                                     "Pull request #" + Num(p.number) + " opened for Ticket #" + Num(ticket), now));
    spdlog::info("pull request linked ticket={} number={} head={}{}", ticket, p.number, p.head_branch,
                 p.repo.empty() ? "" : " repo=" + p.repo);
    // A change across repositories says which repository each pull request is in.
    line = across ? "Pull request in " + p.repo + ": " + PullLink(p) : "Pull request: " + PullLink(p);
  } else if (d.outcome == Delivery::Outcome::kFailed) {
    const auto place = github_threads::PlaceOf(json_read::StringOr(payload, "channel"));
    ASSIGN_OR_RETURN(auto mandate, store_->MandateForTicket(ticket));
    line = "The pull request" + (place && mandate && !mandate->repos.empty() ? " in " + place->repo : std::string()) +
           " could not be opened: " + text::Cut(d.error, 200);
  } else {
    return Status::Ok();
  }
  RETURN_IF_ERROR(LinkPullsLocked(ticket, now));
  // The result waited for this (ClaimDueEffects): it now says where the work is, or that it is not.
  ASSIGN_OR_RETURN(auto receipts, store_->ReceiptsFor(ticket));
  for (const Receipt& r : receipts) {
    if (r.status != "pending" || r.kind != MessageKind::kResult) continue;
    std::string body = r.body + "\n\n" + line;
    if (!TooLong(r.channel, body, options_).empty()) {
      // The link matters more than the summary's last words.
      const std::size_t words = text::CountWords(r.body), need = text::CountWords(line) + 3;
      body = text::CutWords(r.body, words > need ? words - need : 1) + "\n\n" + line;
    }
    if (TooLong(r.channel, body, options_).empty()) RETURN_IF_ERROR(store_->SetReceiptBody(r.id, body));
  }
  return Status::Ok();
}

Result<bool> Engine::RouteOnPullLocked(Ticket* tk, const Trigger& t,
                                       const std::function<Status(const char* state)>& deliver, TimeMs now) {
  std::optional<TicketPull> pull;
  for (const std::string& thread : t.threads) {
    ASSIGN_OR_RETURN(pull, store_->TicketPullOn(tk->id, thread));
    if (pull) break;
  }
  if (!pull) return false;

  if (MetaString(t, "type") == "pull_request_closed") {
    auto merged_it = t.meta.find("merged");
    const bool merged = merged_it != t.meta.end() && merged_it->is_boolean() && merged_it->get<bool>();
    if (pull->state == "open") {
      pull->state = merged ? "merged" : "closed";
      pull->updated_at = now;
      RETURN_IF_ERROR(store_->UpdateTicketPull(*pull));
    }
    RETURN_IF_ERROR(deliver("context"));
    // A change across repositories ends with its last pull request (issue 37).
    ASSIGN_OR_RETURN(auto pulls, store_->TicketPulls(tk->id));
    if (const std::vector<TicketPull> open = OpenOnes(pulls); !open.empty()) {
      std::vector<std::string> names;
      for (const TicketPull& p : open) names.push_back(PullName(p));
      RETURN_IF_ERROR(store_->InsertTicketEvent(
          tk->id, now, tk->stage, tk->stage,
          text::Cut("pull request " + PullName(*pull) + (merged ? " merged" : " closed") + "; still open: " +
                        text::Join(names, ", "),
                    300)));
      return true;
    }
    if (tk->open()) {
      tk->end_reason = "pull request #" + Num(pull->number) + (merged ? " merged" : " closed") +
                       (t.actor ? " by " + *t.actor : "");
      RETURN_IF_ERROR(ChangeStage(store_.get(), options_, tk, Stage::kEnded, StageCause::kEnded, tk->end_reason, now));
      RETURN_IF_ERROR(store_->EndAssignments(tk->id, now));
      spdlog::info("ticket ended id={} reason=\"{}\"", tk->id, tk->end_reason);
    }
    return true;
  }
  // An approval of a ready Ticket's PR whose rule allows auto-merge: the guard decides at delivery.
  if (MetaString(t, "type") == "review" && MetaString(t, "state") == "approved" && t.human && tk->open() &&
      pull->state == "open")
    RETURN_IF_ERROR(AutoMergeLocked(*tk, *pull, MetaString(t, "commit_id"), t.actor.value_or(""), now));
  if (t.scope != "ci") return false;  // reviews and comments: ordinary messages to the Ticket
  if (!tk->open()) return true;       // CI never wakes an ended Ticket (SPEC §4.5)
  const std::string conclusion = MetaString(t, "conclusion"), sha = MetaString(t, "head_sha");
  if (!CheckFailed(conclusion)) {
    RETURN_IF_ERROR(deliver("context"));
    return true;
  }
  // Attempts count pushes, not checks: three checks failing on one push are one thing to fix.
  const bool same_push = !sha.empty() && sha == pull->ci_fix_sha;
  if (same_push || pull->ci_fix_attempts < options_.ci_fix_attempts) {
    if (!same_push) {
      ++pull->ci_fix_attempts;
      pull->ci_fix_sha = sha;
      pull->updated_at = now;
      RETURN_IF_ERROR(store_->UpdateTicketPull(*pull));
      spdlog::info("ci failed on a ticket's pull request ticket={} number={} attempt={}/{}", tk->id, pull->number,
                   pull->ci_fix_attempts, options_.ci_fix_attempts);
    }
    RETURN_IF_ERROR(deliver("pending"));
    return true;
  }
  RETURN_IF_ERROR(deliver("context"));
  if (tk->stage == Stage::kWaitingForPerson) return true;  // already asked; the answer decides
  ASSIGN_OR_RETURN(auto mandate, store_->MandateForTicket(tk->id));
  const std::string asked = mandate ? mandate->sender.value_or("") : "";
  if (asked.empty()) {
    spdlog::warn("ci still failing, nobody to ask ticket={} number={}", tk->id, pull->number);
    return true;
  }
  HumanAction action;
  action.thread = tk->thread;
  action.actor = asked;
  action.question = "CI still fails on " + PullLink(*pull) + " after " + Num(pull->ci_fix_attempts) +
                    " fix attempts (" + text::FirstLine(t.text, 200) + "). Should I try again?";
  action.form = QuestionFormJson({{"Try again", "Leave it to me"}, true, "ci_fix"});
  RETURN_IF_ERROR(AskPersonLocked(tk, action, "ask:ci:ticket:" + Num(tk->id) + ":" + t.id, now));
  spdlog::info("ci fix attempts spent ticket={} number={} asked={}", tk->id, pull->number, asked);
  return true;
}

Status Engine::AnsweredLocked(TicketId ticket, const HumanAction& asked, const json& answer, TimeMs now) {
  auto form = ParseQuestionForm(asked.form);
  if (form.ok() && form->purpose == "repository") {
    // Which of its chat's repositories the Ticket works in (feishu.chat_repos): one its Mandate
    // lists, as the option the asker picked; the first answer stands.
    const std::string repo = answer.is_object() ? json_read::StringOr(answer, "text") : "";
    ASSIGN_OR_RETURN(auto mandate, store_->MandateForTicket(ticket));
    if (repo.empty() || !mandate || std::find(mandate->repos.begin(), mandate->repos.end(), repo) == mandate->repos.end())
      return Status::Ok();
    RETURN_IF_ERROR(store_->ChooseRepository(ticket, repo, asked.actor, now));
    spdlog::info("repository chosen ticket={} repo={} by={}", ticket, repo, asked.actor);
    return Status::Ok();
  }
  if (!form.ok() || form->purpose != "ci_fix") return Status::Ok();
  auto option = answer.is_object() ? answer.find("option") : answer.end();
  if (!answer.is_object() || option == answer.end() || !option->is_number_integer() || option->get<int>() != 1)
    return Status::Ok();
  // "Try again": a fresh set of attempts for each of the Ticket's open PRs.
  ASSIGN_OR_RETURN(auto pulls, store_->TicketPulls(ticket));
  for (TicketPull& p : pulls) {
    if (p.state != "open") continue;
    p.ci_fix_attempts = 0;
    p.ci_fix_sha.clear();
    p.updated_at = now;
    RETURN_IF_ERROR(store_->UpdateTicketPull(p));
  }
  return Status::Ok();
}

}  // namespace superagent

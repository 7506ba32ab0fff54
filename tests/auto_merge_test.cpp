// The auto-merge guard (SPEC §6) on its own: every condition that refuses, the one case that
// merges, and reading GitHub's answers into its facts without trusting their types.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "superagent/github.h"
#include "sources/github/channel.h"
#include "superagent/json_read.h"

#include <map>
#include <vector>

namespace superagent::github {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

const std::string kMergeHead = "ec26c3e57ca3a959ca5aad62de7213c562f8c821";
const std::string kOld = "34c5c7793cb3b279e22454cb6750c80560547b3a";
const std::string kMarker = ReceiptMarker("pr:ticket:7");

ReviewFact Review(const std::string& login, const std::string& state, const std::string& commit = kMergeHead,
                  bool bot = false) {
  return ReviewFact{login, state, commit, bot};
}

// A PR the daemon opened for Ticket 7, small, approved by alice on the head: mergeable.
PullFacts Mergeable() {
  PullFacts p;
  p.open = true;
  p.draft = false;
  p.author = "superagent-bot";
  p.head_sha = kMergeHead;
  p.body = MessageText("Fixes the typo.", "pr:ticket:7");
  p.additions = 3;
  p.deletions = 1;
  p.reviews = {Review("alice", "APPROVED")};
  p.agent_login = "superagent-bot";
  return p;
}

// Who has write access in these tests: a table, looked up ignoring case as GitHub does. Every
// lookup is counted, so a test can say who was asked.
struct Table {
  std::map<std::string, std::string> roles = {{"alice", "write"}, {"bob", "admin"}, {"张伟", "maintain"},
                                              {"superagent-bot", "write"}, {"octo-dev", "write"}};
  std::vector<std::string> asked;
  WriteAccessLookup Lookup() {
    return [this](const std::string& login) {
      asked.push_back(login);
      std::string folded = login;
      for (char& c : folded) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      auto it = roles.find(folded);
      const std::string role = it == roles.end() ? "read" : it->second;
      return WriteAccess{role == "admin" || role == "maintain" || role == "write", role};
    };
  }
};

std::string Refusal(const PullFacts& p, AutoMergeRule rule = {}) {
  Table t;
  return AutoMergeRefusal(p, rule, kMergeHead, kMarker, t.Lookup());
}

TEST(AutoMergeGuard, AllowsAnOpenReadySmallPullRequestApprovedOnItsHead) {
  EXPECT_EQ(Refusal(Mergeable()), "");
  AutoMergeRule rule;
  rule.approver = "ALICE";  // logins ignore case, as on GitHub
  EXPECT_EQ(Refusal(Mergeable(), rule), "");
}

TEST(AutoMergeGuard, RefusesAClosedPullRequest) {
  PullFacts p = Mergeable();
  p.open = false;
  EXPECT_EQ(Refusal(p), "the pull request is not open");
}

TEST(AutoMergeGuard, RefusesADraft) {
  PullFacts p = Mergeable();
  p.draft = true;
  EXPECT_EQ(Refusal(p), "the pull request is a draft");
}

TEST(AutoMergeGuard, RefusesAPullRequestNotOpenedForThisTicket) {
  PullFacts p = Mergeable();
  p.body = MessageText("Fixes the typo.", "pr:ticket:8");  // another Ticket's
  EXPECT_EQ(Refusal(p), "the pull request was not opened for this Ticket (its description lacks the Ticket's marker)");
  p.body = "A person's PR that mentions pr:ticket:7 in plain text";
  EXPECT_THAT(Refusal(p), HasSubstr("not opened for this Ticket"));
  EXPECT_THAT(AutoMergeRefusal(Mergeable(), {}, kMergeHead, "", Table().Lookup()), HasSubstr("not opened for this Ticket"))
      << "an empty marker is found in every body; it must not open the door";
}

TEST(AutoMergeGuard, RefusesWhenANewVersionWasPushed) {
  PullFacts p = Mergeable();
  EXPECT_EQ(AutoMergeRefusal(p, {}, kOld, kMarker, Table().Lookup()),
            "a new version was pushed: the head is ec26c3e57ca3, the approved version was 34c5c7793cb3");
  EXPECT_EQ(AutoMergeRefusal(p, {}, "", kMarker, Table().Lookup()), "no head commit was named to merge");
}

TEST(AutoMergeGuard, RefusesAChangeOfTheLimitOrMore) {
  PullFacts p = Mergeable();
  p.additions = 150;
  p.deletions = 49;
  EXPECT_EQ(Refusal(p), "") << "199 changed lines is under 200";
  p.deletions = 50;
  EXPECT_EQ(Refusal(p), "the change is too large to merge without a person: 150 additions + 50 deletions, the limit "
                        "is under 200");
  AutoMergeRule tight;
  tight.max_changed_lines = 4;
  EXPECT_THAT(Refusal(Mergeable(), tight), HasSubstr("3 additions + 1 deletions, the limit is under 4"));
  p.additions = 2'000'000'000;
  p.deletions = 2'000'000'000;
  EXPECT_THAT(Refusal(p), HasSubstr("too large")) << "no overflow";
  p.additions = -5;
  p.deletions = 0;
  EXPECT_THAT(Refusal(p), HasSubstr("too large")) << "nonsense counts never merge";
}

TEST(AutoMergeGuard, RefusesWithoutEnoughApprovalsOfTheHead) {
  PullFacts p = Mergeable();
  p.reviews = {};
  EXPECT_EQ(Refusal(p), "the head commit ec26c3e57ca3 has 0 approvals by people with write access other than its author and the "
                        "agent; 1 required");
  // An approval of an older commit does not cover the head.
  p.reviews = {Review("alice", "APPROVED", kOld)};
  EXPECT_THAT(Refusal(p), HasSubstr("has 0 approvals"));
  // Two approvals needed; the same person approving twice is one.
  AutoMergeRule two;
  two.required_approvals = 2;
  p.reviews = {Review("alice", "APPROVED"), Review("Alice", "APPROVED")};
  EXPECT_EQ(Refusal(p, two), "the head commit ec26c3e57ca3 has 1 approval by people with write access other than its author and "
                           "the agent; 2 required");
  p.reviews.push_back(Review("bob", "APPROVED"));
  EXPECT_EQ(Refusal(p, two), "");
}

TEST(AutoMergeGuard, OnlyEachPersonsLatestDecisiveReviewCounts) {
  PullFacts p = Mergeable();
  p.reviews = {Review("alice", "APPROVED"), Review("alice", "CHANGES_REQUESTED")};
  EXPECT_THAT(Refusal(p), HasSubstr("has 0 approvals"));
  p.reviews = {Review("alice", "CHANGES_REQUESTED"), Review("alice", "APPROVED")};
  EXPECT_EQ(Refusal(p), "");
  p.reviews = {Review("alice", "APPROVED"), Review("alice", "DISMISSED")};
  EXPECT_THAT(Refusal(p), HasSubstr("has 0 approvals"));
  // A comment after an approval leaves it standing, as on GitHub; so does an unsent draft review.
  p.reviews = {Review("alice", "APPROVED"), Review("alice", "COMMENTED"), Review("alice", "PENDING")};
  EXPECT_EQ(Refusal(p), "");
  // A state nobody knows withdraws the approval: unsure means no.
  p.reviews = {Review("alice", "APPROVED"), Review("alice", "UNREADABLE")};
  EXPECT_THAT(Refusal(p), HasSubstr("has 0 approvals"));
}

TEST(AutoMergeGuard, BotsAndTheAuthorDoNotApprove) {
  PullFacts p = Mergeable();
  p.reviews = {Review("renovate[bot]", "APPROVED", kMergeHead, true), Review("helper", "APPROVED", kMergeHead, true),
               Review("superagent-bot", "APPROVED"), Review("SuperAgent-Bot", "APPROVED")};
  EXPECT_THAT(Refusal(p), HasSubstr("has 0 approvals"));
}

TEST(AutoMergeGuard, RefusesWhenTheRulesApproverHasNotApproved) {
  PullFacts p = Mergeable();
  AutoMergeRule rule;
  rule.approver = "张伟";
  EXPECT_EQ(Refusal(p, rule), "the rule's approver 张伟 has not approved the head commit ec26c3e57ca3");
  p.reviews.push_back(Review("张伟", "APPROVED", kOld));
  EXPECT_THAT(Refusal(p, rule), HasSubstr("approver 张伟 has not approved"));
  p.reviews.push_back(Review("张伟", "APPROVED"));
  EXPECT_EQ(Refusal(p, rule), "");
}

// --- Who may approve (issue 33): write access, asked only of the head's approvers

TEST(AutoMergeApprovers, ApprovalsWithoutWriteAccessDoNotCountAndTheRefusalSaysWhose) {
  PullFacts p = Mergeable();
  Table t;
  t.roles["mallory"] = "none";   // a stranger on a private repository
  t.roles["reader"] = "read";    // a stranger on a public one, or a read-only collaborator
  t.roles["triager"] = "triage";
  p.reviews = {Review("mallory", "APPROVED"), Review("reader", "APPROVED"), Review("triager", "APPROVED")};
  EXPECT_EQ(AutoMergeRefusal(p, {}, kMergeHead, kMarker, t.Lookup()),
            "the head commit ec26c3e57ca3 has 0 approvals by people with write access other than its author and the "
            "agent; 1 required; not counted: mallory (none), reader (read), triager (triage)");
  // One writer among them is enough.
  p.reviews.push_back(Review("Alice", "APPROVED"));
  EXPECT_EQ(AutoMergeRefusal(p, {}, kMergeHead, kMarker, t.Lookup()), "");
}

TEST(AutoMergeApprovers, OnlyTheHeadsApproversAreAskedEachOnce) {
  PullFacts p = Mergeable();
  p.reviews = {Review("carol", "COMMENTED"),       Review("dave", "APPROVED", kOld),
               Review("erin", "CHANGES_REQUESTED"), Review("alice", "APPROVED"),
               Review("ALICE", "APPROVED"),          Review("renovate[bot]", "APPROVED", kMergeHead, true),
               Review("superagent-bot", "APPROVED")};
  Table t;
  EXPECT_EQ(AutoMergeRefusal(p, {}, kMergeHead, kMarker, t.Lookup()), "");
  EXPECT_EQ(t.asked, std::vector<std::string>{"ALICE"}) << "nobody else could have approved the head";
}

TEST(AutoMergeApprovers, TheAgentsOwnApprovalNeverCounts) {
  // A PR authored by a person's account (say, opened for the Ticket by a person) that the agent
  // approved: the agent has write access, and still cannot approve its own work into the branch.
  PullFacts p = Mergeable();
  p.author = "octo-dev";
  p.reviews = {Review("SuperAgent-Bot", "APPROVED"), Review("octo-dev", "APPROVED")};
  Table t;
  EXPECT_THAT(AutoMergeRefusal(p, {}, kMergeHead, kMarker, t.Lookup()), HasSubstr("has 0 approvals"));
  EXPECT_TRUE(t.asked.empty()) << "neither the agent nor the author is asked about";
}

TEST(AutoMergeApprovers, AFailedLookupIsNotAWriterAndSaysWhy) {
  PullFacts p = Mergeable();
  WriteAccessLookup failing = [](const std::string&) {
    return WriteAccess{false, "permission unknown: HTTP 500 Server Error"};
  };
  EXPECT_EQ(AutoMergeRefusal(p, {}, kMergeHead, kMarker, failing),
            "the head commit ec26c3e57ca3 has 0 approvals by people with write access other than its author and the "
            "agent; 1 required; not counted: alice (permission unknown: HTTP 500 Server Error)");
  EXPECT_THAT(AutoMergeRefusal(p, {}, kMergeHead, kMarker, nullptr), HasSubstr("alice (permission not asked)"))
      << "no way to ask is no writer";
}

TEST(AutoMergeApprovers, AFloodOfStrangersIsNamedInShort) {
  PullFacts p = Mergeable();
  p.reviews.clear();
  for (int i = 0; i < 50; ++i) p.reviews.push_back(Review("stranger-" + std::to_string(i), "APPROVED"));
  const std::string refusal = Refusal(p);
  EXPECT_THAT(refusal, HasSubstr("and 45 more"));
  EXPECT_LT(refusal.size(), 500u);
}

TEST(AutoMergeApprovers, TheNamedApproverMustHaveWriteAccess) {
  PullFacts p = Mergeable();
  AutoMergeRule rule;
  rule.approver = "reader";
  p.reviews.push_back(Review("reader", "APPROVED"));
  EXPECT_EQ(Refusal(p, rule),
            "the rule's approver reader approved the head commit ec26c3e57ca3 without write access (read)");
  rule.approver = "bob";
  EXPECT_EQ(Refusal(p, rule), "the rule's approver bob has not approved the head commit ec26c3e57ca3");
  p.reviews.push_back(Review("bob", "APPROVED"));
  EXPECT_EQ(Refusal(p, rule), "");
}

TEST(AutoMergeApprovers, AUiChangeNeedsTheNamedApprover) {
  PullFacts p = Mergeable();
  p.ui_files = {"web/app.css", "web/index.html"};
  EXPECT_EQ(Refusal(p), "the change touches the UI (web/app.css and 1 more), which needs the rule's named approver, "
                        "and the rule names none");
  AutoMergeRule rule;
  rule.approver = "bob";
  EXPECT_THAT(Refusal(p, rule), HasSubstr("the rule's approver bob has not approved"));
  p.reviews.push_back(Review("bob", "APPROVED"));
  EXPECT_EQ(Refusal(p, rule), "");
  // Without a UI file the rule's other approvers suffice, as before.
  p.ui_files.clear();
  EXPECT_EQ(Refusal(Mergeable()), "");
}

// --- GitHub's permission answers → WriteAccess

ApiResponse Answer(int status, json body) {
  ApiResponse r;
  r.status = status;
  r.body = std::move(body);
  // As the Client says it: the request, then the status and GitHub's message.
  if (status >= 300) r.error = "GET /repos/o/r/collaborators/alice/permission: " + std::to_string(status) + " " +
                               json_read::StringOr(r.body, "message");
  if (status == 0) r.error = "GET /repos/o/r/collaborators/alice/permission: Timeout was reached";
  return r;
}

json PermissionBody(const std::string& login, const std::string& permission, bool push) {
  return {{"permission", permission},
          {"role_name", permission},
          {"user",
           {{"login", login},
            {"type", "User"},
            {"permissions", {{"admin", false}, {"maintain", false}, {"push", push}, {"triage", push}, {"pull", true}}},
            {"role_name", permission}}}};
}

TEST(AutoMergePermissionAnswer, WriteMaintainAndAdminAreWritersNothingElseIs) {
  for (const char* p : {"admin", "maintain", "write"}) {
    WriteAccess a = WriteAccessFromAnswer("alice", Answer(200, PermissionBody("alice", p, true)));
    EXPECT_TRUE(a.writer) << p;
    EXPECT_EQ(a.why, p);
  }
  for (const char* p : {"triage", "read", "none"}) {
    WriteAccess a = WriteAccessFromAnswer("alice", Answer(200, PermissionBody("alice", p, false)));
    EXPECT_FALSE(a.writer) << p;
    EXPECT_EQ(a.why, p);
  }
  // GitHub's own minimal answer, without user: believed.
  EXPECT_TRUE(WriteAccessFromAnswer("alice", Answer(200, {{"permission", "write"}})).writer);
}

TEST(AutoMergePermissionAnswer, AnAnswerThatFailsOrLiesIsNeverAWriter) {
  const std::vector<std::pair<ApiResponse, std::string>> cases = {
      {Answer(404, {{"message", "Not Found"}}), "permission unknown: HTTP 404 Not Found"},
      {Answer(403, {{"message", "Must have push access to view collaborator permission."}}),
       "(the agent's token needs push access to ask)"},
      {Answer(500, {{"message", "Server Error"}}), "permission unknown: HTTP 500"},
      {Answer(0, nullptr), "permission unknown: Timeout was reached"},
      {Answer(200, json::array({"admin"})), "the answer is array"},
      {Answer(200, "admin"), "the answer is string"},
      {Answer(200, {{"permission", 7}}), "\"permission\" is integer"},
      {Answer(200, {{"permission", {"admin"}}}), "\"permission\" is array"},
      {Answer(200, {{"role_name", "admin"}}), "\"permission\" is missing"},
      {Answer(200, {{"permission", "ADMIN"}}), "unknown permission \"ADMIN\""},
      {Answer(200, {{"permission", "管理员"}}), "unknown permission \"管理员\""},
      {Answer(200, {{"permission", "\xff\xfe"}}), "unknown permission"},
      {Answer(200, PermissionBody("mallory", "admin", true)), "the answer is about another user"},
      {Answer(200, {{"permission", "admin"}, {"user", {{"login", 42}}}}), "the answer is about another user"},
      {Answer(200, PermissionBody("alice", "write", false)), "\"write\" without push"},
      {Answer(200, {{"permission", "write"}, {"user", {{"permissions", {{"push", "true"}}}}}}), "without push"},
  };
  for (const auto& [answer, why] : cases) {
    WriteAccess a = WriteAccessFromAnswer("alice", answer);
    const std::string shown = answer.body.dump(-1, ' ', false, json::error_handler_t::replace);
    EXPECT_FALSE(a.writer) << shown;
    EXPECT_THAT(a.why, HasSubstr(why)) << shown;
  }
  // The login compares ignoring case, as GitHub's logins do.
  EXPECT_TRUE(WriteAccessFromAnswer("Alice", Answer(200, PermissionBody("alice", "admin", true))).writer);
}

// --- GitHub's answers → facts

json Pull() {
  return json{{"state", "open"},
              {"draft", false},
              {"merged", false},
              {"user", {{"login", "superagent-bot"}, {"type", "User"}}},
              {"head", {{"sha", kMergeHead}, {"ref", "superagent/ticket-7"}}},
              {"body", MessageText("x", "pr:ticket:7")},
              {"additions", 3},
              {"deletions", 1}};
}

TEST(AutoMergeFacts, ReadsThePullRequestAndItsReviews) {
  json reviews = json::array({
      {{"user", {{"login", "alice"}, {"type", "User"}}}, {"state", "APPROVED"}, {"commit_id", kMergeHead}},
      {{"user", {{"login", "dependabot[bot]"}, {"type", "Bot"}}}, {"state", "approved"}, {"commit_id", kMergeHead}},
      {{"user", {{"login", "ci-helper[bot]"}, {"type", "User"}}}, {"state", "APPROVED"}, {"commit_id", kMergeHead}},
  });
  Result<PullFacts> f = PullFactsFromJson(Pull(), reviews);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_TRUE(f->open);
  EXPECT_FALSE(f->draft);
  EXPECT_EQ(f->author, "superagent-bot");
  EXPECT_EQ(f->head_sha, kMergeHead);
  EXPECT_EQ(f->additions, 3);
  ASSERT_EQ(f->reviews.size(), 3u);
  EXPECT_FALSE(f->reviews[0].bot);
  EXPECT_TRUE(f->reviews[1].bot);
  EXPECT_EQ(f->reviews[1].state, "APPROVED") << "one vocabulary whatever the casing";
  EXPECT_TRUE(f->reviews[2].bot) << "a [bot] login is a bot whatever its type says";
  EXPECT_EQ(AutoMergeRefusal(*f, {}, kMergeHead, kMarker, Table().Lookup()), "");
}

TEST(AutoMergeFacts, WrongTypesInThePullRequestAreNamed) {
  json p = Pull();
  p["additions"] = "3";
  Result<PullFacts> f = PullFactsFromJson(p, json::array());
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().message(), "pull request: field \"additions\": expected integer, got string");
  p = Pull();
  p["head"] = nullptr;
  EXPECT_EQ(PullFactsFromJson(p, json::array()).status().message(),
            "pull request: field \"head\": expected object, got null");
  EXPECT_FALSE(PullFactsFromJson(json::array(), json::array()).ok());
  EXPECT_THAT(PullFactsFromJson(Pull(), json{{"reviews", 1}}).status().message(),
              HasSubstr("reviews: expected a list, got object"));
}

TEST(AutoMergeFacts, HostileReviewsNeverApprove) {
  json reviews = json::array({
      42,
      "APPROVED",
      nullptr,
      {{"user", nullptr}, {"state", "APPROVED"}, {"commit_id", kMergeHead}},
      {{"user", {{"login", 7}}}, {"state", "APPROVED"}, {"commit_id", kMergeHead}},
      {{"user", {{"login", "mallory"}}}, {"state", "APPROVED"}, {"commit_id", 12345}},
      {{"user", {{"login", "eve"}}}, {"state", {"APPROVED"}}, {"commit_id", kMergeHead}},
      {{"user", {{"login", "\xff\xfe"}}}, {"state", "APPROVED"}, {"commit_id", kMergeHead + "\xff"}},
  });
  Result<PullFacts> f = PullFactsFromJson(Pull(), reviews);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_THAT(AutoMergeRefusal(*f, {}, kMergeHead, kMarker, Table().Lookup()), HasSubstr("has 0 approvals"));
  // A review whose state cannot be read withdraws that person's earlier approval.
  json later = json::array({{{"user", {{"login", "alice"}}}, {"state", "APPROVED"}, {"commit_id", kMergeHead}},
                            {{"user", {{"login", "alice"}}}, {"state", 1}, {"commit_id", kMergeHead}}});
  f = PullFactsFromJson(Pull(), later);
  ASSERT_TRUE(f.ok());
  EXPECT_THAT(AutoMergeRefusal(*f, {}, kMergeHead, kMarker, Table().Lookup()), HasSubstr("has 0 approvals"));
}

}  // namespace
}  // namespace superagent::github

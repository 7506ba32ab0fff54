// Issue 37, a Ticket across repositories, at the Engine: the repositories its Mandate lists (named
// by the request, or a rule's related set), one pull request per repository linked to each other,
// one result naming them all, CI on any reaching the Ticket, the Ticket ending with its last pull
// request, and auto-merge all or none in the Mandate's order.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine_pulls_fixture.h"
#include "result_ok.h"

namespace superagent::testing {
namespace {

using nlohmann::json;

class EngineManyReposTest : public EnginePullsTest {
 protected:
  void SetUp() override {
    options_.serves_repository = [](const std::string& repo) {
      static const std::set<std::string> kServed = {"acme/widgets", "acme/api", "acme/web", "acme/ops",
                                                    "acme/docs", "acme/infra", "acme/cli"};
      return kServed.count(repo) > 0;
    };
    EnginePullsTest::SetUp();
  }
  // alice's request `text`, addressed to the agent on issue 1 of acme/widgets, accepted.
  TicketId Asked(const std::string& id, const std::string& text, int issue = 1) {
    Receive(Comment(id, "alice", true, text, issue));
    assessor_.answers.push_back(ScriptedAssessor::Accept());
    EXPECT_EQ(Drain(), 1);
    auto story = Ok(ExplainNow(id));
    if (!story.contains("ticket_created")) {
      ADD_FAILURE() << "no ticket for " << id;
      return 0;
    }
    return story["ticket_created"]["id"].get<TicketId>();
  }
  std::vector<std::string> RepositoriesOf(TicketId t) { return Ok(views_->GetMandate(t)).repos; }
  // A turn of `t` ending ready with one PR in acme/widgets (its own) and one in acme/api, as
  // WorkerServices::EndFor makes them.
  void ReadyTurnWithTwoPulls(TicketId t) {
    const std::int64_t pending = PendingAssignment(t);
    ASSERT_NE(pending, 0);
    WorkspaceRecord w;
    w.ticket = t;
    w.dir = (dir_ / ("work-" + std::to_string(t))).string();
    w.branch = Branch(t);
    w.base = "origin/main";
    w.repo = "acme/widgets";
    WorkspaceRecord other = w;
    other.repo = "acme/api";
    other.dir = w.dir + "/.superagent-repos/acme/api";
    auto begun = engine_->BeginTurn(pending, "builtin", w, {other});
    ASSERT_TRUE(begun.ok()) << begun.status().ToString();
    ASSERT_EQ(begun->other_workspaces.size(), 1u);
    EXPECT_EQ(begun->other_workspaces[0].repo, "acme/api");
    TurnEnd end;
    end.assignment = begun->assignment.id;
    end.reported = Stage::kReady;
    end.summary = "Changed the API and its client.";
    for (const auto& [repo, key] : std::vector<std::pair<std::string, std::string>>{
             {"acme/widgets", "pr:ticket:" + std::to_string(t)}, {"acme/api", "pr:ticket:" + std::to_string(t) + ":acme/api"}})
      end.actions.emplace_back("open_pull_request", json{{"channel", "github:" + repo},
                                                         {"idempotency_key", key},
                                                         {"ticket", t},
                                                         {"head", Branch(t)},
                                                         {"base", "main"},
                                                         {"title", "Rename the field"},
                                                         {"body", "重命名字段 🚀"}});
    ASSERT_TRUE(engine_->FinishTurn(end).ok());
  }
  // The PR in acme/widgets is #42, the one in acme/api #7.
  static Delivery Opened(const ClaimedEffect& c) {
    if (c.effect.kind != "open_pull_request") return Delivery::Done("comment-1");
    const bool api = c.effect.payload["channel"] == "github:acme/api";
    Delivery d = Delivery::Done(api ? "7" : "42");
    d.url = api ? "https://github.com/acme/api/pull/7" : "https://github.com/acme/widgets/pull/42";
    return d;
  }
  Trigger Approval(const std::string& id, const std::string& repo, int number, const std::string& sha) {
    Trigger r = Comment(id, "carol", false, "LGTM");
    r.threads = {"github:" + repo + ":pull:" + std::to_string(number)};
    r.channel = r.threads[0];
    r.meta = {{"type", "review"}, {"state", "approved"}, {"commit_id", sha}};
    return r;
  }
  Trigger ClosedPull(const std::string& id, const std::string& repo, int number, bool merged) {
    Trigger c = Closed(id, merged, "bob");
    c.threads = {"github:" + repo + ":pull:" + std::to_string(number)};
    c.channel = c.threads[0];
    c.meta["number"] = number;
    return c;
  }
  // An inferred Ticket under the `wording` rule, which relates acme/widgets and acme/api and
  // auto-merges; its two PRs opened and its result posted.
  TicketId AutoMergeableTicketWithTwoPulls() {
    Open(MakePolicy("auto", "instructions: Keep the change to the text in question.=>"
                            "instructions: Keep the change to the text in question.\n    approver: carol\n"
                            "    repos: [acme/api, acme/widgets]\n    auto_merge: {enabled: true}"));
    Receive(Comment("c1", "alice", false, "There is a typo in the README: teh → the"));
    assessor_.answers.push_back(ScriptedAssessor::Accept());
    EXPECT_EQ(Drain(), 1);
    const TicketId t = Ok(ExplainNow("c1"))["ticket_created"]["id"];
    EXPECT_EQ(RepositoriesOf(t), (std::vector<std::string>{"acme/api", "acme/widgets"})) << "the rule's order";
    ReadyTurnWithTwoPulls(t);
    DeliverDue(Opened);
    DeliverDue(Opened);  // the result and the links
    return t;
  }
};

TEST_F(EngineManyReposTest, ARequestsMandateListsTheServedRepositoriesItNamesItsOwnFirst) {
  Open(MakePolicy("auto", "rules:=>repos:\n  acme/infra: {mode: off}\n  acme/ops:\n    sources:\n      github:\n"
                          "        people: [ops-maintainer]\n  acme/docs:\n    sources:\n      github:\n"
                          "        people: [alice]\nrules:"));
  const TicketId t = Asked("c1",
                           "@agent rename the field in acme/api, then bump the client in https://github.com/acme/web "
                           "(not src/main.cpp, not acme/secret, not acme/infra, not acme/ops) and acme/docs");
  EXPECT_EQ(RepositoriesOf(t), (std::vector<std::string>{"acme/widgets", "acme/api", "acme/web", "acme/docs"}))
      << "acme/secret is not served, acme/infra is off and acme/ops admits only its own people: a name does not "
         "reach them; acme/docs lists alice";
  // The acknowledgement says where, so a misread name is caught before the work.
  auto claimed = Ok(engine_->ClaimDueEffects(10));
  ASSERT_EQ(claimed.size(), 1u);
  EXPECT_NE(claimed[0].effect.receipt->body.find("(in acme/widgets, acme/api, acme/web, acme/docs)"), std::string::npos)
      << claimed[0].effect.receipt->body;
  // … and which named repositories it will not change, and why: the asker hears it.
  EXPECT_NE(claimed[0].effect.receipt->body.find(
                "Not in acme/infra (its mode is off), acme/ops (you are not among its people)."),
            std::string::npos)
      << claimed[0].effect.receipt->body;
  EXPECT_EQ(claimed[0].effect.receipt->body.find("acme/secret"), std::string::npos)
      << "a name the daemon does not serve may be anything (a path): not mentioned";
  const json mandate = Ok(ExplainNow("c1"))["ticket_created"]["mandate"];
  EXPECT_EQ(mandate["repos"], json({"acme/widgets", "acme/api", "acme/web", "acme/docs"})) << mandate.dump();
}

TEST_F(EngineManyReposTest, ARequestPlacingItsOwnRepositoryKeepsThatOrderAndAtMostFiveAreListed) {
  Open(MakePolicy("auto"));
  TicketId t = Asked("c1", "@agent first acme/api, then acme/widgets, then acme/web acme/ops acme/docs acme/cli");
  EXPECT_EQ(RepositoriesOf(t), (std::vector<std::string>{"acme/api", "acme/widgets", "acme/web", "acme/ops", "acme/docs"}));
  t = Asked("c2", "@agent acme/api acme/web acme/ops acme/docs acme/cli and 改一下", 2);
  EXPECT_EQ(RepositoriesOf(t), (std::vector<std::string>{"acme/widgets", "acme/api", "acme/web", "acme/ops", "acme/docs"}))
      << "its own repository is never the one left out";
  t = Asked("c3", "@agent fix acme/widgets#3 please", 3);
  EXPECT_TRUE(RepositoriesOf(t).empty()) << "only its own repository: listed as none, as before issue 37";
}

TEST_F(EngineManyReposTest, InferredWorkGetsARulesRelatedSetAndNeverTheNamesInTheMessage) {
  Open(MakePolicy("auto", "instructions: Keep the change to the text in question.=>"
                          "instructions: Keep the change to the text in question.\n    repos: [acme/docs, acme/widgets]"));
  Receive(Comment("c1", "alice", false, "There is a typo in the README: teh → the (also in acme/api)"));
  assessor_.answers.push_back(ScriptedAssessor::Accept());
  ASSERT_EQ(Drain(), 1);
  const TicketId t = Ok(ExplainNow("c1"))["ticket_created"]["id"];
  EXPECT_EQ(RepositoriesOf(t), (std::vector<std::string>{"acme/docs", "acme/widgets"}));
}

TEST_F(EngineManyReposTest, WithoutServedRepositoriesARequestNamesNone) {
  options_.serves_repository = nullptr;
  Open(MakePolicy("auto"));
  EXPECT_TRUE(RepositoriesOf(Asked("c1", "@agent change acme/api and acme/web")).empty());
}

TEST_F(EngineManyReposTest, TwoPullRequestsAreLinkedToEachOtherAndTheResultNamesBoth) {
  Open(MakePolicy("auto"));
  const TicketId t = Asked("c1", "@agent rename the field in acme/api and its use here");
  ReadyTurnWithTwoPulls(t);
  auto first = DeliverDue(Opened);  // the acknowledgement and both PRs; the result waits for them
  for (const ClaimedEffect& c : first) EXPECT_NE(c.effect.kind, "link_pull_requests");
  std::vector<ClaimedEffect> second = DeliverDue(Opened);
  std::vector<json> links;
  std::string result;
  for (const ClaimedEffect& c : second) {
    if (c.effect.kind == "link_pull_requests") links.push_back(c.effect.payload);
    if (c.effect.receipt && c.effect.receipt->kind == MessageKind::kResult) result = c.effect.receipt->body;
  }
  EXPECT_NE(result.find("Pull request in acme/widgets: https://github.com/acme/widgets/pull/42"), std::string::npos) << result;
  EXPECT_NE(result.find("Pull request in acme/api: https://github.com/acme/api/pull/7"), std::string::npos) << result;
  ASSERT_EQ(links.size(), 2u);
  std::map<std::string, json> by_channel;
  for (const json& l : links) by_channel[l["channel"]] = l;
  EXPECT_EQ(by_channel["github:acme/widgets"]["number"], 42);
  EXPECT_EQ(by_channel["github:acme/widgets"]["links"], json::parse(R"([{"repo":"acme/api","number":7}])"));
  EXPECT_EQ(by_channel["github:acme/api"]["number"], 7);
  EXPECT_EQ(by_channel["github:acme/api"]["links"], json::parse(R"([{"repo":"acme/widgets","number":42}])"));
  EXPECT_TRUE(Ok(engine_->ClaimDueEffects(10)).empty()) << "linked once";

  // CI failing on acme/api's PR reaches the Ticket: a fix turn.
  Trigger ci = Ci("ci1", t, "failure", "abc123");
  ci.threads = {"github:acme/api:ci:" + Branch(t)};
  ci.channel = "github:acme/api:commit:abc123";
  EXPECT_EQ(Receive(ci).delivered_to, std::vector<TicketId>{t});
  EXPECT_EQ(LastInputState(t), "pending") << "a failing check on any of its PRs is work for the Ticket";
  EXPECT_EQ(Ok(views_->TicketPulls(t))[1].ci_fix_attempts + Ok(views_->TicketPulls(t))[0].ci_fix_attempts, 1);

  // One PR merged: the Ticket goes on while the other is open; the second ends it.
  Receive(ClosedPull("m1", "acme/api", 7, true));
  EXPECT_TRUE(views_->GetTicket(t)->open());
  Receive(ClosedPull("m2", "acme/widgets", 42, false));
  EXPECT_FALSE(views_->GetTicket(t)->open());
  EXPECT_EQ(views_->GetTicket(t)->end_reason, "pull request #42 closed by bob");
}

TEST_F(EngineManyReposTest, AutoMergeAsksEveryGuardFirstThenMergesInTheMandatesOrder) {
  const TicketId t = AutoMergeableTicketWithTwoPulls();
  Receive(Approval("rv1", "acme/widgets", 42, "sha-w"));
  auto checks = DeliverDue([](const ClaimedEffect& c) {
    return Delivery::Done(c.effect.payload["channel"] == "github:acme/api" ? "sha-a" : "sha-w");
  });
  ASSERT_EQ(checks.size(), 2u);
  EXPECT_EQ(checks[0].effect.payload["channel"], "github:acme/api") << "in the Mandate's order";
  EXPECT_EQ(checks[1].effect.payload["channel"], "github:acme/widgets");
  for (const ClaimedEffect& c : checks) {
    EXPECT_EQ(c.effect.kind, "merge_pull_request");
    EXPECT_EQ(c.effect.payload["check_only"], true);
  }
  EXPECT_EQ(checks[0].effect.payload["head_sha"], "") << "the other PR's guard takes its current head";
  EXPECT_EQ(checks[0].effect.payload["pull_key"], "pr:ticket:" + std::to_string(t) + ":acme/api");
  EXPECT_EQ(checks[1].effect.payload["head_sha"], "sha-w");
  EXPECT_EQ(checks[1].effect.payload["pull_key"], "pr:ticket:" + std::to_string(t));
  EXPECT_TRUE(views_->GetTicket(t)->open()) << "a check merges nothing";

  // Both passed: acme/api merges first, at the head its guard passed; then acme/widgets.
  auto merge = DeliverDue([](const ClaimedEffect&) { return Delivery::Done("merged-1"); });
  ASSERT_EQ(merge.size(), 1u);
  EXPECT_EQ(merge[0].effect.payload["channel"], "github:acme/api");
  EXPECT_FALSE(merge[0].effect.payload.contains("check_only"));
  EXPECT_EQ(merge[0].effect.payload["head_sha"], "sha-a");
  EXPECT_TRUE(views_->GetTicket(t)->open());
  merge = DeliverDue([](const ClaimedEffect&) { return Delivery::Done("merged-2"); });
  ASSERT_EQ(merge.size(), 1u);
  EXPECT_EQ(merge[0].effect.payload["channel"], "github:acme/widgets");
  EXPECT_EQ(merge[0].effect.payload["head_sha"], "sha-w");
  EXPECT_FALSE(views_->GetTicket(t)->open());
  EXPECT_EQ(views_->GetTicket(t)->end_reason, "pull requests merged by the auto-merge guard");
  for (const TicketPull& p : Ok(views_->TicketPulls(t))) EXPECT_EQ(p.state, "merged") << p.repo;
}

TEST_F(EngineManyReposTest, OneGuardRefusingHoldsThemAllAndAMergeRefusedHalfWaySaysWhatMerged) {
  const TicketId t = AutoMergeableTicketWithTwoPulls();
  Receive(Approval("rv1", "acme/widgets", 42, "sha-w"));
  DeliverDue([](const ClaimedEffect& c) {
    return c.effect.payload["channel"] == "github:acme/api" ? Delivery::Failed("auto-merge refused: not approved")
                                                            : Delivery::Done("sha-w");
  });
  EXPECT_TRUE(Ok(engine_->ClaimDueEffects(10)).empty()) << "nothing merges";
  auto has_event = [&](const std::string& words) {
    for (const TicketEvent& e : Ok(views_->Detail(t)).events)
      if (e.cause.find(words) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(has_event("auto-merge held, none merged: acme/api#7: auto-merge refused: not approved"));

  // acme/api approved later: a new round; both pass, acme/api merges, acme/widgets is refused.
  Receive(Approval("rv2", "acme/api", 7, "sha-a"));
  DeliverDue([](const ClaimedEffect& c) {
    return Delivery::Done(c.effect.payload["channel"] == "github:acme/api" ? "sha-a" : "sha-w");
  });
  DeliverDue([](const ClaimedEffect&) { return Delivery::Done("merged-1"); });
  DeliverDue([](const ClaimedEffect&) { return Delivery::Failed("merge pull request #42: head moved"); });
  EXPECT_TRUE(views_->GetTicket(t)->open()) << "a person merges the rest";
  EXPECT_TRUE(has_event("auto-merge stopped after acme/api#7: acme/widgets#42 was not merged"));
}


// feishu.chat_repos: a chat names the repositories it may ask about.
class EngineChatReposTest : public EngineManyReposTest {
 protected:
  void SetUp() override {
    options_.chat_repositories = {{"oc_support", {"acme/api", "acme/web"}}, {"oc_web", {"acme/web"}}};
    EngineManyReposTest::SetUp();
    Open(MakePolicy("auto", "    scopes:\n      \"chat:oc_support\": { receive_all: false, others_addressed: explicit }=>"
                            "    scopes:\n      \"chat:oc_support\": { receive_all: false, others_addressed: explicit }\n"
                            "      \"chat:oc_web\": { receive_all: false, others_addressed: explicit }"));
  }
  // ou_alice's request `id` in `chat`, in its own topic when `topic` is named.
  TicketId AskedInChat(const std::string& id, const std::string& text, const std::string& chat = "oc_support",
                       const std::string& topic = "") {
    Trigger f = FeishuMessage(id, text, /*addressed=*/true, topic);
    f.scope = "chat:" + chat;
    f.threads = {"feishu:chat:" + chat};
    if (!topic.empty()) f.threads.insert(f.threads.begin(), "feishu:thread:" + topic);
    f.channel = "feishu:chat:" + chat + ":reply:" + id + (topic.empty() ? "" : ":thread");
    f.meta["chat_id"] = chat;
    Receive(f);
    assessor_.answers.push_back(ScriptedAssessor::Accept());
    EXPECT_EQ(Drain(), 1);
    auto story = Ok(ExplainNow("feishu:" + id));
    if (!story.contains("ticket_created")) {
      ADD_FAILURE() << "no ticket for " << id << ": " << story.dump();
      return 0;
    }
    return story["ticket_created"]["id"].get<TicketId>();
  }
  std::vector<std::string> Posted() {
    std::vector<std::string> out;
    for (const ClaimedEffect& c : DeliverDue([](const ClaimedEffect&) { return Delivery::Done("m"); }))
      if (c.effect.receipt) out.push_back(c.effect.receipt->body);
    return out;
  }
};

TEST_F(EngineChatReposTest, ARequestNamingOneOfItsChatsRepositoriesIsWorkedThereAndNoOtherIsTaken) {
  const TicketId t = AskedInChat("m1", "@agent 请修复 acme/web 的登录页 (and acme/ops, and acme/widgets)");
  EXPECT_EQ(RepositoriesOf(t), std::vector<std::string>{"acme/web"})
      << "acme/ops and acme/widgets are served but not this chat's";
  EXPECT_FALSE(Ok(views_->ChosenRepository(t)).has_value());
  EXPECT_EQ(views_->GetTicket(t)->stage, Stage::kIdle) << "work starts at once";
  const std::vector<std::string> posted = Posted();
  ASSERT_EQ(posted.size(), 1u);
  EXPECT_NE(posted[0].find("(in acme/web) Not in acme/ops (not one of this chat's), acme/widgets (not one of this "
                           "chat's)."),
            std::string::npos)
      << posted[0];
}

TEST_F(EngineChatReposTest, AChatOfOneRepositoryWorksThereWithoutAsking) {
  const TicketId t = AskedInChat("m1", "@agent fix the login page", "oc_web");
  EXPECT_EQ(RepositoriesOf(t), std::vector<std::string>{"acme/web"});
  EXPECT_EQ(views_->GetTicket(t)->stage, Stage::kIdle);
}

TEST_F(EngineChatReposTest, AChatOfSeveralAsksOnceWhichAndTheAnswerChoosesIt) {
  const TicketId t = AskedInChat("m1", "@agent fix the login page 😀");
  EXPECT_EQ(RepositoriesOf(t), (std::vector<std::string>{"acme/api", "acme/web"})) << "the grant: any of them";
  EXPECT_EQ(views_->GetTicket(t)->stage, Stage::kWaitingForPerson) << "no work before the answer";
  EXPECT_TRUE(Ok(views_->Assignments(t)).empty());
  std::vector<std::string> posted = Posted();
  ASSERT_EQ(posted.size(), 1u) << "the question is the acknowledgement: one message";
  EXPECT_EQ(posted[0], "Which repository is this about?\n\n1. acme/api\n2. acme/web\n\nReply with the number of your choice.");

  // A reply naming none of them asks again, and nothing starts.
  Trigger vague = FeishuMessage("m2", "the usual one");
  vague.meta["chat_id"] = "oc_support";
  Receive(vague);
  EXPECT_EQ(views_->GetTicket(t)->stage, Stage::kWaitingForPerson);
  posted = Posted();
  ASSERT_EQ(posted.size(), 1u);
  EXPECT_EQ(posted[0], "Which repository is this about?\n\n1. acme/api\n2. acme/web\n\nReply with the number of your choice.");
  EXPECT_TRUE(Ok(views_->Assignments(t)).empty());

  // "2": acme/web is chosen and the work starts.
  Trigger answer = FeishuMessage("m3", "2");
  answer.meta["chat_id"] = "oc_support";
  Receive(answer);
  EXPECT_EQ(Ok(views_->ChosenRepository(t)), std::optional<std::string>("acme/web"));
  EXPECT_EQ(views_->GetTicket(t)->stage, Stage::kIdle);
  EXPECT_EQ(Ok(views_->Assignments(t)).size(), 1u);
}

TEST_F(EngineChatReposTest, InferredWorkInAChatOfSeveralTakesTheFirstWithoutAsking) {
  Trigger f = FeishuMessage("m1", "There is a typo in the README: teh → the");
  f.meta["chat_id"] = "oc_support";
  Open(MakePolicy("auto", "\"chat:oc_support\": { receive_all: false, others_addressed: explicit }=>"
                          "\"chat:oc_support\": { receive_all: true, allowed_unaddressed: inferred }"));
  Receive(f);
  assessor_.answers.push_back(ScriptedAssessor::Accept());
  ASSERT_EQ(Drain(), 1);
  const TicketId t = Ok(ExplainNow("feishu:m1"))["ticket_created"]["id"];
  EXPECT_EQ(Ok(views_->ChosenRepository(t)), std::optional<std::string>("acme/api"));
  EXPECT_EQ(views_->GetTicket(t)->stage, Stage::kIdle) << "proactive work asks nobody which";
}


TEST_F(EngineChatReposTest, AHeldTicketOfAChatOfSeveralAsksWhichOnceStartedFromThePanel) {
  Open(MakePolicy("auto", "\"chat:oc_support\": { receive_all: false, others_addressed: explicit }=>"
                          "\"chat:oc_support\": { receive_all: false, others_addressed: explicit }\n"
                          "circuit_breaker: { per_sender: 1 }"));
  AskedInChat("m1", "@agent fix the login page", "oc_web");
  const TicketId held = AskedInChat("m2", "@agent fix the signup page");
  EXPECT_EQ(views_->GetTicket(held)->stage, Stage::kWaitingForPerson);
  EXPECT_EQ(views_->GetTicket(held)->waiting->actor, "a person in the panel") << "held: only the panel answers";
  (void)Posted();  // the first Ticket's acknowledgement; the held one says nothing yet

  ASSERT_TRUE(engine_->AnswerQuestion(held, "carol (panel)", json{{"option", 1}}).ok());
  const Ticket tk = *views_->GetTicket(held);
  EXPECT_EQ(tk.stage, Stage::kWaitingForPerson);
  ASSERT_TRUE(tk.waiting);
  EXPECT_EQ(tk.waiting->actor, "ou_alice") << "started: now its asker is asked which repository";
  EXPECT_TRUE(Ok(views_->Assignments(held)).empty()) << "no work before the answer";
  const std::vector<std::string> posted = Posted();
  ASSERT_EQ(posted.size(), 1u);
  EXPECT_EQ(posted[0], "Which repository is this about?\n\n1. acme/api\n2. acme/web\n\nReply with the number of your choice.");
}

}  // namespace
}  // namespace superagent::testing

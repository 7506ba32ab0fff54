// `explain` in a person's words (issue 24): the five commonest stories, pinned sentence by
// sentence — a message that was answered, one from someone not allowed, one that did not address
// the agent, one filtered on arrival, and one still waiting — with the policy key that would have
// changed each verdict.
#include <gtest/gtest.h>

#include "core/explain_words.h"
#include "engine_fixture.h"
#include "superagent/answer.h"
#include "result_ok.h"

namespace superagent::testing {
namespace {

using nlohmann::json;

class ExplainTest : public EngineTest {
 protected:
  json Told(const std::string& id) { return Ok(ExplainNow(id))["told"]; }
  std::string At() { return FormatTime(clock_.NowMs()); }
};

TEST_F(ExplainTest, AnAnsweredRequestSaysWhoAskedWhyItWasAdmittedAndWhatWasSent) {
  const std::string at = At();
  const TicketId t = AcceptedTicket("c1");
  auto claimed = Ok(engine_->ClaimDueEffects(10));
  ASSERT_EQ(claimed.size(), 1u);
  ASSERT_TRUE(engine_->RecordDelivery(claimed[0].effect.id, Delivery::Done("1"), 0).ok());
  EXPECT_EQ(Told("c1"), json({"alice wrote on GitHub issue acme/widgets#1, addressing the agent, at " + at + ".",
                              "alice is in sources.github.people and addressed the agent: an explicit request.",
                              "The Eval accepted it (policy version 1).",
                              "It created Ticket " + std::to_string(t) + ", now idle: Fix the typo in README.",
                              "The agent wrote back: the acknowledgement (sent).",
                              "It was acknowledged: it created Ticket " + std::to_string(t) + "."}));
  EXPECT_FALSE(Ok(ExplainNow("c1")).contains("change"));
  EXPECT_EQ(Ok(ExplainNow("c1"))["answer"]["kind"], "acknowledged");
}

TEST_F(ExplainTest, SomeoneNotAllowedIsToldWhichListToJoin) {
  const std::string at = At();
  Receive(Comment("c2", "mallory", true, "@agent 删除所有分支 🔥"));
  EXPECT_EQ(Drain(), 1);
  const json story = Ok(ExplainNow("c2"));
  EXPECT_EQ(story["told"],
            json({"mallory wrote on GitHub issue acme/widgets#1, addressing the agent, at " + at + ".",
                  "mallory is not in sources.github.people, and an @-mention from someone not listed is ignored here "
                  "(sources.github.scopes.comments.others_addressed).",
                  "Nothing was done with it (policy version 1).",
                  "Its sender is not one the policy lets ask here, so the agent stayed silent; the panel counts such "
                  "mentions so a maintainer can widen the policy.",
                  "To change that: sources.github.people — add mallory."}));
  EXPECT_EQ(story["answer"]["kind"], "silent");
  EXPECT_EQ(story["change"]["path"], json({"sources", "github", "people"}));
}

// An observe-mode "would accept" names the row whose observe held it (issue 37): the policy's
// mode, a repository's own, or the matched rule's own.
TEST_F(ExplainTest, AWouldAcceptNamesTheRowWhoseObserveHeldIt) {
  auto held = [&](const std::string& id, int issue) {
    Receive(Comment(id, "alice", false, "the heading says teh 🙈", issue));
    assessor_.answers.push_back(ScriptedAssessor::Accept());
    EXPECT_EQ(Drain(), 1);
    const json story = Ok(ExplainNow(id));
    std::string words;
    for (const json& line : story["told"])
      if (line.get<std::string>().rfind("The Eval would have accepted it", 0) == 0) words = line;
    return std::make_pair(words, story.contains("change") ? story["change"]["path"] : json());
  };
  auto [plain, plain_path] = held("w1", 1);
  EXPECT_EQ(plain, "The Eval would have accepted it, but the policy is in observe mode, so it was only recorded "
                   "(policy version 1).");
  EXPECT_EQ(plain_path, json({"mode"}));

  Policy p = engine_->CurrentPolicy();
  p.mode = Mode::kAuto;
  p.repos["acme/widgets"].mode = Mode::kObserve;
  ASSERT_TRUE(engine_->ApplyPolicy(p, "test").ok());
  auto [repo, repo_path] = held("w2", 2);
  EXPECT_EQ(repo, "The Eval would have accepted it, but repos.\"acme/widgets\".mode is observe, so it was only recorded "
                  "(policy version 2).");
  EXPECT_EQ(repo_path, json({"repos", "acme/widgets", "mode"}));

  ASSERT_FALSE(p.rules.empty());
  for (Rule& r : p.rules) r.mode = Mode::kObserve;
  p.repos.clear();
  ASSERT_TRUE(engine_->ApplyPolicy(p, "test").ok());
  auto [rule, rule_path] = held("w3", 3);
  ASSERT_EQ(rule_path.size(), 3u) << rule_path.dump();
  EXPECT_EQ(rule_path[0], "rules");
  EXPECT_EQ(rule_path[2], "mode");
  EXPECT_NE(rule.find("rules." + rule_path[1].get<std::string>() + ".mode is observe"), std::string::npos) << rule;
}

TEST_F(ExplainTest, AMessageThatDidNotAddressTheAgentSaysSo) {
  const std::string at = At();
  Trigger pr = Comment("c3", "carol", false, "the build is red again");
  pr.scope = "issues";
  Receive(pr);
  EXPECT_EQ(Drain(), 1);
  EXPECT_EQ(Told("c3"), json({"carol wrote on GitHub issue acme/widgets#1, not addressing the agent, at " + at + ".",
                              "carol did not address the agent (no @-mention) here, so it was not a request.",
                              "Nothing was done with it (policy version 1).",
                              "To change that: sources.github.scopes.issues.receive_all — true, to read messages that "
                              "do not address the agent here."}));
}

TEST_F(ExplainTest, AFilteredMessageSaysWhyAndThatNothingElseHappened) {
  const std::string at = At();
  ASSERT_TRUE(engine_->Receive(Comment("c4", "alice", true, "@agent hi"), "test", "chat_not_allowed: oc_other").ok());
  EXPECT_EQ(Told("c4"), json({"alice wrote on GitHub issue acme/widgets#1, addressing the agent, at " + at + ".",
                              "It was filtered when it arrived (chat_not_allowed: oc_other), so nothing else happened."}));
}

TEST_F(ExplainTest, AMessageStillWaitingSaysForWhat) {
  const std::string at = At();
  Receive(Comment("c5", "alice", true, "@agent please fix the typo"));
  EXPECT_EQ(Told("c5"), json({"alice wrote on GitHub issue acme/widgets#1, addressing the agent, at " + at + ".",
                              "It is waiting for an Eval.", "It arrived less than a minute ago; nothing has been said yet."}));
  // The model is down: the Eval fails and the message waits to be tried again.
  EXPECT_EQ(Drain(), 1);
  clock_.Advance(kAnswerWithinMs + 1);
  const json told = Told("c5");
  ASSERT_EQ(told.size(), 5u) << told.dump(2);
  EXPECT_EQ(told[1], "alice is in sources.github.people and addressed the agent: an explicit request.");
  EXPECT_EQ(told[2], "It could not be judged: assessment failed: no scripted answer (policy version 1); it is tried again.");
  EXPECT_EQ(told[3], "It is waiting for an Eval to be tried again (1 attempt so far).");
  EXPECT_EQ(told[4], "Nobody has answered it yet: its Eval failed 1 time (assessment failed: no scripted answer) and will "
                     "be tried again. The panel's Needs-you names it.");
}

// Issue 34: "explain <issue URL>" said "never received". A discussion's URL — an issue's, a pull
// request's, with a trailing slash, a sub-page, a query, or a comment's fragment that names
// nothing received — tells the discussion's newest message that addresses the agent (the mention
// a person asks about), else its newest; a comment's own URL still tells that comment.
TEST_F(ExplainTest, AnIssueOrPullRequestUrlTellsItsNewestMessageThatAddressesTheAgent) {
  Receive(Comment("c1", "alice", true, "@agent 修一下 README 的错字", 5));
  clock_.Advance(60'000);
  Receive(Comment("c2", "mallory", true, "@agent 也看看这个 🚀", 5));
  clock_.Advance(60'000);
  Receive(Comment("c3", "carol", false, "thanks!", 5));  // newest, but asks nothing
  Receive(Comment("c9", "alice", true, "@agent other issue", 6));
  auto id_of = [&](const std::string& url) -> std::string {
    auto story = ExplainNow(url);
    if (!story.ok()) return story.status().message();
    return (*story)["trigger"]["id"].get<std::string>();
  };
  const std::string issue = "https://github.com/o/r/issues/5";
  EXPECT_EQ(id_of(issue), "c2") << "the newest mention, not the newest message";
  EXPECT_EQ(id_of(issue + "/"), "c2");
  EXPECT_EQ(id_of(issue + "?notification_referrer_id=1"), "c2");
  EXPECT_EQ(id_of(issue + "#issuecomment-424242"), "c2") << "a comment never received: its discussion";
  EXPECT_EQ(id_of("  " + issue + "  "), "c2") << "pasted with blanks";
  EXPECT_EQ(id_of(issue + "#c1"), "c1") << "a comment's own URL tells that comment";
  EXPECT_EQ(id_of(issue + "/#c3"), "c3");
  EXPECT_EQ(id_of("https://github.com/o/r/issues/6"), "c9");

  // A pull request's comments keep /pull/N in their URLs; its issue URL finds them too.
  Trigger on_pr = Comment("p1", "alice", true, "@agent rebase please", 7);
  on_pr.meta["html_url"] = "https://github.com/o/r/pull/7#issuecomment-1";
  Receive(on_pr);
  EXPECT_EQ(id_of("https://github.com/o/r/pull/7"), "p1");
  EXPECT_EQ(id_of("https://github.com/o/r/pull/7/files"), "p1");
  EXPECT_EQ(id_of("https://github.com/o/r/issues/7"), "p1");

  // Only unaddressed messages: the newest one, never a message of another discussion or repository.
  Receive(Comment("q1", "carol", false, "first", 8));
  clock_.Advance(60'000);
  Receive(Comment("q2", "dave", false, "second", 8));
  EXPECT_EQ(id_of("https://github.com/o/r/issues/8"), "q2");
  EXPECT_EQ(id_of("https://github.com/o/r/issues/80"),
            "no message with id or URL \"https://github.com/o/r/issues/80\" was ever received: check the Source's "
            "health and whether it is in scope");
  EXPECT_FALSE(ExplainNow("https://github.com/o/other/issues/5").ok());
  EXPECT_FALSE(ExplainNow("https://github.com/o/r/issues/5x").ok());
}

TEST(ExplainWords, PlacesAndKeysReadAsAPersonSaysThem) {
  Trigger t;
  t.source = "feishu";
  t.scope = "chat:oc_1";
  t.actor = "ou_x";
  t.human = true;
  t.threads = {"feishu:thread:omt_1", "feishu:chat:oc_1"};
  EXPECT_EQ(PlaceWords(t), "a Feishu topic");
  std::optional<PolicyEdit> change;
  const std::vector<std::string> table{"sources", "feishu"};
  EXPECT_EQ(GateWords(t, "ignored:others_unaddressed", "none", table, &change),
            "ou_x did not address the agent; sources.feishu.scopes.\"chat:oc_1\".others_unaddressed ignores such messages.");
  ASSERT_TRUE(change);
  EXPECT_EQ(DottedKey(change->path), "sources.feishu.scopes.\"chat:oc_1\".others_unaddressed");
  t.human = false;
  t.actor = "renovate[bot]";
  change.reset();
  EXPECT_EQ(GateWords(t, "bot_not_listed", "none", table, &change),
            "the bot renovate[bot] is not in sources.feishu.bots, so nothing it writes is admitted.");
  EXPECT_EQ(change->to, "add renovate[bot]");
  // A repository's own table (issue 37) is named by its full key.
  t.source = "github";
  t.scope = "comments";
  t.threads = {"github:acme/web:issue:3"};
  change.reset();
  EXPECT_EQ(GateWords(t, "bot_not_listed", "none", {"repos", "acme/web", "sources", "github"}, &change),
            "the bot renovate[bot] is not in repos.\"acme/web\".sources.github.bots, so nothing it writes is admitted.");
  EXPECT_EQ(PlaceWords(t), "GitHub issue acme/web#3");
}

}  // namespace
}  // namespace superagent::testing

// The answer invariant (issue 34, answer.h): a person the policy lets ask who addresses the agent
// hears something true — acknowledged, answered (with why not), or a Needs-you card naming the
// message — within a minute of the daemon knowing the cause. These tests walk the exits of
// Intake, the Gate, the Eval, the Effects loop and a turn, and check for each what `explain` says
// and that the panel's "Not answered" card lists exactly the messages that hold nothing else.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "engine_fixture.h"
#include "panel/needs.h"
#include "result_ok.h"
#include "superagent/answer.h"
#include "superagent/views.h"

namespace superagent::testing {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

class AnswerTest : public EngineTest {
 protected:
  void SetUp() override {
    options_.eval_max_attempts = 3;
    options_.eval_backoff_ms = 30'000;
    EngineTest::SetUp();
  }

  // What `explain` says of the message's answer: its kind.
  std::string Kind(const std::string& id) {
    auto story = ExplainNow(id);
    EXPECT_TRUE(story.ok()) << story.status().ToString();
    if (!story.ok()) return "";
    return (*story)["answer"]["kind"].get<std::string>();
  }
  std::string Words(const std::string& id) { return Ok(ExplainNow(id))["answer"]["words"].get<std::string>(); }

  // The ids the panel's "Not answered" card lists now, read as the panel reads them.
  std::vector<std::string> CardIds() {
    auto views = Ok(Views::Open((dir_ / "superagent.db").string()));
    auto asked = Ok(views->AddressedSince(0, 500));
    json card = panel::UnansweredCardJson(asked, engine_->CurrentPolicy(), clock_.NowMs());
    std::vector<std::string> out;
    if (card.is_null()) return out;
    for (const json& i : card["items"]) out.push_back(i["trigger"].get<std::string>());
    return out;
  }
  json NotAllowedCard() {
    auto views = Ok(Views::Open((dir_ / "superagent.db").string()));
    return panel::NotAllowedCardJson(Ok(views->AddressedSince(0, 500)), engine_->CurrentPolicy(), clock_.NowMs());
  }
  // Receipts not attached to a Ticket (the daemon's own lines), by id prefix.
  std::vector<Receipt> Lines(const std::string& prefix) {
    std::vector<Receipt> out;
    for (const Receipt& r : Ok(views_->Receipts(std::nullopt)))
      if (r.id.rfind(prefix, 0) == 0) out.push_back(r);
    return out;
  }
  void Advance(TimeMs ms) { clock_.Advance(ms); }
};

TEST_F(AnswerTest, AnAcceptedRequestIsAcknowledged) {
  AcceptedTicket("c1");
  EXPECT_EQ(Kind("c1"), "acknowledged");
  Advance(120'000);
  EXPECT_EQ(Kind("c1"), "acknowledged");
  EXPECT_TRUE(CardIds().empty());
}

TEST_F(AnswerTest, MessagesThatAskNothingAreOwedNothing) {
  Receive(Comment("c1", "alice", false, "I looked at the typo"));  // not addressed
  Trigger own = Comment("c2", "agent", true, "@agent On it");
  own.meta["own"] = true;
  Receive(own);
  Receive(Comment("c3", "dependabot[bot]", true, "@agent bump", 1, false));  // not a person
  Advance(120'000);
  Drain();
  for (const char* id : {"c1", "c2", "c3"}) EXPECT_EQ(Kind(id), "not_asked") << id;
  EXPECT_TRUE(CardIds().empty());
}

TEST_F(AnswerTest, AWaitingRequestIsPendingForAMinuteThenTheCardNamesIt) {
  Receive(Comment("c1", "alice", true, "@agent fix the typo"));
  EXPECT_EQ(Kind("c1"), "pending");
  EXPECT_TRUE(CardIds().empty());
  Advance(kAnswerWithinMs + 1);
  EXPECT_EQ(Kind("c1"), "unanswered");
  EXPECT_THAT(CardIds(), ::testing::ElementsAre("c1"));
}

// The model is down: the card names the request after a minute, with why; once the attempts are
// spent the requester is told, in the daemon's words, and the card lets go of it.
TEST_F(AnswerTest, AModelThatNeverAnswersEndsInALineToTheRequesterAndACardBefore) {
  Receive(Comment("c1", "alice", true, "@agent fix the typo"));
  assessor_.answers.push_back(Status::Unavailable("model API timed out after 60000 ms"));
  EXPECT_EQ(Drain(), 1);
  EXPECT_TRUE(Lines("unable:").empty());
  Advance(kAnswerWithinMs + 1);
  EXPECT_EQ(Kind("c1"), "unanswered");
  EXPECT_THAT(Words("c1"), HasSubstr("model API timed out"));
  EXPECT_THAT(CardIds(), ::testing::ElementsAre("c1"));

  for (int attempt = 2; attempt <= 3; ++attempt) {
    Advance(10 * 60'000);
    assessor_.answers.push_back(Status::Unavailable("model API timed out after 60000 ms"));
    EXPECT_EQ(Drain(), 1) << attempt;
  }
  auto lines = Lines("unable:trigger:");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0].body, HasSubstr("I could not take this request"));
  EXPECT_THAT(lines[0].body, HasSubstr("3 attempts"));
  EXPECT_THAT(lines[0].body, ::testing::Not(HasSubstr("60000")));  // the daemon's words, not the transport's
  EXPECT_EQ(lines[0].thread, "github:acme/widgets:issue:1");
  EXPECT_EQ(Kind("c1"), "answered");
  EXPECT_TRUE(CardIds().empty());
}

TEST_F(AnswerTest, AnEvalThatTimesOutEveryTimeEndsInALineToo) {
  Receive(Comment("c1", "alice", true, "@agent fix the typo"));
  for (int attempt = 1; attempt <= 3; ++attempt) {
    auto job = Ok(engine_->BeginEval());
    ASSERT_TRUE(job.has_value()) << attempt;
    Advance(options_.eval_timeout_ms + 1);
    EXPECT_EQ(Ok(engine_->ExpireEvals()), 1);
    Advance(10 * 60'000);
  }
  ASSERT_EQ(Lines("unable:trigger:").size(), 1u);
  EXPECT_THAT(Lines("unable:trigger:")[0].body, HasSubstr("timed out 3 times"));
  EXPECT_EQ(Kind("c1"), "answered");
}

// A stranger's mention is silent by default and counted on one quiet card; with tell_others the
// stranger hears one line a day, never one per mention.
TEST_F(AnswerTest, PeopleNotAllowedToAskAreSilentAndCounted) {
  Receive(Comment("c1", "carol", true, "@agent please do this"));
  Receive(Comment("c2", "carol", true, "@agent hello?", 2));
  Receive(Comment("c3", "dave", true, "@agent 帮我修一下 🙏", 3));
  Drain();
  Advance(120'000);
  for (const char* id : {"c1", "c2", "c3"}) EXPECT_EQ(Kind(id), "silent") << id;
  EXPECT_TRUE(CardIds().empty());
  EXPECT_TRUE(Lines("not-allowed:").empty());
  json card = NotAllowedCard();
  ASSERT_FALSE(card.is_null());
  EXPECT_EQ(card["count"], 3);
  EXPECT_THAT(card["what"].get<std::string>(), HasSubstr("3 mentions this week from people not allowed to ask: carol \u00d72, dave \u00d71"));
  EXPECT_THAT(card["fix"].get<std::string>(), HasSubstr("sources.github.people"));
  Advance(8LL * 24 * 3600 * 1000);  // a week later the count is of this week only
  EXPECT_TRUE(NotAllowedCard().is_null());
}

TEST_F(AnswerTest, TellOthersGivesAStrangerOneLineADay) {
  Open(MakePolicy("observe", "    bots: [\"dependabot[bot]\"]=>    bots: [\"dependabot[bot]\"]\n    tell_others: true"));
  Receive(Comment("c1", "carol", true, "@agent please do this"));
  Drain();
  Receive(Comment("c2", "carol", true, "@agent hello?", 2));
  Drain();
  auto lines = Lines("not-allowed:");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0].body, HasSubstr("I can't take requests from you here"));
  EXPECT_EQ(lines[0].thread, "github:acme/widgets:issue:1");
  Advance(24LL * 3600 * 1000);
  Receive(Comment("c3", "carol", true, "@agent again", 3));
  Drain();
  EXPECT_EQ(Lines("not-allowed:").size(), 2u);
  EXPECT_EQ(Kind("c1"), "silent");  // the policy's verdict stands; the line was a courtesy
}

TEST_F(AnswerTest, AVerbIsAnswered) {
  AcceptedTicket("c1");
  Receive(Comment("c2", "alice", true, "@agent status"));
  Drain();
  EXPECT_EQ(Kind("c2"), "answered");
}

TEST_F(AnswerTest, AFollowUpOnALiveTicketIsTakenAndAnsweredByItsNextReport) {
  const TicketId id = AcceptedTicket("c1");
  Receive(Comment("c2", "alice", true, "@agent also the one in docs/"));
  Advance(120'000);
  EXPECT_EQ(Kind("c2"), "taken");
  EXPECT_THAT(Words("c2"), HasSubstr("Ticket " + std::to_string(id)));
  EXPECT_TRUE(CardIds().empty());
}

TEST_F(AnswerTest, AThreadSetAsideIsACard) {
  options_.quarantine_after = 1;
  Open(MakePolicy("observe"));
  Receive(Comment("c1", "alice", true, "@agent fix the typo"));
  auto job = Ok(engine_->BeginEval());
  ASSERT_TRUE(job.has_value());
  ASSERT_TRUE(engine_->RecordEvalError(job->id, "judging threw: boom").ok());
  Advance(120'000);
  EXPECT_EQ(Kind("c1"), "card");
  EXPECT_TRUE(CardIds().empty());
}

// An acknowledgement the platform refused for good said nothing: the card names the request.
TEST_F(AnswerTest, AnAcknowledgementThatFailedForGoodLeavesTheRequestOnTheCard) {
  AcceptedTicket("c1");
  auto claimed = Ok(engine_->ClaimDueEffects(10));
  ASSERT_EQ(claimed.size(), 1u);
  ASSERT_TRUE(engine_->RecordDelivery(claimed[0].effect.id, Delivery::Failed("403 Resource not accessible"), 0).ok());
  Advance(120'000);
  EXPECT_EQ(Kind("c1"), "unanswered");
  EXPECT_THAT(CardIds(), ::testing::ElementsAre("c1"));
}

// Every exit at once: whatever happened to each message, each is in exactly one outcome, and the
// only ones the panel names as "not answered" are those in no other.
TEST_F(AnswerTest, NoExitLeavesAMessageInNoOutcome) {
  AcceptedTicket("accepted");
  Receive(Comment("follow", "alice", true, "@agent and docs/"));
  Receive(Comment("stranger", "carol", true, "@agent hi", 4));
  Receive(Comment("verb", "bob", true, "@agent status", 5));
  Receive(Comment("down", "bob", true, "@agent fix it", 6));
  assessor_.answers.push_back(Status::Unavailable("model API timed out"));
  Drain();
  Advance(120'000);
  std::map<std::string, std::string> kinds;
  for (const char* id : {"accepted", "follow", "stranger", "verb", "down"}) kinds[id] = Kind(id);
  EXPECT_EQ(kinds["accepted"], "acknowledged");
  EXPECT_EQ(kinds["follow"], "taken");
  EXPECT_EQ(kinds["stranger"], "silent");
  EXPECT_EQ(kinds["verb"], "answered");
  EXPECT_EQ(kinds["down"], "unanswered");
  EXPECT_THAT(CardIds(), ::testing::ElementsAre("down"));
}

}  // namespace
}  // namespace superagent::testing

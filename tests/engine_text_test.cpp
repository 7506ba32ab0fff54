// The Engine's boundary for text (issue 18): what comes from outside is repaired before it is
// stored, so nothing the store or the panel dumps can throw json type_error.316; and SPEC §1's
// "at most 100 words" holds for every chat message in Chinese too — acknowledgements, answers,
// results and questions alike.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "engine_fixture.h"
#include "superagent/chat.h"
#include "superagent/text.h"
#include "result_ok.h"

namespace superagent::testing {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

std::string Chinese(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += "字";
  return s;
}

const std::string kFffd = "\xEF\xBF\xBD";

class EngineTextTest : public EngineTest {
 protected:
  // A message in the Feishu support chat, so its Thread and channel are known.
  void FeishuThread() {
    Trigger chat = Comment("f1", "ou_alice", true, "hi");
    chat.source = "feishu";
    chat.scope = "chat:oc_support";
    chat.threads = {"feishu:chat:oc_support"};
    chat.channel = "feishu:chat:oc_support";
    Receive(chat);
  }
  void PanelThread() {
    Trigger p = Comment("panel:1", "Tess", true, "hi");
    p.source = "panel";
    p.scope = "direct";
    p.threads = {"panel:session:1"};
    p.channel = "panel:session:1";
    Receive(p);
  }
};

TEST_F(EngineTextTest, ChatMessagesCountEachChineseCharacterAsAWord) {
  EXPECT_FALSE(EngineOptions{}.message_limit) << "core has no platform's rule: app/ hands it the Channels'";
  EXPECT_TRUE(IsChat("feishu:chat:oc_1"));
  EXPECT_TRUE(IsChat("panel"));
  EXPECT_FALSE(IsChat("github:acme/widgets:issue:1"));
  EXPECT_FALSE(IsChat("feishuish:x"));
  const TicketId id = AcceptedTicket("c1");
  FeishuThread();
  PanelThread();
  const std::size_t before = Ok(views_->Receipts(std::nullopt)).size();
  // 3000 Chinese characters used to be "one word" and went out.
  Status s = engine_->Send({"zh", id, "feishu:chat:oc_support", MessageKind::kResult, Chinese(3000)});
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("at most 100 words; this one has 3000"));
  s = engine_->Send({"panel", id, "panel:session:1", MessageKind::kAnswer, Chinese(101)});
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << "the panel is a chat too";
  EXPECT_THAT(s.message(), HasSubstr("this one has 101"));
  EXPECT_EQ(Ok(views_->Receipts(std::nullopt)).size(), before) << "a refused message stores nothing";
  EXPECT_TRUE(engine_->Send({"ok", id, "feishu:chat:oc_support", MessageKind::kResult, Chinese(100)}).ok());
  EXPECT_TRUE(engine_->Send({"gh", id, "github:acme/widgets:issue:1", MessageKind::kResult, Chinese(3000)}).ok())
      << "GitHub is not a chat: its cap is in characters";

  HumanAction ask;
  ask.thread = "feishu:chat:oc_support";
  ask.actor = "ou_alice";
  ask.question = Chinese(150) + "？";
  Status asked = EngineTestPeer(*engine_).AskPerson(id, ask, "ask1");
  EXPECT_EQ(asked.code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(asked.message(), HasSubstr("this one has 150"));
  EXPECT_NE(views_->GetTicket(id)->stage, Stage::kWaitingForPerson) << "a refused question changes nothing";
  ask.question = "要改哪个文件？";
  EXPECT_TRUE(EngineTestPeer(*engine_).AskPerson(id, ask, "ask2").ok());
}

// An acknowledgement is part of the Decision: refusing it would lose the Decision, so one over
// the chat limit is cut to the limit, visibly.
TEST_F(EngineTextTest, AnAcknowledgementOverTheChatLimitIsCutToItAndTheDecisionStands) {
  Trigger chat = Comment("f2", "ou_alice", true, "@agent " + Chinese(20));
  chat.source = "feishu";
  chat.scope = "chat:oc_support";
  chat.threads = {"feishu:chat:oc_support"};
  chat.channel = "feishu:chat:oc_support";
  Receive(chat);
  Assessment a = ScriptedAssessor::Accept();
  a.acknowledgement = "好的，" + Chinese(300);
  assessor_.answers.push_back(a);
  ASSERT_EQ(Drain(), 1);
  auto story = ExplainNow("f2");
  ASSERT_TRUE(story.ok()) << story.status().ToString();
  ASSERT_TRUE(story->contains("ticket_created")) << story->dump();
  const TicketId id = (*story)["ticket_created"]["id"].get<TicketId>();
  auto receipts = Ok(views_->Receipts(id));
  ASSERT_EQ(receipts.size(), 1u);
  EXPECT_EQ(receipts[0].kind, MessageKind::kAcknowledgement);
  EXPECT_EQ(text::CountWords(receipts[0].body), 100u);
  EXPECT_THAT(receipts[0].body, ::testing::StartsWith("好的，字字"));
  EXPECT_THAT(receipts[0].body, ::testing::EndsWith("\xE2\x80\xA6"));
}

TEST_F(EngineTextTest, InvalidUtf8FromOutsideIsRepairedBeforeItIsStoredAndCanBeShown) {
  const TicketId id = AcceptedTicket("c1");
  // Intake: a Trigger from a Source that let bad bytes through (a GBK terminal, a cut pipe).
  Trigger t = Comment("c9", "alice", true, "@agent 修复\xE4\xB8 \xFF\xFE", 9);
  t.actor = "ali\xC0" "ce";
  t.meta["title"] = "bad \xED\xA0\x80";
  ASSERT_EQ(Receive(t).outcome, IntakeOutcome::kStored);
  auto rec = views_->GetTrigger("c9");
  ASSERT_TRUE(rec.ok()) << rec.status().ToString();
  EXPECT_EQ(rec->trigger.text, "@agent 修复" + kFffd + " " + kFffd + kFffd);
  EXPECT_EQ(rec->trigger.actor.value_or(""), "ali" + kFffd + "ce");
  EXPECT_TRUE(text::IsValid(rec->trigger.meta["title"].get<std::string>()));
  auto story = ExplainNow("c9");
  ASSERT_TRUE(story.ok());
  EXPECT_NO_THROW((void)story->dump()) << "explain and the panel dump what was stored";

  // A message, a transcript event and a Ticket's history line with bad bytes.
  ASSERT_TRUE(engine_->Send({"bad", id, "github:acme/widgets:issue:1", MessageKind::kResult, "结果\xE4\xB8"}).ok());
  EXPECT_EQ(Ok(views_->Receipts(id)).back().body, "结果" + kFffd);
  auto session = EngineTestPeer(*engine_).OpenSession(id, "t", "command");
  ASSERT_TRUE(session.ok());
  json body = {{"stdout_tail", "输出\xE6\xB1"}, {"list", {"\xFF"}}};
  ASSERT_TRUE(engine_->AppendSessionEvent(session->id, 0, "command", body).ok())
      << "storing the transcript used to throw type_error.316 in the turn thread";
  auto events = Ok(views_->SessionEvents(session->id));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].body["stdout_tail"], "输出" + kFffd);
  EXPECT_EQ(events[0].body["list"][0], kFffd);
  ASSERT_TRUE(EngineTestPeer(*engine_).SetStage(id, Stage::kBlocked, "git said \xE9\x94").ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(engine_->ReportFailure("prepare", "fatal: \xC3").ok());
  auto problems = Ok(views_->Problems(options_.problem_threshold));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].message, "fatal: " + kFffd);
  EXPECT_NO_THROW((void)ExplainNow("c1")->dump());
}

}  // namespace
}  // namespace superagent::testing

// Issue 38, first part: a person's verdict on what observe mode would have done, and each rule's
// precision from those verdicts with its 95 % Wilson lower bound — through the Engine (one
// transaction, final), the read face, and `superagent policy report` as a real process.
#include <cmath>
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "engine_fixture.h"
#include "result_ok.h"
#include "run_binary.h"
#include "superagent/judgement.h"

namespace superagent::testing {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

// Known values of the Wilson score interval's lower bound at 95 % (z = 1.96), as a statistics
// text computes them by hand.
TEST(Judgement, TheWilsonLowerBoundIsTheTextbooksAndFewAnswersNeverLookCertain) {
  EXPECT_EQ(WilsonLowerBound(0, 0), 0);
  EXPECT_NEAR(WilsonLowerBound(8, 10), 0.4902, 1e-4);
  EXPECT_NEAR(WilsonLowerBound(4, 5), 0.3755, 1e-4);
  EXPECT_NEAR(WilsonLowerBound(3, 3), 0.4385, 1e-4);
  EXPECT_NEAR(WilsonLowerBound(30, 30), 0.8865, 1e-4);
  EXPECT_NEAR(WilsonLowerBound(0, 10), 0.0, 1e-12);
  EXPECT_NEAR(WilsonLowerBound(95, 100), 0.8883, 1e-4);
  EXPECT_LT(WilsonLowerBound(9, 10), WilsonLowerBound(90, 100)) << "more answers, a tighter bound";
}

TEST(Judgement, ARulesPrecisionCountsOnlyYesAndNo) {
  auto record = [](std::vector<std::string> rules, std::optional<Verdict> v) {
    WouldAcceptRecord w;
    w.rules = std::move(rules);
    w.verdict = v;
    return w;
  };
  const std::vector<WouldAcceptRecord> records = {
      record({"wording"}, Verdict::kYes),    record({"wording"}, Verdict::kYes),
      record({"wording"}, Verdict::kYes),    record({"wording", "visual"}, Verdict::kYes),
      record({"wording"}, Verdict::kNo),     record({"wording"}, Verdict::kUnknown),
      record({"wording"}, std::nullopt),     record({}, Verdict::kNo),
  };
  const std::vector<RulePrecision> rules = PrecisionByRule(records);
  ASSERT_EQ(rules.size(), 3u);
  EXPECT_EQ(rules[0].rule, "(no rule)");
  EXPECT_EQ(rules[0].no, 1);
  EXPECT_EQ(rules[0].precision, 0);
  EXPECT_EQ(rules[1].rule, "visual");
  EXPECT_EQ(rules[1].yes, 1);
  const RulePrecision& w = rules[2];
  EXPECT_EQ(w.rule, "wording");
  EXPECT_EQ(w.would_accept, 7);
  EXPECT_EQ(w.yes, 4);
  EXPECT_EQ(w.no, 1);
  EXPECT_EQ(w.unknown, 1);
  EXPECT_EQ(w.unanswered, 1);
  EXPECT_DOUBLE_EQ(w.precision, 0.8);
  EXPECT_NEAR(w.lower_bound, 0.3755, 1e-4);
  const json j = PrecisionReportJson(rules, 42);
  EXPECT_EQ(j["since"], 42);
  EXPECT_EQ(j["rules"][2]["unanswered"], 1);
  EXPECT_EQ(ParseVerdict("yes"), Verdict::kYes);
  EXPECT_EQ(ParseVerdict("YES"), std::nullopt);
  EXPECT_EQ(ParseVerdict("是"), std::nullopt);
}

class VerdictsTest : public EngineTest {
 protected:
  // An inferred message observe mode would have accepted under rule "wording"; its Decision.
  std::int64_t WouldAcceptOn(int issue, const std::string& id, const std::string& text) {
    Receive(Comment(id, "alice", false, text, issue));
    assessor_.answers.push_back(ScriptedAssessor::Accept());
    EXPECT_EQ(Drain(), 1);
    auto d = Ok(views_->Decisions("github:issue:" + std::to_string(issue)));
    EXPECT_FALSE(d.empty());
    EXPECT_TRUE(!d.empty() && d.back().would_accept);
    return d.empty() ? 0 : d.back().id;
  }
};

TEST_F(VerdictsTest, AVerdictIsRecordedOnceOnAWouldAcceptAndCountsForItsRule) {
  const std::int64_t a = WouldAcceptOn(1, "c1", "README 的标题里有个错别字 🙈");
  const std::int64_t b = WouldAcceptOn(2, "c2", "the heading says teh");
  const std::int64_t c = WouldAcceptOn(3, "c3", "typo in the footer");
  ASSERT_TRUE(engine_->RecordVerdict(a, Verdict::kYes, "Tess (panel)", "panel").ok());
  ASSERT_TRUE(engine_->RecordVerdict(b, Verdict::kNo, "alice", "thread").ok());

  // Final: a second verdict changes nothing.
  EXPECT_EQ(engine_->RecordVerdict(a, Verdict::kNo, "mallory", "panel").code(), Status::Code::kConflict);
  // Only what observe mode would have done; only known Decisions; only the two ways in.
  const TicketId ticket = AcceptedTicket("c4", 4);
  ASSERT_GT(ticket, 0);
  const auto accepted = Ok(views_->Decisions("github:issue:4"));
  ASSERT_FALSE(accepted.empty());
  EXPECT_EQ(engine_->RecordVerdict(accepted.back().id, Verdict::kYes, "Tess", "panel").code(),
            Status::Code::kInvalidArgument);
  EXPECT_EQ(engine_->RecordVerdict(999999, Verdict::kYes, "Tess", "panel").code(), Status::Code::kNotFound);
  EXPECT_EQ(engine_->RecordVerdict(c, Verdict::kYes, "Tess", "email").code(), Status::Code::kInvalidArgument);

  const auto records = Ok(views_->WouldAccepts(0));
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].decision, a);
  EXPECT_EQ(records[0].text, "README 的标题里有个错别字 🙈");
  EXPECT_EQ(records[0].rules, std::vector<std::string>{"wording"});
  EXPECT_EQ(records[0].verdict, Verdict::kYes);
  EXPECT_EQ(records[0].by, "Tess (panel)");
  EXPECT_EQ(records[0].via, "panel");
  EXPECT_EQ(records[1].verdict, Verdict::kNo);
  EXPECT_EQ(records[1].via, "thread");
  EXPECT_FALSE(records[2].verdict.has_value());
  EXPECT_TRUE(Ok(views_->WouldAccepts(clock_.NowMs() + 1)).empty()) << "the window is the Decisions' time";

  const auto rules = PrecisionByRule(records);
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_EQ(rules[0].yes, 1);
  EXPECT_EQ(rules[0].no, 1);
  EXPECT_EQ(rules[0].unanswered, 1);
  EXPECT_DOUBLE_EQ(rules[0].precision, 0.5);
}

// `superagent policy report --json`, as a person runs it against the daemon's database.
TEST_F(VerdictsTest, PolicyReportPrintsEachRulesCountsPrecisionAndBound) {
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 6; ++i) ids.push_back(WouldAcceptOn(i + 1, "c" + std::to_string(i), "typo number " + std::to_string(i)));
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(engine_->RecordVerdict(ids[i], Verdict::kYes, "Tess", "panel").ok());
  ASSERT_TRUE(engine_->RecordVerdict(ids[4], Verdict::kNo, "Tess", "panel").ok());
  const std::string config = (dir_ / "superagent.yaml").string();
  std::ofstream(config) << "data_dir: " << dir_.string() << "\n";
  ASSERT_TRUE(std::filesystem::exists(dir_ / "superagent.db")) << "the fixture's database is where the config says";
  // The fake clock stands at the start of 2026; the report's window is counted back from real time.
  RunResult r = RunBinary({"policy", "report", "--config", config, "--since", "36500d", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json report = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(report.is_object()) << r.out;
  ASSERT_EQ(report["rules"].size(), 1u) << r.out;
  const json& w = report["rules"][0];
  EXPECT_EQ(w["rule"], "wording");
  EXPECT_EQ(w["would_accept"], 6);
  EXPECT_EQ(w["yes"], 4);
  EXPECT_EQ(w["no"], 1);
  EXPECT_EQ(w["unanswered"], 1);
  EXPECT_DOUBLE_EQ(w["precision"].get<double>(), 0.8);
  EXPECT_NEAR(w["lower_bound"].get<double>(), 0.3755, 1e-4);
  RunResult text = RunBinary({"policy", "report", "--config", config, "--since", "36500d"});
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_THAT(text.out, HasSubstr("rule wording: 6 would_accept, 0 accepted; yes 4, no 1, don't know 0, unanswered 1, missed 0"));
  EXPECT_THAT(text.out, HasSubstr("precision 80.0 % over 5 answer(s); at least 37.6 % with 95 % confidence (Wilson)"));
  EXPECT_EQ(RunBinary({"policy", "report", "--config", config, "--since", "forever"}).exit_code, 2);
}

}  // namespace
}  // namespace superagent::testing

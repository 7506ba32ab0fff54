// Verdicts on what observe mode would have done (issue 38), in the panel on a real httplib server
// on loopback over a real store: Needs-you's card per rule with the unanswered messages and the
// rule's counts, precision and Wilson lower bound; POST /api/decisions/<id>/verdict and each of its
// refusals (changing nothing); and the batching — a rule answered less than a day ago is asked
// again only once five messages wait — on the panel's fake clock.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include "app/wiring.h"
#include "panel/needs.h"
#include "panel_fixture.h"
#include "run_binary.h"
#include "superagent/judgement.h"
#include "superagent/panel.h"
#include "superagent/views.h"

namespace superagent::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

constexpr TimeMs kPanelVerdictsHourMs = 3'600'000;
constexpr char kPanelVerdictsChinese[] = "README 的标题拼错了：Instalation 应为 Installation 🙏🏽";


class PanelVerdictsTest : public PanelServerTest {
 protected:
  httplib::Result GiveVerdict(std::int64_t decision, const std::string& word, bool with_csrf = true) {
    return Post("/api/decisions/" + std::to_string(decision) + "/verdict", {{"verdict", word}, {"name", "Tess"}},
                with_csrf);
  }
  json Cards() { return GetJson("/api/needs")["verdicts"]; }
  // The card of `rule`, or null.
  json Card(const std::string& rule) {
    for (const json& c : Cards())
      if (c["rule"] == rule) return c;
    return nullptr;
  }
  std::vector<std::int64_t> ItemDecisions(const json& card) {
    std::vector<std::int64_t> out;
    for (const json& i : card["items"]) out.push_back(i["decision"].get<std::int64_t>());
    return out;
  }

  // An inferred message from alice on its own issue that the assessment would accept in observe
  // mode, matching `rules` (of the policy's wording and visual); a minute later than the one
  // before. Its would_accept Decision's id.
  std::int64_t WouldAccept(const std::string& text, const std::set<std::string>& rules = {"wording"}) {
    const int issue = next_issue_++;
    clock_.Advance(60'000);
    Receive(Comment("gh:comment:wa-" + std::to_string(issue), "alice", false, text, issue));
    Assessment a = ScriptedAssessor::Accept(true, text);
    a.rules = {{"wording", rules.count("wording") > 0, "wording"}, {"visual", rules.count("visual") > 0, "visual"}};
    assessor_.answers.push_back(a);
    EXPECT_EQ(Drain(), 1);
    auto decisions = views_->Decisions("github:issue:" + std::to_string(issue));
    EXPECT_TRUE(decisions.ok());
    if (!decisions.ok()) return 0;
    for (const Decision& d : *decisions)
      if (d.would_accept) return d.id;
    ADD_FAILURE() << "no would_accept for " << text;
    return 0;
  }
  std::vector<std::int64_t> WouldAccepts(int n, const std::set<std::string>& rules = {"wording"}) {
    std::vector<std::int64_t> out;
    for (int i = 0; i < n; ++i) out.push_back(WouldAccept("the heading has a typo, number " + std::to_string(i), rules));
    return out;
  }
  // The store's record of `decision` (Views::WouldAccepts over all time).
  WouldAcceptRecord Record(std::int64_t decision) {
    auto records = views_->WouldAccepts(0);
    EXPECT_TRUE(records.ok());
    if (records.ok())
      for (const WouldAcceptRecord& w : *records)
        if (w.decision == decision) return w;
    ADD_FAILURE() << "no record of decision " << decision;
    return {};
  }
  int Answered() {
    auto records = views_->WouldAccepts(0);
    EXPECT_TRUE(records.ok());
    if (!records.ok()) return -1;
    return static_cast<int>(std::count_if(records->begin(), records->end(),
                                          [](const WouldAcceptRecord& w) { return w.verdict.has_value(); }));
  }

  int next_issue_ = 100;
};

TEST_F(PanelVerdictsTest, ACardPerRuleListsItsUnansweredMessagesNewestFirstWithTheRulesCounts) {
  const std::int64_t first = WouldAccept("there's a typo in the README heading");
  const std::int64_t chinese = WouldAccept(kPanelVerdictsChinese);
  const std::int64_t both = WouldAccept("the spacing and the wording of the footer are off", {"wording", "visual"});
  const std::int64_t visual = WouldAccept("the button padding is off by 4px", {"visual"});
  StartServer();
  json needs = GetJson("/api/needs");
  ASSERT_EQ(needs["verdicts"].size(), 2u) << needs.dump();
  EXPECT_EQ(needs["count"], 2);
  const json wording = Card("wording");
  ASSERT_TRUE(wording.is_object());
  EXPECT_EQ(wording["unanswered"], 3);
  EXPECT_EQ(wording["more"], 0);
  EXPECT_EQ(ItemDecisions(wording), (std::vector<std::int64_t>{both, chinese, first}));
  const json& item = wording["items"][1];
  EXPECT_EQ(item["text"], kPanelVerdictsChinese);
  EXPECT_EQ(item["thread"], "github:issue:101");
  EXPECT_EQ(item["at"], FormatTime(Record(chinese).created_at));
  EXPECT_EQ(wording["yes"], 0);
  EXPECT_EQ(wording["no"], 0);
  EXPECT_EQ(wording["unknown"], 0);
  EXPECT_EQ(wording["answers"], 0);
  EXPECT_EQ(wording["precision_words"], "no yes or no answers yet, so no precision");
  EXPECT_TRUE(wording["last_verdict_at"].is_null());
  EXPECT_EQ(wording["what"],
            "3 messages the rule wording would have acted on in auto mode wait for your verdict: was it a request?");
  // A Decision matching two rules is on both cards.
  EXPECT_EQ(ItemDecisions(Card("visual")), (std::vector<std::int64_t>{visual, both}));

  // At most 20 listed, and how many more.
  WouldAccepts(19);
  const json many = Card("wording");
  EXPECT_EQ(many["unanswered"], 22);
  EXPECT_EQ(many["items"].size(), 20u);
  EXPECT_EQ(many["more"], 2);

  // Only the last week's: a record older than 7 days leaves the card.
  clock_.Advance(7 * 24 * kPanelVerdictsHourMs - 19 * 60'000 + 1);  // a week and a moment after the fourth
  EXPECT_EQ(Card("wording")["unanswered"], 19);
  EXPECT_TRUE(Card("visual").is_null());
}

TEST_F(PanelVerdictsTest, AVerdictIsRecordedWithWhoAndItsMessageLeavesTheCardAndIsFinal) {
  const std::vector<std::int64_t> ids = WouldAccepts(5);
  const std::int64_t chinese = WouldAccept(kPanelVerdictsChinese);
  StartServer();
  ASSERT_EQ(ItemDecisions(Card("wording")).front(), chinese);

  auto r = GiveVerdict(chinese, "yes");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body),
            json({{"ok", true}, {"decision", chinese}, {"verdict", "yes"}, {"by", "Tess (panel)"}}));
  const WouldAcceptRecord record = Record(chinese);
  ASSERT_TRUE(record.verdict.has_value());
  EXPECT_EQ(*record.verdict, superagent::Verdict::kYes);
  EXPECT_EQ(record.by, "Tess (panel)");
  EXPECT_EQ(record.via, "panel");
  const json commands = Commands();
  ASSERT_EQ(commands.size(), 1u);
  EXPECT_EQ(commands[0]["command"], "verdict");
  EXPECT_EQ(commands[0]["target"], "decision:" + std::to_string(chinese));
  EXPECT_EQ(commands[0]["who"], "Tess (panel)");

  // Five still wait: the card stays, without the answered message, and counts the yes.
  const json card = Card("wording");
  ASSERT_TRUE(card.is_object());
  EXPECT_EQ(ItemDecisions(card), (std::vector<std::int64_t>{ids[4], ids[3], ids[2], ids[1], ids[0]}));
  EXPECT_EQ(card["yes"], 1);
  EXPECT_EQ(card["answers"], 1);
  EXPECT_EQ(card["last_verdict_at"], FormatTime(clock_.NowMs()));

  // Final: the same verdict again, or another, is a 409 that changes nothing.
  for (const char* word : {"yes", "no"}) {
    auto again = GiveVerdict(chinese, word);
    ASSERT_TRUE(again);
    EXPECT_EQ(again->status, 409) << word << ": " << again->body;
    EXPECT_THAT(again->body, HasSubstr("already has a verdict"));
  }
  EXPECT_EQ(*Record(chinese).verdict, superagent::Verdict::kYes);
  EXPECT_EQ(Commands().size(), 1u);

  // "don't know" and "no" are answers too.
  EXPECT_EQ(GiveVerdict(ids[0], "unknown")->status, 200);
  EXPECT_EQ(*Record(ids[0]).verdict, superagent::Verdict::kUnknown);
  EXPECT_EQ(GiveVerdict(ids[1], "no")->status, 200);
  EXPECT_EQ(*Record(ids[1]).verdict, superagent::Verdict::kNo);
}

TEST_F(PanelVerdictsTest, RefusedVerdictsSayWhyAndRecordNothing) {
  const std::int64_t wa = WouldAccept("there's a typo in the README heading");
  const TicketId ticket = AcceptedTicket("gh:comment:accepted", 90);
  ASSERT_NE(ticket, 0);
  std::int64_t accepted = 0;
  auto decisions = views_->Decisions("github:issue:90");
  ASSERT_TRUE(decisions.ok());
  for (const Decision& d : *decisions) accepted = d.id;
  ASSERT_NE(accepted, 0);
  StartServer();

  auto unknown = GiveVerdict(999'999, "yes");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404) << unknown->body;

  auto not_observe = GiveVerdict(accepted, "yes");
  ASSERT_TRUE(not_observe);
  EXPECT_EQ(not_observe->status, 400) << not_observe->body;
  EXPECT_THAT(not_observe->body, HasSubstr("not a would_accept"));

  for (const json& body : {json{{"verdict", "maybe"}}, json{{"verdict", "Yes"}}, json{{"verdict", 1}}, json::object()}) {
    auto bad = Post("/api/decisions/" + std::to_string(wa) + "/verdict", body);
    ASSERT_TRUE(bad);
    EXPECT_EQ(bad->status, 400) << body.dump() << ": " << bad->body;
    EXPECT_THAT(bad->body, HasSubstr("verdict must be")) << body.dump();
  }
  for (const char* id : {"0", "-1", "abc", "1.5", "", "1234567890123456789", "%2D1"}) {
    auto bad = Post(std::string("/api/decisions/") + id + "/verdict", {{"verdict", "yes"}});
    ASSERT_TRUE(bad) << id;
    EXPECT_EQ(bad->status, 400) << id << ": " << bad->body;
    EXPECT_THAT(bad->body, HasSubstr("decision id")) << id;
  }

  // The guard of every command: no CSRF token, another origin, no panel token.
  auto no_csrf = GiveVerdict(wa, "yes", /*with_csrf=*/false);
  ASSERT_TRUE(no_csrf);
  EXPECT_EQ(no_csrf->status, 403);
  EXPECT_THAT(no_csrf->body, HasSubstr("missing or stale CSRF token"));
  const std::string csrf = GetJson("/api/session")["csrf_token"];
  const std::string path = "/api/decisions/" + std::to_string(wa) + "/verdict";
  const std::string body = json{{"verdict", "yes"}}.dump();
  auto cross = client_->Post(path.c_str(), {{"X-CSRF-Token", csrf}, {"Origin", "http://evil.example"}}, body,
                             "application/json");
  ASSERT_TRUE(cross);
  EXPECT_EQ(cross->status, 403);
  httplib::Client stranger("127.0.0.1", port_);
  EXPECT_EQ(stranger.Post(path.c_str(), {{"X-CSRF-Token", csrf}}, body, "application/json")->status, 401);

  EXPECT_EQ(Answered(), 0);
  EXPECT_EQ(Commands().size(), 0u);
  EXPECT_EQ(ItemDecisions(Card("wording")), std::vector<std::int64_t>{wa});
}

// One card per rule per day at most: once answered, a rule is asked again after 24 hours, or
// sooner once five messages wait; other rules are not held back.
TEST_F(PanelVerdictsTest, ARuleAnsweredLessThanADayAgoComesBackOnlyWithFiveWaiting) {
  const std::vector<std::int64_t> two = WouldAccepts(2);
  const std::int64_t visual = WouldAccept("the button padding is off by 4px", {"visual"});
  StartServer();
  EXPECT_EQ(Cards().size(), 2u);
  ASSERT_EQ(GiveVerdict(two[1], "yes")->status, 200);
  // One left, answered a moment ago: not asked again yet; visual is another rule.
  EXPECT_TRUE(Card("wording").is_null());
  EXPECT_EQ(ItemDecisions(Card("visual")), std::vector<std::int64_t>{visual});
  EXPECT_EQ(GetJson("/api/needs")["count"], 1);

  clock_.Advance(20 * kPanelVerdictsHourMs);
  EXPECT_TRUE(Card("wording").is_null());
  // Four waiting: still quiet; the fifth brings the batch (each a minute later).
  const std::vector<std::int64_t> more = WouldAccepts(3);
  EXPECT_TRUE(Card("wording").is_null()) << "four waiting, answered under a day ago";
  const std::int64_t fifth = WouldAccept("one more typo");
  const json batch = Card("wording");
  ASSERT_TRUE(batch.is_object());
  EXPECT_EQ(ItemDecisions(batch), (std::vector<std::int64_t>{fifth, more[2], more[1], more[0], two[0]}));

  // Answered down to four again, a day passes: one waiting is enough to be asked.
  ASSERT_EQ(GiveVerdict(fifth, "no")->status, 200);
  EXPECT_TRUE(Card("wording").is_null());
  clock_.Advance(24 * kPanelVerdictsHourMs - 1);
  EXPECT_TRUE(Card("wording").is_null());
  clock_.Advance(1);
  EXPECT_EQ(Card("wording")["unanswered"], 4);
  // Answered to nothing: no card, whatever the time.
  for (std::int64_t id : {two[0], more[0], more[1], more[2]}) ASSERT_EQ(GiveVerdict(id, "unknown")->status, 200);
  clock_.Advance(25 * kPanelVerdictsHourMs);
  EXPECT_TRUE(Card("wording").is_null());
}

TEST_F(PanelVerdictsTest, TheCardShowsThePrecisionAndLowerBoundPrecisionByRuleGives) {
  const std::vector<std::int64_t> ids = WouldAccepts(11);
  StartServer();
  for (int i = 0; i < 4; ++i) ASSERT_EQ(GiveVerdict(ids[i], "yes")->status, 200);
  ASSERT_EQ(GiveVerdict(ids[4], "no")->status, 200);
  ASSERT_EQ(GiveVerdict(ids[5], "unknown")->status, 200);
  const json card = Card("wording");
  ASSERT_TRUE(card.is_object()) << "five still wait";
  EXPECT_EQ(card["unanswered"], 5);
  EXPECT_EQ(card["yes"], 4);
  EXPECT_EQ(card["no"], 1);
  EXPECT_EQ(card["unknown"], 1);
  EXPECT_EQ(card["answers"], 5);
  auto records = views_->WouldAccepts(clock_.NowMs() - panel::kVerdictWindowMs);
  ASSERT_TRUE(records.ok());
  const std::vector<RulePrecision> rules = PrecisionByRule(*records);
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_DOUBLE_EQ(card["precision"].get<double>(), rules[0].precision);
  EXPECT_DOUBLE_EQ(card["lower_bound"].get<double>(), rules[0].lower_bound);
  EXPECT_DOUBLE_EQ(card["precision"].get<double>(), 0.8);
  EXPECT_NEAR(card["lower_bound"].get<double>(), 0.376, 0.001);
  EXPECT_EQ(card["precision_words"], "precision 80 % (at least 38 % with 95 % confidence) over 5 answers");
}

// The page: the card's messages as text (one that looks like markup too), and an answer that
// takes its message off the card; in Chromium against this in-process panel.
TEST_F(PanelVerdictsTest, TheVerdictCardRendersAndAnswersInChromium) {
  const std::string node = app::FindProgram("node");
  const std::filesystem::path tests_dir = std::filesystem::path(SUPERAGENT_SOURCE_DIR) / "tests";
  const char* chromium_env = std::getenv("CHROMIUM");
  const std::string chromium = chromium_env ? chromium_env : "/usr/bin/chromium";
  ASSERT_FALSE(node.empty()) << "node is not installed: `cmake/dev.sh test` installs nodejs and npm";
  ASSERT_TRUE(std::filesystem::exists(tests_dir / "node_modules" / "playwright-core")) << "run `npm ci` in tests/";
  ASSERT_TRUE(std::filesystem::exists(chromium)) << chromium << " is missing";

  // The page ages times from the browser's clock: real ones here.
  clock_.Set(SystemClock()->NowMs() - 3'600'000);
  WouldAccepts(4);
  const std::int64_t hostile = WouldAccept("<img src=x onerror=\"window.pwned=1\"> the heading has a typo");
  const std::int64_t chinese = WouldAccept(kPanelVerdictsChinese);
  StartServer();

  const char* shots_env = std::getenv("SUPERAGENT_SCREENSHOT_DIR");
  const std::string url = "http://127.0.0.1:" + std::to_string(port_) + "/";
  RunOptions options;
  options.timeout_ms = 55'000;
  options.cwd = tests_dir.string();
  options.env_set = {
      {"PANEL_URL", url},
      {"LOGIN_URL", url + "login?token=" + kPanelTestToken},
      {"SCREENSHOT_DIR", shots_env ? shots_env : "/tmp/superagent-panel-screenshots"},
      {"CHROMIUM", chromium},
      {"CHINESE_DECISION", std::to_string(chinese)},
      {"HOSTILE_DECISION", std::to_string(hostile)},
  };
  RunResult r = RunProgram(node, {"--test", "--test-reporter=spec", "browser/verdicts.test.mjs"}, options);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const WouldAcceptRecord record = Record(chinese);
  ASSERT_TRUE(record.verdict.has_value());
  EXPECT_EQ(*record.verdict, superagent::Verdict::kYes);
  EXPECT_EQ(record.via, "panel");
  EXPECT_EQ(Answered(), 1);
  EXPECT_EQ(Commands().size(), 1u);
}

// The card builder alone: a record matching no rule has its own card; a verdict on a record of
// two rules quiets both; a verdict of unknown time (given in the thread) quiets nothing.
TEST(PanelVerdictsCards, NoRuleHasItsCardAndAVerdictQuietsEachOfItsRules) {
  const TimeMs now = 1'767'225'600'000;
  auto record = [&](std::int64_t id, std::vector<std::string> rules, std::optional<Verdict> verdict) {
    WouldAcceptRecord w;
    w.decision = id;
    w.thread = "feishu:chat:oc_1";
    w.rules = std::move(rules);
    w.text = "msg " + std::to_string(id);
    w.verdict = verdict;
    w.created_at = now - 1000 * id;
    return w;
  };
  const std::vector<WouldAcceptRecord> records = {
      record(1, {}, std::nullopt), record(2, {"wording", "visual"}, Verdict::kYes), record(3, {"wording"}, std::nullopt),
      record(4, {"visual"}, std::nullopt)};
  json cards = panel::VerdictCardsJson(records, {}, now);
  ASSERT_EQ(cards.size(), 3u) << cards.dump();
  EXPECT_EQ(cards[0]["rule"], "(no rule)");
  EXPECT_EQ(cards[0]["items"][0]["decision"], 1);
  EXPECT_EQ(cards[0]["what"],
            "1 message observe mode would have acted on, matching no rule, waits for your verdict: was it a request?");
  EXPECT_EQ(cards[1]["rule"], "visual");
  EXPECT_EQ(cards[1]["yes"], 1);
  EXPECT_EQ(cards[2]["rule"], "wording");
  cards = panel::VerdictCardsJson(records, {{2, now - 1000}}, now);
  ASSERT_EQ(cards.size(), 1u) << cards.dump();
  EXPECT_EQ(cards[0]["rule"], "(no rule)");
  EXPECT_EQ(panel::VerdictCardsJson(records, {{2, now - panel::kVerdictQuietMs}}, now).size(), 3u);
}

}  // namespace
}  // namespace superagent::testing

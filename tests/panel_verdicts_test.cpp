// Verdicts on what observe mode would have done (issue 38), in the panel on a real httplib server
// on loopback over a real store: Needs-you's card per rule with the unanswered messages and the
// rule's counts, precision and Wilson lower bound; POST /api/decisions/<id>/verdict and each of its
// refusals (changing nothing); and the batching — a rule answered less than a day ago is asked
// again only once five messages wait — on the panel's fake clock.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include "app/wiring.h"
#include "panel/judgement_api.h"
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
    auto decisions = views_->Decisions("github:acme/widgets:issue:" + std::to_string(issue));
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
  EXPECT_EQ(item["thread"], "github:acme/widgets:issue:101");
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
  auto decisions = views_->Decisions("github:acme/widgets:issue:90");
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
  EXPECT_THAT(not_observe->body, HasSubstr("neither a would_accept nor a rule's accept"));

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
  // The page ages times from the browser's clock: real ones here.
  clock_.Set(SystemClock()->NowMs() - 3'600'000);
  WouldAccepts(4);
  const std::int64_t hostile = WouldAccept("<img src=x onerror=\"window.pwned=1\"> the heading has a typo");
  const std::int64_t chinese = WouldAccept(kPanelVerdictsChinese);
  StartServer();

  RunResult r = RunBrowserScript("verdicts.test.mjs", {{"CHINESE_DECISION", std::to_string(chinese)},
                                                       {"HOSTILE_DECISION", std::to_string(hostile)}});
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


// --- Judgement you can measure (issue 38 §2–4): GET /api/judgement and Needs-you's policy edits ---

constexpr TimeMs kJudgementDayMs = 24 * kPanelVerdictsHourMs;
constexpr char kJudgementChineseRule[] = "错别字";
constexpr char kJudgementMarkupRule[] = "<b>x</b>";

// The rules and judgement settings of the judgement tests: a Chinese rule in observe, visual in
// auto, a rule whose name looks like markup, and thresholds low enough to reach in a test — a
// rule earns auto at a lower bound of 0.2 over 3 answers (2 of 2 already bound 0.34: the count
// decides), and loses it under 0.1 over 10.
constexpr char kJudgementRulesYaml[] = R"(rules:
  - name: wording
    when: Fix wording, typos, punctuation and existing translations.
    instructions: Keep the change to the text in question.
  - name: 错别字
    when: 修正文档中的错别字。
    instructions: 只改错别字。
  - name: visual
    when: Targeted visual fixes with a clear goal.
    instructions: Restore spacing to the existing standard.
    mode: auto
  - name: "<b>x</b>"
    when: Anything a stranger might call bold.
    instructions: Keep it plain.
judgement:
  promote_at: 0.2
  promote_after: 3
  demote_at: 0.1
  demote_after: 10
  window_days: 14
)";

// The panel fixture's sources with the rules above.
std::string JudgementPolicyYaml() {
  const std::string base = PanelPolicyYaml();
  return base.substr(0, base.find("rules:")) + kJudgementRulesYaml;
}

Policy JudgementPolicy() {
  std::vector<Problem> problems;
  auto p = ParsePolicy(JudgementPolicyYaml(), "policy.yaml", &problems);
  for (const Problem& pr : problems) ADD_FAILURE() << pr.ToString();
  return p ? *p : DefaultPolicy();
}

RulePrecision JudgementRow(const std::string& rule, int yes, int no, int unknown = 0, int unanswered = 0) {
  RulePrecision r;
  r.rule = rule;
  r.would_accept = yes + no + unknown + unanswered;
  r.yes = yes;
  r.no = no;
  r.unknown = unknown;
  r.unanswered = unanswered;
  r.precision = yes + no > 0 ? static_cast<double>(yes) / (yes + no) : 0;
  r.lower_bound = WilsonLowerBound(yes, yes + no);
  return r;
}

const json* JudgementFind(const json& list, const std::string& rule) {
  for (const json& item : list)
    if (item.value("rule", "") == rule) return &item;
  return nullptr;
}

TEST(PanelJudgementJson, RowsCarryTheirFiguresModeAndWordsAndAProposalComesExactlyAtPromoteAfter) {
  const Policy policy = JudgementPolicy();
  const TimeMs now = 1'767'225'600'000;
  panel::JudgementFacts facts;
  facts.now = now;
  facts.since = now - 14 * kJudgementDayMs;
  facts.week_since = now - panel::kJudgementWeekMs;
  RulePrecision chinese = JudgementRow(kJudgementChineseRule, 2, 0, 1, 1);  // one short of promote_after
  chinese.missed = 2;
  RulePrecision visual = JudgementRow("visual", 1, 9);  // in auto, bound 0.018 over 10: demoted
  visual.would_accept = 0;
  visual.accepted = 10;
  RulePrecision markup = JudgementRow(kJudgementMarkupRule, 0, 0, 0, 1);
  RulePrecision expl = JudgementRow("explicit:mention", 3, 0);  // earns nothing: not a rule
  expl.explicit_path = true;
  expl.would_accept = 0;
  expl.accepted = 3;
  facts.rules = {chinese, visual, markup, expl};
  const std::string file = "/etc/superagent/policy.yaml";

  json j = panel::JudgementJson(facts, policy, file, JudgementPolicyYaml());
  EXPECT_EQ(j["window_days"], 14);
  EXPECT_EQ(j["since"], now - 14 * kJudgementDayMs);
  EXPECT_EQ(j["settings"], json({{"promote_at", 0.2}, {"promote_after", 3}, {"demote_at", 0.1}, {"demote_after", 10}}));
  ASSERT_EQ(j["rules"].size(), 4u) << j.dump();
  const json& zh = j["rules"][0];
  EXPECT_EQ(zh["rule"], kJudgementChineseRule);
  EXPECT_EQ(zh["mode"], "observe");
  EXPECT_EQ(zh["would_accept"], 4);
  EXPECT_EQ(zh["yes"], 2);
  EXPECT_EQ(zh["no"], 0);
  EXPECT_EQ(zh["unknown"], 1);
  EXPECT_EQ(zh["unanswered"], 1);
  EXPECT_EQ(zh["missed"], 2);
  EXPECT_DOUBLE_EQ(zh["precision"].get<double>(), 1.0);
  EXPECT_NEAR(zh["lower_bound"].get<double>(), 0.342, 0.001);  // Wilson, 2 of 2
  EXPECT_EQ(zh["words"], "precision 100 % (at least 34 % with 95 % confidence) over 2 answers");
  EXPECT_EQ(j["rules"][1]["mode"], "auto");
  EXPECT_EQ(j["rules"][1]["accepted"], 10);
  EXPECT_NEAR(j["rules"][1]["lower_bound"].get<double>(), 0.018, 0.001);
  EXPECT_EQ(j["rules"][1]["words"], "precision 10 % (at least 2 % with 95 % confidence) over 10 answers");
  EXPECT_EQ(j["rules"][2]["rule"], kJudgementMarkupRule);
  EXPECT_EQ(j["rules"][2]["mode"], "observe");
  EXPECT_EQ(j["rules"][2]["words"], "no yes or no answers yet, so no precision");
  EXPECT_EQ(j["rules"][3]["mode"], "explicit");

  // Two answers: no promotion yet; visual's demotion stands; the explicit path is never proposed.
  ASSERT_EQ(j["proposals"].size(), 1u) << j["proposals"].dump();
  const json& demote = j["proposals"][0];
  EXPECT_EQ(demote["rule"], "visual");
  EXPECT_EQ(demote["kind"], "demote");
  EXPECT_EQ(demote["from"], "auto");
  EXPECT_EQ(demote["to"], "observe");
  EXPECT_EQ(demote["answers"], 10);
  EXPECT_EQ(demote["file"], file);
  EXPECT_THAT(demote["diff"].get<std::string>(), HasSubstr("observe"));

  // The third yes: exactly promote_after answers.
  facts.rules[0] = JudgementRow(kJudgementChineseRule, 3, 0, 1, 0);
  j = panel::JudgementJson(facts, policy, file, JudgementPolicyYaml());
  ASSERT_EQ(j["proposals"].size(), 2u) << j["proposals"].dump();
  const json* promote = JudgementFind(j["proposals"], kJudgementChineseRule);
  ASSERT_NE(promote, nullptr) << j["proposals"].dump();
  EXPECT_EQ((*promote)["kind"], "promote");
  EXPECT_EQ((*promote)["from"], "observe");
  EXPECT_EQ((*promote)["to"], "auto");
  EXPECT_EQ((*promote)["answers"], 3);
  EXPECT_NEAR((*promote)["lower_bound"].get<double>(), 0.438, 0.001);
  EXPECT_EQ((*promote)["file"], file);
  EXPECT_THAT((*promote)["diff"].get<std::string>(), HasSubstr("auto"));
  EXPECT_FALSE((*promote)["why"].get<std::string>().empty());

  // No file in force (the embedded defaults): the proposal stands, with no diff and no file.
  j = panel::JudgementJson(facts, policy, "", "");
  promote = JudgementFind(j["proposals"], kJudgementChineseRule);
  ASSERT_NE(promote, nullptr) << j["proposals"].dump();
  EXPECT_EQ((*promote)["diff"], "");
  EXPECT_TRUE((*promote)["file"].is_null());
}

TEST(PanelJudgementJson, TheWeekSumsItsTicketsWithMediansAndSaysItInOneLine) {
  const TimeMs now = 1'767'225'600'000;
  panel::JudgementFacts facts;
  facts.now = now;
  facts.since = now - 30 * kJudgementDayMs;
  facts.week_since = now - panel::kJudgementWeekMs;
  auto outcome = [](TicketId id, const char* name, std::optional<double> ack, std::optional<double> pr, int turns,
                    int tokens, double cost, int asks) {
    TicketOutcome t;
    t.ticket = id;
    t.outcome = name;
    t.seconds_to_acknowledgement = ack;
    t.seconds_to_pull_request = pr;
    t.turns = turns;
    t.tokens = tokens;
    t.cost_usd = cost;
    t.person_asks = asks;
    return t;
  };
  facts.week = {outcome(1, "merged", 30, 3600, 3, 12'000, 0.5, 1), outcome(2, "closed", 50, 7200, 2, 8'000, 0.25, 0),
                outcome(3, "answered", 40, std::nullopt, 1, 2'000, 0.05, 0),
                outcome(4, "stopped", std::nullopt, std::nullopt, 1, 500, 0, 0),
                outcome(5, "live", 20, std::nullopt, 1, 1'000, 0.1, 0)};
  facts.week_would_accept = 7;
  facts.week_verdicts = 4;
  const json week = panel::JudgementJson(facts, JudgementPolicy(), "", "")["week"];
  EXPECT_EQ(week["since"], now - panel::kJudgementWeekMs);
  EXPECT_EQ(week["tickets"], 5);
  EXPECT_EQ(week["merged"], 1);
  EXPECT_EQ(week["closed"], 1);
  EXPECT_EQ(week["pr_open"], 0);
  EXPECT_EQ(week["answered"], 1);
  EXPECT_EQ(week["stopped"], 1);
  EXPECT_EQ(week["live"], 1);
  EXPECT_EQ(week["ended"], 0);
  EXPECT_DOUBLE_EQ(week["median_seconds_to_acknowledgement"].get<double>(), 35);  // of 20, 30, 40, 50
  EXPECT_DOUBLE_EQ(week["median_seconds_to_pull_request"].get<double>(), 5400);
  EXPECT_EQ(week["turns"], 8);
  EXPECT_EQ(week["tokens"], 23'500);
  EXPECT_NEAR(week["cost_usd"].get<double>(), 0.9, 1e-9);
  EXPECT_EQ(week["person_asks"], 1);
  EXPECT_EQ(week["would_accept"], 7);
  EXPECT_EQ(week["verdicts"], 4);
  EXPECT_EQ(week["words"],
            "This week: 5 Tickets \u2014 1 merged, 1 closed unmerged, 1 answered, 1 stopped; median time to "
            "acknowledgement 35 s, to PR 1.5 h; 8 turns, 24k tokens, $0.90; 1 question to a person; "
            "7 would-have-acted, 4 verdicts given.");

  // An empty week is one line, its medians null.
  const json empty = panel::JudgementJson(panel::JudgementFacts{}, JudgementPolicy(), "", "")["week"];
  EXPECT_EQ(empty["tickets"], 0);
  EXPECT_TRUE(empty["median_seconds_to_acknowledgement"].is_null());
  EXPECT_TRUE(empty["median_seconds_to_pull_request"].is_null());
  EXPECT_EQ(empty["words"], "Nothing happened this week: no Tickets, nothing observe mode would have done, no verdicts.");
  facts.week = {};
  EXPECT_EQ(panel::JudgementJson(facts, JudgementPolicy(), "", "")["week"]["words"],
            "This week: no Tickets; 7 would-have-acted, 4 verdicts given.");

  EXPECT_EQ(panel::DurationWords(40), "40 s");
  EXPECT_EQ(panel::DurationWords(12 * 60), "12 min");
  EXPECT_EQ(panel::DurationWords(7200), "2 h");
  EXPECT_EQ(panel::DurationWords(30 * 3600), "30 h");
}

TEST(PanelJudgementJson, AProposalCardShowsTheEditForAPersonToMake) {
  ModeProposal promote;
  promote.rule = kJudgementChineseRule;
  promote.lower_bound = WilsonLowerBound(3, 3);
  promote.answers = 3;
  promote.diff = "--- a/policy.yaml\n+++ b/policy.yaml\n@@ -5,2 +5,3 @@\n   - name: 错别字\n+    mode: auto\n";
  promote.why = "its lower bound reached 0.2 over 3 answers";
  ModeProposal demote;
  demote.rule = "visual";
  demote.promote = false;
  demote.from = Mode::kAuto;
  demote.to = Mode::kObserve;
  demote.answers = 10;
  const std::vector<RulePrecision> rules = {JudgementRow(kJudgementChineseRule, 3, 0), JudgementRow("visual", 1, 9)};

  const json cards = panel::ModeProposalCardsJson({promote, demote}, rules, "/etc/superagent/policy.yaml");
  ASSERT_EQ(cards.size(), 2u);
  const json& c = cards[0];
  EXPECT_EQ(c["kind"], "mode_proposal");
  EXPECT_EQ(c["proposal"], "promote");
  EXPECT_EQ(c["rule"], kJudgementChineseRule);
  EXPECT_EQ(c["from"], "observe");
  EXPECT_EQ(c["to"], "auto");
  EXPECT_EQ(c["yes"], 3);
  EXPECT_EQ(c["answers"], 3);
  EXPECT_EQ(c["diff"], promote.diff);
  EXPECT_EQ(c["file"], "/etc/superagent/policy.yaml");
  EXPECT_EQ(c["held"], false);
  EXPECT_EQ(c["precision_words"], "precision 100 % (at least 44 % with 95 % confidence) over 3 answers");
  EXPECT_EQ(c["why"], promote.why);
  EXPECT_EQ(c["what"], std::string("The rule ") + kJudgementChineseRule + " has earned auto mode.");
  EXPECT_EQ(c["fix"], "Edit policy.yaml yourself; the daemon never edits it. The change to /etc/superagent/policy.yaml "
                      "is the diff above; the daemon reloads the file when it is saved.");
  EXPECT_EQ(cards[1]["proposal"], "demote");
  EXPECT_EQ(cards[1]["held"], true);
  EXPECT_EQ(cards[1]["what"],
            "The rule visual has lost auto mode; its new Tickets are held for a person until the edit is made.");

  // The embedded defaults in force: no file and no diff (the proposal's why says what to do).
  const json embedded = panel::ModeProposalCardsJson({demote}, rules, "");
  EXPECT_TRUE(embedded[0]["file"].is_null());
  EXPECT_EQ(embedded[0]["fix"], "Edit policy.yaml yourself; the daemon never edits it.");
}

// The panel over a real store: would_accept Decisions the real Eval recorded under the judgement
// policy, verdicts through the Engine and the panel.
class PanelJudgementTest : public PanelServerTest {
 protected:
  void SetUp() override {
    PanelServerTest::SetUp();
    policy_path_ = (dir_ / "policy.yaml").string();
    std::ofstream(policy_path_) << JudgementPolicyYaml();
    Open(JudgementPolicy());
  }
  void StartWithPolicyFile() {
    StartServer([this](panel::PanelContext& ctx) { ctx.policy_file = policy_path_; });
  }
  // An inferred message from alice the assessment would accept, matching `rule` alone.
  std::int64_t WouldAcceptUnder(const std::string& rule, const std::string& text) {
    const int issue = next_issue_++;
    clock_.Advance(60'000);
    Receive(Comment("gh:comment:judged-" + std::to_string(issue), "alice", false, text, issue));
    Assessment a = ScriptedAssessor::Accept(true, text);
    a.rules.clear();
    const Policy policy = engine_->CurrentPolicy();  // EnabledRules points into it
    for (const Rule* r : policy.EnabledRules()) a.rules.push_back({r->name, r->name == rule, "test"});
    assessor_.answers.push_back(a);
    EXPECT_EQ(Drain(), 1);
    auto decisions = views_->Decisions("github:acme/widgets:issue:" + std::to_string(issue));
    EXPECT_TRUE(decisions.ok());
    if (decisions.ok())
      for (const Decision& d : *decisions)
        if (d.would_accept) return d.id;
    ADD_FAILURE() << "no would_accept for " << text;
    return 0;
  }
  json Judgement() { return GetJson("/api/judgement"); }

  std::string policy_path_;
  int next_issue_ = 300;
};

TEST_F(PanelJudgementTest, TheRulesRowCountsVerdictsAndNeedsYouProposesTheEditAtPromoteAfter) {
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(WouldAcceptUnder(kJudgementChineseRule, "文档里有错别字 " + std::to_string(i)));
  WouldAcceptUnder(kJudgementMarkupRule, "make it <b>bold</b>");
  StartWithPolicyFile();
  ASSERT_TRUE(engine_->RecordVerdict(ids[0], superagent::Verdict::kYes, "Tess", "panel").ok());
  ASSERT_TRUE(engine_->RecordVerdict(ids[1], superagent::Verdict::kYes, "Tess", "panel").ok());

  json j = Judgement();
  EXPECT_EQ(j["window_days"], 14);
  EXPECT_EQ(j["since"], clock_.NowMs() - 14 * kJudgementDayMs);
  const json* zh = JudgementFind(j["rules"], kJudgementChineseRule);
  ASSERT_NE(zh, nullptr) << j.dump();
  EXPECT_EQ((*zh)["mode"], "observe");
  EXPECT_EQ((*zh)["would_accept"], 3);
  EXPECT_EQ((*zh)["yes"], 2);
  EXPECT_EQ((*zh)["no"], 0);
  EXPECT_EQ((*zh)["unanswered"], 1);
  EXPECT_EQ((*zh)["missed"], 0);
  EXPECT_DOUBLE_EQ((*zh)["precision"].get<double>(), 1.0);
  EXPECT_NEAR((*zh)["lower_bound"].get<double>(), 0.342, 0.001);
  EXPECT_EQ((*zh)["words"], "precision 100 % (at least 34 % with 95 % confidence) over 2 answers");
  const json* markup = JudgementFind(j["rules"], kJudgementMarkupRule);
  ASSERT_NE(markup, nullptr) << j.dump();
  EXPECT_EQ((*markup)["would_accept"], 1);
  EXPECT_EQ((*markup)["unanswered"], 1);
  EXPECT_TRUE(j["proposals"].empty()) << j["proposals"].dump();
  EXPECT_EQ(j["week"]["tickets"], 0);
  EXPECT_EQ(j["week"]["would_accept"], 4);
  EXPECT_EQ(j["week"]["verdicts"], 2);
  json needs = GetJson("/api/needs");
  EXPECT_TRUE(needs["mode_proposals"].empty());
  // The markup rule's verdict card alone: 错别字's one waiting message was answered just now.
  EXPECT_EQ(needs["count"], 1) << needs.dump();

  // The third yes, given in the panel: promote_after answers, and the edit is proposed.
  auto r = Post("/api/decisions/" + std::to_string(ids[2]) + "/verdict", {{"verdict", "yes"}, {"name", "Tess"}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  j = Judgement();
  ASSERT_EQ(j["proposals"].size(), 1u) << j.dump();
  const json& p = j["proposals"][0];
  EXPECT_EQ(p["rule"], kJudgementChineseRule);
  EXPECT_EQ(p["kind"], "promote");
  EXPECT_EQ(p["from"], "observe");
  EXPECT_EQ(p["to"], "auto");
  EXPECT_EQ(p["answers"], 3);
  EXPECT_EQ(p["file"], policy_path_);
  EXPECT_THAT(p["diff"].get<std::string>(), HasSubstr("auto"));
  EXPECT_EQ(j["week"]["verdicts"], 3);
  needs = GetJson("/api/needs");
  ASSERT_EQ(needs["mode_proposals"].size(), 1u) << needs.dump();
  const json& card = needs["mode_proposals"][0];
  EXPECT_EQ(card["kind"], "mode_proposal");
  EXPECT_EQ(card["rule"], kJudgementChineseRule);
  EXPECT_EQ(card["yes"], 3);
  EXPECT_EQ(card["diff"], p["diff"]);
  EXPECT_EQ(card["file"], policy_path_);
  EXPECT_THAT(card["fix"].get<std::string>(), ::testing::StartsWith("Edit policy.yaml yourself; the daemon never edits it."));
  EXPECT_EQ(needs["count"], 2) << "the markup rule's verdict card and the proposal";
  // The daemon proposes; the file is as the person wrote it.
  std::ifstream in(policy_path_);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), JudgementPolicyYaml());

  // Without a policy file (the embedded defaults in force) there is nothing to diff.
  StopServer();
  StartServer();
  const json bare = Judgement()["proposals"];
  ASSERT_EQ(bare.size(), 1u) << bare.dump();
  EXPECT_EQ(bare[0]["diff"], "");
  EXPECT_TRUE(bare[0]["file"].is_null());
  EXPECT_THAT(bare[0]["why"].get<std::string>(), HasSubstr("embedded default"));
  EXPECT_EQ(GetJson("/api/needs")["mode_proposals"][0]["fix"], "Edit policy.yaml yourself; the daemon never edits it.");
}

TEST_F(PanelJudgementTest, TheWeekCountsTicketsAndTheRouteNeedsThePanelToken) {
  const TicketId ticket = AcceptedTicket("gh:comment:judgement-week", 290);
  ASSERT_NE(ticket, 0);
  StartWithPolicyFile();
  const json j = Judgement();
  EXPECT_EQ(j["week"]["tickets"], 1) << j.dump();
  EXPECT_EQ(j["week"]["since"], clock_.NowMs() - panel::kJudgementWeekMs);
  EXPECT_THAT(j["week"]["words"].get<std::string>(), ::testing::StartsWith("This week: 1 Ticket \u2014 "));
  for (const json& row : j["rules"]) {
    if (row.value("kind", "") == "explicit") {
      EXPECT_EQ(row["mode"], "explicit") << row.dump();
    }
  }

  httplib::Client stranger("127.0.0.1", port_);
  auto refused = stranger.Get("/api/judgement");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 401);
  EXPECT_EQ(refused->body.find("week"), std::string::npos);
}

// The page: the Judgement table (a rule name that looks like markup shown as text), the weekly
// card, and the proposal card with its diff and no button; in Chromium against this panel.
TEST_F(PanelJudgementTest, TheJudgementBlockWeekCardAndProposalRenderInChromium) {
  clock_.Set(SystemClock()->NowMs() - 3'600'000);
  for (int i = 0; i < 3; ++i) {
    const std::int64_t id = WouldAcceptUnder(kJudgementMarkupRule, "make the title <b>bold</b> " + std::to_string(i));
    ASSERT_TRUE(engine_->RecordVerdict(id, superagent::Verdict::kYes, "Tess", "panel").ok());
  }
  WouldAcceptUnder(kJudgementChineseRule, "文档里有错别字");
  ASSERT_NE(AcceptedTicket("gh:comment:judgement-page", 291), 0);
  StartWithPolicyFile();

  RunResult r = RunBrowserScript("judgement.test.mjs", {{"POLICY_FILE", policy_path_}});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(Commands().size(), 0u) << "the page edits nothing";
}

}  // namespace
}  // namespace superagent::testing

// Issue 38, "Judgement you can measure", accepted end to end: `superagent serve` as a team runs it —
// a real process, the loopback GitHub and model, the panel's API, in-thread verbs and
// `superagent policy report --json` — with every expected figure worked out here from the
// scenario's known truth, never read back from the code under test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "daemon_process.h"
#include "fake_chat_server.h"
#include "fake_github_server.h"
#include "run_binary.h"
#include "serve_fixture.h"

namespace superagent::testing {
namespace {

using nlohmann::json;

// The lower bound of the 95 % Wilson score interval for `yes` of `n`, in the textbook's
// (2np + z² − z·√(z² + 4np(1−p))) / (2(n + z²)) form: written out here so that the figure the
// daemon reports is checked against arithmetic, not against itself.
double JudgementServeWilson(int yes, int n) {
  if (n == 0) return 0;
  const double z = 1.959963984540054;  // the 97.5 % quantile of the standard normal
  const double p = static_cast<double>(yes) / n;
  const double low = (2 * n * p + z * z - z * std::sqrt(z * z + 4 * n * p * (1 - p))) / (2 * (n + z * z));
  return std::max(0.0, low);
}

int JudgementServeCount(const std::string& log, const std::string& needle) {
  int n = 0;
  for (auto at = log.find(needle); at != std::string::npos; at = log.find(needle, at + needle.size())) ++n;
  return n;
}

std::string JudgementServeFileBytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class JudgementServeTest : public ServeTest {
 protected:
  // The panel as the page calls it: the panel token; commands add the origin and CSRF token.
  httplib::Client PanelClient() {
    httplib::Client http("127.0.0.1", port_);
    http.set_bearer_token_auth(PanelTokenIn((dir_ / "data").string()));
    return http;
  }
  httplib::Headers PanelCommandHeaders(httplib::Client& http) {
    auto session = http.Get("/api/session");
    if (!session || session->status != 200) return {};
    return {{"X-CSRF-Token", json::parse(session->body)["csrf_token"].get<std::string>()},
            {"Origin", "http://127.0.0.1:" + std::to_string(port_)}};
  }
  json PanelGet(const std::string& route) {
    httplib::Client http = PanelClient();
    auto r = http.Get(route.c_str());
    if (!r || r->status != 200) {
      ADD_FAILURE() << route << ": " << (r ? std::to_string(r->status) + " " + r->body : "no answer");
      return json();
    }
    return json::parse(r->body, nullptr, false);
  }
  // POST /api/decisions/<id>/verdict as the observe page sends it; the HTTP status.
  int PanelVerdict(std::int64_t decision, const std::string& verdict, std::string* body = nullptr) {
    httplib::Client http = PanelClient();
    auto r = http.Post(("/api/decisions/" + std::to_string(decision) + "/verdict").c_str(), PanelCommandHeaders(http),
                       json{{"verdict", verdict}, {"name", "Tess"}}.dump(), "application/json");
    if (body != nullptr && r) *body = r->body;
    return r ? r->status : 0;
  }
  int PanelStopTicket(int ticket) {
    httplib::Client http = PanelClient();
    auto r = http.Post(("/api/tickets/" + std::to_string(ticket) + "/stop").c_str(), PanelCommandHeaders(http),
                       json{{"confirm", true}, {"name", "Tess"}}.dump(), "application/json");
    return r ? r->status : 0;
  }

  // An issue `number` in the fake, so what the daemon posts there lands.
  static void AddIssue(FakeGitHub& github, int number) {
    json issue = WebhookExample("issue_comment", "created")["issue"];
    issue["number"] = number;
    auto lock = github.Lock();
    github.issues[number] = issue;
  }
  // `login`'s comment on issue `number`, delivered by a signed webhook as GitHub sends it.
  int DeliverComment(FakeGitHub& github, int number, const std::string& login, const std::string& text) {
    const std::int64_t id = 700'000 + (++comments_sent_);
    json payload = WebhookExample("issue_comment", "created");
    payload["issue"]["number"] = number;
    payload["comment"] = github.MakeComment(id, number, login, text, SystemClock()->NowMs());
    return DeliverEvent("issue_comment", "judgement-" + std::to_string(id), payload);
  }
  // The pull request `number` closed on GitHub (merged or not) and its webhook delivered.
  int DeliverPullClosed(FakeGitHub& github, int number, bool merged) {
    json closed = WebhookExample("pull_request", "closed");
    std::string branch;
    {
      auto lock = github.Lock();
      json& pr = github.pulls.at(number);
      branch = pr["head"]["ref"];
      pr["state"] = "closed";
      pr["merged"] = merged;
      pr["closed_at"] = github.Iso(SystemClock()->NowMs());
    }
    closed["number"] = number;
    closed["pull_request"]["number"] = number;
    closed["pull_request"]["state"] = "closed";
    closed["pull_request"]["merged"] = merged;
    closed["pull_request"]["merged_by"] = merged ? closed["sender"] : json(nullptr);
    closed["pull_request"]["closed_at"] = github.Iso(SystemClock()->NowMs());
    closed["pull_request"]["head"]["ref"] = branch;
    return DeliverEvent("pull_request", (merged ? "merge-" : "close-") + std::to_string(number), closed);
  }

  // `superagent policy report --json` against the running daemon's database.
  json Report() {
    RunResult r = RunBinary({"policy", "report", "--config", Config(), "--since", "36500d", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    json j = json::parse(r.out, nullptr, false);
    EXPECT_TRUE(j.is_object()) << r.out << r.err;
    return j;
  }
  static json RuleRow(const json& report, const std::string& rule) {
    if (report.is_object() && report.contains("rules"))
      for (const json& r : report["rules"])
        if (r.value("rule", "") == rule) return r;
    return json();
  }

  // Every *.yaml / *.yml under the test's directory, with its bytes.
  std::map<std::string, std::string> YamlFiles() const {
    std::map<std::string, std::string> out;
    std::error_code ec;
    for (std::filesystem::recursive_directory_iterator it(dir_, std::filesystem::directory_options::skip_permission_denied, ec), end;
         !ec && it != end; it.increment(ec)) {
      const std::filesystem::directory_entry& e = *it;
      std::error_code type_ec;
      if (!e.is_regular_file(type_ec)) continue;
      const std::string ext = e.path().extension().string();
      if (ext == ".yaml" || ext == ".yml")
        out[std::filesystem::relative(e.path(), dir_).string()] = JudgementServeFileBytes(e.path());
    }
    return out;
  }

  int comments_sent_ = 0;
};

// What a rule's row of the report must say: counts and both figures.
struct ExpectedRule {
  int would_accept = 0, accepted = 0, yes = 0, no = 0, unknown = 0, unanswered = 0, missed = 0;
};

void ExpectRuleRow(const json& row, const std::string& rule, const ExpectedRule& e) {
  SCOPED_TRACE("rule " + rule);
  ASSERT_TRUE(row.is_object()) << "the report has no row for " << rule;
  EXPECT_EQ(row["kind"], "rule");
  EXPECT_EQ(row["would_accept"], e.would_accept);
  EXPECT_EQ(row["accepted"], e.accepted);
  EXPECT_EQ(row["yes"], e.yes);
  EXPECT_EQ(row["no"], e.no);
  EXPECT_EQ(row["unknown"], e.unknown);
  EXPECT_EQ(row["unanswered"], e.unanswered);
  EXPECT_EQ(row["missed"], e.missed);
  const int answers = e.yes + e.no;
  EXPECT_DOUBLE_EQ(row["precision"].get<double>(), answers == 0 ? 0.0 : static_cast<double>(e.yes) / answers);
  EXPECT_NEAR(row["lower_bound"].get<double>(), JudgementServeWilson(e.yes, answers), 1e-9);
}

// ---------------------------------------------------------------------------------------------
// Observe: forty inferred messages with known truth.

enum class JudgedKind { kWording, kDocs, kBoth, kIgnored };  // which rules the model says matched
enum class JudgedBy { kNone, kPanel, kThread };               // how the verdict is given

struct JudgedMessage {
  int issue = 0;
  JudgedKind kind = JudgedKind::kIgnored;
  bool request = false;         // the truth: was it a request for work?
  std::string verdict;          // "yes" | "no" | "unknown" | "" (none given)
  JudgedBy by = JudgedBy::kNone;
  std::string verb;             // the in-thread words, when by thread
  std::string text;
  std::int64_t decision = 0;    // its would_accept Decision (from /api/observe)
};

const char kDocsRule[] = "文档";

constexpr char kObservePolicy[] = R"(# The team's policy: everything in observe while the rules earn their keep.
mode: observe
sources:
  github:
    people: [Codertocat, lin-wei]
    scopes:
      comments: { receive_all: true, allowed_unaddressed: inferred }
judgement:
  promote_at: 0.6
  promote_after: 24
  demote_at: 0.3
  demote_after: 10
  window_days: 30
rules:
  - name: wording
    when: Fix wording, spelling and typos in prose.
    instructions: Keep the change small.
  - name: 文档
    when: 更新文档里过时的说明。
    instructions: 只改文档，不动代码。
)";

TEST_F(JudgementServeTest, FortyInferredMessagesInObserveGiveExactCountsAndTheProposalComesAtPromoteAfter) {
  FakeGitHub github(SystemClock());
  FakeChatServer model("sk-THISISAMODELKEY0123456789");
  Write("policy.yaml", kObservePolicy);
  Write("superagent.yaml", "data_dir: data\npolicy_file: policy.yaml\npanel:\n  listen: 127.0.0.1:" +
                               std::to_string(port_) + "\ngithub:\n  api_url: " + github.api_url() + "\n  repo: " +
                               github.repo + "\nllm:\n  base_url: " + model.base_url() +
                               "\n  api_key_env: DEEPSEEK_API_KEY\n  assessment_model: deepseek-chat\n  max_retries: 0\n");
  const std::filesystem::path policy_path = dir_ / "policy.yaml";
  const std::string policy_bytes = JudgementServeFileBytes(policy_path);
  const auto policy_mtime = std::filesystem::last_write_time(policy_path);
  const std::map<std::string, std::string> yaml_before = YamlFiles();

  // The scenario. 26 messages the model says are wording fixes, 6 documentation fixes, 2 both,
  // 6 it declines; the truth and the verdict each one gets.
  std::vector<JudgedMessage> messages;
  auto add = [&](JudgedKind kind, bool request, const std::string& verdict, JudgedBy by, const std::string& verb,
                 const std::string& text) {
    JudgedMessage m;
    m.kind = kind;
    m.request = request;
    m.verdict = verdict;
    m.by = by;
    m.verb = verb;
    m.text = text;
    messages.push_back(m);
  };
  // W1..W19: requests; W19's "yes" is the last verdict of all (below).
  add(JudgedKind::kWording, true, "yes", JudgedBy::kThread, "@superagent-bot was a request",
      "The install guide says 'teh' twice in its first paragraph.");
  add(JudgedKind::kWording, true, "yes", JudgedBy::kThread, "@superagent-bot 是请求",
      "README 的标题里 'recieve' 拼错了，应该是 'receive'。");
  for (int i = 3; i <= 18; ++i)
    add(JudgedKind::kWording, true, "yes", JudgedBy::kPanel, "",
        "Typo in docs/page-" + std::to_string(i) + ".md: 'seperate' should be 'separate'.");
  add(JudgedKind::kWording, true, "yes", JudgedBy::kThread, "@superagent-bot 是请求。",
      "CHANGELOG 里 'accross' 应该是 'across'，顺手改一下就好。");
  // W20..W23: not requests the model accepted anyway.
  add(JudgedKind::kWording, false, "no", JudgedBy::kThread, "@superagent-bot not a request",
      "I keep writing 'teh' in my own notes, funny how that happens.");
  add(JudgedKind::kWording, false, "no", JudgedBy::kThread, "@superagent-bot 不是请求",
      "这个拼写问题我们周会上讨论一下，先别动。");
  add(JudgedKind::kWording, false, "no", JudgedBy::kPanel, "", "Is it 'colour' or 'color' in our style guide? Just curious.");
  add(JudgedKind::kWording, false, "unknown", JudgedBy::kPanel, "", "The wording in the footer could be nicer someday.");
  // W24..W26: requests nobody answered for.
  for (int i = 24; i <= 26; ++i)
    add(JudgedKind::kWording, true, "", JudgedBy::kNone, "", "Please fix the typo 'occured' in FAQ entry " + std::to_string(i) + ".");
  // D1..D6: the documentation rule.
  add(JudgedKind::kDocs, true, "yes", JudgedBy::kPanel, "", "部署文档里的端口还写着 8080，现在已经是 9090 了。");
  add(JudgedKind::kDocs, true, "yes", JudgedBy::kThread, "@superagent-bot 是请求", "升级指南还在说要手动迁移数据库，这一步已经自动了。");
  add(JudgedKind::kDocs, false, "no", JudgedBy::kThread, "@superagent-bot 不是请求", "文档这部分我下周自己再看看。");
  add(JudgedKind::kDocs, false, "no", JudgedBy::kPanel, "", "Docs for v1 are archived, which is fine by me.");
  add(JudgedKind::kDocs, true, "", JudgedBy::kNone, "", "API 文档里 /v1/users 的返回字段已经改名了。");
  add(JudgedKind::kDocs, false, "", JudgedBy::kNone, "", "我觉得文档的配色挺好看的。");
  // B1, B2: both rules matched.
  add(JudgedKind::kBoth, true, "yes", JudgedBy::kPanel, "", "The setup doc says 'recieve' and still names the old flag --legacy.");
  add(JudgedKind::kBoth, false, "no", JudgedBy::kPanel, "", "Somebody should rewrite all the docs one day, typos and all.");
  // I1..I6: declined by the model; the last one was a request it missed. Nothing to judge there.
  for (int i = 1; i <= 5; ++i)
    add(JudgedKind::kIgnored, false, "", JudgedBy::kNone, "", "Lunch at noon on Friday? (" + std::to_string(i) + ")");
  add(JudgedKind::kIgnored, true, "", JudgedBy::kNone, "", "The README's second heading misspells 'environment'.");
  ASSERT_EQ(messages.size(), 40u);
  // The people answer truly; the model accepted eight messages that were not requests.
  int wrong_accepts = 0;
  for (const JudgedMessage& m : messages) {
    if (m.verdict == "yes") {
      ASSERT_TRUE(m.request) << m.text;
    }
    if (m.verdict == "no") {
      ASSERT_FALSE(m.request) << m.text;
    }
    if (m.kind != JudgedKind::kIgnored && !m.request) ++wrong_accepts;
  }
  ASSERT_EQ(wrong_accepts, 8);
  // The two verdicts that end it: W23's "don't know", then W19's yes.
  const std::size_t unknown_last = 22, yes_last = 18;
  ASSERT_EQ(messages[unknown_last].verdict, "unknown");
  ASSERT_EQ(messages[yes_last].verb, "@superagent-bot 是请求。");

  // Each message on its own issue (its own Thread, Eval and Decision), interleaved as they would
  // arrive; the model's answer for each is keyed by a marker in its text.
  const int order[] = {3, 27, 36, 0, 19, 31, 11, 26, 38, 5, 20, 33, 8, 28, 1, 34, 14, 21, 29, 39,
                       6, 23, 10, 30, 37, 2, 16, 22, 32, 12, 24, 35, 7, 17, 25, 4, 13, 9, 15, 18};
  std::set<int> seen(std::begin(order), std::end(order));
  ASSERT_EQ(seen.size(), 40u);
  for (std::size_t i = 0; i < messages.size(); ++i) {
    JudgedMessage& m = messages[i];
    m.issue = 500 + static_cast<int>(i);
    const std::string marker = std::string(i < 10 ? "[q0" : "[q") + std::to_string(i) + "]";
    m.text += " " + marker;
    AddIssue(github, m.issue);
    const bool accept = m.kind != JudgedKind::kIgnored;
    std::vector<std::pair<std::string, bool>> rules = {
        {"wording", m.kind == JudgedKind::kWording || m.kind == JudgedKind::kBoth},
        {kDocsRule, m.kind == JudgedKind::kDocs || m.kind == JudgedKind::kBoth}};
    model.PushFor(marker, model.Decide(FakeChatServer::DecideArgs(accept ? "accept" : "ignore", rules, m.text,
                                                                    accept ? "I can fix that." : "")));
  }

  auto env = GitHubEnv();
  env.emplace_back("DEEPSEEK_API_KEY", model.api_key());
  DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()}, env);
  ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
  ASSERT_TRUE(d.WaitForCount("github identity login=superagent-bot", 1)) << d.log();
  for (int i : order) ASSERT_EQ(DeliverComment(github, messages[i].issue, "Codertocat", messages[i].text), 200);
  int decisions = 40;
  ASSERT_TRUE(d.WaitForCount("decision eval=", decisions, 40'000)) << d.log();
  EXPECT_EQ(model.pending_replies(), 0u) << "every message was assessed once";
  ASSERT_TRUE(model.problems().empty()) << model.problems().front();

  // Observe did nothing but record: 34 would_accepts, no Ticket, nothing said on GitHub.
  const json observed = PanelGet("/api/observe?limit=200");
  ASSERT_TRUE(observed.contains("decisions")) << observed.dump();
  std::map<std::string, std::int64_t> by_thread;
  for (const json& dj : observed["decisions"]) by_thread[dj["thread"].get<std::string>()] = dj["id"].get<std::int64_t>();
  int would = 0;
  for (JudgedMessage& m : messages) {
    auto it = by_thread.find("github:codertocat/hello-world:issue:" + std::to_string(m.issue));
    if (m.kind == JudgedKind::kIgnored) {
      EXPECT_EQ(it, by_thread.end()) << "a declined message was recorded as would_accept: " << m.text;
      continue;
    }
    ASSERT_NE(it, by_thread.end()) << "no would_accept for " << m.text << "\n" << observed.dump(1);
    m.decision = it->second;
    ++would;
  }
  EXPECT_EQ(would, 34);
  EXPECT_EQ(by_thread.size(), 34u);
  EXPECT_EQ(PanelGet("/api/tickets")["tickets"].size(), 0u);
  EXPECT_EQ(github.Count("POST", github.repo_path() + "/issues/"), 0) << "observe mode said something";

  // The expected figures, counted from the scenario's table.
  auto expected = [&](const std::string& rule, const std::set<std::size_t>& given) {
    ExpectedRule e;
    for (std::size_t i = 0; i < messages.size(); ++i) {
      const JudgedMessage& m = messages[i];
      const bool matches = rule == "wording" ? (m.kind == JudgedKind::kWording || m.kind == JudgedKind::kBoth)
                                             : (m.kind == JudgedKind::kDocs || m.kind == JudgedKind::kBoth);
      if (!matches) continue;
      ++e.would_accept;
      if (!given.count(i) || m.verdict.empty()) ++e.unanswered;
      else if (m.verdict == "yes") ++e.yes;
      else if (m.verdict == "no") ++e.no;
      else ++e.unknown;
    }
    return e;
  };
  auto no_proposal_anywhere = [&](const std::string& when) {
    SCOPED_TRACE(when);
    const json report = Report();
    EXPECT_EQ(report["proposals"].size(), 0u) << report.dump(1);
    const json judgement = PanelGet("/api/judgement");
    EXPECT_EQ(judgement["proposals"].size(), 0u) << judgement.dump(1);
    const json needs = PanelGet("/api/needs");
    EXPECT_EQ(needs["mode_proposals"].size(), 0u) << needs.dump(1);
  };
  {
    const json report = Report();
    ASSERT_EQ(report["rules"].size(), 2u) << report.dump(1);
    ExpectRuleRow(RuleRow(report, "wording"), "wording", expected("wording", {}));
    ExpectRuleRow(RuleRow(report, kDocsRule), kDocsRule, expected(kDocsRule, {}));
    EXPECT_EQ(report["missed"], 0);
  }
  no_proposal_anywhere("before any verdict");

  // Every verdict but the last two: by the panel, and in the discussions by a person on the
  // allow-list, in English and in Chinese.
  std::set<std::size_t> given;
  int verdicts = 0, verbs = 0;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const JudgedMessage& m = messages[i];
    if (m.verdict.empty() || i == unknown_last || i == yes_last) continue;
    if (m.by == JudgedBy::kPanel) {
      std::string body;
      ASSERT_EQ(PanelVerdict(m.decision, m.verdict, &body), 200) << body;
    } else {
      ASSERT_EQ(DeliverComment(github, m.issue, "lin-wei", m.verb), 200);
      ++verbs;
      ASSERT_TRUE(d.WaitForCount("decision eval=", ++decisions)) << d.log();
    }
    given.insert(i);
    ASSERT_TRUE(d.WaitForCount("verdict recorded decision=", ++verdicts)) << d.log();
  }
  EXPECT_NE(d.log().find("verdict recorded decision=" + std::to_string(messages[20].decision) +
                         " thread=github:codertocat/hello-world:issue:520 verdict=no by=\"lin-wei\" via=thread"),
            std::string::npos)
      << d.log();

  // A verdict is final, and a verb with nothing to judge counts nowhere: a second answer from
  // the panel is refused, "was a request" on an answered discussion and on one the model
  // declined changes nothing.
  {
    std::string body;
    EXPECT_EQ(PanelVerdict(messages[2].decision, "no", &body), 409) << body;
    ASSERT_EQ(DeliverComment(github, messages[19].issue, "Codertocat", "@superagent-bot was a request"), 200);
    ASSERT_EQ(DeliverComment(github, messages[39].issue, "lin-wei", "@superagent-bot was a request"), 200);
    verbs += 2;
    decisions += 2;
    ASSERT_TRUE(d.WaitForCount("decision eval=", decisions)) << d.log();
  }
  EXPECT_EQ(JudgementServeCount(d.log(), "verdict recorded decision="), verdicts) << d.log();

  // 23 answers on wording (19 yes, 4 no): its bound is over promote_at already, but promote_after
  // is 24: nothing is proposed.
  {
    const json report = Report();
    const ExpectedRule w = expected("wording", given);
    ASSERT_EQ(w.yes + w.no, 23);
    ASSERT_GE(JudgementServeWilson(w.yes, w.yes + w.no), 0.6) << "the scenario must cross by the count alone";
    ExpectRuleRow(RuleRow(report, "wording"), "wording", w);
    ExpectRuleRow(RuleRow(report, kDocsRule), kDocsRule, expected(kDocsRule, given));
  }
  no_proposal_anywhere("after 23 answers");

  // "Don't know" is an answer that counts neither way.
  {
    std::string body;
    ASSERT_EQ(PanelVerdict(messages[unknown_last].decision, "unknown", &body), 200) << body;
    given.insert(unknown_last);
    ASSERT_TRUE(d.WaitForCount("verdict recorded decision=", ++verdicts)) << d.log();
    ExpectRuleRow(RuleRow(Report(), "wording"), "wording", expected("wording", given));
  }
  no_proposal_anywhere("after a \"don't know\"");

  // The 24th yes/no answer, in the discussion: the promotion is proposed, once, as a diff that
  // gives the rule mode: auto.
  ASSERT_EQ(DeliverComment(github, messages[yes_last].issue, "lin-wei", messages[yes_last].verb), 200);
  ++verbs;
  given.insert(yes_last);
  ASSERT_TRUE(d.WaitForCount("decision eval=", ++decisions)) << d.log();
  ASSERT_TRUE(d.WaitForCount("verdict recorded decision=", ++verdicts)) << d.log();

  const ExpectedRule wording = expected("wording", given), docs = expected(kDocsRule, given);
  // The figures the scenario was built for, as a person would count them by hand.
  EXPECT_EQ(wording.would_accept, 28);
  EXPECT_EQ(wording.yes, 20);
  EXPECT_EQ(wording.no, 4);
  EXPECT_EQ(wording.unknown, 1);
  EXPECT_EQ(wording.unanswered, 3);
  EXPECT_EQ(docs.would_accept, 8);
  EXPECT_EQ(docs.yes, 3);
  EXPECT_EQ(docs.no, 3);
  EXPECT_EQ(docs.unanswered, 2);
  EXPECT_NEAR(JudgementServeWilson(20, 24), 0.6415, 1e-4);  // the textbook's figure
  const json report = Report();
  ASSERT_EQ(report["rules"].size(), 2u) << report.dump(1);
  ExpectRuleRow(RuleRow(report, "wording"), "wording", wording);
  ExpectRuleRow(RuleRow(report, kDocsRule), kDocsRule, docs);
  EXPECT_EQ(report["missed"], 0) << "the declined request was never asked for explicitly";
  ASSERT_EQ(report["proposals"].size(), 1u) << report.dump(1);
  const json& p = report["proposals"][0];
  EXPECT_EQ(p["rule"], "wording");
  EXPECT_EQ(p["kind"], "promote");
  EXPECT_EQ(p["from"], "observe");
  EXPECT_EQ(p["to"], "auto");
  EXPECT_EQ(p["answers"], 24);
  EXPECT_NEAR(p["lower_bound"].get<double>(), JudgementServeWilson(20, 24), 1e-9);
  const std::string diff = p["diff"];
  EXPECT_NE(diff.find("   - name: wording\n+    mode: auto\n     when: Fix wording"), std::string::npos) << diff;
  int added = 0, removed = 0;
  {
    std::istringstream lines(diff);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("+++", 0) != 0 && line.rfind("+", 0) == 0) ++added;
      if (line.rfind("---", 0) != 0 && line.rfind("-", 0) == 0) ++removed;
    }
  }
  EXPECT_EQ(added, 1) << diff;
  EXPECT_EQ(removed, 0) << diff;

  const json judgement = PanelGet("/api/judgement");
  ASSERT_EQ(judgement["proposals"].size(), 1u) << judgement.dump(1);
  EXPECT_EQ(judgement["proposals"][0]["rule"], "wording");
  EXPECT_EQ(judgement["proposals"][0]["kind"], "promote");
  EXPECT_EQ(judgement["proposals"][0]["diff"], diff);
  for (const json& row : judgement["rules"]) {
    EXPECT_EQ(row["mode"], "observe") << row.dump();
    if (row["rule"] == "wording") {
      EXPECT_EQ(row["yes"], 20);
      EXPECT_EQ(row["no"], 4);
    }
  }
  const json needs = PanelGet("/api/needs");
  ASSERT_EQ(needs["mode_proposals"].size(), 1u) << needs.dump(1);
  EXPECT_EQ(needs["mode_proposals"][0]["rule"], "wording");
  EXPECT_EQ(needs["mode_proposals"][0]["proposal"], "promote");
  EXPECT_EQ(needs["mode_proposals"][0]["diff"], diff);

  // Each verb got its one answer in its discussion, in the daemon's words.
  ASSERT_TRUE(d.WaitForCount("github message posted", verbs)) << d.log();
  std::map<std::int64_t, std::vector<std::string>> said;
  {
    auto lock = github.Lock();
    for (const json& c : github.comments) {
      const std::string url = c["issue_url"];
      said[std::stoll(url.substr(url.rfind('/') + 1))].push_back(c["body"]);
    }
  }
  // (A comment's words sit between the agent's disclosure line and its receipt marker.)
  auto only = [&](int issue) { return said[issue].size() == 1 ? said[issue][0] : "(" + std::to_string(said[issue].size()) + " messages)"; };
  auto says = [](const std::string& comment, const std::string& words) {
    return comment.find("\n\n" + words + "\n\n<!-- superagent-receipt:") != std::string::npos;
  };
  const std::string yes_noted = "Noted: that was a request. It counts for the rule that would have taken it.";
  const std::string no_noted = "Noted: not a request. It counts against the rule that would have taken it.";
  const std::string nothing = "Nothing here waits for a verdict: no rule did, or would have done, anything on this "
                              "thread that has not been judged.";
  EXPECT_TRUE(says(only(messages[0].issue), yes_noted)) << only(messages[0].issue);
  EXPECT_TRUE(says(only(messages[20].issue), no_noted)) << only(messages[20].issue);
  ASSERT_EQ(said[messages[19].issue].size(), 2u);
  EXPECT_TRUE(says(said[messages[19].issue][0], no_noted)) << said[messages[19].issue][0];
  EXPECT_TRUE(says(said[messages[19].issue][1], nothing)) << said[messages[19].issue][1];
  EXPECT_TRUE(says(only(messages[39].issue), nothing)) << only(messages[39].issue);
  EXPECT_TRUE(says(only(messages[yes_last].issue), yes_noted)) << only(messages[yes_last].issue);
  std::size_t answered = 0;
  for (const auto& [issue, list] : said) answered += list.size();
  EXPECT_EQ(answered, static_cast<std::size_t>(verbs)) << "one answer per verb, nothing else";

  d.Signal(SIGTERM);
  EXPECT_EQ(d.Wait(), 0) << d.log();
  EXPECT_TRUE(model.problems().empty()) << model.problems().front();

  // The daemon proposed; it wrote no policy: the file is as the team left it, and no other YAML
  // appeared anywhere under the config's directory.
  EXPECT_EQ(JudgementServeFileBytes(policy_path), policy_bytes);
  EXPECT_EQ(std::filesystem::last_write_time(policy_path), policy_mtime);
  EXPECT_EQ(YamlFiles(), yaml_before);
}

// ---------------------------------------------------------------------------------------------
// Auto: outcomes label themselves, and a rule that lost its precision holds its next Ticket.

constexpr char kAutoPolicy[] = R"(mode: observe
sources:
  github:
    people: [Codertocat]
    scopes:
      comments: { receive_all: true, allowed_unaddressed: inferred }
judgement:
  promote_at: 0.9
  promote_after: 30
  demote_at: 0.5
  demote_after: 3
  window_days: 30
rules:
  - name: wording
    mode: auto
    when: Fix wording, spelling and typos in prose.
    instructions: Keep the change small.
)";

TEST_F(JudgementServeTest, InAutoOutcomesCountAndADemotedRuleHoldsItsNextTicket) {
  FakeGitHub github(SystemClock());
  FakeChatServer model("sk-THISISAMODELKEY0123456789");
  // The team's command: a long look when asked for one (the Ticket a person stops), otherwise
  // the fix and a pull request.
  PrepareFixRepo(github,
                 "cat > task.json\n"
                 "if grep -q 'long-look' task.json; then sleep 120; fi\n"
                 "sed -i 's/teh typo/the typo/' README.md\n"
                 "echo '{\"stage\":\"ready\",\"summary\":\"Fixed the typo in README.\",\"question\":null,"
                 "\"pr\":{\"title\":\"Fix the typo\",\"body\":\"A typo.\"}}'\n",
                 "llm:\n  base_url: " + model.base_url() +
                     "\n  api_key_env: DEEPSEEK_API_KEY\n  assessment_model: deepseek-chat\n  max_retries: 0\n");
  Write("policy.yaml", kAutoPolicy);
  const std::filesystem::path policy_path = dir_ / "policy.yaml";
  const std::string policy_bytes = JudgementServeFileBytes(policy_path);
  const auto policy_mtime = std::filesystem::last_write_time(policy_path);
  const std::map<std::string, std::string> yaml_before = YamlFiles();

  const std::vector<std::string> texts = {
      "README's first line says 'teh typo'; somebody should take a long-look at the whole intro. [t1]",
      "README: 'teh typo' should read 'the typo'. [t2]",
      "The README still has 'teh typo' in its first line. [t3]",
      "README 第一行还是 'teh typo'，应该是 'the typo'。 [t4]"};
  for (std::size_t i = 0; i < texts.size(); ++i) {
    AddIssue(github, 401 + static_cast<int>(i));
    model.PushFor("[t" + std::to_string(i + 1) + "]",
                  model.Decide(FakeChatServer::DecideArgs("accept", {{"wording", true}}, texts[i],
                                                          "I'll fix the typo in the README.")));
  }
  auto env = GitHubEnv();
  env.emplace_back("DEEPSEEK_API_KEY", model.api_key());
  DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()}, env);
  ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
  ASSERT_TRUE(d.WaitForCount("github identity login=superagent-bot", 1)) << d.log();

  // Ticket 1: a person stops it in its first turn.
  ASSERT_EQ(DeliverComment(github, 401, "Codertocat", texts[0]), 200);
  // Its first turn has begun (the team's command is taking its long look) when Stop is pressed.
  ASSERT_TRUE(d.WaitForCount("assignment started id=", 1)) << d.log();
  ASSERT_NE(d.log().find(" ticket=1 executor=command"), std::string::npos) << d.log();
  ASSERT_EQ(PanelStopTicket(1), 200);
  ASSERT_TRUE(d.WaitForCount("ticket stopped id=1 ", 1)) << d.log();
  // The stopped turn lets go of its worktree: the command was killed, not waited for.
  ASSERT_TRUE(d.WaitForCount("workspace removed ticket=1 ", 1)) << d.log();
  {
    const json report = Report();
    ExpectedRule e;
    e.accepted = 1;
    e.no = 1;
    ExpectRuleRow(RuleRow(report, "wording"), "wording", e);
  }

  // Tickets 2 and 3 open their pull requests (#100, #101).
  ASSERT_EQ(DeliverComment(github, 402, "Codertocat", texts[1]), 200);
  ASSERT_TRUE(d.WaitForCount("pull request linked ticket=2 number=100", 1)) << d.log();
  ASSERT_EQ(DeliverComment(github, 403, "Codertocat", texts[2]), 200);
  ASSERT_TRUE(d.WaitForCount("pull request linked ticket=3 number=101", 1)) << d.log();
  EXPECT_EQ(d.log().find("ticket held"), std::string::npos) << "held before the rule lost auto:\n" << d.log();
  {
    const json report = Report();
    ExpectedRule e;
    e.accepted = 3;
    e.no = 1;
    e.unanswered = 2;  // pull requests open: no outcome yet
    ExpectRuleRow(RuleRow(report, "wording"), "wording", e);
  }

  // #100 closed unmerged: against the rule. Two answers, under demote_after: nothing proposed.
  ASSERT_EQ(DeliverPullClosed(github, 100, false), 200);
  ASSERT_TRUE(d.WaitForCount("ticket ended id=2 reason=\"pull request #100 closed by Codertocat\"", 1)) << d.log();
  // The line above is written inside the transaction; Intake's own comes after its commit.
  ASSERT_TRUE(d.WaitForCount("trigger stored id=github:codertocat/hello-world:pull:100:closed@", 1)) << d.log();
  {
    const json report = Report();
    ExpectedRule e;
    e.accepted = 3;
    e.no = 2;
    e.unanswered = 1;
    ExpectRuleRow(RuleRow(report, "wording"), "wording", e);
    EXPECT_EQ(report["proposals"].size(), 0u) << report.dump(1);
    EXPECT_EQ(PanelGet("/api/judgement")["proposals"].size(), 0u);
  }

  // #101 merged: for the rule. Three answers, one yes: the bound is under demote_at.
  ASSERT_EQ(DeliverPullClosed(github, 101, true), 200);
  ASSERT_TRUE(d.WaitForCount("ticket ended id=3 reason=\"pull request #101 merged by Codertocat\"", 1)) << d.log();
  // The line above is written inside the transaction; Intake's own comes after its commit.
  ASSERT_TRUE(d.WaitForCount("trigger stored id=github:codertocat/hello-world:pull:101:closed@", 1)) << d.log();
  {
    const json report = Report();
    ExpectedRule e;
    e.accepted = 3;
    e.yes = 1;
    e.no = 2;
    ExpectRuleRow(RuleRow(report, "wording"), "wording", e);
    ASSERT_LT(JudgementServeWilson(1, 3), 0.5);
    ASSERT_EQ(report["proposals"].size(), 1u) << report.dump(1);
    EXPECT_EQ(report["proposals"][0]["rule"], "wording");
    EXPECT_EQ(report["proposals"][0]["kind"], "demote");
    EXPECT_EQ(report["proposals"][0]["from"], "auto");
    EXPECT_EQ(report["proposals"][0]["to"], "observe");
  }
  const json judgement = PanelGet("/api/judgement");
  ASSERT_EQ(judgement["proposals"].size(), 1u) << judgement.dump(1);
  const json& demote = judgement["proposals"][0];
  EXPECT_EQ(demote["rule"], "wording");
  EXPECT_EQ(demote["kind"], "demote");
  EXPECT_EQ(demote["answers"], 3);
  EXPECT_NEAR(demote["lower_bound"].get<double>(), JudgementServeWilson(1, 3), 1e-9);
  const std::string diff = demote["diff"];
  EXPECT_NE(diff.find("   - name: wording\n-    mode: auto\n+    mode: observe\n"), std::string::npos) << diff;

  // Ticket 4: accepted under the demoted rule, and held for a person.
  ASSERT_EQ(DeliverComment(github, 404, "Codertocat", texts[3]), 200);
  ASSERT_TRUE(d.WaitForCount("ticket held ticket=4 thread=github:codertocat/hello-world:issue:404 by=\"judgement\" why=\"rule wording is under "
                            "judgement.demote_at (1 of 3 answers said it was a request", 1)) << d.log();
  const json needs = PanelGet("/api/needs");
  json held;
  for (const json& q : needs["questions"])
    if (q["id"] == 4) held = q;
  ASSERT_TRUE(held.is_object()) << needs.dump(1);
  EXPECT_EQ(held["stage"], "waiting_for_person");
  const std::string question = held["question"]["question"];
  EXPECT_EQ(question.rfind("Held by judgement: rule wording is under judgement.demote_at", 0), 0u) << question;
  ASSERT_EQ(needs["mode_proposals"].size(), 1u) << needs.dump(1);
  EXPECT_EQ(needs["mode_proposals"][0]["proposal"], "demote");
  EXPECT_EQ(needs["mode_proposals"][0]["held"], true);
  {
    const json report = Report();
    ExpectedRule e;
    e.accepted = 4;
    e.yes = 1;
    e.no = 2;
    e.unanswered = 1;
    ExpectRuleRow(RuleRow(report, "wording"), "wording", e);
  }

  d.Signal(SIGTERM);
  EXPECT_EQ(d.Wait(), 0) << d.log();
  EXPECT_EQ(d.log().find(" ticket=4 executor="), std::string::npos) << "the held Ticket was worked:\n" << d.log();
  EXPECT_EQ(github.Count("POST", github.repo_path() + "/issues/404/comments"), 0) << "the held Ticket said something";
  EXPECT_EQ(github.pulls.size(), 2u);
  EXPECT_EQ(model.pending_replies(), 0u);
  EXPECT_TRUE(model.problems().empty()) << model.problems().front();
  EXPECT_EQ(JudgementServeFileBytes(policy_path), policy_bytes);
  EXPECT_EQ(std::filesystem::last_write_time(policy_path), policy_mtime);
  EXPECT_EQ(YamlFiles(), yaml_before);
}

}  // namespace
}  // namespace superagent::testing

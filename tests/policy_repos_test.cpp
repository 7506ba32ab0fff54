// Issue 37: policy rows of single repositories (`repos:` in policy.yaml) — parsed with their
// mistakes named where they are, versioned, and read by the Gate, the Eval's mode and explain.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "superagent/gate.h"
#include "superagent/policy.h"
#include "superagent/trigger.h"

namespace superagent {
namespace {

std::string ReposJoined(const std::vector<Problem>& problems) {
  std::string all;
  for (const Problem& p : problems) all += p.ToString() + "\n";
  return all;
}

Policy ReposParsed(const std::string& yaml) {
  std::vector<Problem> problems;
  std::optional<Policy> p = ParsePolicy(yaml, "policy.yaml", &problems);
  EXPECT_TRUE(p.has_value()) << ReposJoined(problems);
  return p.value_or(Policy{});
}

constexpr char kTeam[] = R"(mode: observe
sources:
  github:
    people: [alice]
repos:
  Acme/Web:
    mode: auto
    sources:
      github:
        people: [bob]
        scopes:
          comments: { others_addressed: inferred }
  acme/docs:
    mode: "off"
)";

Trigger Mention(const std::string& repo, const std::string& actor) {
  Trigger t;
  t.id = "github:comment:1@x";
  t.source = "github";
  t.scope = "comments";
  t.actor = actor;
  t.human = true;
  t.addressed = true;
  t.text = "@agent 请修复拼写 🙏";
  t.threads = {"github:" + repo + ":issue:1"};
  t.channel = t.threads[0];
  return t;
}

TEST(PolicyRepos, ARepositorysTableAndModeTakeThePlaceOfTheTopLevelOnesThereOnly) {
  const Policy p = ReposParsed(kTeam);
  ASSERT_EQ(p.repos.size(), 2u);
  ASSERT_TRUE(p.repos.count("acme/web")) << "names are kept in lower case";
  EXPECT_EQ(p.ModeIn("acme/web"), Mode::kAuto);
  EXPECT_EQ(p.ModeIn("acme/docs"), Mode::kOff);
  EXPECT_EQ(p.ModeIn("acme/api"), Mode::kObserve);
  EXPECT_EQ(p.ModeIn(""), Mode::kObserve);
  EXPECT_FALSE(p.InferredWanted("acme/docs"));
  EXPECT_TRUE(p.InferredWanted("acme/web"));
  EXPECT_EQ(p.SourcePath("github", "acme/web"), (std::vector<std::string>{"repos", "acme/web", "sources", "github"}));
  EXPECT_EQ(p.SourcePath("github", "acme/docs"), (std::vector<std::string>{"sources", "github"})) << "mode only";
  EXPECT_EQ(p.SourcePath("feishu", "acme/web"), (std::vector<std::string>{"sources", "feishu"}));

  // alice may ask in acme/api (the top-level table) but not in acme/web, whose own table lists bob.
  EXPECT_EQ(EvaluateGate(p, Mention("acme/api", "alice"), false).reason, "allow_listed_addressed");
  EXPECT_EQ(EvaluateGate(p, Mention("acme/web", "bob"), false).reason, "allow_listed_addressed");
  const GateResult alice_in_web = EvaluateGate(p, Mention("acme/web", "alice"), false);
  EXPECT_EQ(alice_in_web.strength, Strength::kInferred) << "acme/web's comments row takes others' mentions as inferred";
  EXPECT_EQ(alice_in_web.reason, "cell:others_addressed");
  EXPECT_TRUE(alice_in_web.candidate) << "acme/web is in auto";
  // acme/docs writes a mode and no table: the top-level table, under its own mode (off).
  EXPECT_EQ(EvaluateGate(p, Mention("acme/docs", "alice"), false).reason, "allow_listed_addressed");
  Trigger unaddressed = Mention("acme/docs", "carol");
  unaddressed.addressed = false;
  EXPECT_EQ(EvaluateGate(p, unaddressed, false).candidate, false);
  // A chat's message is judged by the top-level tables whatever the repositories write.
  Trigger chat = Mention("acme/web", "ou_1");
  chat.source = "feishu";
  chat.scope = "direct";
  chat.threads = {"feishu:chat:oc_1"};
  EXPECT_EQ(EvaluateGate(p, chat, false).reason, "source_not_in_policy");
  EXPECT_TRUE(AnyoneMayAsk(ReposParsed("repos:\n  acme/web:\n    sources:\n      github:\n        people: [bob]\n"), "github"))
      << "someone may ask in one repository";
}

TEST(PolicyRepos, RowsAreVersionedAndAPolicyWithoutThemKeepsItsFingerprint) {
  const Policy p = ReposParsed(kTeam);
  Result<Policy> back = PolicyFromJson(p.ToJson());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->Fingerprint(), p.Fingerprint());
  EXPECT_EQ(back->ModeIn("acme/web"), Mode::kAuto);
  ASSERT_TRUE(back->repos.at("acme/web").github.has_value());
  EXPECT_EQ(back->repos.at("acme/web").github->people, std::vector<std::string>{"bob"});
  EXPECT_FALSE(ReposParsed("mode: observe\n").ToJson().contains("repos")) << "no new version on upgrade";
  EXPECT_NE(ReposParsed(kTeam).Fingerprint(), ReposParsed("mode: observe\nsources:\n  github:\n    people: [alice]\n").Fingerprint());

  // A stored version with wrong types is refused by name.
  for (const char* bad : {R"({"repos": []})", R"({"repos": {"acme:web": {}}})", R"({"repos": {"Acme/Web": {}}})",
                          R"({"repos": {"acme/web": {"mode": 1}}})", R"({"repos": {"acme/web": {"sources": {"feishu": {}}}}})",
                          R"({"repos": {"acme/web": {"labels": []}}})", R"({"repos": {"acme/web": {"sources": {"github": []}}}})"}) {
    Result<Policy> r = PolicyFromJson(nlohmann::json::parse(bad));
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("repos"), std::string::npos) << r.status().message();
  }
}

TEST(PolicyRepos, MistakesAreNamedAtTheirLine) {
  std::vector<Problem> problems;
  EXPECT_FALSE(ParsePolicy(R"(repos:
  acme/web:
    mode: sometimes
  "不是/仓库:1": {}
  ACME/WEB:
    mode: auto
  acme/api:
    sources:
      feishu: { people: [ou_1] }
      github:
        people: [alice]
        scopes: { chat: {} }
    labels: [x]
  acme/empty:
)", "policy.yaml", &problems));
  ASSERT_EQ(problems.size(), 6u) << ReposJoined(problems);
  EXPECT_EQ(problems[0].ToString(), "policy.yaml:3:11: repos.acme/web.mode: must be one of off, observe, auto (got \"sometimes\")");
  EXPECT_EQ(problems[1].line, 4);
  EXPECT_NE(problems[1].message.find("is not a repository"), std::string::npos) << problems[1].message;
  EXPECT_EQ(problems[2].line, 5);
  EXPECT_NE(problems[2].message.find("written twice"), std::string::npos) << problems[2].message;
  EXPECT_EQ(problems[3].line, 9);
  EXPECT_NE(problems[3].message.find("a repository's rows are GitHub's"), std::string::npos) << problems[3].message;
  EXPECT_EQ(problems[4].line, 12);
  EXPECT_NE(problems[4].message.find("unknown github scope"), std::string::npos) << problems[4].message;
  EXPECT_EQ(problems[5].line, 13);
  EXPECT_NE(problems[5].message.find("labels"), std::string::npos) << problems[5].message;
}

}  // namespace
}  // namespace superagent

// policy.yaml parsing and validation: shapes, defaults, line-precise problems, fingerprints.
#include "superagent/policy.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "superagent/digest.h"

namespace superagent {
namespace {

// The policy.yaml shape from the issue, as a person would write it.
constexpr const char kIssueExample[] = R"(mode: observe                 # off | observe | auto
sources:
  github:
    people: [alice, bob]
    bots: ["dependabot[bot]"]
    scopes:
      issues:   { receive_all: false }
      pulls:    { receive_all: false }
      comments: { receive_all: true, allowed_unaddressed: inferred, others_addressed: ignore, others_unaddressed: ignore }
      ci:       { others_unaddressed: ignore }
  feishu:
    people: [ou_1]
    bots: []
    scopes:
      "chat:oc_123":   { receive_all: true, others_addressed: explicit }
      other_mentions:  { others_addressed: ignore }
      direct:          { others_addressed: ignore }
rules:
  - name: wording
    enabled: true
    when: Fix wording, typos, punctuation and existing translations.
    instructions: Keep the change to the text in question.
)";

// Parses `yaml` expecting failure; returns the problems.
std::vector<Problem> PolicyProblemsOf(const std::string& yaml) {
  std::vector<Problem> problems;
  std::optional<Policy> p = ParsePolicy(yaml, "policy.yaml", &problems);
  EXPECT_FALSE(p.has_value()) << "expected problems for:\n" << yaml;
  return problems;
}

// Parses `yaml` expecting success.
Policy Parsed(const std::string& yaml) {
  std::vector<Problem> problems;
  std::optional<Policy> p = ParsePolicy(yaml, "policy.yaml", &problems);
  std::string all;
  for (const Problem& pr : problems) all += pr.ToString() + "\n";
  EXPECT_TRUE(p.has_value()) << all;
  EXPECT_TRUE(problems.empty()) << all;
  return p.value_or(Policy{});
}

std::string Joined(const std::vector<Problem>& problems) {
  std::string all;
  for (const Problem& p : problems) all += p.ToString() + "\n";
  return all;
}

// A fresh directory under the system temp dir, removed at the end of the test.
class PolicyDir {
 public:
  PolicyDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "superagent-policy-XXXXXX").string();
    char* made = mkdtemp(tmpl.data());
    EXPECT_NE(made, nullptr);
    path_ = tmpl;
  }
  ~PolicyDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string Write(const std::string& name, const std::string& content) const {
    std::string p = (path_ / name).string();
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }
  std::string Path(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

TEST(PolicyParse, IssueExampleShape) {
  Policy p = Parsed(kIssueExample);
  EXPECT_EQ(p.mode, Mode::kObserve);
  ASSERT_EQ(p.sources.size(), 2u);

  const SourcePolicy& gh = p.sources.at("github");
  EXPECT_EQ(gh.people, (std::vector<std::string>{"alice", "bob"}));
  EXPECT_EQ(gh.bots, (std::vector<std::string>{"dependabot[bot]"}));
  EXPECT_TRUE(gh.IsPerson("alice"));
  EXPECT_FALSE(gh.IsPerson("mallory"));
  EXPECT_TRUE(gh.IsBot("dependabot[bot]"));
  ASSERT_EQ(gh.scopes.size(), 4u);
  EXPECT_FALSE(gh.scopes.at("issues").receive_all);
  const ScopePolicy& comments = gh.scopes.at("comments");
  EXPECT_TRUE(comments.receive_all);
  EXPECT_EQ(comments.allowed_unaddressed, Strength::kInferred);
  EXPECT_EQ(comments.others_addressed, Strength::kNone);
  EXPECT_EQ(comments.others_unaddressed, Strength::kNone);
  EXPECT_EQ(gh.scopes.at("ci").others_unaddressed, Strength::kNone);

  const SourcePolicy& fs = p.sources.at("feishu");
  EXPECT_EQ(fs.people, (std::vector<std::string>{"ou_1"}));
  EXPECT_TRUE(fs.bots.empty());
  EXPECT_TRUE(fs.scopes.at("chat:oc_123").receive_all);
  EXPECT_EQ(fs.scopes.at("chat:oc_123").others_addressed, Strength::kExplicit);
  EXPECT_EQ(fs.scopes.at("other_mentions").others_addressed, Strength::kNone);
  EXPECT_EQ(fs.scopes.count("direct"), 1u);

  ASSERT_EQ(p.rules.size(), 1u);
  EXPECT_EQ(p.rules[0].name, "wording");
  EXPECT_TRUE(p.rules[0].enabled);
  EXPECT_EQ(p.rules[0].when, "Fix wording, typos, punctuation and existing translations.");
  EXPECT_EQ(p.rules[0].instructions, "Keep the change to the text in question.");
  EXPECT_FALSE(p.rules[0].silent);
  EXPECT_EQ(p.rules[0].approver, "");
}

TEST(PolicyParse, CellAndRuleDefaults) {
  Policy p = Parsed(R"(sources:
  github:
    scopes:
      issues: {}
      pulls:
rules:
  - name: r1
    when: something
  - name: r2
    when: other
    enabled: false
    silent: true
    approver: alice
)");
  EXPECT_EQ(p.mode, Mode::kObserve) << "missing mode means observe";
  const SourcePolicy& gh = p.sources.at("github");
  EXPECT_TRUE(gh.people.empty());
  EXPECT_TRUE(gh.bots.empty());
  for (const char* row : {"issues", "pulls"}) {
    const ScopePolicy& s = gh.scopes.at(row);
    EXPECT_FALSE(s.receive_all) << row;
    EXPECT_EQ(s.allowed_unaddressed, Strength::kInferred) << row;
    EXPECT_EQ(s.others_addressed, Strength::kNone) << row;
    EXPECT_EQ(s.others_unaddressed, Strength::kNone) << row;
  }
  ASSERT_EQ(p.rules.size(), 2u);
  EXPECT_TRUE(p.rules[0].enabled);
  EXPECT_FALSE(p.rules[0].silent);
  EXPECT_EQ(p.rules[0].instructions, "");
  EXPECT_FALSE(p.rules[1].enabled);
  EXPECT_TRUE(p.rules[1].silent);
  EXPECT_EQ(p.rules[1].approver, "alice");

  EXPECT_EQ(p.FindRule("r2"), &p.rules[1]);
  EXPECT_EQ(p.FindRule("nope"), nullptr);
  std::vector<const Rule*> enabled = p.EnabledRules();
  ASSERT_EQ(enabled.size(), 1u);
  EXPECT_EQ(enabled[0]->name, "r1");
}

TEST(PolicyParse, MissingRulesMeansNoRules) {
  Policy p = Parsed("mode: auto\n");
  EXPECT_EQ(p.mode, Mode::kAuto);
  EXPECT_TRUE(p.rules.empty());
  EXPECT_TRUE(p.sources.empty());
}

TEST(PolicyParse, EmptyAndCommentOnlyFilesAreEmptyPolicies) {
  for (const char* yaml : {"", "\n\n", "# nothing configured yet\n"}) {
    Policy p = Parsed(yaml);
    EXPECT_EQ(p.mode, Mode::kObserve);
    EXPECT_TRUE(p.sources.empty());
    EXPECT_TRUE(p.rules.empty());
  }
}

TEST(PolicyParse, AllModes) {
  EXPECT_EQ(Parsed("mode: off\n").mode, Mode::kOff);
  EXPECT_EQ(Parsed("mode: observe\n").mode, Mode::kObserve);
  EXPECT_EQ(Parsed("mode: auto\n").mode, Mode::kAuto);
}

TEST(PolicyParse, UnaddressedCellsWithoutReceiveAllAreAccepted) {
  // They have no effect there (the Gate ignores them), but they are not an error: a person may
  // prepare a row before switching receive_all on.
  Policy p = Parsed(R"(sources:
  github:
    scopes:
      issues: { receive_all: false, allowed_unaddressed: ignore, others_unaddressed: inferred }
)");
  EXPECT_EQ(p.sources.at("github").scopes.at("issues").others_unaddressed, Strength::kInferred);
}

TEST(PolicyProblems, BadModeNamesFileLineAndColumn) {
  std::vector<Problem> problems = PolicyProblemsOf("mode: fast\n");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].ToString(), "policy.yaml:1:7: mode: must be one of off, observe, auto (got \"fast\")");
}

TEST(PolicyProblems, EmptyModeIsAProblemOnItsOwnLine) {
  std::vector<Problem> problems = PolicyProblemsOf("rules: []\nmode:\n");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].line, 2);
  EXPECT_NE(problems[0].message.find("got nothing"), std::string::npos);
}

TEST(PolicyProblems, EveryInvalidCellValueHasItsLine) {
  std::vector<Problem> problems = PolicyProblemsOf(R"(sources:
  github:
    scopes:
      issues:
        receive_all: yes
        allowed_unaddressed: explicit
        others_addressed: maybe
        others_unaddressed: explicit
      pulls:
        allowed_unaddressed: none
        others_addressed: [explicit]
        others_unaddressed:
)");
  ASSERT_EQ(problems.size(), 7u) << Joined(problems);
  EXPECT_EQ(problems[0].line, 5);
  EXPECT_EQ(problems[0].column, 22);
  EXPECT_EQ(problems[0].message, "sources.github.scopes.issues.receive_all: must be true or false (got \"yes\")");
  EXPECT_EQ(problems[1].line, 6);
  EXPECT_EQ(problems[1].message,
            "sources.github.scopes.issues.allowed_unaddressed: must be one of inferred, ignore (got \"explicit\")");
  EXPECT_EQ(problems[2].line, 7);
  EXPECT_EQ(problems[2].message,
            "sources.github.scopes.issues.others_addressed: must be one of explicit, inferred, ignore (got \"maybe\")");
  EXPECT_EQ(problems[3].line, 8);
  EXPECT_EQ(problems[3].message,
            "sources.github.scopes.issues.others_unaddressed: must be one of inferred, ignore (got \"explicit\")");
  // "none" is the Gate's word, not an option in the file: the file says "ignore".
  EXPECT_EQ(problems[4].line, 10);
  EXPECT_EQ(problems[5].line, 11);
  EXPECT_NE(problems[5].message.find("(got a list)"), std::string::npos);
  EXPECT_EQ(problems[6].line, 12) << "an empty value points at its key's line, not the next line";
  for (const Problem& p : problems) EXPECT_EQ(p.file, "policy.yaml");
}

TEST(PolicyProblems, UnknownKeysAnywhereAreNamed) {
  std::vector<Problem> problems = PolicyProblemsOf(R"(mod: auto
sources:
  github:
    peple: [alice]
    scopes:
      issue: {}
      comments: { recieve_all: true }
  feishu:
    scopes:
      "group:oc_1": {}
      "chat:": {}
  slack: {}
rules:
  - name: r
    when: w
    instruction: typo
)");
  ASSERT_EQ(problems.size(), 8u) << Joined(problems);
  EXPECT_EQ(problems[0].ToString(), "policy.yaml:1:1: mod: unknown key (expected one of mode, sources, rules, budgets, circuit_breaker, "
            "judgement, repos)");
  EXPECT_EQ(problems[1].line, 4);
  EXPECT_EQ(problems[1].message, "sources.github.peple: unknown key (expected one of people, bots, scopes, tell_others)");
  EXPECT_EQ(problems[2].line, 6);
  EXPECT_EQ(problems[2].message, "sources.github.scopes.issue: unknown github scope (expected one of issues, pulls, comments, ci)");
  EXPECT_EQ(problems[3].line, 7);
  EXPECT_EQ(problems[3].column, 19);
  EXPECT_EQ(problems[3].message,
            "sources.github.scopes.comments.recieve_all: unknown key (expected one of receive_all, allowed_unaddressed, "
            "others_addressed, others_unaddressed)");
  EXPECT_EQ(problems[4].line, 10);
  EXPECT_NE(problems[4].message.find("unknown feishu scope"), std::string::npos);
  EXPECT_EQ(problems[5].line, 11) << "chat: needs an id";
  EXPECT_EQ(problems[6].line, 12);
  EXPECT_EQ(problems[6].message, "sources.slack: unknown source (expected github or feishu)");
  EXPECT_EQ(problems[7].line, 16);
  EXPECT_EQ(problems[7].message,
            "rules[0].instruction: unknown key (expected one of name, enabled, when, instructions, silent, approver, "
            "auto_merge, mode, repos)");
}

TEST(PolicyProblems, DuplicateKeysAreNotSilentlyMerged) {
  std::vector<Problem> problems = PolicyProblemsOf(R"(mode: off
sources:
  github:
    people: [alice]
    people: [mallory]
mode: auto
)");
  ASSERT_EQ(problems.size(), 2u) << Joined(problems);
  EXPECT_EQ(problems[0].line, 5);
  EXPECT_EQ(problems[0].message, "sources.github.people: duplicate key");
  EXPECT_EQ(problems[1].line, 6);
  EXPECT_EQ(problems[1].message, "mode: duplicate key");
}

TEST(PolicyProblems, RuleNamesUniqueNonEmptyAndWhenRequired) {
  std::vector<Problem> problems = PolicyProblemsOf(R"(rules:
  - name: wording
    when: a
  - name: wording
    when: b
  - name: ""
    when: c
  - when: d
  - name: no_when
  - name: empty_when
    when: ""
  - just a string
)");
  ASSERT_EQ(problems.size(), 6u) << Joined(problems);
  EXPECT_EQ(problems[0].line, 4);
  EXPECT_EQ(problems[0].message, "rules[1].name: duplicate rule name \"wording\" (rule names must be unique)");
  EXPECT_EQ(problems[1].line, 6);
  EXPECT_EQ(problems[1].message, "rules[2].name: must not be empty");
  EXPECT_EQ(problems[2].line, 8);
  EXPECT_EQ(problems[2].message, "rules[3].name: is required");
  EXPECT_EQ(problems[3].line, 9);
  EXPECT_EQ(problems[3].message, "rules[4].when: is required");
  EXPECT_EQ(problems[4].line, 11);
  EXPECT_EQ(problems[5].line, 12);
  EXPECT_NE(problems[5].message.find("rules[6]: must be a mapping"), std::string::npos);
}

TEST(PolicyProblems, RuleFieldTypes) {
  std::vector<Problem> problems = PolicyProblemsOf(R"(rules:
  - name: r
    when: w
    enabled: "true"
    silent: maybe
    approver: [a, b]
    instructions: { x: 1 }
)");
  ASSERT_EQ(problems.size(), 4u) << Joined(problems);
  EXPECT_EQ(problems[0].line, 4) << "a quoted \"true\" is a string, not a switch";
  EXPECT_EQ(problems[1].line, 5);
  EXPECT_EQ(problems[2].line, 6);
  EXPECT_EQ(problems[3].line, 7);
}

TEST(PolicyParse, AutoMergeIsOffByDefaultAndReadsItsBounds) {
  Policy p = Parsed(R"(rules:
  - name: plain
    when: w
  - name: reviewed
    when: w
    approver: 张伟
    auto_merge: { enabled: true, max_changed_lines: 50, required_approvals: 2 }
  - name: edges
    when: w
    auto_merge:
      max_changed_lines: 200
      required_approvals: 10
  - name: empty_block
    when: w
    auto_merge:
)");
  ASSERT_EQ(p.rules.size(), 4u);
  EXPECT_FALSE(p.rules[0].auto_merge.enabled) << "a person merges unless a rule says otherwise";
  EXPECT_EQ(p.rules[0].auto_merge.max_changed_lines, 200);
  EXPECT_EQ(p.rules[0].auto_merge.required_approvals, 1);
  EXPECT_TRUE(p.rules[1].auto_merge.enabled);
  EXPECT_EQ(p.rules[1].auto_merge.max_changed_lines, 50);
  EXPECT_EQ(p.rules[1].auto_merge.required_approvals, 2);
  EXPECT_EQ(p.rules[1].approver, "张伟");
  EXPECT_FALSE(p.rules[2].auto_merge.enabled);
  EXPECT_EQ(p.rules[2].auto_merge.max_changed_lines, 200);
  EXPECT_EQ(p.rules[2].auto_merge.required_approvals, 10);
  EXPECT_EQ(p.rules[3].auto_merge, AutoMergePolicy{});
}

TEST(PolicyProblems, AutoMergeWrongTypesAndBoundsNameTheRuleAndKey) {
  std::vector<Problem> problems = PolicyProblemsOf(R"(rules:
  - name: r
    when: w
    auto_merge:
      enabled: "true"
      max_changed_lines: 201
      required_approvals: 0
  - name: s
    when: w
    auto_merge: { max_changed_lines: "50", required_approvals: 11, merge_as: bot }
  - name: t
    when: w
    auto_merge: { max_changed_lines: 1.5, required_approvals: [1] }
  - name: u
    when: w
    auto_merge: true
  - name: v
    when: w
    auto_merge: { max_changed_lines: 99999999999999999999, required_approvals: -1 }
)");
  ASSERT_EQ(problems.size(), 11u) << Joined(problems);
  EXPECT_EQ(problems[0].ToString(), "policy.yaml:5:16: rules[0].auto_merge.enabled: must be true or false (got \"true\")");
  EXPECT_EQ(problems[1].ToString(),
            "policy.yaml:6:26: rules[0].auto_merge.max_changed_lines: must be a whole number from 1 to 200; the "
            "SPEC's 200 is a ceiling a team may lower, not raise (got \"201\")");
  EXPECT_EQ(problems[2].ToString(),
            "policy.yaml:7:27: rules[0].auto_merge.required_approvals: must be a whole number from 1 to 10 (got \"0\")");
  EXPECT_EQ(problems[3].line, 10);
  EXPECT_NE(problems[3].message.find("rules[1].auto_merge.max_changed_lines: must be a whole number"), std::string::npos)
      << "a quoted number is a string";
  EXPECT_EQ(problems[4].message, "rules[1].auto_merge.required_approvals: must be a whole number from 1 to 10 (got \"11\")");
  EXPECT_EQ(problems[5].message,
            "rules[1].auto_merge.merge_as: unknown key (expected one of enabled, max_changed_lines, required_approvals)");
  EXPECT_NE(problems[6].message.find("rules[2].auto_merge.max_changed_lines: must be a whole number"), std::string::npos);
  EXPECT_NE(problems[7].message.find("rules[2].auto_merge.required_approvals: must be a whole number from 1 to 10 (got a list)"),
            std::string::npos);
  EXPECT_EQ(problems[8].message, "rules[3].auto_merge: must be a mapping");
  EXPECT_EQ(problems[8].line, 16);
  EXPECT_NE(problems[9].message.find("rules[4].auto_merge.max_changed_lines"), std::string::npos) << "no overflow";
  EXPECT_NE(problems[10].message.find("rules[4].auto_merge.required_approvals"), std::string::npos);
}

TEST(PolicyFingerprint, AutoMergeChangesTheVersionButItsDefaultsDoNot) {
  const std::string base = "rules:\n  - { name: wording, when: typos }\n";
  const std::string fp = Parsed(base).Fingerprint();
  auto with = [&](const std::string& extra) {
    return Parsed("rules:\n  - { name: wording, when: typos, " + extra + " }\n").Fingerprint();
  };
  // Writing the defaults out changes nothing, so versions stored before auto-merge existed keep theirs.
  EXPECT_EQ(fp, with("auto_merge: { enabled: false, max_changed_lines: 200, required_approvals: 1 }"));
  EXPECT_EQ(Parsed(base).ToJson()["rules"][0].count("auto_merge"), 0u);
  EXPECT_NE(fp, with("auto_merge: { enabled: true }"));
  EXPECT_NE(fp, with("auto_merge: { max_changed_lines: 100 }"));
  EXPECT_NE(fp, with("auto_merge: { required_approvals: 2 }"));
  EXPECT_NE(fp, with("approver: alice"));
  EXPECT_NE(with("auto_merge: { enabled: true, max_changed_lines: 100 }"),
            with("auto_merge: { enabled: true, max_changed_lines: 99 }"));
}

TEST(PolicyJson, AutoMergeRoundTripsAndBadStoredValuesAreRefused) {
  Policy p = Parsed(R"(rules:
  - name: r
    when: w
    approver: alice
    auto_merge: { enabled: true, max_changed_lines: 80, required_approvals: 3 }
)");
  Result<Policy> back = PolicyFromJson(p.ToJson());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->rules[0].auto_merge, p.rules[0].auto_merge);
  EXPECT_EQ(back->Fingerprint(), p.Fingerprint());
  for (const auto& [key, value] : std::vector<std::pair<std::string, nlohmann::json>>{
           {"max_changed_lines", 201}, {"max_changed_lines", "80"}, {"required_approvals", 0}, {"enabled", 1}}) {
    nlohmann::json j = p.ToJson();
    j["rules"][0]["auto_merge"][key] = value;
    Result<Policy> r = PolicyFromJson(j);
    ASSERT_FALSE(r.ok()) << key << "=" << value.dump();
    EXPECT_NE(r.status().message().find("policy.rules[0].auto_merge." + key), std::string::npos) << r.status().message();
  }
  nlohmann::json not_object = p.ToJson();
  not_object["rules"][0]["auto_merge"] = "yes";
  EXPECT_FALSE(PolicyFromJson(not_object).ok());
}

TEST(PolicyProblems, AllProblemsAreReportedNotOnlyTheFirst) {
  std::vector<Problem> problems = PolicyProblemsOf(R"(mode: sometimes
sources:
  github:
    people: alice
    scopes:
      ci: { receive_all: true }
      comments: { others_addressed: always }
rules:
  - name: x
)");
  ASSERT_EQ(problems.size(), 5u) << Joined(problems);
  EXPECT_EQ(problems[0].line, 1);
  EXPECT_EQ(problems[1].line, 4);
  EXPECT_EQ(problems[2].line, 6);
  EXPECT_EQ(problems[3].line, 7);
  EXPECT_EQ(problems[4].line, 9);
}

TEST(PolicyProblems, CiHasOnlyTheOthersUnaddressedCell) {
  std::vector<Problem> problems = PolicyProblemsOf(R"(sources:
  github:
    scopes:
      ci:
        others_unaddressed: inferred
        others_addressed: explicit
        allowed_unaddressed: inferred
        receive_all: true
)");
  ASSERT_EQ(problems.size(), 3u) << Joined(problems);
  EXPECT_EQ(problems[0].ToString(),
            "policy.yaml:6:9: sources.github.scopes.ci.others_addressed: CI has no sender: the ci row has only the "
            "others_unaddressed cell");
  EXPECT_EQ(problems[1].line, 7);
  EXPECT_EQ(problems[2].line, 8);

  Policy ok = Parsed("sources:\n  github:\n    scopes:\n      ci: { others_unaddressed: inferred }\n");
  EXPECT_EQ(ok.sources.at("github").scopes.at("ci").others_unaddressed, Strength::kInferred);
}

TEST(PolicyProblems, ReceiveAllCannotBeTrueWhereOnlyAddressedMessagesArrive) {
  std::vector<Problem> problems = PolicyProblemsOf(R"(sources:
  feishu:
    scopes:
      direct: { receive_all: true }
      other_mentions:
        receive_all: true
)");
  ASSERT_EQ(problems.size(), 2u) << Joined(problems);
  EXPECT_EQ(problems[0].line, 4);
  EXPECT_NE(problems[0].message.find("cannot be true in the direct row"), std::string::npos);
  EXPECT_EQ(problems[1].line, 6);
  // Saying false there is harmless.
  Parsed("sources:\n  feishu:\n    scopes:\n      direct: { receive_all: false }\n");
}

TEST(PolicyProblems, WrongShapes) {
  std::vector<Problem> problems = PolicyProblemsOf(R"(sources:
  github: [alice]
  feishu:
    people: [ou_1, "", [x]]
    scopes: direct
rules: wording
)");
  ASSERT_EQ(problems.size(), 5u) << Joined(problems);
  EXPECT_EQ(problems[0].message, "sources.github: must be a mapping");
  EXPECT_EQ(problems[0].line, 2);
  EXPECT_EQ(problems[1].message, "sources.feishu.people[1]: must be a non-empty string");
  EXPECT_EQ(problems[1].line, 4);
  EXPECT_EQ(problems[2].message, "sources.feishu.people[2]: must be a non-empty string");
  EXPECT_EQ(problems[3].line, 5);
  EXPECT_EQ(problems[4].line, 6);
  EXPECT_EQ(problems[4].message, "rules: must be a list of rules");

  std::vector<Problem> root = PolicyProblemsOf("- a\n- b\n");
  ASSERT_EQ(root.size(), 1u);
  EXPECT_EQ(root[0].line, 1);
}

TEST(PolicyProblems, MalformedYamlIsOneProblemWithItsLine) {
  std::vector<Problem> problems = PolicyProblemsOf("mode: observe\nsources:\n  github: { people: [alice\nrules: []\n");
  ASSERT_EQ(problems.size(), 1u) << Joined(problems);
  EXPECT_EQ(problems[0].file, "policy.yaml");
  EXPECT_GE(problems[0].line, 3);
  EXPECT_NE(problems[0].message.find("invalid YAML"), std::string::npos);

  std::vector<Problem> indent = PolicyProblemsOf("rules:\n  - name: a\n - name: b\n");
  ASSERT_EQ(indent.size(), 1u);
  EXPECT_EQ(indent[0].line, 3);
}

TEST(PolicyProblems, OnlyOneDocumentPerFile) {
  std::vector<Problem> problems = PolicyProblemsOf("mode: off\n---\nmode: auto\n");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].line, 3);
}

// Found by fuzz/policy_yaml_fuzz (docs/009-fuzzing.md): yaml-cpp 0.7's LoadAll looped forever,
// allocating, on a token that cannot start a document — a stray ',' at the top level — so a
// policy edit hung `check`, the start and the hot reload (455 MB in 15 s). It is a syntax problem
// with a position now, found at once.
TEST(PolicyProblems, AStrayCommaAtTheTopLevelIsASyntaxProblemNotAHang) {
  for (const std::string& yaml : {std::string(","), std::string(",\nmode: off\n"), std::string("[a]\n,\n"),
                                 std::string("mode: observe\nsources:\n  github:\n    scopes:\n      comments: { receive_all: true, others_a\n      ci: { others_addressed: explicit }\n")}) {
    std::vector<Problem> problems = PolicyProblemsOf(yaml);
    ASSERT_EQ(problems.size(), 1u) << yaml;
    EXPECT_NE(problems[0].message.find("invalid YAML"), std::string::npos) << problems[0].message;
    EXPECT_GE(problems[0].line, 1) << yaml;
  }
  // Two real documents are still told apart from the stray token.
  EXPECT_NE(PolicyProblemsOf("mode: off\n---\nmode: auto\n---\nmode: off\n")[0].message.find("found 3"), std::string::npos);
}

TEST(PolicyProblems, ProblemToStringForms) {
  EXPECT_EQ((Problem{"p.yaml", 3, 9, "m"}).ToString(), "p.yaml:3:9: m");
  EXPECT_EQ((Problem{"p.yaml", 3, 0, "m"}).ToString(), "p.yaml:3: m");
  EXPECT_EQ((Problem{"p.yaml", 0, 0, "m"}).ToString(), "p.yaml: m");
}

TEST(PolicyLoad, ReadsARealFile) {
  PolicyDir dir;
  std::string path = dir.Write("policy.yaml", kIssueExample);
  std::vector<Problem> problems;
  std::optional<Policy> p = LoadPolicyFile(path, &problems);
  ASSERT_TRUE(p.has_value()) << Joined(problems);
  EXPECT_EQ(p->sources.size(), 2u);
}

TEST(PolicyLoad, ProblemsNameThePathGiven) {
  PolicyDir dir;
  std::string path = dir.Write("bad.yaml", "mode: on\n");
  std::vector<Problem> problems;
  EXPECT_FALSE(LoadPolicyFile(path, &problems).has_value());
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].ToString().rfind(path + ":1:7: mode:", 0), 0u) << problems[0].ToString();
}

TEST(PolicyLoad, MissingFileIsOneProblemAtLineZero) {
  PolicyDir dir;
  std::string path = dir.Path("absent.yaml");
  std::vector<Problem> problems;
  EXPECT_FALSE(LoadPolicyFile(path, &problems).has_value());
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].file, path);
  EXPECT_EQ(problems[0].line, 0);
  EXPECT_NE(problems[0].message.find("No such file"), std::string::npos) << problems[0].message;

  problems.clear();
  EXPECT_FALSE(LoadPolicyFile(dir.Path(""), &problems).has_value()) << "a directory is not a policy";
  ASSERT_EQ(problems.size(), 1u);
}

TEST(PolicyDefault, ObserveNoSourcesTwoEnabledRules) {
  Policy p = DefaultPolicy();
  EXPECT_EQ(p.mode, Mode::kObserve);
  EXPECT_TRUE(p.sources.empty());
  ASSERT_EQ(p.rules.size(), 2u);
  EXPECT_EQ(p.rules[0].name, "wording");
  EXPECT_EQ(p.rules[1].name, "visual_fix");
  EXPECT_EQ(p.EnabledRules().size(), 2u);
  for (const Rule& r : p.rules) {
    EXPECT_FALSE(r.when.empty());
    EXPECT_FALSE(r.instructions.empty());
  }
}

TEST(PolicyNames, RoundTrip) {
  for (Mode m : {Mode::kOff, Mode::kObserve, Mode::kAuto}) {
    Mode back = Mode::kObserve;
    ASSERT_TRUE(ParseMode(ModeName(m), &back));
    EXPECT_EQ(back, m);
  }
  for (Strength s : {Strength::kNone, Strength::kInferred, Strength::kExplicit}) {
    Strength back = Strength::kInferred;
    ASSERT_TRUE(ParseStrength(StrengthName(s), &back));
    EXPECT_EQ(back, s);
  }
  Strength s = Strength::kExplicit;
  EXPECT_TRUE(ParseStrength("ignore", &s));
  EXPECT_EQ(s, Strength::kNone);
  Mode m = Mode::kAuto;
  EXPECT_FALSE(ParseMode("Observe", &m));
  EXPECT_FALSE(ParseStrength("", &s));
  EXPECT_LT(Strength::kNone, Strength::kInferred);
  EXPECT_LT(Strength::kInferred, Strength::kExplicit);
}

TEST(PolicyScope, UnconfiguredFeishuChatFallsToOtherMentions) {
  Policy p = Parsed(kIssueExample);
  EXPECT_EQ(p.FindScope("feishu", "chat:oc_123"), &p.sources.at("feishu").scopes.at("chat:oc_123"));
  EXPECT_EQ(p.FindScope("feishu", "chat:oc_999"), &p.sources.at("feishu").scopes.at("other_mentions"));
  EXPECT_EQ(p.FindScope("github", "issues"), &p.sources.at("github").scopes.at("issues"));
  EXPECT_EQ(p.FindScope("slack", "issues"), nullptr);
  Policy no_row = Parsed("sources:\n  feishu:\n    people: [ou_1]\n");
  EXPECT_EQ(no_row.FindScope("feishu", "chat:oc_999"), nullptr);
}

TEST(PolicyFingerprint, IsSha256HexOfCanonicalJson) {
  Policy p = Parsed(kIssueExample);
  std::string fp = p.Fingerprint();
  EXPECT_EQ(fp.size(), 64u);
  EXPECT_EQ(fp, Sha256Hex(p.ToJson().dump()));
  EXPECT_EQ(fp, Parsed(kIssueExample).Fingerprint()) << "deterministic";
}

TEST(PolicyFingerprint, StableAcrossFormattingCommentsAndListOrder) {
  std::string a = R"(mode: auto
sources:
  github:
    people: [alice, bob]
    scopes:
      comments: { receive_all: true, others_addressed: inferred }
rules:
  - { name: wording, when: typos }
)";
  std::string b = R"(# the team's policy
sources:
  github:
    scopes:
      comments:
        others_addressed: inferred   # strangers may @ it
        receive_all: true
    people:
      - bob
      - alice
      - alice
mode: "auto"

rules:
  - name: wording
    when: typos
    enabled: true
)";
  EXPECT_EQ(Parsed(a).Fingerprint(), Parsed(b).Fingerprint());
}

TEST(PolicyFingerprint, ChangesWithMeaning) {
  std::string base = R"(mode: observe
sources:
  github:
    people: [alice]
rules:
  - { name: wording, when: typos, instructions: keep it small }
)";
  std::string fp = Parsed(base).Fingerprint();
  auto changed = [&](const std::string& from, const std::string& to) {
    std::string y = base;
    y.replace(y.find(from), from.size(), to);
    return Parsed(y).Fingerprint();
  };
  EXPECT_NE(fp, changed("mode: observe", "mode: auto"));
  EXPECT_NE(fp, changed("when: typos", "when: typos and grammar"));
  EXPECT_NE(fp, changed("keep it small", "keep it tiny"));
  EXPECT_NE(fp, changed("[alice]", "[alice, bob]"));
  EXPECT_NE(fp, changed("people: [alice]", "bots: [alice]"));
  EXPECT_NE(fp, changed("name: wording,", "name: wording, silent: true,"));
  EXPECT_NE(fp, changed("people: [alice]", "people: [alice]\n    scopes: { issues: { receive_all: true } }"));
}

TEST(PolicyJson, RoundTripKeepsFingerprint) {
  for (const Policy& p : {Parsed(kIssueExample), DefaultPolicy(), Policy{}}) {
    Result<Policy> back = PolicyFromJson(p.ToJson());
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->Fingerprint(), p.Fingerprint());
    EXPECT_EQ(back->ToJson().dump(), p.ToJson().dump());
    EXPECT_EQ(back->rules.size(), p.rules.size());
  }
}

TEST(PolicyJson, CanonicalShape) {
  Policy p = Parsed(kIssueExample);
  nlohmann::json j = p.ToJson();
  EXPECT_EQ(j["mode"], "observe");
  EXPECT_EQ(j["sources"]["github"]["scopes"]["comments"]["others_addressed"], "ignore");
  EXPECT_EQ(j["sources"]["feishu"]["scopes"]["chat:oc_123"]["others_addressed"], "explicit");
  EXPECT_EQ(j["sources"]["github"]["scopes"]["ci"], (nlohmann::json{{"others_unaddressed", "ignore"}}))
      << "the ci row has only its one cell";
  EXPECT_EQ(j["rules"][0]["name"], "wording");
}

TEST(PolicyJson, RejectsBadInputWithAFieldName) {
  Result<Policy> not_object = PolicyFromJson(nlohmann::json::array());
  EXPECT_FALSE(not_object.ok());
  Result<Policy> bad_mode = PolicyFromJson(nlohmann::json{{"mode", "fast"}});
  ASSERT_FALSE(bad_mode.ok());
  EXPECT_NE(bad_mode.status().message().find("policy.mode"), std::string::npos);
  nlohmann::json bad_cell = DefaultPolicy().ToJson();
  bad_cell["sources"]["github"]["scopes"]["ci"]["others_unaddressed"] = "explicit";
  Result<Policy> r = PolicyFromJson(bad_cell);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("policy.sources.github.scopes.ci.others_unaddressed"), std::string::npos)
      << r.status().message();
  nlohmann::json no_name = DefaultPolicy().ToJson();
  no_name["rules"][0].erase("name");
  EXPECT_FALSE(PolicyFromJson(no_name).ok());
}

// Issue 38: a rule's own mode and the judgement block, every mistake at its file:line, and a
// policy that sets neither keeps the fingerprint it had (an upgrade makes no new version).
TEST(PolicyJudgement, ARulesModeAndTheJudgementBlockParseAndMistakesAreNamedWhereTheyAre) {
  const Policy p = Parsed(R"(mode: observe
rules:
  - { name: wording, when: typos, mode: auto }
  - { name: 错别字, when: 修正错别字 }
judgement: { promote_at: 0.95, promote_after: 40, demote_at: 0.6, demote_after: 12, window_days: 60 }
)");
  EXPECT_EQ(p.rules[0].mode, Mode::kAuto);
  EXPECT_EQ(p.ModeOf(p.rules[0]), Mode::kAuto);
  EXPECT_FALSE(p.rules[1].mode.has_value());
  EXPECT_EQ(p.ModeOf(p.rules[1]), Mode::kObserve);
  EXPECT_EQ(p.judgement, (JudgementSettings{0.95, 40, 0.6, 12, 60}));
  Result<Policy> back = PolicyFromJson(p.ToJson());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->Fingerprint(), p.Fingerprint());
  EXPECT_EQ(back->rules[0].mode, Mode::kAuto);

  std::vector<Problem> problems;
  EXPECT_FALSE(ParsePolicy(R"(rules:
  - name: wording
    when: typos
    mode: off
  - name: visual
    when: spacing
    mode: "自动"
judgement:
  promote_at: 1.5
  promote_after: 0
  demote_at: .5
  window_days: 366
  提升: 1
)", "policy.yaml", &problems));
  ASSERT_EQ(problems.size(), 7u) << Joined(problems);
  EXPECT_EQ(problems[0].ToString(),
            "policy.yaml:4:11: rules[0].mode: must be observe or auto (to turn a rule off, set enabled: false) (got \"off\")");
  EXPECT_EQ(problems[1].ToString(),
            "policy.yaml:7:11: rules[1].mode: must be observe or auto (to turn a rule off, set enabled: false) (got \"自动\")");
  EXPECT_EQ(problems[2].ToString(), "policy.yaml:9:15: judgement.promote_at: must be a share from 0 to 1, such as 0.9 (got \"1.5\")");
  EXPECT_EQ(problems[3].ToString(), "policy.yaml:10:18: judgement.promote_after: must be from 1 to 10000 (got \"0\")");
  EXPECT_EQ(problems[4].line, 11);
  EXPECT_EQ(problems[5].ToString(), "policy.yaml:12:16: judgement.window_days: must be from 1 to 365 (got \"366\")");
  EXPECT_EQ(problems[6].line, 13);
  EXPECT_NE(problems[6].message.find("提升: unknown key"), std::string::npos) << problems[6].message;

  problems.clear();
  EXPECT_FALSE(ParsePolicy("judgement: { promote_at: 0.5, demote_at: 0.7 }\n", "policy.yaml", &problems));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].ToString(),
            "policy.yaml:1:12: judgement: demote_at must not be above promote_at (a rule would be proposed both ways)");

  // Unset, neither appears in the canonical JSON: an upgraded daemon makes no new version.
  const nlohmann::json plain = Parsed("rules:\n  - { name: wording, when: typos }\n").ToJson();
  EXPECT_FALSE(plain.contains("judgement"));
  EXPECT_FALSE(plain["rules"][0].contains("mode"));
  // Wrong types in a stored version's JSON are refused by name.
  nlohmann::json bad = p.ToJson();
  bad["rules"][0]["mode"] = 3;
  EXPECT_FALSE(PolicyFromJson(bad).ok());
  bad = p.ToJson();
  bad["judgement"]["promote_after"] = "30";
  EXPECT_FALSE(PolicyFromJson(bad).ok());
}

// Inferred candidates enter Eval when the policy's mode is not off, or an enabled rule's is not.
TEST(PolicyJudgement, OffOverallStillAssessesForARuleInItsOwnMode) {
  EXPECT_FALSE(Parsed("mode: off\nrules:\n  - { name: w, when: typos }\n").InferredWanted(""));
  EXPECT_TRUE(Parsed("mode: off\nrules:\n  - { name: w, when: typos, mode: auto }\n").InferredWanted(""));
  EXPECT_FALSE(Parsed("mode: off\nrules:\n  - { name: w, when: typos, mode: auto, enabled: false }\n").InferredWanted(""));
  EXPECT_TRUE(Parsed("mode: observe\n").InferredWanted(""));
}

TEST(PolicyExample, ConfigExampleParsesCleanly) {
  std::string path = std::string(SUPERAGENT_SOURCE_DIR) + "/config/policy.example.yaml";
  std::vector<Problem> problems;
  std::optional<Policy> p = LoadPolicyFile(path, &problems);
  ASSERT_TRUE(p.has_value()) << Joined(problems);
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(p->mode, Mode::kObserve);
  EXPECT_EQ(p->sources.count("github"), 1u);
  EXPECT_EQ(p->sources.count("feishu"), 1u);
  EXPECT_FALSE(p->rules.empty());
}

}  // namespace
}  // namespace superagent

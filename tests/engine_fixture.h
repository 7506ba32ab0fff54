// Shared set-up for Engine tests: a real SQLite file in a fresh temp dir, a FakeClock, policies
// written as YAML (through the real parser), and a scripted Assessor standing in for the model.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <deque>
#include <filesystem>
#include <memory>
#include <string>

#include "app/wiring.h"
#include "superagent/engine.h"
#include "superagent/eval.h"
#include "superagent/periodic.h"
#include "superagent/views.h"
#include "engine_test_peer.h"

namespace superagent::testing {

// A Periodic's waits as `clock`'s: a wait passes at once by moving the clock (a loop driven step
// by step from the test's thread, its pace and rate-limit waits included, never sleeps).
class ClockLoopWait : public LoopWait {
 public:
  explicit ClockLoopWait(FakeClock* clock) : clock_(clock) {}
  void WaitFor(TimeMs ms, const std::function<bool()>& done) override {
    if (!done()) clock_->Advance(ms);
  }
  void Notify() override {}

 private:
  FakeClock* clock_;
};

// Allow-lists alice on GitHub; dependabot is a listed bot; comments receive all messages.
inline const char* kBasePolicy = R"(
mode: MODE
sources:
  github:
    people: [alice, bob]
    bots: ["dependabot[bot]"]
    scopes:
      issues: { receive_all: false }
      comments: { receive_all: true, allowed_unaddressed: inferred, others_addressed: ignore, others_unaddressed: ignore }
      ci: { others_unaddressed: inferred }
  feishu:
    people: [ou_alice]
    scopes:
      "chat:oc_support": { receive_all: false, others_addressed: explicit }
rules:
  - name: wording
    enabled: true
    when: Fix wording, typos, punctuation and existing translations.
    instructions: Keep the change to the text in question.
  - name: visual
    enabled: true
    when: Targeted visual fixes with a clear goal.
    instructions: Restore spacing to the existing standard.
)";

inline Policy MakePolicy(const std::string& mode, const std::string& extra_edit = "") {
  std::string yaml = kBasePolicy;
  yaml.replace(yaml.find("MODE"), 4, mode);
  if (!extra_edit.empty()) {
    // extra_edit is "old=>new": a textual edit to the base policy.
    auto arrow = extra_edit.find("=>");
    std::string from = extra_edit.substr(0, arrow), to = extra_edit.substr(arrow + 2);
    auto pos = yaml.find(from);
    if (pos == std::string::npos) ADD_FAILURE() << "edit target not found: " << from;
    else yaml.replace(pos, from.size(), to);
  }
  std::vector<Problem> problems;
  auto p = ParsePolicy(yaml, "test-policy.yaml", &problems);
  if (!p) {
    for (auto& pr : problems) ADD_FAILURE() << pr.ToString();
    return DefaultPolicy();
  }
  return *p;
}

// Returns queued answers in order; records what it was asked.
class ScriptedAssessor : public Assessor {
 public:
  Result<Assessment> Assess(const EvalJob& job, const std::vector<const Candidate*>& candidates,
                            const Policy&) override {
    ++calls;
    last_job = job;
    last_candidates.clear();
    for (auto* c : candidates) last_candidates.push_back(*c);
    if (answers.empty()) return Status::Unavailable("no scripted answer");
    Result<Assessment> a = answers.front();
    answers.pop_front();
    return a;
  }
  // An answer that covers both default test rules.
  static Assessment Accept(bool wording_matched = true, const std::string& evidence = "please fix the typo") {
    Assessment a;
    a.decision = DecisionOutcome::kAccept;
    a.implementation_requested = true;
    a.target_basis = "stated";
    a.evidence = evidence;
    a.rules = {{"wording", wording_matched, "typo"}, {"visual", false, "not visual"}};
    a.scope = "Fix the typo in README";
    a.acknowledgement = "I'll fix the typo in README.";
    return a;
  }
  static Assessment Stop() {
    Assessment a = Accept(false);
    a.decision = DecisionOutcome::kStop;
    return a;
  }
  std::deque<Result<Assessment>> answers;
  int calls = 0;
  EvalJob last_job;
  std::vector<Candidate> last_candidates;
};

class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("superagent-test-" + std::to_string(::getpid()) + "-" + info->test_suite_name() + "-" + info->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    Open(MakePolicy("observe"));
  }
  void TearDown() override {
    views_.reset();
    engine_.reset();
    std::filesystem::remove_all(dir_);
  }

  void Open(const Policy& policy) {
    engine_.reset();
    auto e = Engine::Open((dir_ / "superagent.db").string(), &clock_, policy, "test-policy.yaml", options_);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(*e);
    // The read face on the same file, as the daemon opens it beside the Engine (once: it reads
    // whatever Engine writes there, across a reopen).
    if (!views_) {
      auto v = Views::Open((dir_ / "superagent.db").string());
      ASSERT_TRUE(v.ok()) << v.status().ToString();
      views_ = std::move(*v);
    }
  }

  // explain's story of `id_or_url` now, under the policy in force.
  Result<nlohmann::json> ExplainNow(const std::string& id_or_url) {
    return views_->Explain(id_or_url, engine_->CurrentPolicy(), clock_.NowMs());
  }

  // A GitHub comment on issue `issue` by `actor`.
  Trigger Comment(const std::string& id, const std::string& actor, bool addressed, const std::string& text,
                  int issue = 1, bool human = true) {
    Trigger t;
    t.id = id;
    t.source = "github";
    t.scope = "comments";
    t.actor = actor;
    t.human = human;
    t.addressed = addressed;
    t.text = text;
    t.at = clock_.NowMs();
    t.threads = {"github:acme/widgets:issue:" + std::to_string(issue)};
    t.channel = "github:acme/widgets:issue:" + std::to_string(issue);
    t.meta = {{"html_url", "https://github.com/o/r/issues/" + std::to_string(issue) + "#" + id}};
    return t;
  }

  IntakeResult Receive(const Trigger& t) {
    auto r = engine_->Receive(t, "test");
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : IntakeResult{};
  }

  // Runs every due Eval; returns how many ran.
  int Drain() {
    int n = 0;
    while (true) {
      auto r = RunOneEval(*engine_, assessor_);
      EXPECT_TRUE(r.ok()) << r.status().ToString();
      if (!r.ok() || !*r) return n;
      ++n;
    }
  }

  // Receives an addressed request from alice and accepts it; returns the new Ticket.
  // As the scheduler does: pending inputs become a turn. Returns the Ticket's pending
  // Assignment, 0 (and a failure) when it has none.
  std::int64_t PendingAssignment(TicketId t) {
    (void)engine_->AssignFollowUps();
    auto assignments = views_->Assignments(t);
    EXPECT_TRUE(assignments.ok()) << assignments.status().ToString();
    if (assignments.ok())
      for (const Assignment& a : *assignments)
        if (a.state == "pending") return a.id;
    ADD_FAILURE() << "ticket " << t << " has no pending assignment";
    return 0;
  }

  TicketId AcceptedTicket(const std::string& id, int issue = 1) {
    Receive(Comment(id, "alice", true, "@agent please fix the typo in README", issue));
    assessor_.answers.push_back(ScriptedAssessor::Accept());
    EXPECT_EQ(Drain(), 1);
    auto story = ExplainNow(id);
    EXPECT_TRUE(story.ok());
    if (!story.ok() || !story->contains("ticket_created")) {
      ADD_FAILURE() << "no ticket created for " << id;
      return 0;
    }
    return (*story)["ticket_created"]["id"].get<TicketId>();
  }

  std::filesystem::path dir_;
  FakeClock clock_;
  // The daemon's message length rules (app::MessageLimitsFor): core has none of its own.
  EngineOptions options_ = [] {
    EngineOptions o;
    o.message_limit = app::MessageLimitsFor(Config{});
    return o;
  }();
  ScriptedAssessor assessor_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<Views> views_;  // the read face (views.h)
};

}  // namespace superagent::testing

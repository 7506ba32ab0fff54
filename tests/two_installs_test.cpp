// Issue 34 item 6: branches and pull requests are the install's own. A second install of the
// daemon on the same repository (or this one after its data_dir was reset) numbers its Tickets
// from 1 too; here two installs — two data directories, two Engines — share one real git remote (a
// bare repository) and one loopback GitHub, both work their Ticket 1, and neither adopts nor
// overwrites what the other made.
#include <atomic>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "exec_fixture.h"
#include "fake_github_server.h"
#include "superagent/effects.h"
#include "superagent/github.h"
#include "sources/github/channel.h"
#include "superagent/text.h"
#include "superagent/worker.h"
#include "result_ok.h"

namespace superagent::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using nlohmann::json;

// The repository of the engine fixture's comments (github:acme/widgets:issue:N).
constexpr const char* kRepo = "acme/widgets";

// One install: its Engine (its own database), workspaces under its own root, its outbox and its
// GitHub channel, each carrying its install id.
struct Install {
  Engine* engine = nullptr;
  Views* views = nullptr;
  std::unique_ptr<Engine> owned;  // the second install's; the first is the fixture's engine_
  std::unique_ptr<Views> owned_views;
  std::string id;
  std::unique_ptr<exec::Workspaces> workspaces;
  std::unique_ptr<exec::WorkerServices> services;
  std::unique_ptr<github::GitHubChannel> channel;
  std::unique_ptr<EffectsLoop> effects;
};

class TwoInstallsTest : public ExecTest {
 protected:
  void SetUp() override {
    ExecTest::SetUp();
    github_ = std::make_unique<FakeGitHub>(&clock_);
    github_->issues[1] = WebhookExample("issue_comment", "created")["issue"];
    github_->repo = kRepo;
    github_->repo_info = {{"full_name", kRepo}, {"default_branch", "main"}};
    http_ = MakeHttpClient("superagent-test");
    github::ClientOptions o;
    o.api_url = github_->url();
    o.token = "t";
    client_ = std::make_unique<github::Client>(http_.get(), &clock_, [this](TimeMs ms) { clock_.Advance(ms); }, o);
    a_.engine = engine_.get();
    a_.views = views_.get();
    auto b = Engine::Open((dir_ / "b.db").string(), &clock_, MakePolicy("observe"), "test-policy.yaml", options_);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    b_.owned = std::move(*b);
    b_.engine = b_.owned.get();
    b_.owned_views = Ok(Views::Open((dir_ / "b.db").string()));
    b_.views = b_.owned_views.get();
    Wire(&a_, "a");
    Wire(&b_, "b");
    ASSERT_NE(a_.id, b_.id) << "each database makes its own install id";
  }
  void TearDown() override {
    for (Install* i : {&a_, &b_}) {
      i->effects.reset();
      i->channel.reset();
      i->services.reset();
      i->workspaces.reset();
      i->owned_views.reset();
      i->owned.reset();
    }
    client_.reset();
    github_.reset();
    ExecTest::TearDown();
  }

  void Wire(Install* i, const std::string& name) {
    i->id = Ok(i->views->InstallId());
    exec::WorkspaceOptions wo;
    wo.root = (dir_ / ("work-" + name)).string();
    wo.remote = origin_.string();
    wo.repo = kRepo;
    wo.install_id = i->id;
    i->workspaces = std::make_unique<exec::Workspaces>(wo, runner_.get(), &exec_clock_, sleeper_);
    i->services = std::make_unique<exec::WorkerServices>(i->engine, i->workspaces.get());
    github::ChannelOptions co;
    co.install_id = i->id;
    i->channel = std::make_unique<github::GitHubChannel>(client_.get(), kRepo, co);
    i->effects = std::make_unique<EffectsLoop>(i->engine, std::vector<Channel*>{i->channel.get()}, &clock_);
  }

  // alice's request on issue 1, accepted by `i`'s Eval: that install's Ticket.
  TicketId Accept(Install& i, const std::string& comment) {
    auto r = i.engine->Receive(Comment(comment, "alice", true, "@agent please fix the typo in README"), "test");
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    assessor_.answers.push_back(ScriptedAssessor::Accept());
    auto ran = RunOneEval(*i.engine, assessor_);
    EXPECT_TRUE(ran.ok() && *ran);
    return Ok(i.views->Explain(comment, i.engine->CurrentPolicy(), clock_.NowMs()))["ticket_created"]["id"].get<TicketId>();
  }

  // Runs `i`'s due turns with a command executor that runs `command` and reports ready with a PR.
  void Turn(Install& i, const std::string& command, const std::string& title) {
    auto executor = exec::MakeCommandExecutor(
        {command + " && echo '{\"stage\":\"ready\",\"summary\":\"Fixed it.\",\"question\":null,\"pr\":{\"title\":\"" + title +
         "\",\"body\":\"Fixes #1.\"}}'"},
        i.engine);
    exec::SchedulerOptions so;
    so.jobs_dir = (dir_ / ("jobs-" + i.id)).string();
    std::filesystem::create_directories(so.jobs_dir);
    exec::Scheduler s(i.engine, i.views, i.workspaces.get(), executor.get(), i.services.get(), runner_.get(), &exec_clock_,
                      sleeper_, so);
    ASSERT_TRUE(s.Tick().ok());
    s.WaitForTurns();
    ASSERT_TRUE(s.Tick().ok());
  }

  void Deliver(Install& i) {
    for (int n = 0; n < 10; ++n) {
      auto done = i.effects->RunOnce();
      ASSERT_TRUE(done.ok()) << done.status().ToString();
      if (*done == 0) return;
    }
  }

  bool OnOriginExists(const std::string& branch) {
    return std::system(("git -C " + origin_.string() + " rev-parse -q --verify refs/heads/" + branch + " >/dev/null")
                           .c_str()) == 0;
  }
  std::string TipOnOrigin(const std::string& branch) {
    return text::Trim(Sh("git -C " + origin_.string() + " rev-parse refs/heads/" + branch));
  }
  // Writes `text` into `file` of the Ticket's directory, as a worker would.
  static void Write(const WorkspaceRecord& w, const std::string& file, const std::string& text) {
    std::ofstream(std::filesystem::path(w.dir) / file) << text;
  }

  std::unique_ptr<FakeGitHub> github_;
  std::unique_ptr<HttpClient> http_;
  std::unique_ptr<github::Client> client_;
  Install a_, b_;
};

TEST_F(TwoInstallsTest, BothWorkTicketOneEachOnItsOwnBranchAndPullRequest) {
  const TicketId ta = Accept(a_, "c-a");
  const TicketId tb = Accept(b_, "c-b");
  ASSERT_EQ(ta, 1);
  ASSERT_EQ(tb, 1) << "the second install numbers its Tickets from 1 too";

  Turn(a_, "sed -i 's/teh typo/the typo/' README.md", "Fix the typo (A)");
  Turn(b_, "sed -i 's/teh typo/the typo — 修好了 ✅/' README.md", "修正拼写 (B)");
  const std::string branch_a = "superagent/" + a_.id.substr(0, 12) + "/ticket-1";
  const std::string branch_b = "superagent/" + b_.id.substr(0, 12) + "/ticket-1";
  ASSERT_EQ(Ok(a_.views->WorkspaceFor(ta))->branch, branch_a);
  ASSERT_EQ(Ok(b_.views->WorkspaceFor(tb))->branch, branch_b);
  EXPECT_EQ(a_.views->GetTicket(ta)->stage, Stage::kReady);
  EXPECT_EQ(b_.views->GetTicket(tb)->stage, Stage::kReady);
  EXPECT_EQ(OnOrigin(branch_a, "README.md"), "Hello\nThere is the typo.\n");
  EXPECT_EQ(OnOrigin(branch_b, "README.md"), "Hello\nThere is the typo — 修好了 ✅.\n");
  EXPECT_FALSE(OnOriginExists("superagent/ticket-1")) << "no install uses the bare ticket name";
  EXPECT_EQ(OnOrigin("main", "README.md"), "Hello\nThere is teh typo.\n");

  Deliver(a_);
  Deliver(b_);
  ASSERT_EQ(github_->pulls.size(), 2u) << "each install opened its own pull request";
  std::map<std::string, json> by_head;
  for (const auto& [number, pr] : github_->pulls) by_head[pr["head"]["ref"].get<std::string>()] = pr;
  ASSERT_TRUE(by_head.count(branch_a) && by_head.count(branch_b));
  EXPECT_THAT(by_head[branch_a]["body"].get<std::string>(),
              HasSubstr(github::ReceiptMarker(a_.id.substr(0, 12) + "/pr:ticket:1")));
  EXPECT_THAT(by_head[branch_b]["body"].get<std::string>(),
              HasSubstr(github::ReceiptMarker(b_.id.substr(0, 12) + "/pr:ticket:1")));
  const auto pulls_a = Ok(a_.views->TicketPulls(ta));
  const auto pulls_b = Ok(b_.views->TicketPulls(tb));
  ASSERT_EQ(pulls_a.size(), 1u);
  ASSERT_EQ(pulls_b.size(), 1u);
  EXPECT_EQ(pulls_a[0].number, by_head[branch_a]["number"].get<std::int64_t>());
  EXPECT_EQ(pulls_b[0].number, by_head[branch_b]["number"].get<std::int64_t>());
  EXPECT_NE(pulls_a[0].number, pulls_b[0].number);

  // A second turn of each pushes over its own branch again; the other's stays as it was.
  const std::string b_before = TipOnOrigin(branch_b);
  ASSERT_TRUE(a_.engine->Receive(Comment("c-a2", "alice", false, "Also add a line, please."), "test").ok());
  ASSERT_EQ(Ok(a_.engine->AssignFollowUps()), 1);
  Turn(a_, "printf 'More.\\n' >> README.md", "Fix the typo (A)");
  EXPECT_EQ(OnOrigin(branch_a, "README.md"), "Hello\nThere is the typo.\nMore.\n");
  EXPECT_EQ(TipOnOrigin(branch_b), b_before);
  EXPECT_EQ(github_->pulls.size(), 2u);
}

// Tickets from before the branch names carried the install id keep their recorded branch — so
// two upgraded installs may still both have "superagent/ticket-1". The push is then the guard: it
// never replaces a branch whose tip this install did not push.
TEST_F(TwoInstallsTest, APushNeverReplacesABranchThisInstallDidNotPush) {
  const std::string legacy = "superagent/ticket-1";
  auto wa = a_.workspaces->Prepare(1, nullptr, legacy);
  auto wb = b_.workspaces->Prepare(1, nullptr, legacy);
  ASSERT_TRUE(wa.ok()) << wa.status().ToString();
  ASSERT_TRUE(wb.ok()) << wb.status().ToString();
  EXPECT_EQ(wa->branch, legacy);

  // A pushes first: the branch is new on the remote.
  Write(*wa, "a.txt", "A's work\n");
  ASSERT_TRUE(a_.workspaces->TakeCommits(*wa, {}, "A: first").ok());
  ASSERT_TRUE(a_.workspaces->Push(*wa).ok());
  const std::string a_tip = TipOnOrigin(legacy);

  // B's commits do not contain A's: refused in the daemon's words, A's branch untouched.
  Write(*wb, "b.txt", "B 的工作 🚧\n");
  ASSERT_TRUE(b_.workspaces->TakeCommits(*wb, {}, "B: first").ok());
  Status refused = b_.workspaces->Push(*wb);
  ASSERT_EQ(refused.code(), Status::Code::kConflict) << refused.ToString();
  EXPECT_THAT(refused.message(), HasSubstr("the branch superagent/ticket-1 on the remote has commits this install did not push"));
  EXPECT_THAT(refused.message(), HasSubstr(a_tip.substr(0, 12)));
  EXPECT_THAT(refused.message(), Not(HasSubstr("error:")));  // not git's output
  EXPECT_THAT(refused.message(), Not(HasSubstr("hint:")));
  EXPECT_EQ(TipOnOrigin(legacy), a_tip);
  EXPECT_EQ(OnOrigin(legacy, "a.txt"), "A's work\n");

  // A goes on: its own tip is replaced freely (here a fast-forward).
  Write(*wa, "a.txt", "A's work, more\n");
  ASSERT_TRUE(a_.workspaces->TakeCommits(*wa, {}, "A: second").ok());
  ASSERT_TRUE(a_.workspaces->Push(*wa).ok());
  // A's workspace removed and prepared again (a Ticket reopened): a new history from the base
  // replaces the branch A pushed last — not a fast-forward, and still A's to replace.
  ASSERT_TRUE(a_.workspaces->Remove(*wa).ok());
  wa = a_.workspaces->Prepare(1, nullptr, legacy);
  ASSERT_TRUE(wa.ok()) << wa.status().ToString();
  Write(*wa, "a.txt", "A again\n");
  ASSERT_TRUE(a_.workspaces->TakeCommits(*wa, {}, "A: again").ok());
  ASSERT_TRUE(a_.workspaces->Push(*wa).ok());
  EXPECT_EQ(OnOrigin(legacy, "a.txt"), "A again\n");

  // A person adds a commit to A's branch: A's next push, which does not contain it, is refused.
  const std::string clone = (dir_ / "person").string();
  Sh("git clone -q -b " + legacy + " " + origin_.string() + " " + clone + " && cd " + clone +
     " && printf 'by hand\\n' > person.txt && git add person.txt && git -c user.name=p -c user.email=p@p commit -q -m "
     "'a person' && git push -q origin HEAD:" + legacy);
  const std::string person_tip = TipOnOrigin(legacy);
  Write(*wa, "a.txt", "A once more\n");
  ASSERT_TRUE(a_.workspaces->TakeCommits(*wa, {}, "A: once more").ok());
  EXPECT_EQ(a_.workspaces->Push(*wa).code(), Status::Code::kConflict);
  EXPECT_EQ(TipOnOrigin(legacy), person_tip);
}

// The lease is what this install pushed last, so the usual push asks the remote once — a round
// trip to GitHub each turn saved — and only a refused lease makes it look (ls-remote) before it
// decides. Each remote command asks for credentials once, which is what is counted here.
TEST_F(TwoInstallsTest, AUsualPushAsksTheRemoteOnceAndOnlyARefusedLeaseLooksFirst) {
  std::atomic<int> asked{0};
  exec::WorkspaceOptions wo = a_.workspaces->options();
  wo.git_env_source = [&asked]() -> Result<std::vector<std::pair<std::string, std::string>>> {
    ++asked;
    return std::vector<std::pair<std::string, std::string>>{};
  };
  exec::Workspaces workspaces(wo, runner_.get(), &exec_clock_, sleeper_);
  auto w = workspaces.Prepare(1);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  for (const char* text : {"first\n", "second, 第二 🚀\n"}) {
    Write(*w, "a.txt", text);
    ASSERT_TRUE(workspaces.TakeCommits(*w, {}, "work").ok());
    asked = 0;
    ASSERT_TRUE(workspaces.Push(*w).ok());
    EXPECT_EQ(asked, 1) << "one push, nothing asked before it";
    EXPECT_EQ(OnOrigin(w->branch, "a.txt"), text);
  }
  // A person's commit on the branch: the lease is refused, the remote is read, nothing replaced.
  const std::string clone = (dir_ / "person").string();
  Sh("git clone -q -b " + w->branch + " " + origin_.string() + " " + clone + " && cd " + clone +
     " && printf 'by hand\\n' > person.txt && git add person.txt && git -c user.name=p -c user.email=p@p commit -q "
     "-m 'a person' && git push -q origin HEAD:" + w->branch);
  const std::string person_tip = TipOnOrigin(w->branch);
  Write(*w, "a.txt", "third\n");
  ASSERT_TRUE(workspaces.TakeCommits(*w, {}, "work").ok());
  asked = 0;
  EXPECT_EQ(workspaces.Push(*w).code(), Status::Code::kConflict);
  EXPECT_EQ(asked, 2) << "the refused push, then ls-remote; no second push";
  EXPECT_EQ(TipOnOrigin(w->branch), person_tip);
}

// The daemon's own process starts on a usual turn's way, each git run by its subcommand and a
// sandboxed script as "sandbox" (what runs inside it is the worker's side). Pinned because each
// costs a process start (2-5 ms, docs/008 §10), and because the runs that reach the remote must
// get the credentials and the others must not.
class CountingRunner : public exec::ProcessRunner {
 public:
  explicit CountingRunner(exec::ProcessRunner* inner) : inner_(inner) {}
  Result<std::unique_ptr<exec::Process>> Spawn(const exec::ProcessSpec& spec) override {
    std::string what = spec.worker ? "sandbox" : spec.argv.empty() ? "" : spec.argv[0];
    if (!spec.worker && what == "git")
      for (std::size_t i = 1; i < spec.argv.size(); ++i) {
        if (spec.argv[i] == "-c") {
          ++i;
        } else if (spec.argv[i].rfind("-", 0) != 0) {
          what = spec.argv[i];
          break;
        }
      }
    started.push_back(what);
    return inner_->Spawn(spec);
  }
  std::vector<std::string> started;

 private:
  exec::ProcessRunner* inner_;
};

TEST_F(TwoInstallsTest, AUsualTurnRunsFewProcessesAndOnlyTheRemoteOnesHaveTheToken) {
  CountingRunner counting(runner_.get());
  int asked = 0;  // how often the credentials were handed out
  exec::WorkspaceOptions wo = a_.workspaces->options();
  exec::Workspaces workspaces(wo, &counting, &exec_clock_, sleeper_);
  ASSERT_TRUE(workspaces.Prepare(1).ok()) << "the first makes the mirror and verified.git";
  wo.git_env_source = [&]() -> Result<std::vector<std::pair<std::string, std::string>>> {
    ++asked;
    return std::vector<std::pair<std::string, std::string>>{};
  };
  exec::Workspaces counted(wo, &counting, &exec_clock_, sleeper_);
  counting.started.clear();
  auto w = counted.Prepare(2);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  // The fetch; one listing for the refs to drop and the default branch's tip; one update for the
  // drops and the base; the Ticket's repository made in its sandbox.
  EXPECT_THAT(counting.started, ::testing::ElementsAre("fetch", "for-each-ref", "update-ref", "sandbox"));
  EXPECT_EQ(asked, 1) << "the fetch alone is given the credentials";
  Write(*w, "说明.md", "第一 🚀\n");
  counting.started.clear();
  asked = 0;
  auto v = counted.TakeCommits(*w, {}, "work");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->ahead, 1);
  // Committed and bundled in the sandbox; fetched into verified.git (the base read from the ref
  // file the prepare wrote); checked: ancestry and count, the changes, their sizes.
  EXPECT_THAT(counting.started, ::testing::ElementsAre("sandbox", "fetch", "rev-list", "diff-tree", "cat-file"));
  EXPECT_EQ(asked, 0) << "a fetch from the worker's bundle reaches no remote: no credentials";
  counting.started.clear();
  asked = 0;
  ASSERT_TRUE(counted.Push(*w).ok());
  EXPECT_THAT(counting.started, ::testing::ElementsAre("push")) << "the lease and its record are git's";
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(OnOrigin(w->branch, "说明.md"), "第一 🚀\n");
  // A second turn on the same branch: the lease is the push git recorded, so again one run.
  Write(*w, "说明.md", "第二\n");
  ASSERT_TRUE(counted.TakeCommits(*w, {}, "more").ok());
  counting.started.clear();
  ASSERT_TRUE(counted.Push(*w).ok());
  EXPECT_THAT(counting.started, ::testing::ElementsAre("push"));
  EXPECT_EQ(OnOrigin(w->branch, "说明.md"), "第二\n");
  // A Ticket whose turn changed nothing: no bundle (the script says so by its exit status, git
  // having refused an empty one), nothing fetched, nothing verified, nothing to push.
  auto idle = counted.Prepare(3);
  ASSERT_TRUE(idle.ok()) << idle.status().ToString();
  counting.started.clear();
  auto none = counted.TakeCommits(*idle, {}, "nothing");
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_EQ(none->ahead, 0);
  EXPECT_TRUE(none->tip.empty());
  EXPECT_THAT(counting.started, ::testing::ElementsAre("sandbox", "update-ref"));
  EXPECT_EQ(counted.Push(*idle).code(), Status::Code::kConflict) << "no verified commits to push";
}

// After an upgrade nothing records what the older daemon pushed: the branch it pushed is still
// taken over when the new commits contain its tip (a fast-forward loses nothing).
TEST_F(TwoInstallsTest, ABranchPushedBeforeTheUpgradeIsStillTheTicketsOwn) {
  const std::string legacy = "superagent/ticket-1";
  auto w = a_.workspaces->Prepare(1, nullptr, legacy);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  Write(*w, "a.txt", "before the upgrade\n");
  ASSERT_TRUE(a_.workspaces->TakeCommits(*w, {}, "before").ok());
  ASSERT_TRUE(a_.workspaces->Push(*w).ok());
  // Forget the record, as a daemon from before issue 34 never made one.
  Sh("git -C " + (dir_ / "work-a" / "verified.git").string() + " update-ref -d refs/superagent/pushed/" + legacy);
  Write(*w, "a.txt", "after the upgrade\n");
  ASSERT_TRUE(a_.workspaces->TakeCommits(*w, {}, "after").ok());
  Status pushed = a_.workspaces->Push(*w);
  EXPECT_TRUE(pushed.ok()) << pushed.ToString();
  EXPECT_EQ(OnOrigin(legacy, "a.txt"), "after the upgrade\n");
}

// The pull request side: GitHub answers "already exists" for a head another install (or a person)
// opened a pull request from. It is adopted only when it carries this install's marker for this
// Ticket; anyone else's is left alone and the Ticket is told why.
TEST_F(TwoInstallsTest, AnExistingPullRequestIsAdoptedOnlyWithThisInstallsMarkerForThisTicket) {
  auto open = [&](Install& i, std::int64_t effect, const std::string& key, const std::string& head) {
    Effect e;
    e.id = effect;
    e.kind = "open_pull_request";
    e.payload = {{"channel", "github:acme/widgets"}, {"idempotency_key", key}, {"head", head}, {"base", "main"},
                 {"title", "修正拼写"}, {"body", "Fixes #1."}};
    return i.channel->Perform(e, false);
  };
  Delivery a = open(a_, 1, "pr:ticket:1", "superagent/ticket-1");
  ASSERT_EQ(a.outcome, Delivery::Outcome::kDone) << a.error;
  ASSERT_EQ(github_->pulls.size(), 1u);

  // B's Ticket 1 from the same (legacy) head: not B's, not adopted.
  Delivery b = open(b_, 1, "pr:ticket:1", "superagent/ticket-1");
  EXPECT_EQ(b.outcome, Delivery::Outcome::kFailed);
  EXPECT_THAT(b.error, HasSubstr("a pull request from superagent/ticket-1 already exists (#" + a.external_id +
                                 ") and was not opened by this install for this Ticket"));
  // A's own Ticket 2 from that head: A's install, another Ticket's marker — not adopted either.
  Delivery a2 = open(a_, 2, "pr:ticket:2", "superagent/ticket-1");
  EXPECT_EQ(a2.outcome, Delivery::Outcome::kFailed);
  // A's Ticket 1 again (an attempt whose answer was lost): its own, recorded.
  Delivery again = open(a_, 3, "pr:ticket:1", "superagent/ticket-1");
  ASSERT_EQ(again.outcome, Delivery::Outcome::kDone) << again.error;
  EXPECT_EQ(again.external_id, a.external_id);
  // A person's pull request from a branch of that name is never taken either.
  json person = github_->MakePull(7, "octocat", "my own work", "c0ffee", 1, 1);
  person["head"]["label"] = "acme:superagent/ticket-9";
  person["state"] = "open";
  github_->pulls[7] = person;
  Delivery c = open(b_, 4, "pr:ticket:9", "superagent/ticket-9");
  EXPECT_EQ(c.outcome, Delivery::Outcome::kFailed);
  EXPECT_THAT(c.error, HasSubstr("(#7)"));
  EXPECT_EQ(github_->pulls.size(), 2u);
}

}  // namespace
}  // namespace superagent::testing

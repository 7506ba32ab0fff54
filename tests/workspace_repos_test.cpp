// Issue 37, a Ticket across repositories, in its workspaces: the Mandate's other repository is a
// repository of its own inside the Ticket's directory, made in the sandbox; each repository's
// branch is taken, verified and pushed apart, to its own remote; and a worker that bends the path
// with a link reaches nothing outside its sandbox, neither when the workspace is made nor removed.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "app/config.h"
#include "app/wiring.h"
#include "exec_fixture.h"
#include "result_ok.h"
#include "superagent/sandbox.h"

namespace superagent::testing {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

class WorkspaceReposTest : public ExecTest {
 protected:
  void SetUp() override {
    ExecTest::SetUp();
    other_origin_ = dir_ / "api.git";
    const std::string seed = (dir_ / "seed-api").string();
    Sh("git init -q -b trunk " + seed + " && cd " + seed +
       " && printf 'api: teh field\\n' > API.md && git add -A && git -c user.name=t -c user.email=t@t commit -q -m init"
       " && git clone -q --bare . " + other_origin_.string());
    Config config;
    config.data_dir = dir_.string();
    ro_.sandbox = app::SandboxPolicyFor(config);
    auto decision = exec::DecideSandbox("on", exec::ProbeSandbox(ro_.sandbox));
    ASSERT_TRUE(decision.ok()) << "this suite needs a host that can sandbox: " << decision.status().ToString();
    ro_.sandbox.enabled = decision->enabled;
    sleeper_ = [this](TimeMs ms) {
      exec_clock_.Advance(ms);
      std::this_thread::sleep_for(std::chrono::milliseconds(std::max<TimeMs>(1, ms / 4)));
    };
    services_.reset();
    workspaces_.reset();
    runner_ = exec::MakePosixProcessRunner(ro_);
    exec::WorkspaceOptions wo;
    wo.root = (dir_ / "work").string();
    wo.remote = origin_.string();
    wo.repo = "acme/widgets";
    wo.other_remotes = {{"acme/api", other_origin_.string()}};
    workspaces_ = std::make_unique<exec::Workspaces>(wo, runner_.get(), &exec_clock_, sleeper_);
    services_ = std::make_unique<exec::WorkerServices>(engine_.get(), workspaces_.get());
  }

  // A Ticket with its own workspace and acme/api's inside it.
  exec::WorkerTask Task() {
    exec::WorkerTask t;
    t.ticket = AcceptedTicket("c1");
    t.workspace = Ok(workspaces_->Prepare(t.ticket));
    t.other_workspaces = {Ok(workspaces_->PrepareAlso(t.workspace, "acme/api"))};
    return t;
  }
  // `script` as the worker's shell runs it: sandboxed, seeing every repository of its Ticket.
  std::string Worker(const exec::WorkerTask& t, const std::string& script, int want_exit = 0) {
    fs::create_directories(dir_ / "jobs");
    exec::Jobs jobs(runner_.get(), &exec_clock_, sleeper_, (dir_ / "jobs").string(),
                    workspaces_->ScopeFor(t.ticket, std::vector<std::string>{"acme/widgets", "acme/api"}));
    if (!t.other_workspaces.empty()) {
      EXPECT_EQ(workspaces_->ScopeFor(t.ticket, std::vector<std::string>{"acme/widgets", "acme/api"}).readable.size(), 2u)
          << "both mirrors shown";
    }
    auto r = jobs.Run(script, t.workspace.dir, "", 60'000);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return "";
    EXPECT_EQ(r->exit_code, want_exit) << script << "\n" << r->out << r->err;
    return r->out + r->err;
  }
  std::string OnOtherOrigin(const std::string& branch, const std::string& path) {
    return Sh("git -C " + other_origin_.string() + " show " + branch + ":" + path);
  }

  exec::PosixRunnerOptions ro_;
  fs::path other_origin_;
};

TEST_F(WorkspaceReposTest, TheOtherRepositoryIsItsOwnRepositoryInsideTheTicketsAndEachIsPushedApart) {
  exec::WorkerTask t = Task();
  const WorkspaceRecord& api = t.other_workspaces[0];
  EXPECT_EQ(api.dir, t.workspace.dir + "/.superagent-repos/acme/api");
  EXPECT_EQ(api.branch, t.workspace.branch) << "one branch name in every repository";
  EXPECT_EQ(api.base, "origin/trunk") << "its own default branch";
  EXPECT_EQ(api.repo, "acme/api");
  // The worker changes both, committing in acme/api itself and leaving the Ticket's own uncommitted.
  Worker(t, "sed -i 's/teh/the/' README.md && cd .superagent-repos/acme/api && sed -i 's/teh/the/' API.md && "
            "git add -A && git commit -q -m 'Fix the field'");

  auto own = workspaces_->TakeCommits(t.workspace, {}, "Fix the typo");
  ASSERT_TRUE(own.ok()) << own.status().ToString();
  EXPECT_EQ(own->files, std::vector<std::string>{"README.md"}) << "the other repository is not the Ticket's own change";
  auto other = workspaces_->TakeCommits(api, {}, "Fix the field");
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  EXPECT_EQ(other->files, std::vector<std::string>{"API.md"});
  EXPECT_EQ(other->ahead, 1);

  // Through WorkerServices, as a ready report's pull request: both pushed, one action each.
  auto actions = services_->PreparePullRequests(t, {"Rename the field", "重命名 🚀", {}});
  ASSERT_TRUE(actions.ok()) << actions.status().ToString();
  ASSERT_EQ(actions->size(), 2u);
  EXPECT_EQ((*actions)[0]["channel"], "github:acme/widgets");
  EXPECT_EQ((*actions)[0]["idempotency_key"], "pr:ticket:" + std::to_string(t.ticket));
  EXPECT_EQ((*actions)[0]["base"], "main");
  EXPECT_EQ((*actions)[1]["channel"], "github:acme/api");
  EXPECT_EQ((*actions)[1]["idempotency_key"], "pr:ticket:" + std::to_string(t.ticket) + ":acme/api");
  EXPECT_EQ((*actions)[1]["base"], "trunk");
  EXPECT_THAT((*actions)[1]["body"].get<std::string>(),
              HasSubstr("重命名 🚀\n\nPart of one change across repositories (acme/widgets, acme/api), Ticket #" +
                        std::to_string(t.ticket)));
  EXPECT_EQ(OnOrigin(t.workspace.branch, "README.md"), "Hello\nThere is the typo.\n");
  EXPECT_EQ(OnOtherOrigin(api.branch, "API.md"), "api: the field\n");
  EXPECT_NE(Sh("git -C " + origin_.string() + " ls-tree -r --name-only " + t.workspace.branch), "")
      << "the branch exists";
  EXPECT_THAT(Sh("git -C " + origin_.string() + " ls-tree -r --name-only " + t.workspace.branch),
              ::testing::Not(HasSubstr(".superagent-repos")));

  // A later turn changing acme/api again: both asked for again under the same keys (the same
  // pull requests, one of them with a new push).
  Worker(t, "cd .superagent-repos/acme/api && echo more >> API.md");
  actions = services_->PreparePullRequests(t, {"Rename the field", "", {}});
  ASSERT_TRUE(actions.ok()) << actions.status().ToString();
  ASSERT_EQ(actions->size(), 2u);
  EXPECT_EQ((*actions)[1]["idempotency_key"], "pr:ticket:" + std::to_string(t.ticket) + ":acme/api");
  EXPECT_EQ(OnOtherOrigin(api.branch, "API.md"), "api: the field\nmore\n");

  // commit_and_push (the built-in worker's mid-turn push) pushes every repository that changed.
  Worker(t, "cd .superagent-repos/acme/api && echo again >> API.md");
  auto ahead = services_->CommitAndPush(t, "More of the field");
  ASSERT_TRUE(ahead.ok()) << ahead.status().ToString();
  EXPECT_EQ(OnOtherOrigin(api.branch, "API.md"), "api: the field\nmore\nagain\n");
  // A refusal in the other repository names it (a link out of its tree).
  Worker(t, "cd .superagent-repos/acme/api && ln -s /etc/passwd leak");
  ahead = services_->CommitAndPush(t, "Leak");
  ASSERT_FALSE(ahead.ok());
  EXPECT_THAT(ahead.status().message(), HasSubstr("acme/api: "));
  EXPECT_EQ(OnOtherOrigin(api.branch, "API.md"), "api: the field\nmore\nagain\n") << "nothing more pushed";

  // Removed: refs go, and the files go with the Ticket's directory.
  ASSERT_TRUE(workspaces_->Remove(api).ok());
  EXPECT_TRUE(fs::exists(api.dir)) << "the other repository's files are the Ticket's directory's to remove";
  ASSERT_TRUE(workspaces_->Remove(t.workspace).ok());
  EXPECT_FALSE(fs::exists(t.workspace.dir));
}

TEST_F(WorkspaceReposTest, ARepositoryItDoesNotKnowIsRefusedAndNothingIsMade) {
  exec::WorkerTask t;
  t.ticket = AcceptedTicket("c1");
  t.workspace = Ok(workspaces_->Prepare(t.ticket));
  for (const std::string repo : {"acme/secret", "../x", "acme/widgets", ""}) {
    auto w = workspaces_->PrepareAlso(t.workspace, repo);
    EXPECT_FALSE(w.ok()) << repo;
  }
  EXPECT_FALSE(fs::exists(fs::path(t.workspace.dir) / ".superagent-repos"));
}

// A worker that turns the other repositories' directory into a link out of its tree, before the
// workspace is made and before it is removed: the daemon follows no such path.
TEST_F(WorkspaceReposTest, ALinkTheWorkerLeavesLeadsNowhereWhenMakingOrRemoving) {
  exec::WorkerTask t;
  t.ticket = AcceptedTicket("c1");
  t.workspace = Ok(workspaces_->Prepare(t.ticket));
  const fs::path outside = dir_ / "outside";
  fs::create_directories(outside / "acme" / "api");
  std::ofstream(outside / "acme" / "api" / "keep") << "the daemon's own file\n";
  Worker(t, "ln -s " + outside.string() + " .superagent-repos");
  // Whatever the link makes of the workspace, it is the Ticket's own loss: inside the sandbox the
  // link leads to a private /tmp, and the daemon's own checks only read through it.
  auto made = workspaces_->PrepareAlso(t.workspace, "acme/api");
  std::vector<std::string> left;
  for (const auto& e : fs::recursive_directory_iterator(outside)) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"acme", "api", "keep"})) << "nothing made, nothing removed outside";
  if (made.ok()) {
    auto taken = workspaces_->TakeCommits(*made, {}, "x");
    EXPECT_TRUE(!taken.ok() || taken->ahead == 0) << "nothing of it can be pushed";
  }
  EXPECT_NE(std::system(("git -C " + other_origin_.string() + " rev-parse -q --verify refs/heads/" + t.workspace.branch +
                         " >/dev/null 2>&1")
                            .c_str()),
            0);

  WorkspaceRecord api = t.workspace;
  api.repo = "acme/api";
  api.dir = workspaces_->DirFor(t.ticket, "acme/api");
  ASSERT_TRUE(workspaces_->Remove(api).ok());
  EXPECT_TRUE(fs::exists(outside / "acme" / "api" / "keep")) << "removing follows no link the worker made";
  ASSERT_TRUE(workspaces_->Remove(t.workspace).ok());
  EXPECT_TRUE(fs::exists(outside / "acme" / "api" / "keep"));
}

}  // namespace
}  // namespace superagent::testing

// A worker's output is inert data (issue 33): whatever a worker leaves in its repository — a nested
// repository with a clean filter, hooks, config that names programs, links out of the tree, a
// branch from elsewhere, a change to CI — no program of its runs outside its sandbox, and only
// commits the daemon verified apart from it are pushed. Real git, the real bubblewrap sandbox.
//
// The attacks write a marker into the test's own directory, which stands for the daemon's
// data_dir: invisible inside the sandbox, so a marker that appears there was written by a program
// that ran outside it — as each of these did before the daemon stopped running git in the
// Ticket's directory.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "app/config.h"
#include "app/wiring.h"
#include "exec_fixture.h"
#include "superagent/views.h"
#include "superagent/exec.h"
#include "superagent/scheduler.h"
#include "superagent/sandbox.h"
#include "superagent/worker.h"

namespace superagent::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class HostileCommitsTest : public ExecTest {
 protected:
  void SetUp() override {
    ExecTest::SetUp();
    Config config;
    config.data_dir = dir_.string();
    exec::PosixRunnerOptions ro;
    ro.sandbox = app::SandboxPolicyFor(config);
    auto decision = exec::DecideSandbox("on", exec::ProbeSandbox(ro.sandbox));
    ASSERT_TRUE(decision.ok()) << "this suite needs a host that can sandbox: " << decision.status().ToString();
    ro.sandbox.enabled = decision->enabled;
    // Polls advance the exec clock by their length and take a quarter of it in real time: a
    // sandboxed git on a loaded machine finishes well within its limits.
    sleeper_ = [this](TimeMs ms) {
      exec_clock_.Advance(ms);
      std::this_thread::sleep_for(std::chrono::milliseconds(std::max<TimeMs>(1, ms / 4)));
    };
    UseRunner(ro);
    marker_ = (dir_ / "PWNED").string();
  }

  // A Ticket whose workspace is prepared, with the task its worker gets.
  exec::WorkerTask Task(const std::string& comment_id, const std::string& request = "", int issue = 1) {
    TicketId id = 0;
    if (request.empty()) {
      id = AcceptedTicket(comment_id, issue);
    } else {
      Receive(Comment(comment_id, "alice", true, request, issue));
      assessor_.answers.push_back(ScriptedAssessor::Accept());
      EXPECT_EQ(Drain(), 1);
      auto story = ExplainNow(comment_id);
      id = story.ok() && story->contains("ticket_created") ? (*story)["ticket_created"]["id"].get<TicketId>() : 0;
    }
    exec::WorkerTask t;
    t.ticket = id;
    t.request_text = request.empty() ? "@agent please fix the typo in README" : request;
    auto mandate = views_->GetMandate(id);
    EXPECT_TRUE(mandate.ok());
    if (mandate.ok()) t.mandate = *mandate;
    auto w = workspaces_->Prepare(id);
    EXPECT_TRUE(w.ok()) << w.status().ToString();
    if (w.ok()) t.workspace = *w;
    return t;
  }

  // Runs `script` as the worker's shell does: in the Ticket's sandbox, in its directory.
  std::string Worker(const exec::WorkerTask& t, const std::string& script) {
    exec::Jobs jobs(runner_.get(), &exec_clock_, sleeper_, (dir_ / "jobs").string(), workspaces_->ScopeFor(t.ticket));
    std::filesystem::create_directories(dir_ / "jobs");
    auto r = jobs.Run(script, t.workspace.dir, "", 60'000);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return "";
    EXPECT_EQ(r->exit_code, 0) << script << "\n" << r->out << r->err;
    return r->out + r->err;
  }

  bool OnOriginBranch(const exec::WorkerTask& t) {
    return std::system(("git -C " + origin_.string() + " rev-parse -q --verify refs/heads/" + t.workspace.branch +
                        " >/dev/null 2>&1")
                           .c_str()) == 0;
  }

  // A program the worker names: it leaves the marker wherever it runs that can see it.
  std::string Program() const { return "sh -c 'touch " + marker_ + "; cat'"; }

  std::string marker_;
};

// The attack of issue 33, verbatim: a nested repository whose config names a clean filter, named in
// its .gitattributes, with a file left modified. The daemon's `git add -A` / `git status` used to
// recurse into it and run the filter as the daemon. Now git runs in the sandbox (the filter may
// run there, seeing nothing), and the branch that would carry the nested repository as a gitlink
// is refused.
TEST_F(HostileCommitsTest, ANestedRepositoryWithAFilterRunsNothingOutsideAndIsNotPushed) {
  auto t = Task("c1");
  Worker(t, "git init -q sub && git -C sub config filter.x.clean \"" + Program() +
                "\" && printf '* filter=x\\n' > sub/.gitattributes && echo one > sub/f && "
                "git -C sub -c user.name=w -c user.email=w@w add -A && git -C sub -c user.name=w -c user.email=w@w commit -q -m x && "
                "echo two > sub/f && echo 'the work' > work.txt");
  // As a coding CLI's turn ends: is there a change (git status, which recurses into the nested
  // repository), then the commit; and status again, with the gitlink now in the branch.
  auto changed = workspaces_->HasChanges(t.workspace);
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_TRUE(*changed);
  auto pushed = services_->CommitAndPush(t, "Work");
  EXPECT_TRUE(workspaces_->HasChanges(t.workspace).ok());
  EXPECT_FALSE(std::filesystem::exists(marker_)) << "a program of the worker's ran outside its sandbox";
  ASSERT_FALSE(pushed.ok());
  EXPECT_EQ(pushed.status().code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(pushed.status().message(), HasSubstr("adds a submodule (gitlink) at \"sub\""));
  EXPECT_FALSE(OnOriginBranch(t));
}

// The same attack, and an fsmonitor program, through a whole turn of the `command` executor: its
// ready report asks for a PR,
// nothing of its runs outside, nothing is pushed, and the Ticket is blocked saying why.
TEST_F(HostileCommitsTest, TheCommandExecutorsNestedRepositoryBlocksTheTicketWithTheReason) {
  const TicketId id = AcceptedTicket("c1");
  auto executor = exec::MakeCommandExecutor(
      {"git init -q sub && git -C sub config filter.x.clean \"" + Program() +
       "\" && printf '* filter=x\\n' > sub/.gitattributes && echo one > sub/f && "
       "git -C sub -c user.name=w -c user.email=w@w add -A && git -C sub -c user.name=w -c user.email=w@w commit -q -m x && "
       "echo two > sub/f && printf '#!/bin/sh\\ntouch " + marker_ + "\\n' > \"$HOME/evil.sh\" && chmod +x \"$HOME/evil.sh\" && "
       "git config core.fsmonitor \"$HOME/evil.sh\" && "
       "echo '{\"stage\":\"ready\",\"summary\":\"完成 ✅\",\"pr\":{\"title\":\"Work\"}}'"},
      engine_.get());
  auto scheduler = MakeScheduler(executor.get());
  ASSERT_TRUE(scheduler->Tick().ok());
  scheduler->WaitForTurns();
  ASSERT_TRUE(scheduler->Tick().ok());
  EXPECT_FALSE(std::filesystem::exists(marker_)) << "a program of the worker's ran outside its sandbox";
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kBlocked);
  // The reason is the panel card's (issue 34); the discussion hears that the PR could not be opened.
  auto views = Views::Open((dir_ / "superagent.db").string());
  ASSERT_TRUE(views.ok());
  auto detail = (*views)->Detail(id);
  ASSERT_TRUE(detail.ok());
  EXPECT_THAT(detail->row.stage_reason, HasSubstr("adds a submodule (gitlink) at \"sub\""));
  auto story = ExplainNow("c1");
  ASSERT_TRUE(story.ok());
  EXPECT_THAT(story->dump(), HasSubstr("The pull request could not be opened"));
  EXPECT_NE(std::system(("git -C " + origin_.string() + " rev-parse -q --verify refs/heads/superagent/ticket-" +
                         std::to_string(id) + " >/dev/null 2>&1").c_str()),
            0);
}

// The worker's own repository is the worker's: hooks, an include of a file in the tree, config
// naming programs for ssh, diff, the pager and fsmonitor. Git runs them, if at all, in the
// sandbox; the commit and push still happen, and the work arrives.
TEST_F(HostileCommitsTest, HooksAndConfigInTheTicketsRepositoryRunNothingOutside) {
  auto t = Task("c1");
  Worker(t, "printf '#!/bin/sh\\ntouch " + marker_ + "\\ncat\\n' > \"$HOME/evil.sh\" && chmod +x \"$HOME/evil.sh\" && "
            "for h in pre-commit post-commit commit-msg prepare-commit-msg reference-transaction pre-push "
            "post-checkout pre-auto-gc; do cp \"$HOME/evil.sh\" .git/hooks/$h; done && "
            "for k in core.sshCommand diff.external core.pager core.fsmonitor core.editor gpg.program; do "
            "git config $k \"$HOME/evil.sh\"; done && "
            "printf '[core]\\n\\thooksPath = %s\\n\\tfsmonitor = %s\\n' \"$PWD/.git/hooks\" \"$HOME/evil.sh\" > included.cfg && "
            "git config include.path \"$PWD/included.cfg\" && "
            "git config includeIf.gitdir:/.path \"$PWD/included.cfg\" && "
            "sed -i 's/teh typo/the typo/' README.md");
  auto pushed = services_->CommitAndPush(t, "Fix the typo");
  ASSERT_TRUE(pushed.ok()) << pushed.status().ToString();
  EXPECT_EQ(*pushed, 1);
  EXPECT_FALSE(std::filesystem::exists(marker_)) << "a program of the worker's ran outside its sandbox";
  EXPECT_EQ(OnOrigin(t.workspace.branch, "README.md"), "Hello\nThere is the typo.\n");
}

// The rewrite of `.git` the daemon once defended against by naming the git directory itself: now
// nothing of the daemon's reads it. The worker's git follows it (in the sandbox); the repository it
// points at does not hold the Ticket's base, so nothing is taken and nothing pushed.
TEST_F(HostileCommitsTest, ARewrittenDotGitMovesOnlyTheWorkersOwnGit) {
  auto t = Task("c1");
  Worker(t, "git init -q \"$HOME/evil\" && git -C \"$HOME/evil\" config filter.x.clean \"" + Program() +
                "\" && printf '* filter=x\\n' > .gitattributes && rm -rf .git && "
                "printf 'gitdir: %s\\n' \"$HOME/evil/.git\" > .git && echo 'the work' > work.txt");
  auto pushed = services_->CommitAndPush(t, "Work");
  EXPECT_FALSE(std::filesystem::exists(marker_)) << "a program of the worker's ran outside its sandbox";
  EXPECT_FALSE(pushed.ok());
  EXPECT_FALSE(OnOriginBranch(t));
}

TEST_F(HostileCommitsTest, ALinkOutOfTheTreeIsRefused) {
  auto t = Task("c1");
  Worker(t, "mkdir -p docs && ln -s ../../../../superagent.db docs/db && echo ok > ok.txt");
  auto pushed = services_->CommitAndPush(t, "Work");
  ASSERT_FALSE(pushed.ok());
  EXPECT_EQ(pushed.status().code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(pushed.status().message(), HasSubstr("\"docs/db\" is a link out of the repository"));
  EXPECT_FALSE(OnOriginBranch(t));

  // An absolute link likewise; a link that stays inside is ordinary work.
  Worker(t, "rm docs/db && ln -s /etc/passwd passwd");
  pushed = services_->CommitAndPush(t, "Work");
  ASSERT_FALSE(pushed.ok());
  EXPECT_THAT(pushed.status().message(), HasSubstr("\"passwd\" is a link out of the repository (to \"/etc/passwd\")"));
  Worker(t, "rm passwd && ln -s ../README.md docs/readme && ln -s 说明.md 链接");
  pushed = services_->CommitAndPush(t, "Work");
  ASSERT_TRUE(pushed.ok()) << pushed.status().ToString();
  EXPECT_EQ(Sh("git -C " + origin_.string() + " cat-file -p " + t.workspace.branch + ":docs/readme"), "../README.md");
}

TEST_F(HostileCommitsTest, AChangeToCiNeedsTheRequestToNameIt) {
  auto t = Task("c1");
  Worker(t, "mkdir -p .github/workflows && printf 'on: push\\njobs: {}\\n' > .github/workflows/ci.yml");
  auto pushed = services_->CommitAndPush(t, "Work");
  ASSERT_FALSE(pushed.ok());
  EXPECT_EQ(pushed.status().code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(pushed.status().message(), HasSubstr("\".github/workflows/ci.yml\": CI workflows change only when"));
  EXPECT_FALSE(OnOriginBranch(t));

  // A person allowed to ask names the workflow in the request: the change goes through.
  auto asked = Task("c2", "@agent please make .github/workflows/ci.yml run the tests on 中文 branches too", 2);
  EXPECT_TRUE(exec::CommitRulesFor(asked).workflows);
  Worker(asked, "mkdir -p .github/workflows && printf 'on: push\\njobs: {}\\n' > .github/workflows/ci.yml");
  pushed = services_->CommitAndPush(asked, "CI");
  ASSERT_TRUE(pushed.ok()) << pushed.status().ToString();
  EXPECT_EQ(OnOrigin(asked.workspace.branch, ".github/workflows/ci.yml"), "on: push\njobs: {}\n");

  // Inferred work never does, whatever its text says.
  exec::WorkerTask inferred = asked;
  inferred.mandate.strength = Strength::kInferred;
  EXPECT_FALSE(exec::CommitRulesFor(inferred).workflows);
}

// A branch that does not grow from the base it was given (an orphan history, say) is refused: the
// PR would replace the repository.
TEST_F(HostileCommitsTest, ABranchFromElsewhereIsRefused) {
  auto t = Task("c1");
  Worker(t, "git checkout -q --orphan other && git rm -q -rf . && echo new > only.txt && git add only.txt && "
            "git commit -q -m 'start over'");
  auto pushed = services_->CommitAndPush(t, "Work");
  EXPECT_FALSE(pushed.ok());
  EXPECT_FALSE(OnOriginBranch(t));
}

// Paths git itself would refuse to check out, put in a tree by hand (mktree takes any name):
// a ".GIT" directory takes over whoever checks the branch out on a case-insensitive disk.
TEST_F(HostileCommitsTest, ATreeNamingADotGitDirectoryIsRefused) {
  auto t = Task("c1");
  Worker(t, "blob=$(echo evil | git hash-object -w --stdin) && "
            "sub=$(printf '100644 blob %s\\tconfig\\n' $blob | git mktree) && "
            "top=$(git ls-tree HEAD | { cat; printf '040000 tree %s\\t.GIT\\n' $sub; } | git mktree) && "
            "c=$(git commit-tree $top -p HEAD -m evil) && git update-ref HEAD $c");
  // Taken as it is: the worker's git could as well refuse to commit anything over it.
  auto taken = workspaces_->TakeCommits(t.workspace, {});
  ASSERT_FALSE(taken.ok());
  EXPECT_THAT(taken.status().message(), HasSubstr("\".GIT/config\" names a .git directory"));
  EXPECT_FALSE(workspaces_->Push(t.workspace).ok()) << "a refused branch is not kept for a push";
  EXPECT_FALSE(OnOriginBranch(t));
}

TEST_F(HostileCommitsTest, TooManyFilesOrTooLargeAFileIsRefused) {
  exec::WorkspaceOptions wo = workspaces_->options();
  wo.max_changed_files = 3;
  wo.max_file_bytes = 1000;
  workspaces_ = std::make_unique<exec::Workspaces>(wo, runner_.get(), &exec_clock_, sleeper_);
  services_ = std::make_unique<exec::WorkerServices>(engine_.get(), workspaces_.get());
  auto t = Task("c1");
  Worker(t, "for i in 1 2 3 4; do echo $i > f$i; done");
  auto pushed = services_->CommitAndPush(t, "Work");
  ASSERT_FALSE(pushed.ok());
  EXPECT_THAT(pushed.status().message(), HasSubstr("the branch changes 4 files; a Ticket may change at most 3"));
  Worker(t, "git rm -q f3 f4 && head -c 2000 /dev/zero > big.bin");
  pushed = services_->CommitAndPush(t, "Work");
  ASSERT_FALSE(pushed.ok());
  EXPECT_THAT(pushed.status().message(), HasSubstr("\"big.bin\" has 2000 bytes; a file may have at most 1000"));
  Worker(t, "git rm -q big.bin");
  pushed = services_->CommitAndPush(t, "Work");
  ASSERT_TRUE(pushed.ok()) << pushed.status().ToString();
  EXPECT_EQ(OnOrigin(t.workspace.branch, "f2"), "2\n");
}

// Each Ticket's repository state is its own: another Ticket's worker sees neither its directory
// nor the daemon's verified commits, cannot move the refs the daemon keeps, and its commit of the
// other's object id is not found.
TEST_F(HostileCommitsTest, AnotherTicketsCommitsAreNeitherVisibleNorMovable) {
  auto a = Task("c1");
  Worker(a, "echo 'private work' > secret-plan.md");
  auto pushed = services_->CommitAndPush(a, "Plan");
  ASSERT_TRUE(pushed.ok()) << pushed.status().ToString();
  const std::string tip = Sh("git -C " + origin_.string() + " rev-parse " + a.workspace.branch);
  // Not yet fetched by anybody: the origin's copy is what a person sees on GitHub.
  auto b = Task("c2", "", 2);
  const std::string root = workspaces_->options().root;
  const std::string out = Worker(b, "ls " + a.workspace.dir + " 2>&1; ls " + root + "/verified.git 2>&1; "
                                 "git cat-file -t " + tip.substr(0, 40) + " 2>&1; "
                                 "git -C " + root + "/repo.git for-each-ref 2>&1; "
                                 "git -C " + root + "/repo.git update-ref refs/superagent/base/ticket-" +
                                 std::to_string(a.ticket) + " HEAD 2>&1; true");
  EXPECT_THAT(out, HasSubstr("cannot access '" + a.workspace.dir + "'"));
  EXPECT_THAT(out, HasSubstr("cannot access '" + root + "/verified.git'"));
  EXPECT_THAT(out, Not(HasSubstr("commit\n")));
  EXPECT_THAT(out, Not(HasSubstr("refs/heads/superagent/")));
  EXPECT_THAT(out, Not(HasSubstr("refs/remotes/origin/superagent/")));
  EXPECT_THAT(out, HasSubstr("Read-only file system"));
  // Ticket a's branch on the origin is as a pushed it, and a's base as the daemon recorded it.
  EXPECT_EQ(Sh("git -C " + origin_.string() + " rev-parse " + a.workspace.branch), tip);
  EXPECT_EQ(OnOrigin(a.workspace.branch, "secret-plan.md"), "private work\n");
  Worker(a, "echo more >> secret-plan.md");
  EXPECT_TRUE(services_->CommitAndPush(a, "More").ok());
}

// A daemon upgraded with a Ticket's worktree of the layout before issue 33 (its `.git` a file
// naming the shared clone): the directory becomes a repository of its own, the worker's committed
// and uncommitted work kept, and its next push carries both.
TEST_F(HostileCommitsTest, AWorktreeOfTheOldLayoutIsAdoptedWithItsWork) {
  const std::string root = workspaces_->options().root;
  const std::string dir = workspaces_->DirFor(7);
  Sh("git clone -q --bare " + origin_.string() + " " + root + "/repo.git && "
     "git -C " + root + "/repo.git config remote.origin.fetch '+refs/heads/*:refs/remotes/origin/*' && "
     "git -C " + root + "/repo.git fetch -q origin && "
     "git -C " + root + "/repo.git worktree add -q -B superagent/ticket-7 " + dir + " origin/main && "
     "cd " + dir + " && echo committed > a.txt && git add a.txt && "
     "git -c user.name=s -c user.email=s@s commit -q -m 'old turn' && echo uncommitted > b.txt");
  auto w = workspaces_->Prepare(7);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_TRUE(std::filesystem::is_directory(dir + "/.git"));
  exec::WorkerTask t;
  t.ticket = 7;
  t.workspace = *w;
  auto pushed = services_->CommitAndPush(t, "Next turn");
  ASSERT_TRUE(pushed.ok()) << pushed.status().ToString();
  EXPECT_EQ(*pushed, 2);
  EXPECT_EQ(OnOrigin("superagent/ticket-7", "a.txt"), "committed\n");
  EXPECT_EQ(OnOrigin("superagent/ticket-7", "b.txt"), "uncommitted\n");
  EXPECT_TRUE(workspaces_->Remove(*w).ok());
  EXPECT_FALSE(std::filesystem::exists(dir));
}

}  // namespace
}  // namespace superagent::testing

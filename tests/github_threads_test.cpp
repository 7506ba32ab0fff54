// Issue 37: GitHub keys qualified by repository — the grammar (github_threads.h), the Source's
// parse of it, and the rewrite of a store written when the daemon served one repository.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "engine_fixture.h"
#include "result_ok.h"
#include "sources/github/normalize.h"
#include "store/sqlite.h"
#include "superagent/github_threads.h"
#include "superagent/text.h"

namespace superagent::testing {
namespace {

namespace gt = github_threads;

TEST(GitHubThreads, KeysNameTheRepositoryInLowerCase) {
  EXPECT_EQ(gt::Issue("Acme/Widgets", 5), "github:acme/widgets:issue:5");
  EXPECT_EQ(gt::Pull("acme/api", 12), "github:acme/api:pull:12");
  EXPECT_EQ(gt::Ci("acme/api", "release/2026"), "github:acme/api:ci:release/2026");
  EXPECT_EQ(gt::Commit("acme/api", "abc1234"), "github:acme/api:commit:abc1234");
  EXPECT_EQ(gt::Repository("Acme/API"), "github:acme/api");
  auto p = gt::PlaceOf("github:Acme/My.Repo_2:pull:7:review:9");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->repo, "acme/my.repo_2");
  EXPECT_EQ(p->rest, "pull:7:review:9");
  p = gt::PlaceOf("github:acme/api");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->rest, "");
}

TEST(GitHubThreads, OtherKeysAndHostileNamesAreNoPlace) {
  for (const char* key : {"github:issue:5", "github:repo", "github:ci:main", "feishu:chat:oc_1", "", "github:",
                          "github:/api:issue:1", "github:acme/:issue:1", "github:acme:issue:1", "github:a/b/c:issue:1",
                          "github:阿克米/api:issue:1", "github:acme/api😀:issue:1", "github:acme/\xff\xfe:issue:1",
                          "github:acme/a\npi:issue:1", "gitlab:acme/api:issue:1"})
    EXPECT_FALSE(gt::PlaceOf(key)) << key;
  EXPECT_FALSE(gt::IsRepositoryName(std::string(101, 'a') + "/api"));
  EXPECT_TRUE(gt::IsRepositoryName(std::string(100, 'a') + "/api"));
  EXPECT_FALSE(gt::IsRepositoryName("acme/api:issue"));
  for (const char* dots : {"../etc", "acme/..", "./api", "acme/."}) EXPECT_FALSE(gt::IsRepositoryName(dots)) << dots;
}

TEST(GitHubThreads, AChatsTicketIsHomedInTheFirstRepository) {
  EXPECT_EQ(gt::HomeRepository("github:acme/web:issue:3", "acme/api"), "acme/web");
  EXPECT_EQ(gt::HomeRepository("feishu:thread:omt_1", "Acme/API"), "acme/api");
  EXPECT_EQ(gt::HomeRepository("panel:session:1", ""), "");
}

TEST(GitHubThreads, TheSourceReadsDiscussionsOfQualifiedKeysOnly) {
  auto d = github::DiscussionOf("github:acme/api:pull:7:review:9");
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->pull);
  EXPECT_EQ(d->number, 7);
  EXPECT_EQ(d->repo, "acme/api");
  EXPECT_EQ(d->Thread(), "github:acme/api:pull:7");
  EXPECT_EQ(d->Key(), "pull:7");
  for (const char* key : {"github:issue:5", "github:acme/api:issue:", "github:acme/api:issue:0",
                          "github:acme/api:issue:5x", "github:acme/api:ci:main", "github:acme/api:issue:99999999999999999999"})
    EXPECT_FALSE(github::DiscussionOf(key)) << key;
}

// Whatever bytes a key holds, taking it apart never throws, and what it yields builds it again.
TEST(GitHubThreads, ParsingAnyBytesIsSafeAndRoundTrips) {
  std::mt19937 rng(37);
  const std::string alphabet = "github:acme/api-_.issue:pull:ci:01239\xe4\xb8\xad\xff/ :";
  for (int i = 0; i < 20'000; ++i) {
    std::string key = i % 2 ? "github:" : "";
    const int n = static_cast<int>(rng() % 40);
    for (int k = 0; k < n; ++k) key += alphabet[rng() % alphabet.size()];
    auto p = gt::PlaceOf(key);
    if (p) {
      EXPECT_TRUE(gt::IsRepositoryName(p->repo)) << key;
      EXPECT_EQ(p->rest.empty() ? gt::Repository(p->repo) : gt::Key(p->repo, p->rest), text::AsciiLower(key.substr(0, 7 + p->repo.size())) + key.substr(7 + p->repo.size()))
          << key;
    }
    if (auto d = github::DiscussionOf(key)) {
      EXPECT_EQ(github::DiscussionOf(d->Thread())->number, d->number) << key;
    }
  }
}

// A store written when the daemon served one repository: its keys carry none.
class QualifyTest : public EngineTest {
 protected:
  Trigger Old(const std::string& id, bool addressed, const std::string& text) {
    Trigger t = Comment(id, "alice", addressed, text);
    t.threads = {"github:issue:1"};
    t.channel = "github:issue:1";
    return t;
  }
  std::string One(const std::string& sql) {
    store::Db db;
    EXPECT_TRUE(db.Open((dir_ / "superagent.db").string()).ok());
    store::Stmt s = db.Prepare(sql.c_str());
    std::string out = s.Step() ? s.Text(0) : "<none>";
    s.Reset();
    return out;
  }
  void Exec(const std::string& sql) {
    store::Db db;
    ASSERT_TRUE(db.Open((dir_ / "superagent.db").string()).ok());
    ASSERT_TRUE(db.Exec(sql).ok()) << sql;
  }
};

TEST_F(QualifyTest, EveryOldKeyNamesTheRepositoryServedThenAndTheTicketKeepsHearingItsDiscussion) {
  Receive(Old("c1", true, "@agent please fix the typo in README"));
  assessor_.answers.push_back(ScriptedAssessor::Accept());
  ASSERT_EQ(Drain(), 1);
  const TicketId ticket = Ok(views_->GetTicket(1)).id;
  Trigger issue = Old("github:issue:1@abcdef012345", false, "Typo in README");
  issue.scope = "issues";
  Receive(issue);
  Trigger ci = Old("github:ci:run:77@1", false, "CI: workflow run finished: success");
  ci.scope = "ci";
  ci.actor.reset();
  ci.human = false;
  ci.threads = {"github:ci:main"};
  ci.channel = "github:commit:0123456789abcdef";
  Receive(ci);
  Exec("INSERT INTO ticket_pulls (ticket_id, number, head_branch, created_at, updated_at) VALUES (1, 100, 'superagent/ticket-1', 0, 0);"
       "INSERT INTO effects (kind, payload, status, next_at, created_at, kind_class) VALUES ('merge_pull_request', "
       "'{\"channel\":\"github:repo\",\"number\":100}', 'pending', 0, 0, 'action');"
       "INSERT INTO source_cursors (source, name, value, updated_at) VALUES ('github', 'issue:1', '{}', 0), ('feishu', 'chat:oc_1', '{}', 0),"
       " ('github', 'notifications', '{}', 0), ('github', 'rate', '{}', 0);"
       "INSERT INTO source_health (source, path, consecutive_failures) VALUES ('github', 'notifications', 3), ('github', 'issues', 3);"
       "INSERT INTO system_problems (kind, message, failures, first_at, last_at) VALUES ('source:github:notifications', 'x', 3, 0, 0),"
       " ('source:github:issues', 'y', 3, 0, 0);");

  auto bad = engine_->QualifyGitHubThreads("acme:widgets");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(One("SELECT key FROM threads WHERE key GLOB 'github:issue:*'"), "github:issue:1") << "nothing changed";

  auto n = engine_->QualifyGitHubThreads("Acme/Widgets");
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 2) << "the issue's and the CI branch's Threads (a commit is a channel, not a Thread)";
  EXPECT_EQ(One("SELECT count(*) FROM threads WHERE key GLOB 'github:issue:*' OR key GLOB 'github:ci:*' OR "
                "channel GLOB 'github:issue:*' OR channel = 'github:repo'"),
            "0");
  EXPECT_EQ(One("SELECT thread_key FROM tickets WHERE id = 1"), "github:acme/widgets:issue:1");
  EXPECT_EQ(One("SELECT thread_key FROM subscriptions WHERE ticket_id = 1"), "github:acme/widgets:issue:1");
  EXPECT_EQ(One("SELECT channel FROM receipts WHERE ticket_id = 1"), "github:acme/widgets:issue:1");
  EXPECT_EQ(One("SELECT thread_key FROM decisions LIMIT 1"), "github:acme/widgets:issue:1");
  EXPECT_EQ(One("SELECT id FROM triggers WHERE scope = 'issues'"), "github:acme/widgets:issue:1@abcdef012345");
  EXPECT_EQ(One("SELECT id || ' ' || channel FROM triggers WHERE scope = 'ci'"),
            "github:ci:run:77@1 github:acme/widgets:commit:0123456789abcdef")
      << "a CI run's id is GitHub's own and stays";
  EXPECT_EQ(One("SELECT thread_key FROM trigger_threads t JOIN triggers g ON g.seq = t.trigger_seq WHERE g.scope = 'ci'"),
            "github:acme/widgets:ci:main");
  EXPECT_EQ(One("SELECT repo FROM ticket_pulls"), "acme/widgets");
  EXPECT_EQ(One("SELECT json_extract(payload, '$.channel') FROM effects WHERE kind = 'merge_pull_request'"),
            "github:acme/widgets");
  EXPECT_EQ(One("SELECT group_concat(source || '/' || name, ' ') FROM (SELECT * FROM source_cursors ORDER BY source, name)"),
            "feishu/chat:oc_1 github/notifications github/rate github:acme/widgets/issue:1")
      << "the account's notifications and rate budget serve every repository: they stay the platform's";
  EXPECT_EQ(One("SELECT source FROM source_health WHERE path = 'notifications'"), "github");
  EXPECT_EQ(One("SELECT source FROM source_health WHERE path = 'issues'"), "github:acme/widgets");
  EXPECT_EQ(One("SELECT group_concat(kind, ' ') FROM (SELECT kind FROM system_problems ORDER BY kind)"),
            "source:github:acme/widgets:issues source:github:notifications");
  EXPECT_EQ(One("PRAGMA foreign_key_check"), "<none>");
  {
    store::Db db;
    ASSERT_TRUE(db.Open((dir_ / "superagent.db").string()).ok());
    EXPECT_FALSE(db.Exec("UPDATE triggers SET text = 'rewritten' WHERE seq = 1").ok()) << "Triggers are immutable again";
    EXPECT_FALSE(db.Exec("UPDATE decisions SET reason = 'rewritten'").ok()) << "and Decisions";
  }

  // Again: nothing left to do, nothing changes.
  EXPECT_EQ(Ok(engine_->QualifyGitHubThreads("acme/widgets")), 0);
  EXPECT_EQ(One("SELECT repo FROM ticket_pulls"), "acme/widgets");

  // The Ticket's discussion, now read under its qualified key, still reaches it.
  Trigger follow = Comment("c2", "alice", false, "also the one in CONTRIBUTING");
  EXPECT_EQ(Receive(follow).delivered_to, std::vector<TicketId>{ticket});
}


// Issue 37: the repositories a request names, for its Mandate.
TEST(RepositoriesNamed, TakesOwnerSlashNameAloneOrInGitHubsFormsAndNothingElse) {
  using V = std::vector<std::string>;
  EXPECT_EQ(gt::RepositoriesNamed("change the API in acme/api, then bump the client in Acme/Web.", 10),
            (V{"acme/api", "acme/web"}))
      << "case folded, the sentence's comma and full stop are not part of the names";
  EXPECT_EQ(gt::RepositoriesNamed("see acme/api#12 and https://github.com/acme/web/pull/3 and `acme/ops`", 10),
            (V{"acme/api", "acme/web", "acme/ops"}));
  EXPECT_EQ(gt::RepositoriesNamed("https://github.com/acme/web", 10), (V{"acme/web"}));
  EXPECT_EQ(gt::RepositoriesNamed("acme/api/pull/7 and acme/api/issues/2", 10), (V{"acme/api"})) << "each once";
  EXPECT_EQ(gt::RepositoriesNamed("请在acme/api里改接口，然后更新acme/web的客户端😀", 10), (V{"acme/api", "acme/web"}))
      << "Chinese text around a name with no space is still around it";
  // Paths and addresses of other hosts are not repositories.
  EXPECT_EQ(gt::RepositoriesNamed("edit src/lib/main.cpp and docs/x", 10), (V{"docs/x"}))
      << "a deeper path is not one; a two-part one has the shape (the caller keeps only those it serves)";
  EXPECT_EQ(gt::RepositoriesNamed("https://example.com/acme/api and /acme/web", 10), V{});
  EXPECT_EQ(gt::RepositoriesNamed("acme/ api / web, a/, /b, //, acme/web/x", 10), V{});
  EXPECT_EQ(gt::RepositoriesNamed("", 10), V{});
  EXPECT_EQ(gt::RepositoriesNamed("a/b c/d e/f", 2), (V{"a/b", "c/d"})) << "at most the limit";
  EXPECT_EQ(gt::RepositoriesNamed(std::string("acme/api\xff\xfe" "acme/web\0" "acme/ops", 27), 10),
            (V{"acme/api", "acme/web", "acme/ops"}))
      << "invalid UTF-8 and NUL bytes separate names like any other non-name byte";
  EXPECT_EQ(gt::RepositoriesNamed("acme/" + std::string(101, 'a'), 10), V{}) << "longer than GitHub allows";
}

TEST(RepositoriesNamed, AnyBytesGiveValidCanonicalNamesWithinTheLimit) {
  std::mt19937 rng(37);
  const std::string alphabet = "ab/._-#: \n\xe4\xb8\xad\xff" "0";
  for (int i = 0; i < 3000; ++i) {
    std::string text(rng() % 120, ' ');
    for (char& c : text) c = alphabet[rng() % alphabet.size()];
    for (const std::string& repo : gt::RepositoriesNamed(text, 3)) {
      EXPECT_TRUE(gt::IsRepositoryName(repo)) << repo;
      EXPECT_EQ(repo, gt::Canonical(repo));
    }
    EXPECT_LE(gt::RepositoriesNamed(text, 3).size(), 3u);
  }
}

}  // namespace
}  // namespace superagent::testing

// Issue 37: History by repository — /api/tickets?repo= and the page's repository chips, shown
// only when the daemon serves several repositories.
#include <gtest/gtest.h>

#include "panel_fixture.h"
#include "result_ok.h"

namespace superagent::testing {
namespace {

class PanelReposTest : public PanelServerTest {
 protected:
  void SetUp() override {
    options_.serves_repository = [](const std::string& repo) { return repo == "acme/widgets" || repo == "acme/api"; };
    PanelServerTest::SetUp();
  }
  // Ticket on issue `issue` of `repo`, asked by alice (naming `also` too, when given).
  TicketId TicketIn(const std::string& repo, const std::string& id, int issue, const std::string& also = "") {
    Trigger t = Comment(id, "alice", true, "@agent please fix the typo in " + repo + (also.empty() ? "" : " and " + also) +
                                               " 🙏", issue);
    t.threads = {"github:" + repo + ":issue:" + std::to_string(issue)};
    t.channel = t.threads[0];
    Receive(t);
    assessor_.answers.push_back(ScriptedAssessor::Accept());
    EXPECT_EQ(Drain(), 1);
    auto story = ExplainNow(id);
    if (!story.ok() || !story->contains("ticket_created")) {
      ADD_FAILURE() << "no Ticket for " << id;
      return 0;
    }
    return (*story)["ticket_created"]["id"].get<TicketId>();
  }
};

TEST_F(PanelReposTest, HistoryListsARepositorysTicketsAndThePageOffersEachRepository) {
  const TicketId widgets = TicketIn("acme/widgets", "c-w", 1);
  const TicketId api = TicketIn("acme/api", "c-a", 2, "acme/widgets");
  ASSERT_NE(widgets, 0);
  ASSERT_NE(api, 0);
  ASSERT_EQ(Ok(views_->GetMandate(api)).repos, (std::vector<std::string>{"acme/api", "acme/widgets"}));
  {
    // Its turn ends ready with a pull request in each repository (issue 37), both opened.
    const std::int64_t pending = PendingAssignment(api);
    ASSERT_NE(pending, 0);
    WorkspaceRecord w{api, (dir_ / "work-api").string(), "superagent/ticket-2", "origin/main", 0, std::nullopt, "acme/api"};
    WorkspaceRecord other = w;
    other.repo = "acme/widgets";
    other.dir = w.dir + "/.superagent-repos/acme/widgets";
    auto begun = engine_->BeginTurn(pending, "builtin", w, {other});
    ASSERT_TRUE(begun.ok()) << begun.status().ToString();
    TurnEnd end;
    end.assignment = begun->assignment.id;
    end.reported = Stage::kReady;
    end.summary = "Fixed in both.";
    for (const char* repo : {"acme/api", "acme/widgets"})
      end.actions.emplace_back("open_pull_request",
                               nlohmann::json{{"channel", std::string("github:") + repo},
                                              {"idempotency_key", "pr:ticket:2:" + std::string(repo)},
                                              {"ticket", api}, {"head", w.branch}, {"base", "main"},
                                              {"title", "Fix the typo"}, {"body", ""}});
    ASSERT_TRUE(engine_->FinishTurn(end).ok());
    for (const ClaimedEffect& c : Ok(engine_->ClaimDueEffects(20))) {
      Delivery d = Delivery::Done(c.effect.kind != "open_pull_request" ? "m"
                                  : c.effect.payload["channel"] == "github:acme/api" ? "7" : "42");
      ASSERT_TRUE(engine_->RecordDelivery(c.effect.id, d, 0).ok());
    }
  }
  // How each repository is read, as the GitHub Integration saves it; a reading of the wrong
  // types reads as absent fields, never as an error of the page.
  auto save = [&](const std::string& source, const std::string& name, const nlohmann::json& value) {
    SourceUpdate u;
    u.source = source;
    u.set_cursors[name] = value.dump();
    ASSERT_TRUE(engine_->UpdateSource(u).ok());
  };
  const TimeMs now = clock_.NowMs();
  save("github:acme/widgets", "reading", {{"interval_ms", 600'000}, {"why", "quiet"}, {"last_at", now}, {"next_at", now + 600'000}});
  save("github:acme/api", "reading", {{"interval_ms", 60'000}, {"why", "people wait"}, {"last_at", now}, {"next_at", now + 60'000}});
  save("github:acme/docs", "reading", {{"interval_ms", "十分钟"}, {"why", 7}, {"last_at", nullptr}});
  save("github:acme/web", "reading", "not an object");
  save("github", "rate", {{"counted_last_hour", 12}, {"budget_per_hour", 2500}, {"remaining", 4988}, {"limit", 5000}});
  // Fifteen read paths of three repositories, one failing, and the account's notifications.
  for (const char* repo : {"acme/widgets", "acme/api", "acme/docs"})
    for (const char* path : {"issues", "comments", "ci", "discussions", "identity"}) {
      SourceUpdate u;
      u.source = std::string("github:") + repo;
      u.path = path;
      u.ok = !(std::string(repo) == "acme/docs" && std::string(path) == "issues");
      if (!u.ok) u.error = "GET /repos/acme/docs/issues: 404 Not Found";
      ASSERT_TRUE(engine_->UpdateSource(u).ok());
    }
  {
    SourceUpdate u;
    u.source = "github";
    u.path = "notifications";
    ASSERT_TRUE(engine_->UpdateSource(u).ok());
  }
  StartServer([](panel::PanelContext& ctx) { ctx.repositories = [] { return std::vector<std::string>{"acme/widgets", "Acme/API"}; }; });

  const nlohmann::json status = GetJson("/api/status");
  EXPECT_EQ(status["repositories"], (nlohmann::json{"acme/widgets", "Acme/API"}));
  const nlohmann::json& reading = status["github_reading"];
  ASSERT_EQ(reading["repositories"].size(), 2u) << "acme/docs' reading names no interval: " << reading.dump();
  EXPECT_EQ(reading["repositories"][0]["repo"], "acme/api");
  EXPECT_EQ(reading["repositories"][0]["interval_s"], 60);
  EXPECT_EQ(reading["repositories"][1]["repo"], "acme/widgets");
  EXPECT_EQ(reading["repositories"][1]["why"], "quiet");
  EXPECT_EQ(reading["rate"]["counted_last_hour"], 12);
  auto ids = [&](const std::string& query) {
    std::vector<TicketId> out;
    const nlohmann::json listed = GetJson("/api/tickets" + query);
    for (const auto& t : listed["tickets"]) out.push_back(t["id"].get<TicketId>());
    return out;
  };
  EXPECT_EQ(ids(""), (std::vector<TicketId>{api, widgets}));
  EXPECT_EQ(ids("?repo=Acme/API"), std::vector<TicketId>{api}) << "GitHub's names ignore case";
  EXPECT_EQ(ids("?repo=acme/widgets"), (std::vector<TicketId>{api, widgets}))
      << "a Ticket across repositories is listed under each of them";
  EXPECT_TRUE(ids("?repo=acme/web").empty());
  EXPECT_TRUE(ids("?repo=acme/a").empty()) << "a name that is another's prefix matches nothing of it";
  for (const char* bad : {"?repo=acme", "?repo=acme/api:issue", "?repo=%E4%BB%93%E5%BA%93/x", "?repo=a/b/c"}) {
    auto r = client_->Get((std::string("/api/tickets") + bad).c_str());
    ASSERT_TRUE(r) << bad;
    EXPECT_EQ(r->status, 400) << bad << ": " << r->body;
  }

  RunResult r = RunBrowserScript("repos.test.mjs");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST_F(PanelReposTest, OneRepositoryShowsNoRepositoryChips) {
  TicketIn("acme/widgets", "c-w", 1);
  StartServer([](panel::PanelContext& ctx) { ctx.repositories = [] { return std::vector<std::string>{"acme/widgets"}; }; });
  EXPECT_EQ(GetJson("/api/status")["repositories"], (nlohmann::json{"acme/widgets"}));
  RunResult r = RunBrowserScript("repos.test.mjs", {{"ONE_REPOSITORY", "1"}});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

}  // namespace
}  // namespace superagent::testing

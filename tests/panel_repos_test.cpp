// Issue 37: History by repository — /api/tickets?repo= and the page's repository chips, shown
// only when the daemon serves several repositories.
#include <gtest/gtest.h>

#include "panel_fixture.h"
#include "result_ok.h"

namespace superagent::testing {
namespace {

class PanelReposTest : public PanelServerTest {
 protected:
  // Ticket on issue `issue` of `repo`, asked by alice.
  TicketId TicketIn(const std::string& repo, const std::string& id, int issue) {
    Trigger t = Comment(id, "alice", true, "@agent please fix the typo in " + repo + " 🙏", issue);
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
  const TicketId api = TicketIn("acme/api", "c-a", 2);
  ASSERT_NE(widgets, 0);
  ASSERT_NE(api, 0);
  StartServer([](panel::PanelContext& ctx) { ctx.repositories = {"acme/widgets", "Acme/API"}; });

  EXPECT_EQ(GetJson("/api/status")["repositories"], (nlohmann::json{"acme/widgets", "Acme/API"}));
  auto ids = [&](const std::string& query) {
    std::vector<TicketId> out;
    const nlohmann::json listed = GetJson("/api/tickets" + query);
    for (const auto& t : listed["tickets"]) out.push_back(t["id"].get<TicketId>());
    return out;
  };
  EXPECT_EQ(ids(""), (std::vector<TicketId>{api, widgets}));
  EXPECT_EQ(ids("?repo=Acme/API"), std::vector<TicketId>{api}) << "GitHub's names ignore case";
  EXPECT_EQ(ids("?repo=acme/widgets"), std::vector<TicketId>{widgets});
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
  StartServer([](panel::PanelContext& ctx) { ctx.repositories = {"acme/widgets"}; });
  EXPECT_EQ(GetJson("/api/status")["repositories"], (nlohmann::json{"acme/widgets"}));
  RunResult r = RunBrowserScript("repos.test.mjs", {{"ONE_REPOSITORY", "1"}});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

}  // namespace
}  // namespace superagent::testing

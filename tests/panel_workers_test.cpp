// The remote workers' pool in the panel (issue 36), on a real httplib server on loopback over a
// fake pool (the pool itself is tested in exec_*): GET /api/workers, the revoke command and every
// refusal (nothing revoked), Needs-you's card for turns no connected worker can take, the live
// stream's change when the pool changes, /metrics' pool families, and the Workers rows in
// Chromium (tests/browser/workers.test.mjs).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include "app/wiring.h"
#include "panel_fixture.h"
#include "run_binary.h"
#include "superagent/panel.h"
#include "superagent/worker_pool.h"

namespace superagent::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

// The pool as the daemon's function gives it, set by the test, read by the server's threads; and
// the revokes it was asked for. A revoked worker is forgotten, as WorkerPool::Revoke does.
class PanelWorkersFakePool {
 public:
  void Set(std::optional<exec::PoolView> view) {
    std::lock_guard<std::mutex> lock(mu_);
    view_ = std::move(view);
  }
  std::optional<exec::PoolView> Get() {
    std::lock_guard<std::mutex> lock(mu_);
    return view_;
  }
  bool Revoke(const std::string& worker) {
    std::lock_guard<std::mutex> lock(mu_);
    asked_.push_back(worker);
    if (!view_) return false;
    auto& ws = view_->workers;
    auto it = std::find_if(ws.begin(), ws.end(), [&](const exec::PoolWorker& w) { return w.id == worker; });
    if (it == ws.end()) return false;
    ws.erase(it);
    return true;
  }
  std::vector<std::string> Asked() {
    std::lock_guard<std::mutex> lock(mu_);
    return asked_;
  }

 private:
  std::mutex mu_;
  std::optional<exec::PoolView> view_;
  std::vector<std::string> asked_;
};

exec::PoolWorker PanelWorkersWorker(std::string id, std::vector<std::string> executors, int slots,
                                    std::vector<std::string> leases, TimeMs last_seen) {
  exec::PoolWorker w;
  w.id = std::move(id);
  w.executors = std::move(executors);
  w.slots = slots;
  w.leases = std::move(leases);
  w.last_seen = last_seen;
  return w;
}

// Two workers: one with a dotted name holding a turn of Ticket 7, one idle; three codex turns
// waiting, one claude-code turn running.
exec::PoolView PanelWorkersTwoWorkers(TimeMs now) {
  exec::PoolView v;
  v.queued = {{"codex", 3}};
  v.running = {{"claude-code", 1}};
  v.free_slots = {{"claude-code", 1}, {"codex", 2}};
  v.workers = {PanelWorkersWorker("gpu-box.01", {"claude-code", "codex"}, 2, {"ticket-7"}, now - 12'000),
               PanelWorkersWorker("laptop_b", {"codex"}, 1, {}, now - 3'500)};
  return v;
}


class PanelWorkersTest : public PanelServerTest {
 protected:
  // Starts the panel; `with_pool` false leaves worker_pool and revoke_worker unset, as a daemon
  // with placement local does.
  void StartServer(bool with_pool = true) {
    PanelServerTest::StartServer([&](panel::PanelContext& ctx) {
      if (!with_pool) return;
      ctx.worker_pool = [this] { return pool_.Get(); };
      ctx.revoke_worker = [this](const std::string& worker) { return pool_.Revoke(worker); };
    });
  }
  std::string Metrics() {
    auto r = client_->Get("/metrics");
    EXPECT_TRUE(r);
    if (!r) return "";
    EXPECT_EQ(r->status, 200) << r->body;
    return r->body;
  }

  PanelWorkersFakePool pool_;
};

// A daemon whose turns all run here has no pool: the route says so, /metrics has no pool
// families, and a revoke is a 404 that asks nobody.
TEST_F(PanelWorkersTest, WithoutAPoolTheViewIsOffMetricsHaveNoPoolAndRevokeIs404) {
  StartServer(/*with_pool=*/false);
  EXPECT_EQ(GetJson("/api/workers"), json({{"enabled", false}}));
  EXPECT_THAT(Metrics(), Not(HasSubstr("superagent_worker")));
  auto r = Post("/api/workers/gpu-box.01/revoke", {{"confirm", true}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404) << r->body;
  EXPECT_THAT(r->body, HasSubstr("no remote workers"));
  EXPECT_TRUE(GetJson("/api/needs")["workers"].is_null());
  StopServer();

  // The daemon's function answers nullopt before its pool exists: the same.
  StartServer();
  EXPECT_EQ(GetJson("/api/workers"), json({{"enabled", false}}));
  EXPECT_THAT(Metrics(), Not(HasSubstr("superagent_worker")));
  EXPECT_EQ(Post("/api/workers/gpu-box.01/revoke", {{"confirm", true}})->status, 404);
  EXPECT_TRUE(pool_.Asked().empty());
  EXPECT_EQ(Commands().size(), 0u);
}

TEST_F(PanelWorkersTest, TheViewShowsEachWorkerItsLeasesAndHeartbeatAndTheTurnsPerExecutor) {
  const TimeMs now = clock_.NowMs();
  pool_.Set(PanelWorkersTwoWorkers(now));
  StartServer();
  const json want = {
      {"enabled", true},
      {"queued", {{"codex", 3}}},
      {"running", {{"claude-code", 1}}},
      {"free_slots", {{"claude-code", 1}, {"codex", 2}}},
      {"workers",
       json::array({{{"id", "gpu-box.01"},
         {"executors", json::array({"claude-code", "codex"})},
         {"slots", 2},
         {"leases", json::array({"ticket-7"})},
         {"last_seen", FormatTime(now - 12'000)},
         {"last_seen_ms", now - 12'000},
         {"seconds_since_seen", 12}},
        {{"id", "laptop_b"},
         {"executors", json::array({"codex"})},
         {"slots", 1},
         {"leases", json::array()},
         {"last_seen", FormatTime(now - 3'500)},
         {"last_seen_ms", now - 3'500},
         {"seconds_since_seen", 3}}})}};
  EXPECT_EQ(GetJson("/api/workers"), want);

  // A pool with nobody in it: empty objects and list, not nulls.
  pool_.Set(exec::PoolView{});
  EXPECT_EQ(GetJson("/api/workers"), json({{"enabled", true},
                                           {"queued", json::object()},
                                           {"running", json::object()},
                                           {"free_slots", json::object()},
                                           {"workers", json::array()}}));

  // Like every read, only for the logged-in.
  httplib::Client stranger("127.0.0.1", port_);
  EXPECT_EQ(stranger.Get("/api/workers")->status, 401);
}

TEST_F(PanelWorkersTest, RevokeIsAConfirmedCommandRecordedWithWhoAndA404ForAnUnknownWorker) {
  pool_.Set(PanelWorkersTwoWorkers(clock_.NowMs()));
  StartServer();
  auto unconfirmed = Post("/api/workers/gpu-box.01/revoke", {{"name", "Tess"}});
  ASSERT_TRUE(unconfirmed);
  EXPECT_EQ(unconfirmed->status, 400) << unconfirmed->body;
  EXPECT_THAT(unconfirmed->body, HasSubstr("must be confirmed"));
  EXPECT_EQ(Post("/api/workers/gpu-box.01/revoke", {{"confirm", "yes"}})->status, 400);
  EXPECT_TRUE(pool_.Asked().empty());

  auto r = Post("/api/workers/gpu-box.01/revoke", {{"confirm", true}, {"name", "Tess"}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body), json({{"ok", true}, {"worker", "gpu-box.01"}, {"by", "Tess (panel)"}}));
  EXPECT_EQ(pool_.Asked(), std::vector<std::string>{"gpu-box.01"});
  json commands = Commands();
  ASSERT_EQ(commands.size(), 1u);
  EXPECT_EQ(commands[0]["command"], "revoke_worker");
  EXPECT_EQ(commands[0]["target"], "worker:gpu-box.01");
  EXPECT_EQ(commands[0]["who"], "Tess (panel)");
  EXPECT_EQ(GetJson("/api/workers")["workers"].size(), 1u);

  // Gone now, and never known: 404, nothing recorded.
  for (const char* name : {"gpu-box.01", "ghost"}) {
    auto again = Post(std::string("/api/workers/") + name + "/revoke", {{"confirm", true}});
    ASSERT_TRUE(again);
    EXPECT_EQ(again->status, 404) << name << ": " << again->body;
    EXPECT_THAT(again->body, HasSubstr(std::string("no worker named ") + name));
  }
  EXPECT_EQ(pool_.Asked(), (std::vector<std::string>{"gpu-box.01", "gpu-box.01", "ghost"}));
  EXPECT_EQ(Commands().size(), 1u);
}

// The name in the path is checked before anyone is asked: what no worker may be named is a 400.
TEST_F(PanelWorkersTest, ANameNoWorkerCanHaveIs400AndRevokesNothing) {
  pool_.Set(PanelWorkersTwoWorkers(clock_.NowMs()));
  StartServer();
  for (const std::string& path :
       {std::string("/api/workers/../x/revoke"), std::string("/api/workers/%2E%2E%2Fx/revoke"),
        std::string("/api/workers/名字/revoke"), std::string("/api/workers/%E5%90%8D%E5%AD%97/revoke"),
        "/api/workers/" + std::string(65, 'a') + "/revoke", std::string("/api/workers//revoke"),
        std::string("/api/workers/a%20b/revoke"), std::string("/api/workers/gpu-box.01%0A/revoke"),
        std::string("/api/workers/gpu-box.01/x/revoke")}) {
    auto r = Post(path, {{"confirm", true}});
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 400) << path << ": " << r->body;
    EXPECT_THAT(r->body, HasSubstr("1 to 64 of A-Z a-z 0-9 . _ -")) << path;
  }
  // 64 characters is a name; nobody has it.
  EXPECT_EQ(Post("/api/workers/" + std::string(64, 'a') + "/revoke", {{"confirm", true}})->status, 404);
  EXPECT_EQ(pool_.Asked(), std::vector<std::string>{std::string(64, 'a')});
  EXPECT_EQ(GetJson("/api/workers")["workers"].size(), 2u);
}

// The same guard as every command: no CSRF token, or another origin, is a 403 and revokes nothing.
TEST_F(PanelWorkersTest, RevokeWithoutTheCsrfTokenOrFromAnotherOriginIsRefused) {
  pool_.Set(PanelWorkersTwoWorkers(clock_.NowMs()));
  StartServer();
  const std::string path = "/api/workers/gpu-box.01/revoke";
  const json body = {{"confirm", true}};
  auto no_token = Post(path, body, /*with_csrf=*/false);
  ASSERT_TRUE(no_token);
  EXPECT_EQ(no_token->status, 403);
  EXPECT_THAT(no_token->body, HasSubstr("missing or stale CSRF token"));
  const std::string csrf = GetJson("/api/session")["csrf_token"];
  auto cross = client_->Post(path.c_str(), {{"X-CSRF-Token", csrf}, {"Origin", "http://evil.example"}}, body.dump(),
                             "application/json");
  EXPECT_EQ(cross->status, 403);
  // And without the panel token, even with the CSRF token: 401.
  httplib::Client stranger("127.0.0.1", port_);
  EXPECT_EQ(stranger.Post(path.c_str(), {{"X-CSRF-Token", csrf}}, body.dump(), "application/json")->status, 401);
  EXPECT_TRUE(pool_.Asked().empty());
  EXPECT_EQ(GetJson("/api/workers")["workers"].size(), 2u);
  EXPECT_EQ(Commands().size(), 0u);
}

// Turns waiting for an executor no connected worker offers wait for ever: after a minute that is
// a Needs-you card; a worker that offers it clears it at once.
TEST_F(PanelWorkersTest, TurnsNoConnectedWorkerOffersAreACardAfterAMinute) {
  exec::PoolView v;
  v.queued = {{"codex", 2}, {"claude-code", 1}};  // claude-code waits for a free slot: no card
  v.running = {{"claude-code", 1}};
  v.workers = {PanelWorkersWorker("gpu-box.01", {"claude-code"}, 1, {"ticket-3"}, clock_.NowMs())};
  pool_.Set(v);
  StartServer();
  json needs = GetJson("/api/needs");
  EXPECT_TRUE(needs["workers"].is_null());
  EXPECT_EQ(needs["count"], 0);
  const TimeMs began = clock_.NowMs();
  clock_.Advance(59'000);
  EXPECT_TRUE(GetJson("/api/needs")["workers"].is_null());
  clock_.Advance(1'000);
  needs = GetJson("/api/needs");
  EXPECT_EQ(needs["count"], 1);
  const json& card = needs["workers"];
  ASSERT_TRUE(card.is_object()) << needs.dump();
  EXPECT_EQ(card["executors"], json::array({{{"executor", "codex"}, {"queued", 2}, {"since", FormatTime(began)}}}));
  EXPECT_EQ(card["since"], FormatTime(began));
  EXPECT_EQ(card["what"], "2 turns are waiting for codex, which no connected worker offers.");
  EXPECT_THAT(card["fix"].get<std::string>(), HasSubstr("Start a worker that offers codex"));

  // A worker offering codex joins: the card goes at once.
  v.workers.push_back(PanelWorkersWorker("laptop_b", {"codex"}, 1, {}, clock_.NowMs()));
  pool_.Set(v);
  EXPECT_TRUE(GetJson("/api/needs")["workers"].is_null());
  // It leaves again: the minute starts over, from when the panel sees it gone.
  v.workers.pop_back();
  pool_.Set(v);
  EXPECT_TRUE(GetJson("/api/needs")["workers"].is_null());
  clock_.Advance(30'000);
  EXPECT_TRUE(GetJson("/api/needs")["workers"].is_null());
  clock_.Advance(30'000);
  EXPECT_EQ(GetJson("/api/needs")["workers"]["since"], FormatTime(clock_.NowMs() - 60'000));
}

// The pool is not in the store: the live stream watches it itself. A worker taking a turn is a
// change; a heartbeat alone is not (the page ages heartbeats on its own).
TEST_F(PanelWorkersTest, TheLiveStreamSaysChangeWhenThePoolChangesNotOnAHeartbeat) {
  exec::PoolView v = PanelWorkersTwoWorkers(clock_.NowMs());
  pool_.Set(v);
  StartServer();
  std::mutex mu;
  std::condition_variable cv;
  std::string received;
  std::thread reader([&] {
    httplib::Client c("127.0.0.1", port_);
    c.set_bearer_token_auth(kPanelTestToken);
    c.set_read_timeout(10, 0);
    c.Get("/api/events", [&](const char* data, size_t len) {
      std::lock_guard<std::mutex> lock(mu);
      received.append(data, len);
      cv.notify_all();
      return true;
    });
  });
  auto wait_for = [&](const std::string& what) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(10), [&] { return received.find(what) != std::string::npos; });
  };
  ASSERT_TRUE(wait_for("event: hello")) << received;
  // Heartbeats: newer last_seen only. Ten of the stream's looks (poll_ms 50) pass unchanged; a
  // negative can only be waited for.
  for (exec::PoolWorker& w : v.workers) w.last_seen += 5'000;
  pool_.Set(v);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(received.find("event: change"), std::string::npos) << received;
  }
  // laptop_b takes a codex turn.
  v.workers[1].leases = {"ticket-9"};
  v.queued["codex"] = 2;
  v.running["codex"] = 1;
  v.free_slots["codex"] = 1;
  pool_.Set(v);
  EXPECT_TRUE(wait_for("event: change")) << received;

  StopServer();  // ends the stream
  reader.join();
}

TEST_F(PanelWorkersTest, MetricsShowThePoolPerExecutorAndTheWorkersConnected) {
  pool_.Set(PanelWorkersTwoWorkers(clock_.NowMs()));
  StartServer();
  const std::string text = Metrics();
  EXPECT_THAT(text, HasSubstr("# TYPE superagent_worker_turns_queued gauge\n"
                              "superagent_worker_turns_queued{executor=\"claude-code\"} 0\n"
                              "superagent_worker_turns_queued{executor=\"codex\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE superagent_worker_turns_running gauge\n"
                              "superagent_worker_turns_running{executor=\"claude-code\"} 1\n"
                              "superagent_worker_turns_running{executor=\"codex\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE superagent_worker_slots_free gauge\n"
                              "superagent_worker_slots_free{executor=\"claude-code\"} 1\n"
                              "superagent_worker_slots_free{executor=\"codex\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE superagent_workers_connected gauge\nsuperagent_workers_connected 2\n"));
  for (const char* family : {"superagent_worker_turns_queued", "superagent_worker_turns_running",
                             "superagent_worker_slots_free", "superagent_workers_connected"})
    EXPECT_THAT(text, HasSubstr(std::string("# HELP ") + family + " ")) << family;

  // A pool nobody has joined yet: the families, no executor series, and 0 workers.
  pool_.Set(exec::PoolView{});
  const std::string empty = Metrics();
  EXPECT_THAT(empty, HasSubstr("# TYPE superagent_worker_turns_queued gauge\n# HELP superagent_worker_turns_running"));
  EXPECT_THAT(empty, Not(HasSubstr("superagent_worker_turns_queued{")));
  EXPECT_THAT(empty, HasSubstr("\nsuperagent_workers_connected 0\n"));
}

// The page: the Workers view's rows, names as text (a hostile one too), and Revoke through its
// dialog; in Chromium against this in-process panel.
TEST_F(PanelWorkersTest, TheWorkersViewRendersInChromium) {
  // The page ages heartbeats from the browser's clock: the pool's times are real ones here.
  const TimeMs now = SystemClock()->NowMs();
  clock_.Set(now);
  exec::PoolView v = PanelWorkersTwoWorkers(now);
  v.workers.push_back(PanelWorkersWorker("<img src=x onerror=\"window.pwned=1\">", {"codex"}, 1, {}, now - 200'000));
  pool_.Set(v);
  StartServer();

  RunResult r = RunBrowserScript("workers.test.mjs");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(pool_.Asked(), std::vector<std::string>{"gpu-box.01"});
  json commands = Commands();
  ASSERT_EQ(commands.size(), 1u);
  EXPECT_EQ(commands[0]["who"], "Tess (panel)");
}

}  // namespace
}  // namespace superagent::testing

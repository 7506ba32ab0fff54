// The libcurl client against a real loopback server: methods, headers, bodies, errors, timeouts.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <httplib.h>

#include "superagent/http.h"

namespace superagent {
namespace {

class HttpClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.Post("/echo", [](const httplib::Request& req, httplib::Response& res) {
      res.set_header("X-Seen-Auth", req.get_header_value("Authorization"));
      res.set_header("Link", "<https://x/?page=2>; rel=\"next\"");
      res.status = 201;
      res.set_content(req.body, "application/json");
    });
    server_.Get("/missing", [](const httplib::Request&, httplib::Response& res) { res.status = 404; });
    // Answers only when the test lets it: a slow peer whose request is still in flight.
    server_.Get("/slow", [this](const httplib::Request&, httplib::Response& res) {
      std::unique_lock<std::mutex> lock(mu_);
      arrived_ = true;
      cv_.notify_all();
      cv_.wait(lock, [&] { return released_; });
      res.set_content("late", "text/plain");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    // Bound already: connections wait in the backlog until the thread accepts them.
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // httplib 0.11's stop() is lost until the accept loop has set is_running(): a test that never
    // calls the server would hang in TearDown's join (as the other loopback fakes wait, bounded).
    for (int i = 0; i < 5'000 && !server_.is_running(); ++i) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  void TearDown() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      released_ = true;
      cv_.notify_all();
    }
    server_.stop();
    thread_.join();
  }
  std::string Url(const std::string& path) { return "http://127.0.0.1:" + std::to_string(port_) + path; }

  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  bool arrived_ = false, released_ = false;
};

TEST_F(HttpClientTest, ACancelledRequestIsAbandonedWhileThePeerStillHoldsIt) {
  auto client = MakeCurlHttpClient();
  std::atomic<bool> cancel{false};
  HttpRequest req{"GET", Url("/slow"), {}, "", 60'000, 5'000};
  req.cancel = &cancel;
  std::thread canceller([&] {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return arrived_; });
    cancel = true;
  });
  HttpResponse r = client->Send(req);
  canceller.join();
  EXPECT_TRUE(r.cancelled);
  EXPECT_EQ(r.error, "cancelled");
  EXPECT_EQ(r.status, 0);
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_FALSE(released_) << "Send returned only because the peer answered";
}

TEST_F(HttpClientTest, SendsMethodHeadersAndBodyAndReadsTheAnswer) {
  auto client = MakeCurlHttpClient("superagent-test");
  HttpRequest req;
  req.method = "POST";
  req.url = Url("/echo");
  req.headers = {{"Authorization", "Bearer t0k"}, {"Content-Type", "application/json"}};
  req.body = R"({"a":1})";
  HttpResponse r = client->Send(req);
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.status, 201);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.body, R"({"a":1})");
  EXPECT_EQ(r.Header("x-seen-auth"), "Bearer t0k");
  EXPECT_EQ(r.Header("LINK"), "<https://x/?page=2>; rel=\"next\"");
}

TEST_F(HttpClientTest, HttpErrorsAreStatusesAndTransportErrorsAreErrors) {
  auto client = MakeCurlHttpClient();
  HttpResponse missing = client->Send({"GET", Url("/missing"), {}, "", 5000, 5000});
  EXPECT_EQ(missing.status, 404);
  EXPECT_FALSE(missing.ok());
  EXPECT_EQ(missing.error, "");
  server_.stop();
  thread_.join();
  thread_ = std::thread([] {});
  HttpResponse refused = client->Send({"GET", Url("/missing"), {}, "", 5000, 5000});
  EXPECT_EQ(refused.status, 0);
  EXPECT_FALSE(refused.error.empty());
}

// A URL a peer handed back is fetched only over http(s): file:// would hand the daemon's own
// files to whoever parses the answer.
TEST_F(HttpClientTest, OnlyHttpAndHttpsAreFetched) {
  const std::filesystem::path secret = std::filesystem::temp_directory_path() / "superagent-http-file-test";
  { std::ofstream(secret) << "{\"token\": \"do-not-read\"}"; }
  auto client = MakeCurlHttpClient();
  for (const std::string& url : {"file://" + secret.string(), std::string("gopher://127.0.0.1:1/x"),
                                std::string("dict://127.0.0.1:1/x")}) {
    HttpResponse r = client->Send({"GET", url, {}, "", 5000, 5000});
    EXPECT_EQ(r.status, 0) << url;
    EXPECT_FALSE(r.error.empty()) << url;
    EXPECT_EQ(r.body.find("do-not-read"), std::string::npos) << url;
  }
  std::filesystem::remove(secret);
}

}  // namespace
}  // namespace superagent

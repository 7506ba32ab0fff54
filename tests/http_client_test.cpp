// The libcurl client against a real loopback server: methods, headers, bodies, errors, timeouts.
#include <gtest/gtest.h>

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
    port_ = server_.bind_to_any_port("127.0.0.1");
    // Bound already: connections wait in the backlog until the thread accepts them.
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  void TearDown() override {
    server_.stop();
    thread_.join();
  }
  std::string Url(const std::string& path) { return "http://127.0.0.1:" + std::to_string(port_) + path; }

  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
};

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

}  // namespace
}  // namespace superagent

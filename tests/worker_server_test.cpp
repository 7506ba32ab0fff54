// Issue 36, items 2, 3 and 6 at the network boundary: the daemon's worker listener
// (WorkerServer) over real loopback HTTP. A worker proves the join token once and gets a
// credential of its own; with it, it acts only as itself: its own claims, heartbeats, events and
// returns. Everything a stranger sends is sized before it is read and parsed strictly; a lease
// time has ended (a FakeClock says so) is refused at the return. The model relay carries a CLI's
// call to the gateway's port and streams the answer back.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include "superagent/clock.h"
#include "superagent/http.h"
#include "superagent/worker_pool.h"

namespace superagent::exec {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

constexpr TimeMs kServerLeaseMs = 30'000;
constexpr char kJoinToken[] = "join-令牌-0123456789abcdef0123456789";

OfferedTurn ServerTurn(TicketId ticket) {
  OfferedTurn t;
  t.assignment = ticket * 10;
  t.ticket = ticket;
  t.executor = "claude-code";
  t.task = {{"prompt", "修一下 README 🙏"}, {"scope", "fix the typo"}};
  t.code = std::string("# v2 git bundle\n\0\xff", 18);
  return t;
}

// Sends `request` on a fresh loopback connection and reads until the server closes it (at most 5 s).
std::string WorkerServerExchange(int port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string got;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size())) {
    timeval tv{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) got.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return got;
}

class WorkerServerTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(); }
  void Start(int gateway_port = 0) {
    server_.reset();
    WorkerServerOptions o;
    o.listen = "127.0.0.1:0";
    o.join_token = kJoinToken;
    o.claim_wait_ms = 50;
    o.max_bundle_bytes = 1024;
    o.gateway_port = gateway_port;
    auto s = WorkerServer::Start(o, &pool_, http_.get());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
  }

  // POST `path` with `body` (raw), as `credential` ("" = none).
  httplib::Result Post(const std::string& path, const std::string& body, const std::string& credential = "") {
    httplib::Client c("127.0.0.1", server_->port());
    httplib::Headers h;
    if (!credential.empty()) h.emplace("Authorization", "Bearer " + credential);
    return c.Post(path.c_str(), h, body, "application/json");
  }
  json PostJson(const std::string& path, const json& body, const std::string& credential, int want_status) {
    auto r = Post(path, body.dump(), credential);
    EXPECT_TRUE(r) << path << " got no answer";
    if (!r) return json();
    EXPECT_EQ(r->status, want_status) << path << ": " << r->body;
    return json::parse(r->body, nullptr, false);
  }
  std::string Join(const std::string& worker) {
    json j = PostJson("/workers/v1/join", {{"worker", worker}, {"join_token", kJoinToken}}, "", 200);
    EXPECT_EQ(j.value("lease_ms", 0), kServerLeaseMs);
    return j.value("credential", "");
  }
  json Announcement(const std::string& worker) {
    return {{"worker", worker}, {"executors", {"claude-code"}}, {"slots", 1}};
  }
  Lease ClaimAs(const std::string& worker, const std::string& credential) {
    json j = PostJson("/workers/v1/claim", Announcement(worker), credential, 200);
    auto lease = ParseLease(j["lease"]);
    EXPECT_TRUE(lease.ok()) << j.dump();
    return lease.ok() ? *lease : Lease{};
  }
  json ReturnBody(const std::string& worker, const std::string& lease, const std::string& summary) {
    TurnReturn r;
    r.report = {{"stage", "ready"}, {"summary", summary}};
    r.bundle = "bundle bytes";
    return TurnReturnToJson(LeaseRef{worker, lease}, r);
  }

  FakeClock clock_;
  WorkerPool pool_{WorkerPool::Options{kServerLeaseMs}, &clock_};
  std::unique_ptr<HttpClient> http_ = MakeHttpClient("worker-server-test");
  std::unique_ptr<WorkerServer> server_;
};

TEST_F(WorkerServerTest, AWorkerJoinsClaimsStreamsAndReturnsOnceWithItsOwnCredential) {
  const std::int64_t offer = pool_.Offer(ServerTurn(7));
  const std::string credential = Join("gpu-box.01");
  ASSERT_THAT(credential, ::testing::StartsWith("sa-worker-"));
  EXPECT_EQ(credential.size(), std::string("sa-worker-").size() + 64);
  const Lease lease = ClaimAs("gpu-box.01", credential);
  EXPECT_EQ(lease.offer, offer);
  EXPECT_EQ(lease.turn.code, std::string("# v2 git bundle\n\0\xff", 18)) << "the code crosses the wire byte for byte";
  EXPECT_EQ(lease.turn.task["prompt"], "修一下 README 🙏");

  EXPECT_EQ(PostJson("/workers/v1/heartbeat", {{"worker", "gpu-box.01"}, {"lease", lease.id}}, credential, 200)["state"],
            "held");
  std::vector<TurnEvent> events = {{"assistant", {{"role", "assistant"}, {"content", "读了 README ✅"}}},
                                   {"command", {{"command", "git diff"}, {"exit_code", 0}}}};
  EXPECT_EQ(PostJson("/workers/v1/events", ProgressToJson({"gpu-box.01", lease.id}, events), credential, 200)["state"],
            "held");
  const auto taken = pool_.TakeEvents(offer);
  ASSERT_EQ(taken.size(), 2u);
  EXPECT_EQ(taken[0].second["content"], "读了 README ✅");

  EXPECT_EQ(PostJson("/workers/v1/return", ReturnBody("gpu-box.01", lease.id, "done"), credential, 200)["ok"], true);
  auto out = pool_.Outcome(offer);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->kind, OfferOutcome::Kind::kReturned);
  EXPECT_EQ(out->worker, "gpu-box.01");
  EXPECT_EQ(out->returned.bundle, "bundle bytes");
  // The same return again changes nothing.
  json again = PostJson("/workers/v1/return", ReturnBody("gpu-box.01", lease.id, "twice"), credential, 409);
  EXPECT_THAT(again.value("error", ""), HasSubstr("already returned"));
  EXPECT_EQ(pool_.Outcome(offer)->returned.report["summary"], "done");
}

TEST_F(WorkerServerTest, AWrongJoinTokenAndAMissingOrForeignCredentialAreRefused) {
  EXPECT_EQ(Post("/workers/v1/join", json{{"worker", "w1"}, {"join_token", "guess"}}.dump())->status, 401);
  // One character short of the token, and the token with a byte more: compared whole.
  const std::string token = kJoinToken;
  EXPECT_EQ(Post("/workers/v1/join", json{{"worker", "w1"}, {"join_token", token.substr(0, token.size() - 1)}}.dump())->status, 401);
  EXPECT_EQ(Post("/workers/v1/join", json{{"worker", "w1"}, {"join_token", token + "x"}}.dump())->status, 401);
  EXPECT_EQ(Post("/workers/v1/claim", Announcement("w1").dump())->status, 401);
  EXPECT_EQ(Post("/workers/v1/claim", Announcement("w1").dump(), "sa-worker-" + std::string(64, 'a'))->status, 401);

  pool_.Offer(ServerTurn(1));
  const std::string a = Join("worker-a");
  const std::string b = Join("worker-b");
  // b's credential cannot claim, heartbeat or return as a.
  EXPECT_EQ(Post("/workers/v1/claim", Announcement("worker-a").dump(), b)->status, 403);
  const Lease lease = ClaimAs("worker-a", a);
  EXPECT_EQ(Post("/workers/v1/heartbeat", json{{"worker", "worker-a"}, {"lease", lease.id}}.dump(), b)->status, 403);
  EXPECT_EQ(Post("/workers/v1/return", ReturnBody("worker-a", lease.id, "stolen").dump(), b)->status, 403);
  // As itself with a's lease: not its lease, so lost and refused.
  EXPECT_EQ(PostJson("/workers/v1/heartbeat", {{"worker", "worker-b"}, {"lease", lease.id}}, b, 200)["state"], "lost");
  PostJson("/workers/v1/return", ReturnBody("worker-b", lease.id, "stolen"), b, 409);
  EXPECT_EQ(PostJson("/workers/v1/heartbeat", {{"worker", "worker-a"}, {"lease", lease.id}}, a, 200)["state"], "held");
}

TEST_F(WorkerServerTest, JoiningAgainKillsTheOldCredentialAndARevokeEndsLeasesAtOnce) {
  const std::string first = Join("worker-a");
  const std::string second = Join("worker-a");
  EXPECT_NE(first, second);
  EXPECT_EQ(Post("/workers/v1/claim", Announcement("worker-a").dump(), first)->status, 401);
  const std::int64_t offer = pool_.Offer(ServerTurn(3));
  const Lease lease = ClaimAs("worker-a", second);
  EXPECT_EQ(server_->Joined(), std::vector<std::string>{"worker-a"});

  EXPECT_TRUE(server_->Revoke("worker-a"));
  EXPECT_FALSE(server_->Revoke("nobody"));
  EXPECT_TRUE(server_->Joined().empty());
  EXPECT_EQ(Post("/workers/v1/heartbeat", json{{"worker", "worker-a"}, {"lease", lease.id}}.dump(), second)->status, 401);
  // Its turn waits for another worker at once, and the revoked worker's lease stays dead even if
  // it joins again.
  const std::string b = Join("worker-b");
  const Lease next = ClaimAs("worker-b", b);
  EXPECT_EQ(next.offer, offer);
  EXPECT_EQ(next.attempt, 2);
  const std::string again = Join("worker-a");
  PostJson("/workers/v1/return", ReturnBody("worker-a", lease.id, "late"), again, 409);
}

TEST_F(WorkerServerTest, AReturnAfterTheLeaseExpiredIsRefusedAndTheNextWorkersIsTaken) {
  const std::int64_t offer = pool_.Offer(ServerTurn(4));
  const std::string a = Join("worker-a");
  const Lease lost = ClaimAs("worker-a", a);
  clock_.Advance(kServerLeaseMs);
  EXPECT_EQ(pool_.ExpireLeases(), 1);
  const std::string b = Join("worker-b");
  const Lease taken = ClaimAs("worker-b", b);
  EXPECT_EQ(taken.offer, offer);
  json late = PostJson("/workers/v1/return", ReturnBody("worker-a", lost.id, "late"), a, 409);
  EXPECT_THAT(late.value("error", ""), HasSubstr("not this worker's"));
  EXPECT_EQ(PostJson("/workers/v1/heartbeat", {{"worker", "worker-a"}, {"lease", lost.id}}, a, 200)["state"], "lost");
  PostJson("/workers/v1/return", ReturnBody("worker-b", taken.id, "on time"), b, 200);
  EXPECT_EQ(pool_.Outcome(offer)->returned.report["summary"], "on time");
}

TEST_F(WorkerServerTest, AClaimWithNoWorkWaitsThenAnswersNull) {
  const std::string a = Join("worker-a");
  json j = PostJson("/workers/v1/claim", Announcement("worker-a"), a, 200);
  EXPECT_TRUE(j.contains("lease") && j["lease"].is_null()) << j.dump();
  // An executor it does not offer is never leased to it.
  OfferedTurn codex = ServerTurn(5);
  codex.executor = "codex";
  pool_.Offer(codex);
  j = PostJson("/workers/v1/claim", Announcement("worker-a"), a, 200);
  EXPECT_TRUE(j["lease"].is_null()) << j.dump();
}

TEST_F(WorkerServerTest, MalformedBodiesAreRefusedNamingTheFieldAndChangeNothing) {
  const std::int64_t offer = pool_.Offer(ServerTurn(6));
  const std::string a = Join("worker-a");
  struct Case {
    std::string path, body, says;
  };
  const std::vector<Case> cases = {
      {"/workers/v1/join", R"({"worker":"名字","join_token":"x"})", "\"worker\""},
      {"/workers/v1/join", R"({"worker":"../etc","join_token":"x"})", "\"worker\""},
      {"/workers/v1/join", R"({"worker":"w","join_token":7})", "join_token"},
      {"/workers/v1/join", "[1,2]", "expected a JSON object"},
      {"/workers/v1/claim", R"({"worker":"worker-a","executors":"claude-code","slots":1})", "executors"},
      {"/workers/v1/claim", R"({"worker":"worker-a","executors":["claude-code"],"slots":1000})", "slots"},
      {"/workers/v1/heartbeat", R"({"worker":"worker-a","lease":"not-hex"})", "lease"},
      {"/workers/v1/events", R"({"worker":"worker-a","lease":")" + std::string(64, 'a') +
                                 R"(","events":[{"kind":"report","body":{}}]})",
       "events[0].kind"},
      {"/workers/v1/return", "\xff\xfe not json", "expected a JSON object"},
  };
  for (const Case& c : cases) {
    auto r = Post(c.path, c.body, c.path == "/workers/v1/join" ? "" : a);
    ASSERT_TRUE(r) << c.path;
    EXPECT_EQ(r->status, 400) << c.path << " " << c.body << ": " << r->body;
    EXPECT_THAT(json::parse(r->body, nullptr, false).value("error", ""), HasSubstr(c.says)) << c.path;
  }
  auto out = pool_.Outcome(offer);
  EXPECT_EQ(out->kind, OfferOutcome::Kind::kWaiting);
  EXPECT_EQ(out->attempts, 0) << "a refused claim leased nothing";
}

TEST_F(WorkerServerTest, BodiesAreSizedBeforeTheyAreRead) {
  const std::string a = Join("worker-a");
  // A bundle over max_bundle_bytes (1 KiB here), as base64 within the route's limit: a 400 naming it.
  json big = ReturnBody("worker-a", std::string(64, 'a'), "x");
  big["bundle"] = std::string(4000, 'A');
  auto r = Post("/workers/v1/return", big.dump(), a);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_THAT(r->body, HasSubstr("bundle"));
  // Over the route's own limit: refused from the Content-Length alone, before a byte of the body
  // was sent; without a Content-Length (chunked): 411. Both answered, then closed.
  const std::string head = "POST /workers/v1/heartbeat HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + a +
                           "\r\nContent-Type: application/json\r\n";
  EXPECT_THAT(WorkerServerExchange(server_->port(), head + "Content-Length: 200000\r\n\r\n"),
              ::testing::StartsWith("HTTP/1.1 413"));
  EXPECT_THAT(WorkerServerExchange(server_->port(), head + "Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n"),
              ::testing::StartsWith("HTTP/1.1 411"));
  httplib::Client c("127.0.0.1", server_->port());
  EXPECT_EQ(c.Get("/workers/v1/claim")->status, 405);
  EXPECT_EQ(c.Get("/api/status")->status, 404);
}

// The model relay: a CLI's call at /workers/v1/model/<path> reaches the gateway's port at <path>
// with its headers (the pass is the CLI's key), and a streamed answer comes back as it streams.
TEST_F(WorkerServerTest, AModelCallIsRelayedToTheGatewayAndItsStreamComesBack) {
  httplib::Server gateway;
  std::string seen_path, seen_key, seen_body;
  gateway.Post("/v1/messages", [&](const httplib::Request& req, httplib::Response& res) {
    seen_path = req.path;
    seen_key = req.get_header_value("x-api-key");
    seen_body = req.body;
    res.set_chunked_content_provider("text/event-stream", [](std::size_t offset, httplib::DataSink& sink) {
      if (offset == 0) {
        const std::string a = "event: one\ndata: {\"t\":\"你好\"}\n\n";
        sink.write(a.data(), a.size());
        return true;
      }
      const std::string b = "event: two\ndata: {}\n\n";
      sink.write(b.data(), b.size());
      sink.done();
      return true;
    });
  });
  const int port = gateway.bind_to_any_port("127.0.0.1");
  std::thread t([&] { gateway.listen_after_bind(); });
  Start(port);
  httplib::Client c("127.0.0.1", server_->port());
  auto r = c.Post("/workers/v1/model/v1/messages", {{"x-api-key", "sa-pass-abc"}}, R"({"model":"m","q":"改"})",
                  "application/json");
  gateway.stop();
  t.join();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(seen_path, "/v1/messages");
  EXPECT_EQ(seen_key, "sa-pass-abc");
  EXPECT_EQ(seen_body, R"({"model":"m","q":"改"})");
  EXPECT_EQ(r->body, "event: one\ndata: {\"t\":\"你好\"}\n\nevent: two\ndata: {}\n\n");
  EXPECT_THAT(r->get_header_value("Content-Type"), HasSubstr("text/event-stream"));
  // A probe of the base URL is answered here, as the gateway answers it.
  EXPECT_EQ(c.Head("/workers/v1/model")->status, 200);
}

// A pool reconnecting at once after a restart is queued, not dropped: the listen queue is 1024
// long (`ss` shows a listening socket's queue length as its Send-Q), not httplib's 5.
TEST_F(WorkerServerTest, TheListenQueueHoldsAWholePoolReconnecting) {
  std::string out;
  FILE* p = ::popen(("ss -Hltn sport = :" + std::to_string(server_->port()) + " 2>&1").c_str(), "r");
  char buf[512];
  while (p != nullptr && std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  if (p != nullptr) ::pclose(p);
  // "LISTEN 0 1024 127.0.0.1:PORT 0.0.0.0:*"
  std::istringstream fields(out);
  std::string state, recv_q, send_q;
  fields >> state >> recv_q >> send_q;
  EXPECT_EQ(state, "LISTEN") << out;
  EXPECT_EQ(send_q, "1024") << out;
}

TEST_F(WorkerServerTest, WithoutAGatewayOrAJoinTokenNothingIsOpen) {
  auto r = Post("/workers/v1/model/v1/messages", "{}");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  server_.reset();
  WorkerServerOptions o;
  o.listen = "127.0.0.1:0";
  auto s = WorkerServer::Start(o, &pool_, nullptr);
  ASSERT_TRUE(s.ok());
  httplib::Client c("127.0.0.1", (*s)->port());
  auto j = c.Post("/workers/v1/join", json{{"worker", "w"}, {"join_token", "anything"}}.dump(), "application/json");
  ASSERT_TRUE(j);
  EXPECT_EQ(j->status, 401) << "no join token configured: no worker joins";
  WorkerServerOptions bad;
  bad.listen = "no-port";
  EXPECT_EQ(WorkerServer::Start(bad, &pool_, nullptr).status().code(), Status::Code::kInvalidArgument);
  // A join token short enough to guess is refused at start.
  WorkerServerOptions guessable;
  guessable.listen = "127.0.0.1:0";
  guessable.join_token = std::string(kMinJoinTokenBytes - 1, 'x');
  auto weak = WorkerServer::Start(guessable, &pool_, nullptr);
  EXPECT_EQ(weak.status().code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(weak.status().message(), HasSubstr("at least 32 random ones"));
  // HTTPS needs both files, and real ones.
  WorkerServerOptions half;
  half.listen = "127.0.0.1:0";
  half.tls_cert_file = "/etc/hostname";
  auto lone = WorkerServer::Start(half, &pool_, nullptr);
  EXPECT_EQ(lone.status().code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(lone.status().message(), HasSubstr("go together"));
  half.tls_key_file = "/etc/hostname";
  auto garbage = WorkerServer::Start(half, &pool_, nullptr);
  EXPECT_EQ(garbage.status().code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(garbage.status().message(), HasSubstr("not a readable PEM certificate"));
}

}  // namespace
}  // namespace superagent::exec

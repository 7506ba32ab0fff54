// The panel's commands (src/panel/): the JSON body of a POST a browser — or anyone who got past
// the CSRF check — sends. The first input line is the command's path, the rest its body, sent
// with a valid CSRF token over a real loopback connection to the real routes (Engine, Views and
// the intercom on a real store). A bad body must get a 4xx with a short message; a 500 carrying
// cpp-httplib's EXCEPTION_WHAT header means an exception escaped a handler, and is a finding.
#include <httplib.h>

#include <cstdio>
#include <set>
#include <thread>

#include "fuzz_support.h"
#include "superagent/intercom.h"
#include "superagent/panel.h"
#include "superagent/views.h"
#include "superagent/worker_sessions.h"

namespace {

constexpr char kToken[] = "f00dfeedf00dfeedf00dfeedf00dfeedf00dfeedf00dfeedf00dfeedf00dfeed";

struct World {
  superagent::fuzz::EngineHarness harness;
  std::unique_ptr<superagent::Views> views;
  std::unique_ptr<superagent::exec::WorkerSessionHost> host;
  std::unique_ptr<superagent::Intercom> intercom;
  httplib::Server server;
  std::unique_ptr<superagent::panel::Panel> panel;
  std::thread thread;
  std::unique_ptr<httplib::Client> client;
  httplib::Headers headers;
  World() {
    auto v = superagent::Views::Open((harness.dir() / "superagent.db").string());
    if (!v.ok()) std::abort();
    views = std::move(*v);
    host = std::make_unique<superagent::exec::WorkerSessionHost>(harness.engine(), views.get(), "octo-org/widgets", nullptr);
    intercom = std::make_unique<superagent::Intercom>(harness.engine(), views.get(), host.get(), harness.clock());
    superagent::panel::PanelContext ctx;
    ctx.engine = harness.engine();
    ctx.views = views.get();
    ctx.intercom = intercom.get();
    ctx.token = kToken;  // the panel token (issue 19): the fuzzed commands come from a logged-in person
    ctx.reload_policy = [] {
      superagent::panel::PolicyReloadResult r;
      r.valid = true;
      r.origin = "embedded default";
      return r;
    };
    auto p = superagent::panel::InstallRoutes(server, ctx);
    if (!p.ok()) std::abort();
    panel = std::move(*p);
    const int port = server.bind_to_any_port("127.0.0.1");
    thread = std::thread([this] { server.listen_after_bind(); });
    client = std::make_unique<httplib::Client>("127.0.0.1", port);
    client->set_keep_alive(true);
    client->set_bearer_token_auth(kToken);
    client->set_read_timeout(10, 0);
    auto session = client->Get("/api/session");
    if (!session || session->status != 200) std::abort();
    auto csrf = nlohmann::json::parse(session->body, nullptr, false);
    headers = {{"X-CSRF-Token", csrf.value("csrf_token", "")}, {"Origin", "http://127.0.0.1:" + std::to_string(port)}};
  }
};

const std::set<std::string>& Commands() {
  static const std::set<std::string> commands = {
      "/api/tickets/1/stop", "/api/tickets/1/answer", "/api/policy/reload",
      "/api/intercom/sessions/s1/send", "/api/intercom/sessions", "/api/intercom/groups",
      "/api/intercom/groups/g1/members", "/api/intercom/groups/g1/remove", "/api/intercom/groups/g1/delete",
      "/api/intercom/groups/g1/broadcast"};
  return commands;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace superagent;
  static World* world = new World();
  auto [path, body] = fuzz::SplitFirstLine(fuzz::Bytes(data, size));
  if (Commands().count(path) == 0) return 0;
  auto r = world->client->Post(path.c_str(), world->headers, body, "application/json");
  if (!r) {
    std::fprintf(stderr, "panel did not answer %s: %s\n", path.c_str(), httplib::to_string(r.error()).c_str());
    std::abort();
  }
  if (r->status == 500 && r->has_header("EXCEPTION_WHAT")) {
    std::fprintf(stderr, "exception escaped %s: %s\n", path.c_str(), r->get_header_value("EXCEPTION_WHAT").c_str());
    std::abort();
  }
  return 0;
}

// A polling round against a GitHub that lies (src/sources/github/source.cpp and client.cpp):
// every GET is answered 200 with the input as its body, so the notifications, discussions,
// repo-wide listings and CI runs of one Source::RunOnce all parse what the fuzzer wrote, and what
// normalizes goes through the Engine's intake (a real SQLite store). A round may fail and report
// errors — never crash.
#include "fuzz_support.h"
#include "superagent/github.h"

namespace {

class LyingGitHub : public superagent::HttpClient {
 public:
  std::string body;
  superagent::HttpResponse Send(const superagent::HttpRequest&) override {
    superagent::HttpResponse r;
    r.status = 200;
    r.headers["content-type"] = "application/json; charset=utf-8";
    r.body = body;
    return r;
  }
};

struct World {
  superagent::fuzz::EngineHarness harness;
  LyingGitHub http;
  superagent::github::Client client{&http, harness.clock(), [](superagent::TimeMs) {}, {}};
  std::unique_ptr<superagent::github::Source> source;
  World() {
    superagent::github::SourceOptions o;
    o.repo = "octo-org/widgets";
    o.bot_login = "superagent-bot";
    o.poll_attempts = 1;
    source = std::make_unique<superagent::github::Source>(harness.engine(), harness.views(), &client, harness.clock(), o);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace superagent;
  static World* world = new World();
  world->http.body = fuzz::Bytes(data, size);
  world->harness.clock()->Advance(3'600'000);  // every path is due again: notifications, followed, CI
  world->source->RunOnce();
  return 0;
}

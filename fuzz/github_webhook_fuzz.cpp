// POST /hooks/github (src/sources/github/webhook.cpp): a signed delivery — the first input line
// is the X-GitHub-Event header, the rest the body, signed with the configured secret so the
// fuzzer gets past the signature to the parsing, normalization and the Engine's intake behind
// it (a real SQLite store). Any delivery must get a reply with a status — never a crash.
#include "fuzz_support.h"
#include "superagent/github.h"

namespace {

constexpr const char* kSecret = "webhook-s3cret";

struct World {
  superagent::fuzz::EngineHarness harness;
  superagent::fuzz::NoNetwork http;
  superagent::github::Client client{&http, harness.clock(), [](superagent::TimeMs) {}, {}};
  std::unique_ptr<superagent::github::Source> source;
  World() {
    superagent::github::SourceOptions o;
    o.repo = "octo-org/widgets";
    o.bot_login = "superagent-bot";  // known: a delivery never waits on GitHub for it
    o.webhook_secret = kSecret;
    source = std::make_unique<superagent::github::Source>(harness.engine(), harness.views(), &client, harness.clock(), o);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace superagent;
  static World* world = new World();  // lives for the run, as the daemon's Source does
  auto [event, body] = fuzz::SplitFirstLine(fuzz::Bytes(data, size));
  github::WebhookRequest req;
  req.event = event;
  req.delivery = "fuzz";
  req.body = body;
  req.signature = github::WebhookSignature(kSecret, body);
  github::WebhookReply reply = world->source->HandleWebhook(req);
  if (reply.status < 200 || reply.status > 599) std::abort();
  return 0;
}

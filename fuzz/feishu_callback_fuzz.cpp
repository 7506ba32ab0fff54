// POST /hooks/feishu (src/sources/feishu/callback.cpp, then the event's way into the Engine):
// the body, decrypted and verified, and the event it carries. The first input byte picks the
// shape: odd — the rest is the raw body (refusals: bad JSON, bad ciphertext, bad signature);
// even — the rest is the plaintext an attacker holding the key could send, encrypted and signed
// as Feishu does, so the fuzzer reaches the event parsing and the Engine's intake behind them.
// Any body must get a reply with a status — never a crash.
#include "fuzz_support.h"
#include "superagent/feishu.h"
#include "sources/feishu/source.h"

namespace {

constexpr const char* kKey = "encrypt-k3y";

struct World {
  superagent::fuzz::EngineHarness harness;
  superagent::fuzz::FeishuIdentity http;
  superagent::feishu::Client client{&http, harness.clock(), {}};
  std::unique_ptr<superagent::feishu::Source> source;
  World() {
    superagent::feishu::SourceOptions o;
    o.encrypt_key = kKey;
    source = std::make_unique<superagent::feishu::Source>(harness.engine(), harness.views(), &client, harness.clock(), o);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace superagent;
  static World* world = new World();  // lives for the run (the Engine's files go with the process's temp dir)
  if (size == 0) return 0;
  const std::string rest = fuzz::Bytes(data + 1, size - 1);
  feishu::CallbackRequest req;
  req.timestamp = std::to_string(world->harness.clock()->NowMs() / 1000);
  req.nonce = "n0nce";
  if (data[0] % 2 == 1) {
    req.body = rest;
    req.signature = feishu::CallbackSignature(req.timestamp, req.nonce, kKey, req.body);
  } else {
    req.body = nlohmann::json{{"encrypt", feishu::Encrypt(kKey, rest, "0123456789abcdef")}}.dump();
    req.signature = feishu::CallbackSignature(req.timestamp, req.nonce, kKey, req.body);
  }
  feishu::CallbackReply reply = world->source->HandleCallback(req);
  if (reply.status < 200 || reply.status > 599) std::abort();
  return 0;
}

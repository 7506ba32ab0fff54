// What every fuzz target shares: turning the fuzzer's bytes into the inputs a parser takes, and a
// real Engine over a real SQLite file for the entry points that store what they parse.
//
// A harness calls the parser exactly as the daemon does and ignores a clean error (a Status, a
// kMalformed, a 4xx): only a crash, a sanitizer report or an exception that escapes the parser
// (libFuzzer reports it as a deadly signal from std::terminate) is a finding.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "superagent/clock.h"
#include "superagent/engine.h"
#include "superagent/views.h"
#include "superagent/http.h"
#include "superagent/policy.h"
#include "superagent/trigger.h"

namespace superagent::fuzz {

inline std::string Bytes(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// Splits "head\nrest" at the first newline: a harness reads a selector (event name, tool name)
// from the first line and the payload from the rest, so seeds stay readable files.
inline std::pair<std::string, std::string> SplitFirstLine(const std::string& in) {
  const auto nl = in.find('\n');
  if (nl == std::string::npos) return {in, ""};
  return {in.substr(0, nl), in.substr(nl + 1)};
}

// What the Engine does with a normalized Trigger before anything else: store it as JSON (a dump
// throws on invalid UTF-8, say a text cut inside a character) and read it back.
inline void StoreAndReload(const Trigger& t) {
  const std::string stored = TriggerToJson(t).dump();
  if (!TriggerFromJson(nlohmann::json::parse(stored)).ok()) std::abort();
}

// The team policy the Engine-backed targets run under: GitHub and Feishu people, scopes and
// two rules, so normalized Triggers go through the real Gate.
inline const char* kPolicyYaml = R"(
mode: observe
sources:
  github:
    people: [alice, bob]
    bots: ["dependabot[bot]"]
    scopes:
      issues: { receive_all: false }
      comments: { receive_all: true, allowed_unaddressed: inferred, others_addressed: ignore, others_unaddressed: ignore }
      ci: { others_unaddressed: inferred }
  feishu:
    people: [ou_alice]
    scopes:
      "chat:oc_support": { receive_all: false, others_addressed: explicit }
rules:
  - name: wording
    enabled: true
    when: Fix wording, typos, punctuation and existing translations.
    instructions: Keep the change to the text in question.
  - name: visual
    enabled: true
    when: Targeted visual fixes with a clear goal.
    instructions: Restore spacing to the existing standard.
)";

inline Policy TeamPolicy() {
  std::vector<Problem> problems;
  auto p = ParsePolicy(kPolicyYaml, "fuzz-policy.yaml", &problems);
  if (!p) std::abort();  // the harness itself is broken
  return *p;
}

// One real Engine for the whole run, in a fresh directory under $TMPDIR (cmake/dev.sh points it
// into the build directory), removed at exit. Inputs accumulate in it, as deliveries do in a
// running daemon; a harness keeps it for the whole process, so it is never destroyed.
class EngineHarness {
 public:
  EngineHarness() {
    dir_ = std::filesystem::temp_directory_path() / ("superagent-fuzz-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    static std::string at_exit_dir;
    at_exit_dir = dir_.string();
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(at_exit_dir, ec);
    });
    clock_.Set(1'780'000'000'000);  // 2026: timestamps in recorded payloads are in the past
    auto e = Engine::Open((dir_ / "superagent.db").string(), &clock_, TeamPolicy(), "fuzz-policy.yaml");
    if (!e.ok()) std::abort();
    engine_ = std::move(*e);
    auto v = Views::Open((dir_ / "superagent.db").string());
    if (!v.ok()) std::abort();
    views_ = std::move(*v);
  }
  Engine* engine() { return engine_.get(); }
  Views* views() { return views_.get(); }  // the read face beside it, as the daemon opens one
  FakeClock* clock() { return &clock_; }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  FakeClock clock_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<Views> views_;
};

// A network that is never there: a harness must not reach out, and a parser must cope.
class NoNetwork : public HttpClient {
 public:
  HttpResponse Send(const HttpRequest&) override {
    HttpResponse r;
    r.error = "no network in a fuzz run";
    return r;
  }
};

// A Feishu that knows the agent: a tenant token and the bot's open_id (ou_bot), nothing else. The
// Source asks for its identity before it takes an event; the event itself is the fuzzer's.
class FeishuIdentity : public HttpClient {
 public:
  HttpResponse Send(const HttpRequest& request) override {
    HttpResponse r;
    r.status = 200;
    r.headers["content-type"] = "application/json";
    if (request.url.find("tenant_access_token") != std::string::npos)
      r.body = R"({"code":0,"msg":"ok","tenant_access_token":"t-fuzz","expire":7200})";
    else if (request.url.find("/bot/v3/info") != std::string::npos)
      r.body = R"({"code":0,"msg":"ok","bot":{"open_id":"ou_bot","app_name":"Agent"}})";
    else
      r.body = R"({"code":0,"msg":"ok","data":{"items":[],"has_more":false}})";
    return r;
  }
};

}  // namespace superagent::fuzz

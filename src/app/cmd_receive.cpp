// superagent receive --trigger FILE [--config FILE] [--via NAME]
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "app/commands.h"
#include "app/config.h"
#include "superagent/engine.h"

namespace superagent::app {
namespace {

const char kReceiveUsage[] =
    "usage: superagent receive --trigger FILE [--config FILE] [--via NAME]\n"
    "\n"
    "Hands one normalized Trigger (JSON, the form `superagent gate` takes; FILE may be -) to the\n"
    "store's Intake, exactly as a Source would, and prints the outcome as one JSON line:\n"
    "  {\"outcome\":\"stored|filtered|duplicate\",\"queued_for_eval\":...,\"delivered_to\":[...]}\n"
    "A running daemon on the same data_dir judges it within a second. Use it to replay a message a\n"
    "Source missed; receiving the same id twice changes nothing. --via (default \"cli\") is recorded.\n";

}  // namespace

int CmdReceive(int argc, char** argv) {
  std::string config_path, trigger_path, via = "cli";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      std::fputs(kReceiveUsage, stdout);
      return 0;
    }
    if (!std::strcmp(argv[i], "--config") && i + 1 < argc) config_path = argv[++i];
    else if (!std::strcmp(argv[i], "--trigger") && i + 1 < argc) trigger_path = argv[++i];
    else if (!std::strcmp(argv[i], "--via") && i + 1 < argc) via = argv[++i];
    else {
      return UsageError("receive", "unexpected argument '" + std::string(argv[i]) + "'", kReceiveUsage);
    }
  }
  if (trigger_path.empty()) {
    return UsageError("receive", "--trigger is required", kReceiveUsage);
  }
  std::string text;
  if (trigger_path == "-") {
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, stdin)) > 0) text.append(buf, n);
  } else {
    std::ifstream in(trigger_path, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "receive: cannot read %s\n", trigger_path.c_str());
      return 2;
    }
    std::ostringstream buf;  // not istreambuf_iterator: it trips GCC 12's -Wnull-dereference at -O2
    buf << in.rdbuf();
    text = buf.str();
  }
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) {
    std::fprintf(stderr, "receive: %s: not valid JSON\n", trigger_path.c_str());
    return 2;
  }
  auto trigger = TriggerFromJson(j);
  if (!trigger.ok()) {
    std::fprintf(stderr, "receive: %s: %s\n", trigger_path.c_str(), trigger.status().message().c_str());
    return 2;
  }
  auto config = LoadConfigOrReport(config_path);
  if (!config) return 2;
  auto engine = OpenExistingOrReport(*config, "receive");
  if (!engine) return 1;
  auto r = engine->Receive(*trigger, via);
  if (!r.ok()) {
    std::fprintf(stderr, "receive: %s\n", r.status().ToString().c_str());
    return 1;
  }
  nlohmann::json out{{"outcome", IntakeOutcomeName(r->outcome)}, {"queued_for_eval", r->queued_for_eval},
                     {"delivered_to", r->delivered_to}, {"resumed", r->resumed}};
  if (!r->filter_reason.empty()) out["filter_reason"] = r->filter_reason;
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace superagent::app

// `superagent gate`: evaluates the Gate alone on one Trigger, so a person editing policy.yaml
// can see what a message would get without running the daemon.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "superagent/gate.h"
#include "superagent/policy.h"
#include "superagent/trigger.h"

namespace superagent::app {
namespace {

constexpr const char kGateUsage[] =
    "usage: superagent gate --policy POLICY.yaml --trigger TRIGGER.json [--thread-has-ticket]\n"
    "\n"
    "Evaluates the Gate (SPEC 4.2-4.4) for one Trigger and prints one line of JSON:\n"
    "  {\"candidate\":true,\"reason\":\"allow_listed_addressed\",\"strength\":\"explicit\"}\n"
    "\n"
    "  --policy FILE         policy.yaml to evaluate against\n"
    "  --trigger FILE        the Trigger as JSON (SPEC 3.1); \"-\" reads standard input\n"
    "  --thread-has-ticket   the Trigger's Thread already has a Ticket (makes it a follow-up)\n"
    "  --help                this text\n"
    "\n"
    "Exit status: 0 evaluated, 2 bad usage or bad input.\n";

int BadUsage(const std::string& what) { return UsageError("gate", what, kGateUsage); }

// Reads all of `path` ("-" is standard input) into *out; false (errno set) when it cannot.
// stdio rather than iostreams: istreambuf_iterator over std::cin trips GCC's -Wnull-dereference
// at -O2.
bool ReadAll(const std::string& path, std::string* out) {
  std::FILE* f = path == "-" ? stdin : std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  char buf[8192];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out->append(buf, n);
  bool ok = std::ferror(f) == 0;
  if (f != stdin) std::fclose(f);
  return ok;
}

}  // namespace

int CmdGate(int argc, char** argv) {
  std::optional<std::string> policy_path;
  std::optional<std::string> trigger_path;
  bool thread_has_ticket = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    // Accepts both "--flag value" and "--flag=value".
    auto value_of = [&](const std::string& flag, std::optional<std::string>* out) -> int {
      if (arg == flag) {
        if (i + 1 >= argc) return BadUsage(flag + " needs a value");
        *out = argv[++i];
        return 0;
      }
      *out = arg.substr(flag.size() + 1);
      return 0;
    };
    if (arg == "--help" || arg == "-h") {
      std::fputs(kGateUsage, stdout);
      return 0;
    } else if (arg == "--thread-has-ticket") {
      thread_has_ticket = true;
    } else if (arg == "--policy" || arg.rfind("--policy=", 0) == 0) {
      if (int rc = value_of("--policy", &policy_path); rc != 0) return rc;
    } else if (arg == "--trigger" || arg.rfind("--trigger=", 0) == 0) {
      if (int rc = value_of("--trigger", &trigger_path); rc != 0) return rc;
    } else {
      return BadUsage("unknown argument \"" + arg + "\"");
    }
  }
  if (!policy_path || policy_path->empty()) return BadUsage("--policy is required");
  if (!trigger_path || trigger_path->empty()) return BadUsage("--trigger is required");

  std::vector<Problem> problems;
  std::optional<Policy> policy = LoadPolicyFile(*policy_path, &problems);
  if (!policy) {
    for (const Problem& p : problems) std::fprintf(stderr, "%s\n", p.ToString().c_str());
    return 2;
  }

  const std::string trigger_name = *trigger_path == "-" ? "<stdin>" : *trigger_path;
  std::string text;
  errno = 0;
  if (!ReadAll(*trigger_path, &text)) {
    std::fprintf(stderr, "gate: %s: cannot read trigger file: %s\n", trigger_name.c_str(),
                 errno != 0 ? std::strerror(errno) : "read error");
    return 2;
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // e.what() starts with "[json.exception.parse_error.101] ", which helps nobody reading it.
    std::string what = e.what();
    if (what.rfind("[json.exception.", 0) == 0 && what.find("] ") != std::string::npos)
      what = what.substr(what.find("] ") + 2);
    std::fprintf(stderr, "gate: %s: invalid JSON at byte %zu: %s\n", trigger_name.c_str(), e.byte, what.c_str());
    return 2;
  }
  Result<Trigger> trigger = TriggerFromJson(j);
  if (!trigger.ok()) {
    std::fprintf(stderr, "gate: %s: %s\n", trigger_name.c_str(), trigger.status().message().c_str());
    return 2;
  }

  GateResult r = EvaluateGate(*policy, *trigger, thread_has_ticket);
  std::printf("%s\n", GateResultToJson(r).dump().c_str());
  return 0;
}

}  // namespace superagent::app

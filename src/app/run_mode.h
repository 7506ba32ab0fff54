// How this daemon was started — by systemd, by `cmake/dev.sh run`, or by hand in a terminal — so
// that a hint to restart it, or to give it a secret, names the way that works (issue 34: set-up
// cards under dev.sh told people to `systemctl restart` a service that did not exist). Worked out
// once in app/ from an environment handed in, so the logic below never reads the process's own.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace superagent::app {

// The variable cmake/dev.sh exports before it starts `serve` ("dev.sh"): nothing else marks a
// daemon started by the script.
inline constexpr const char kStartedByVariable[] = "SUPERAGENT_STARTED_BY";

struct RunMode {
  enum class Kind { kTerminal, kDevSh, kSystemd };
  Kind kind = Kind::kTerminal;
  std::string unit = "superagent.service";  // kSystemd: the unit that runs it
  std::string config_file;                  // the --config it was given; "" for the defaults
};

// How a daemon with this environment and /proc/self/cgroup text runs: systemd when INVOCATION_ID
// is set (systemd sets it for every unit it starts; the unit's name is the last "*.service" of
// the cgroup path, "superagent.service" when none is found); dev.sh when SUPERAGENT_STARTED_BY is
// "dev.sh"; a terminal otherwise. `config_file` is the --config it was given.
RunMode RunModeFrom(const std::map<std::string, std::string>& env, std::string_view cgroup,
                    const std::string& config_file);

// RunModeFrom this process's environment and /proc/self/cgroup (app/ only; the daemon asks once
// at start).
RunMode CurrentRunMode(const std::string& config_file);

// How to restart it, as a sentence: "Then restart it: sudo systemctl restart superagent.service."
// / "Then restart it: stop it with Ctrl-C and run cmake/dev.sh run --config FILE." / "… start
// `superagent serve --config FILE` again."
std::string RestartHint(const RunMode& mode);

// Where a secret's variable must be set for this daemon to see it at its next start: the
// service's secrets file or credentials, or the shell that starts it.
std::string SecretsHint(const RunMode& mode);

}  // namespace superagent::app

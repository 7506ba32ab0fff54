// superagent serve [--config FILE]
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include <spdlog/spdlog.h>

#include "app/commands.h"
#include "app/daemon.h"
#include "app/logging.h"
#include "app/panel_token.h"
#include "app/run_mode.h"
#include "app/secrets.h"

namespace superagent::app {
namespace {

const char kServeUsage[] =
    "usage: superagent serve [--config FILE]\n"
    "\n"
    "Runs the daemon in the foreground: opens the store under data_dir, loads the policy,\n"
    "serves the panel on panel.listen and judges incoming messages. Without --config it uses\n"
    "the embedded defaults: ./superagent-data, 127.0.0.1:8080, policy in observe mode.\n"
    "\n"
    "signals: SIGHUP re-reads the policy file; SIGINT/SIGTERM shut down gracefully, a second\n"
    "one exits at once. Under systemd (Type=notify) it reports readiness and feeds the watchdog.\n"
    "logs go to stderr, one line per event, key=value fields. On a terminal it also prints the\n"
    "panel's login link (the token in data_dir/panel.token; `superagent panel-url` prints it again).\n";

}  // namespace

int CmdServe(int argc, char** argv) {
  std::string config_path;
  if (auto exit = ParseConfigOnly(argc, argv, "serve", kServeUsage, &config_path)) return *exit;

  auto loaded = LoadConfigOrReport(config_path);
  if (!loaded) {
    std::fprintf(stderr, "serve: the config has problems; nothing started\n");
    return 2;
  }
  Config config = *loaded;
  SetupLogging(config.log.level);

  // Every secret read once, from systemd's credentials or the environment, then gone from the
  // environment (issue 33): nothing the daemon starts later can inherit or re-read it there.
  auto secrets = LoadSecrets(config, /*scrub=*/true);
  if (!secrets.ok()) {
    spdlog::critical("start failed {}", Kv("error", secrets.status().ToString()));
    return 1;
  }
  for (const SecretOrigin& s : *secrets)
    if (!s.origin.empty())  // doctor lists the unset ones too
      spdlog::info("secret {} {} {}", Kv("key", s.key), Kv("name", s.name), Kv("from", DescribeOrigin(s.origin)));

  // Signals are taken synchronously by Daemon::Run; every thread started later inherits the mask.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);

  // How it runs (systemd, cmake/dev.sh, a terminal) picks the restart hints it gives.
  Daemon daemon(config, CurrentRunMode(config_path));
  if (Status s = daemon.Start(); !s.ok()) {
    spdlog::critical("start failed {}", Kv("error", s.ToString()));
    return 1;
  }
  // The login link, as Jupyter prints it: only to a person at a terminal, never into a log file
  // or the journal (whoever reads those need not be a panel operator).
  if (::isatty(STDERR_FILENO)) {
    if (auto token = PanelCredential(config, /*create=*/false); token.ok())
      std::fprintf(stderr,
                   "\n  The panel: open this link to log in (`superagent panel-url` prints it again):\n"
                   "  %s\n\n",
                   PanelLoginUrl(config.panel.listen, *token).c_str());
  }
  daemon.Run();
  daemon.Shutdown();
  return 0;
}

}  // namespace superagent::app

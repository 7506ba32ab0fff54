// superagent panel-url [--config FILE]
#include <cstdio>
#include <cstring>
#include <string>

#include "app/commands.h"
#include "app/panel_token.h"

namespace superagent::app {
namespace {

const char kPanelUrlUsage[] =
    "usage: superagent panel-url [--config FILE]\n"
    "\n"
    "Prints the panel's one-click login link, e.g. http://127.0.0.1:8080/login?token=...\n"
    "Opening it logs the browser in (an HttpOnly cookie) and shows the panel. The token is made\n"
    "by the first `superagent serve` and kept in data_dir/panel.token (0600); with\n"
    "panel.token_env set, the password in that variable is the token instead.\n"
    "Reading the token needs read access to data_dir: run this as the daemon's user.\n";

}  // namespace

int CmdPanelUrl(int argc, char** argv) {
  std::string config_path;
  if (auto exit = ParseConfigOnly(argc, argv, "panel-url", kPanelUrlUsage, &config_path)) return *exit;
  auto config = LoadConfigOrReport(config_path);
  if (!config) return 2;
  auto token = PanelCredential(*config, /*create=*/false);
  if (!token.ok()) {
    std::fprintf(stderr, "panel-url: %s\n", token.status().message().c_str());
    return 1;
  }
  std::printf("%s\n", PanelLoginUrl(config->panel.listen, *token).c_str());
  return 0;
}

}  // namespace superagent::app

#include "app/systemd.h"

#include <systemd/sd-daemon.h>

#include <algorithm>
#include <cstdint>

namespace superagent::app {

bool NotifyServiceManager(const std::string& state) { return sd_notify(0, state.c_str()) > 0; }

std::chrono::milliseconds WatchdogKeepAliveInterval() {
  std::uint64_t usec = 0;
  // >0 only when WATCHDOG_USEC is set and WATCHDOG_PID (if set) names this process.
  if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0) return std::chrono::milliseconds(0);
  return std::chrono::milliseconds(std::max<std::uint64_t>(1, usec / 2000));
}

}  // namespace superagent::app

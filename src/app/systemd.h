// The service manager's side channel (sd_notify): readiness, reloads, stopping, and watchdog
// keep-alives for a Type=notify unit. Every call is a no-op when NOTIFY_SOCKET is unset, so the
// daemon runs the same in a terminal, under a test, or under systemd.
#pragma once

#include <chrono>
#include <string>

namespace superagent::app {

// Sends `state` ("READY=1", "STATUS=...", ...) to the service manager. Returns true when a
// manager received it, false when there is none (or the socket refused it).
bool NotifyServiceManager(const std::string& state);

// How often the main loop must send WATCHDOG=1: half of WatchdogSec (WATCHDOG_USEC), so one
// late keep-alive never kills a healthy process. Zero when no watchdog is configured.
std::chrono::milliseconds WatchdogKeepAliveInterval();

}  // namespace superagent::app

// The service manager's side channel (sd_notify): readiness, reloads, stopping, and watchdog
// keep-alives for a Type=notify unit. Every call is a no-op when NOTIFY_SOCKET is unset, so the
// daemon runs the same in a terminal, under a test, or under systemd.
//
// The protocol is spoken here rather than through libsystemd: it is one datagram on an AF_UNIX
// socket, documented as stable for reimplementation (sd_notify(3)), and libsystemd would bring
// libgcrypt, liblz4, liblzma and libcap into a daemon that idles in ~20 MB (docs/008).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>

namespace superagent::app {

// Sends `state` ("READY=1", "STATUS=...", ...) to the service manager named by NOTIFY_SOCKET.
// Returns true when the datagram was delivered, false when there is no manager (or the socket
// refused it).
bool NotifyServiceManager(const std::string& state);

// Sends `state` to the socket `address`: a filesystem path, or "@name" for the abstract
// namespace. False when `address` is empty, too long, or nothing is listening there.
bool NotifySocketAddress(const std::string& address, const std::string& state);

// How often the main loop must send WATCHDOG=1: half of WatchdogSec (WATCHDOG_USEC), so one
// late keep-alive never kills a healthy process. Zero when no watchdog is configured.
std::chrono::milliseconds WatchdogKeepAliveInterval();

// The same from explicit values: `usec` is WATCHDOG_USEC and `pid` WATCHDOG_PID (either may be
// null). Zero unless `usec` is a positive integer and `pid`, when given, names `self`.
std::chrono::milliseconds WatchdogKeepAliveIntervalFrom(const char* usec, const char* pid, pid_t self);

}  // namespace superagent::app

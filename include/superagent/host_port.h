// "host:port" listen addresses: how the panel's is split, and which hosts are loopback (only a
// loopback panel may run without a password). Shared by app/ (validating panel.listen, binding)
// and the panel (its security checks).
#pragma once

#include <string>
#include <string_view>

namespace superagent {

// Splits "host:port" (host may be "[v6addr]"; brackets are removed). Port must be 1..65535 and
// host non-empty. Returns false on anything else.
bool SplitHostPort(std::string_view listen, std::string* host, int* port);

// True when `host` (as SplitHostPort returns it) is a loopback address: localhost, 127.0.0.0/8
// or ::1.
bool IsLoopbackHost(std::string_view host);

}  // namespace superagent

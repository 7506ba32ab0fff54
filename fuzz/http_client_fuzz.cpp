// The HTTP client's parsers of outside bytes (src/net/http_internal.h): a URL a peer handed back
// (a next-page link, an upstream's answer), a proxy variable, and a response head as it came off
// the socket. The promises checked on any bytes: an accepted URL or proxy has a host with no
// byte a host cannot have and a port in 1..65535, and a path that cannot split a request (no
// space, control byte or byte over 0x7E); a parsed head yields lower-case token names and values
// without CR, LF or NUL (nothing from a peer can become a header line of ours). A broken promise
// aborts (a finding); nothing may throw.
#include <map>
#include <optional>
#include <string>

#include "fuzz_support.h"
#include "net/http_internal.h"

namespace {

using namespace superagent;
using namespace superagent::httplib_client;

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckHost(const HostPort& at) {
  Check(!at.host.empty());
  Check(at.port >= 1 && at.port <= 65535);
  Check(!HasSpaceOrControl(at.host));
  Check(at.host.find_first_of("/?#@") == std::string::npos);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  // The first byte picks the parser, the rest is its input.
  const std::string s = fuzz::Bytes(data + 1, size - 1);
  switch (data[0] % 3) {
    case 0: {
      Target t;
      if (ParseUrl(s, &t).empty()) {
        CheckHost(t.at);
        Check(!t.path.empty() && t.path.front() == '/');
        for (unsigned char c : t.path) Check(c > 0x20 && c < 0x7F);
      }
      break;
    }
    case 1: {
      // As a proxy variable, for an https URL and an http one, with and without no_proxy.
      Target https;
      Target http;
      Check(ParseUrl("https://example.com/", &https).empty() && ParseUrl("http://example.com/", &http).empty());
      for (const HttpProxies& p : {HttpProxies{.https_proxy = s}, HttpProxies{.http_proxy = s, .no_proxy = s},
                                   HttpProxies{.all_proxy = s, .no_proxy = "example.com"}}) {
        for (const Target* t : {&https, &http}) {
          std::optional<Proxy> proxy;
          const std::string why = ChooseProxy(p, *t, &proxy);
          if (!why.empty()) Check(!proxy.has_value());
          if (proxy) CheckHost(proxy->at);
        }
      }
      break;
    }
    default: {
      std::map<std::string, std::string> headers;
      ParseHead(s, &headers);
      for (const auto& [name, value] : headers) {
        Check(IsToken(name));
        for (char c : name) Check(!(c >= 'A' && c <= 'Z'));
        Check(!HasCrLfOrNul(value));
      }
      break;
    }
  }
  return 0;
}

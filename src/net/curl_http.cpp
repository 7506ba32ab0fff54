#include <chrono>
#include <curl/curl.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <mutex>

#include "superagent/http.h"
#include "superagent/text.h"

namespace superagent {
namespace {

// What the callbacks share: the response being filled and the request's streaming hooks.
struct Transfer {
  const HttpRequest* req;
  HttpResponse* resp;
  bool head_told = false;
};

size_t WriteBody(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  if (!t->req->on_body) {
    t->resp->body.append(data, size * n);
    return size * n;
  }
  if (!t->head_told && t->req->on_head) {
    t->head_told = true;
    t->req->on_head(t->resp->status, t->resp->headers);
  }
  return t->req->on_body(data, size * n) ? size * n : 0;  // 0: curl ends with a write error
}

size_t WriteHeader(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  HttpResponse* resp = t->resp;
  std::string line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) {
    resp->headers.clear();  // a new response (after a redirect or 100-continue) starts over
    // "HTTP/1.1 200 OK", "HTTP/2 200": the status, known here for a streaming caller's on_head.
    std::size_t sp = line.find(' ');
    resp->status = sp == std::string::npos ? 0 : std::atoi(line.c_str() + sp + 1);
    return size * n;
  }
  auto colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = text::AsciiLower(text::Trim(line.substr(0, colon)));
    std::string value = text::Trim(line.substr(colon + 1));
    auto& slot = resp->headers[name];
    slot = slot.empty() ? value : slot + ", " + value;
  }
  return size * n;
}

// libcurl calls this at least once a second while a transfer runs, waiting or not.
int AbortWhenCancelled(void* cancel, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<const std::atomic<bool>*>(cancel)->load() ? 1 : 0;
}

class CurlHttpClient : public HttpClient {
 public:
  explicit CurlHttpClient(std::string user_agent) : user_agent_(std::move(user_agent)) {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  }

  HttpResponse Send(const HttpRequest& req) override {
    HttpResponse resp;
    CURL* curl = curl_easy_init();
    if (!curl) {
      resp.error = "curl_easy_init failed";
      return resp;
    }
    curl_slist* headers = nullptr;
    for (const auto& [k, v] : req.headers) headers = curl_slist_append(headers, (k + ": " + v).c_str());
    // Without this curl sends "Expect: 100-continue" for larger bodies and waits for it.
    headers = curl_slist_append(headers, "Expect:");
    curl_easy_setopt(curl, CURLOPT_URL, req.url.c_str());
    // http and https only: a URL a peer handed back (a next-page link, an upstream's answer) must
    // not make the daemon read file://, ldap:// or gopher:// on its behalf.
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, req.method.c_str());
    if (req.method == "HEAD") curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
    if (!req.body.empty() || req.method == "POST" || req.method == "PATCH" || req.method == "PUT") {
      curl_easy_setopt(curl, CURLOPT_POSTFIELDS, req.body.data());
      curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
    }
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, user_agent_.c_str());
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, req.timeout_ms);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, req.connect_timeout_ms);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM-based timeouts
    curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");  // any encoding curl supports
    Transfer transfer{&req, &resp};
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, WriteBody);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, WriteHeader);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &transfer);
    if (req.cancel != nullptr) {
      curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, AbortWhenCancelled);
      curl_easy_setopt(curl, CURLOPT_XFERINFODATA, const_cast<std::atomic<bool>*>(req.cancel));
      curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    }
    const auto started = std::chrono::steady_clock::now();
    CURLcode rc = curl_easy_perform(curl);
    // A body-less answer (a 204, an error with no body) never reached WriteBody.
    if (rc == CURLE_OK && !transfer.head_told && req.on_head) {
      long code = 0;
      curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
      transfer.head_told = true;
      req.on_head(static_cast<int>(code), resp.headers);
    }
    if (rc != CURLE_OK) {
      resp.status = 0;
      resp.cancelled = rc == CURLE_ABORTED_BY_CALLBACK;
      resp.error = resp.cancelled ? "cancelled" : curl_easy_strerror(rc);
      resp.timed_out = rc == CURLE_OPERATION_TIMEDOUT;
    } else {
      long code = 0;
      curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
      resp.status = static_cast<int>(code);
    }
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    // Debug detail for "is it talking to GitHub at all?". The query is left out (it may carry a
    // ticket or a token); headers, which carry the credentials, are never logged.
    if (spdlog::should_log(spdlog::level::debug)) {
      const long ms = static_cast<long>(
          std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count());
      spdlog::debug("http {} {} status={} ms={} bytes={}{}", req.method, req.url.substr(0, req.url.find('?')),
                    resp.status, ms, resp.body.size(), resp.error.empty() ? "" : " error=\"" + resp.error + "\"");
    }
    return resp;
  }

 private:
  std::string user_agent_;
};

}  // namespace

std::string HttpResponse::Header(const std::string& name) const {
  auto it = headers.find(text::AsciiLower(name));
  return it == headers.end() ? "" : it->second;
}

std::unique_ptr<HttpClient> MakeCurlHttpClient(const std::string& user_agent) {
  return std::make_unique<CurlHttpClient>(user_agent);
}

}  // namespace superagent

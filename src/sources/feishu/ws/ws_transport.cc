// websocketpp's client behind wsio (see ws_transport.h). Built as C++17 (CMakeLists.txt: superagent_ws).
#define ASIO_STANDALONE
#define _WEBSOCKETPP_CPP11_STL_

#include "sources/feishu/ws_transport.h"

#include <mutex>

#include <websocketpp/client.hpp>
#include <websocketpp/config/asio_client.hpp>
#include <websocketpp/config/asio_no_tls_client.hpp>

namespace superagent::feishu::wsio {

namespace {

using TlsClient = websocketpp::client<websocketpp::config::asio_tls_client>;
using PlainClient = websocketpp::client<websocketpp::config::asio_client>;

template <typename C>
void Quiet(C& c) {
  c.clear_access_channels(websocketpp::log::alevel::all);
  c.clear_error_channels(websocketpp::log::elevel::all);
}

}  // namespace

struct ClientSession::Impl {
  std::mutex mu;
  bool stopped = false;
  std::function<void()> stop;                              // set while running
  std::function<void(const std::string&)> send;            // set while running
  std::function<void(long, std::function<void()>)> after;  // set while running

  template <typename C>
  std::string RunWith(C& c, const std::string& url, ClientHandlers& h) {
    Quiet(c);
    c.init_asio();
    websocketpp::connection_hdl handle;
    bool opened = false;
    std::string failure;
    c.set_open_handler([&](websocketpp::connection_hdl hdl) {
      handle = hdl;
      opened = true;
      if (h.on_open) h.on_open();
    });
    c.set_message_handler([&](websocketpp::connection_hdl, typename C::message_ptr msg) {
      if (h.on_message) h.on_message(msg->get_payload());
    });
    c.set_close_handler([&](websocketpp::connection_hdl) { c.stop(); });
    c.set_fail_handler([&](websocketpp::connection_hdl hdl) {
      websocketpp::lib::error_code ec;
      auto con = c.get_con_from_hdl(hdl, ec);
      failure = con ? con->get_ec().message() + " (HTTP " + std::to_string(con->get_response_code()) + ")"
                    : std::string("connect failed");
      c.stop();
    });
    websocketpp::lib::error_code ec;
    auto con = c.get_connection(url, ec);
    if (ec) return "bad url: " + ec.message();
    c.connect(con);
    {
      std::lock_guard<std::mutex> lock(mu);
      if (stopped) return "stopped";
      stop = [&c] { c.stop(); };
      send = [&c, &handle](const std::string& bytes) {
        websocketpp::lib::error_code e;
        c.send(handle, bytes, websocketpp::frame::opcode::binary, e);
      };
      after = [&c](long ms, std::function<void()> fn) {
        c.set_timer(ms, [fn](const websocketpp::lib::error_code& e) {
          if (!e) fn();
        });
      };
    }
    c.run();
    std::lock_guard<std::mutex> lock(mu);
    stop = nullptr;
    send = nullptr;
    after = nullptr;
    return opened ? "" : (failure.empty() ? "connection closed before opening" : failure);
  }
};

ClientSession::ClientSession() : impl_(new Impl()) {}
ClientSession::~ClientSession() = default;

std::string ClientSession::Run(const std::string& url, ClientHandlers handlers) {
  if (url.rfind("wss://", 0) == 0) {
    TlsClient c;
    const std::string host = websocketpp::uri(url).get_host();
    c.set_tls_init_handler([host](websocketpp::connection_hdl) {
      auto ctx = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_client);
      ctx->set_default_verify_paths();
      ctx->set_verify_mode(asio::ssl::verify_peer);
      ctx->set_verify_callback(asio::ssl::host_name_verification(host));
      return ctx;
    });
    return impl_->RunWith(c, url, handlers);
  }
  PlainClient c;
  return impl_->RunWith(c, url, handlers);
}

void ClientSession::Send(const std::string& bytes) {
  std::function<void(const std::string&)> send;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    send = impl_->send;
  }
  if (send) send(bytes);
}

void ClientSession::After(long ms, std::function<void()> fn) {
  std::function<void(long, std::function<void()>)> after;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    after = impl_->after;
  }
  if (after) after(ms, std::move(fn));
}

void ClientSession::Stop() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->stopped = true;
  if (impl_->stop) impl_->stop();
}

}  // namespace superagent::feishu::wsio

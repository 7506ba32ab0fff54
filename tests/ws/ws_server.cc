// websocketpp's server behind WsServer (see ws_server.h). Built as C++17 (tests/CMakeLists.txt:
// superagent_test_ws).
#define ASIO_STANDALONE
#define _WEBSOCKETPP_CPP11_STL_

#include "ws/ws_server.h"

#include <map>
#include <mutex>
#include <thread>

#include <websocketpp/config/asio_no_tls.hpp>
#include <websocketpp/server.hpp>

namespace superagent::testing {

struct WsServer::Impl {
  using Server = websocketpp::server<websocketpp::config::asio>;
  Server server;
  Handlers handlers;
  std::thread thread;
  std::mutex mu;
  std::map<int, websocketpp::connection_hdl> open;
  std::map<const void*, int> ids;
  int next = 1;
  std::uint16_t port = 0;

  int IdOf(websocketpp::connection_hdl h) {
    std::lock_guard<std::mutex> lock(mu);
    auto key = h.lock().get();
    auto it = ids.find(key);
    if (it != ids.end()) return it->second;
    int id = next++;
    ids[key] = id;
    open[id] = h;
    return id;
  }
};

WsServer::WsServer(Handlers handlers) : impl_(new Impl()) {
  impl_->handlers = std::move(handlers);
  auto& s = impl_->server;
  s.clear_access_channels(websocketpp::log::alevel::all);
  s.clear_error_channels(websocketpp::log::elevel::all);
  s.init_asio();
  s.set_reuse_addr(true);
  s.set_validate_handler([this](websocketpp::connection_hdl h) {
    if (!impl_->handlers.on_handshake) return true;
    auto con = impl_->server.get_con_from_hdl(h);
    const int status = impl_->handlers.on_handshake(con->get_resource());
    if (status == 0) return true;
    con->set_status(static_cast<websocketpp::http::status_code::value>(status));
    return false;
  });
  s.set_open_handler([this](websocketpp::connection_hdl h) {
    const int id = impl_->IdOf(h);
    auto con = impl_->server.get_con_from_hdl(h);
    if (impl_->handlers.on_open) impl_->handlers.on_open(id, con->get_resource());
  });
  s.set_message_handler([this](websocketpp::connection_hdl h, Impl::Server::message_ptr msg) {
    const int id = impl_->IdOf(h);
    if (impl_->handlers.on_message) impl_->handlers.on_message(id, msg->get_payload());
  });
  s.set_close_handler([this](websocketpp::connection_hdl h) {
    const int id = impl_->IdOf(h);
    {
      std::lock_guard<std::mutex> lock(impl_->mu);
      impl_->open.erase(id);
    }
    if (impl_->handlers.on_close) impl_->handlers.on_close(id);
  });
  asio::ip::tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), 0);
  s.listen(ep);
  s.start_accept();
  websocketpp::lib::asio::error_code ec;
  impl_->port = s.get_local_endpoint(ec).port();
  impl_->thread = std::thread([this] { impl_->server.run(); });
}

WsServer::~WsServer() {
  websocketpp::lib::error_code ec;
  impl_->server.stop_listening(ec);
  CloseAll();
  impl_->server.stop();
  impl_->thread.join();
}

std::uint16_t WsServer::Port() const { return impl_->port; }

void WsServer::Send(int conn, const std::string& bytes) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->open.find(conn);
  if (it == impl_->open.end()) return;
  websocketpp::lib::error_code ec;
  impl_->server.send(it->second, bytes, websocketpp::frame::opcode::binary, ec);
}

void WsServer::CloseAll() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  for (auto& [id, h] : impl_->open) {
    websocketpp::lib::error_code ec;
    impl_->server.close(h, websocketpp::close::status::going_away, "bye", ec);
  }
}

}  // namespace superagent::testing

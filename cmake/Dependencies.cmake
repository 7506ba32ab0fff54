# All dependencies come from Debian packages; cmake/dev.sh installs them with apt-get.
set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(spdlog REQUIRED)
find_package(yaml-cpp REQUIRED)
# Feishu: AES-256-CBC callbacks and TLS for the long connection (its protobuf frames have a codec
# of their own, src/sources/feishu/frames.cpp).
find_package(OpenSSL REQUIRED)
# websocketpp is header-only over standalone Asio (libwebsocketpp-dev, libasio-dev), both in
# /usr/include; src/sources/feishu/ws/ws_transport.cc defines ASIO_STANDALONE itself.
find_path(WEBSOCKETPP_INCLUDE_DIR websocketpp/client.hpp REQUIRED)
find_path(ASIO_INCLUDE_DIR asio.hpp REQUIRED)
find_package(PkgConfig REQUIRED)

# Debian ships cpp-httplib as a compiled library with a pkg-config file, no CMake config.
pkg_check_modules(CPP_HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
add_library(superagent::httplib INTERFACE IMPORTED)
target_link_libraries(superagent::httplib INTERFACE PkgConfig::CPP_HTTPLIB)
# Third-party headers are system headers: our -Werror must not judge them.
get_target_property(_httplib_inc PkgConfig::CPP_HTTPLIB INTERFACE_INCLUDE_DIRECTORIES)
if(_httplib_inc)
  target_include_directories(superagent::httplib SYSTEM INTERFACE ${_httplib_inc})
endif()


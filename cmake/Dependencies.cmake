# All dependencies come from Debian packages; cmake/dev.sh installs them with apt-get.
set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(spdlog REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(CURL REQUIRED)
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

# sd_notify for the Type=notify systemd unit (readiness and watchdog keep-alives).
pkg_check_modules(LIBSYSTEMD REQUIRED IMPORTED_TARGET libsystemd)

#!/usr/bin/env bash
# The newcomer's entry point. Installs what the build needs (Debian packages, via apt-get),
# configures, builds, and then runs the daemon or the tests.
#
#   cmake/dev.sh run    [serve args...]   build and start the daemon with embedded defaults
#   cmake/dev.sh test                     build and run the whole test suite
#   cmake/dev.sh test-asan                the same suite under ASan + UBSan (build-asan/)
#   cmake/dev.sh build                    only build (build/)
#   cmake/dev.sh bench-smoke              build the benchmarks (bench/) and run each at a tiny size
#   cmake/dev.sh package                  build the .deb (build-package/superagent_*.deb) and check it
#   cmake/dev.sh deps                     only install packages
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
jobs="$(nproc 2>/dev/null || echo 2)"

# Debian packages the build and the tests need. Keep in one place: README and CI rely on it.
packages=(build-essential cmake pkg-config git ca-certificates
          libsqlite3-dev nlohmann-json3-dev libcurl4-openssl-dev libssl-dev
          libcpp-httplib-dev libspdlog-dev libyaml-cpp-dev
          libprotobuf-dev protobuf-compiler libwebsocketpp-dev libasio-dev   # Feishu long connection
          libgtest-dev libgmock-dev
          chromium    # the panel's browser tests drive Debian's Chromium
          python3)    # execution tests start a grandchild listening on a port

# npm packages for tests only (recorded GitHub payloads, the browser driver): tests/package.json.
test_npm() {
  if ! command -v npm >/dev/null 2>&1; then
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends nodejs npm
  fi
  (cd tests && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
}

deps() {
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "dev.sh: installing ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
}

build() {  # build DIR [cmake args...]
  local dir="$1"; shift
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
}

cmd="${1:-}"; shift || true
case "$cmd" in
  deps)  deps ;;
  build) deps; build build ;;
  run)   deps; build build -DSUPERAGENT_TESTS=OFF; exec build/superagent serve "$@" ;;
  test)
    deps
    test_npm
    build build
    (cd build && ctest --output-on-failure -j "$jobs")
    ;;
  test-asan)
    # The same suite under AddressSanitizer + UndefinedBehaviorSanitizer.
    deps
    test_npm
    build build-asan -DSUPERAGENT_SANITIZE=ON
    (cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j "$jobs")
    ;;
  bench-smoke)
    # The benchmarks are not built by default; CI builds them and runs each briefly so none rots.
    # Their real run is `cmake --build build --target bench` (docs/008-performance.md).
    deps
    build build
    cmake --build build -j "$jobs" --target bench_programs
    bench/run.sh --smoke build/bench
    ;;
  package)
    # Its own build directory without tests: the package holds only the daemon.
    deps
    build build-package -DSUPERAGENT_TESTS=OFF
    cmake/check-package.sh build-package
    ;;
  *) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac

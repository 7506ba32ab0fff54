#!/usr/bin/env bash
# The newcomer's entry point. Installs what the build needs (Debian packages, via apt-get),
# configures, builds, and then runs the daemon or the tests.
#
#   cmake/dev.sh run    [serve args...]   build the daemon alone (build-run/) and start it with embedded defaults
#   cmake/dev.sh test                     build (build/, with the tests) and run the whole test suite
#   cmake/dev.sh test-asan                the same suite under ASan + UBSan (build-asan/)
#   cmake/dev.sh build                    only build (build/)
#   cmake/dev.sh bench-smoke              build the benchmarks (bench/) and run each at a tiny size
#   cmake/dev.sh fuzz [SECONDS] [TARGET…]  build the fuzz targets (fuzz/, clang) and run each (or the
#                                         named ones, e.g. text_fuzz) SECONDS (60)
#   cmake/dev.sh fuzz-smoke               the same briefly: each target over its seeds, then 5 s (CI)
#   cmake/dev.sh package                  build the .deb (build-package/superagent_*.deb) and check it
#   cmake/dev.sh deps                     only install packages
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
jobs="$(nproc 2>/dev/null || echo 2)"

# Debian packages the build and the tests need. Keep in one place: README and CI rely on it.
packages=(build-essential cmake pkg-config git ca-certificates
          libsqlite3-dev nlohmann-json3-dev libssl-dev
          libcpp-httplib-dev libspdlog-dev libyaml-cpp-dev
          libwebsocketpp-dev libasio-dev   # Feishu long connection
          libgtest-dev libgmock-dev
          bubblewrap  # worker commands run in a sandbox (docs/003, issue 19); the hostile-worker tests need it
          chromium    # the panel's browser tests drive Debian's Chromium
          fonts-wqy-microhei fonts-noto-color-emoji  # so its screenshots show Chinese text and emoji, not boxes
          sqlite3     # store tests write through the real sqlite3 shell, as a person would
          python3     # execution tests start a grandchild listening on a port
          systemd     # systemd-analyze verify checks the shipped unit (tests/sandbox_host_test.cpp)
          iproute2    # remote-worker tests bring up the loopback of a worker's network namespace
          prometheus  # /metrics is checked by promtool and scraped by a real Prometheus (tests/prometheus_test.cpp)
          ccache)     # a rebuild on the same machine compiles only what changed (docs/008, build)
# Only the fuzz targets need these (docs/009-fuzzing.md): Debian's clang with libFuzzer.
fuzz_packages=(clang libclang-rt-14-dev)

# npm packages for tests only (recorded GitHub payloads, the browser driver): tests/package.json.
test_npm() {
  if ! command -v npm >/dev/null 2>&1; then
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends nodejs npm
  fi
  (cd tests && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
}

deps() {  # deps [extra packages...]
  local missing=()
  for p in "${packages[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "dev.sh: installing ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# ccache keeps compiled objects between builds on one machine, whichever clone they come from:
# paths under the checkout are hashed relative to it (CCACHE_BASEDIR) and the working directory
# not at all (CCACHE_NOHASHDIR), so CI's fresh clone reuses what a developer's build compiled.
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1 CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-5G}"
launcher() {
  command -v ccache >/dev/null 2>&1 && echo "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
  return 0
}

# build/ (the tests and the benchmarks): the library at -O2, as it ships, but with line tables
# only (-g1): a third less compile time than full debug info, and nothing a test or a benchmark
# reads. The package and `run` keep the build type's full -O2 -g (issue 35).
tested=(-DSUPERAGENT_TESTS=ON "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG")

build() {  # build DIR [cmake args...]
  local dir="$1"; shift
  echo "dev.sh: building $dir/${*:+ ($*)}" >&2
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo $(launcher) "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
}

# fuzz SECONDS [TARGET...]: builds every target in build-fuzz/ (the library again, under clang with ASan,
# UBSan and coverage for libFuzzer), writes the seeds, runs each target for SECONDS on its seeds
# and its kept corpus, and prints one line per target (only the TARGETs named, when any are).
# Exits 1 when any target crashed; the input that did is in build-fuzz/crashes/
fuzz() {
  local seconds="$1" dir=build-fuzz
  shift
  local only=" $* "
  deps "${fuzz_packages[@]}"
  test_npm  # the recorded payloads the seeds come from
  # -O1 and line tables only: half the compile time of -O2 -g, and stacks still name file:line.
  # Without NDEBUG: an assertion (nlohmann's on a missing key, say) is a finding, not silent UB.
  # One source at a time (no unity batches, cmake/Unity.cmake): CI's one check that each source
  # compiles alone (a batch hides an include a source forgot), and with ccache a change
  # recompiles only the sources it touches.
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DSUPERAGENT_FUZZ=ON $(launcher) \
        -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" -DSUPERAGENT_TESTS=OFF -DSUPERAGENT_BENCH=OFF \
        -DSUPERAGENT_UNITY=OFF >/dev/null
  cmake --build "$dir" -j "$jobs" --target fuzz_targets
  rm -rf "$dir/seeds" "$dir/tmp"
  mkdir -p "$dir/tmp" "$dir/crashes" "$dir/logs"
  python3 fuzz/seeds.py . "$dir/seeds"
  local failed=0 target name dict log runs secs crashes
  printf '%-22s %10s %8s %8s\n' target runs seconds crashes
  for target in "$dir"/fuzz/*_fuzz; do
    name="$(basename "$target")"
    [ "$only" = "  " ] || [[ "$only" == *" $name "* ]] || continue
    case "$name" in
      policy_yaml_fuzz|config_fuzz) dict=fuzz/yaml.dict ;;
      feishu_frames_fuzz|http_client_fuzz) dict="" ;;
      *) dict=fuzz/json.dict ;;
    esac
    mkdir -p "$dir/corpus/$name" "$dir/seeds/$name"
    log="$dir/logs/$name.log"
    local start=$SECONDS
    find "$dir/crashes" -name "$name-*" -type f -delete  # this run's findings only
    # -timeout: an input that takes 10 s is a hang, and a finding. The kept corpus (corpus/) grows
    # across runs; the seeds are rewritten each time.
    TMPDIR="$PWD/$dir/tmp" ASAN_OPTIONS=detect_leaks=1 "$target" -max_total_time="$seconds" -timeout=10 ${FUZZ_SEED:+-seed="$FUZZ_SEED"} \
      -rss_limit_mb=2048 -print_final_stats=1 ${dict:+-dict="$dict"} \
      -artifact_prefix="$dir/crashes/$name-" "$dir/corpus/$name" "$dir/seeds/$name" >"$log" 2>&1 || true
    secs=$((SECONDS - start))
    runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
    crashes="$(find "$dir/crashes" -name "$name-*" -type f | wc -l)"
    if [ -z "$runs" ] && [ "$crashes" -eq 0 ]; then crashes="?"; fi  # died without stats or an artifact
    printf '%-22s %10s %8s %8s\n' "$name" "${runs:-0}" "$secs" "$crashes"
    if [ "$crashes" != 0 ]; then
      failed=1
      find "$dir/crashes" -name "$name-*" -type f | sed 's/^/    input: /'
      grep -m1 -A12 -E '^==[0-9]+==ERROR|terminate called|^SUMMARY|deadly signal' "$log" | sed 's/^/    /' || true
      echo "    log: $log"
    fi
  done
  return "$failed"
}

# The hostile-worker suite once more as an unprivileged user (issue 19): the sandbox then works
# through user namespaces instead of root's privileges. Only when run as root (CI is); skipped,
# saying why, where the build is out of that user's reach.
hostile_as_nobody() {
  local bin="$PWD/$1/tests/superagent_tests"
  [ "$(id -u)" -eq 0 ] && command -v runuser >/dev/null 2>&1 || return 0
  if ! runuser -u nobody -- test -x "$bin"; then
    echo "dev.sh: hostile-worker suite as nobody skipped: $bin is not reachable by that user" >&2
    return 0
  fi
  echo "dev.sh: hostile-worker suite as nobody (unprivileged sandbox)" >&2
  (cd /tmp && runuser -u nobody -- "$bin" --gtest_brief=1 --gtest_filter='HostileWorkerTest.*:HostileCommitsTest.*:SandboxTest.*:Clis/HostileCliTest.*:Clis/ModelGatewayCliTest.*')
}

cmd="${1:-}"; shift || true
case "$cmd" in
  deps)  deps ;;
  build) deps; build build "${tested[@]}" ;;
  # Its own build directory (issue 24): `run` and `test` never flip each other's options, so a
  # `test` after a `run` rebuilds and runs the tests of the code as it is now.
  run)
    deps
    build build-run -DSUPERAGENT_TESTS=OFF
    echo "dev.sh: starting build-run/superagent serve $*" >&2
    # So the daemon's hints say "Ctrl-C and cmake/dev.sh run", not systemctl (src/app/run_mode.h).
    SUPERAGENT_STARTED_BY=dev.sh exec build-run/superagent serve "$@" ;;
  test)
    deps
    test_npm
    build build "${tested[@]}"
    # Twice the cores: most tests wait on real processes (git, the coding CLIs, Chromium), so
    # 2 cores run 4 at once in two thirds of the time (docs/008, build section); 6 gains nothing.
    echo "dev.sh: running the test suite (ctest -j $((jobs * 2)) in build/)" >&2
    (cd build && ctest --output-on-failure -j "$((jobs * 2))")
    hostile_as_nobody build
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
    build build "${tested[@]}"
    cmake --build build -j "$jobs" --target bench_programs
    bench/run.sh --smoke build/bench
    ;;
  fuzz)
    fuzz "${1:-60}" "${@:2}"
    ;;
  fuzz-smoke)
    # CI: a target that stops building, or crashes on its seeds or within seconds, fails the run.
    # A fixed seed: the same mutations every run, so a red smoke replays (fuzz for real with `fuzz`).
    FUZZ_SEED=1 fuzz 5
    ;;
  package)
    # Its own build directory without tests: the package holds only the daemon.
    deps
    build build-package -DSUPERAGENT_TESTS=OFF
    cmake/check-package.sh build-package
    ;;
  *) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac

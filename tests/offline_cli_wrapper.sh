#!/bin/sh
# A coding CLI's `binary` in tests/exec_cli_offline_test.cpp. It lies in a directory the sandbox
# shows read-only, beside offline_bridge.py, the unix socket model.sock (the host half of the
# bridge, forwarding to the fake model) and offline.env (REAL_CLI, PORT: the fake's port). Run in
# the sandbox's own network namespace (only an empty loopback), it
#   1. records what the network looks like from in here (probe.json: the negative control),
#   2. starts the sandbox half of the bridge, 127.0.0.1:$PORT -> model.sock, and waits until it
#      listens (it exits when its parent does, and dies with the sandbox's pid namespace anyway),
#   3. runs the real CLI with its arguments, under strace (connect() calls only) where strace
#      runs here, so the test can tell whether the CLI tried to reach anything else (else execs it).
# What it records goes to /tmp/superagent-offline (/tmp is the sandbox's private temp directory).
set -e
here=$(dirname "$0")
. "$here/offline.env"
out=/tmp/superagent-offline
mkdir -p "$out"
rm -f "$out/bridge-ready"
/usr/bin/python3 "$here/offline_bridge.py" probe "$PORT" > "$out/probe.json" 2>&1 || true
/usr/bin/python3 "$here/offline_bridge.py" tcp-listen "$PORT" "$here/model.sock" "$out/bridge-ready" 2>> "$out/bridge.log" &
i=0
while [ ! -e "$out/bridge-ready" ]; do
  i=$((i + 1))
  if [ "$i" -gt 200 ]; then
    echo "offline bridge: the sandbox half did not start" >&2
    exit 97
  fi
  sleep 0.05
done
if [ -x /usr/bin/strace ] && /usr/bin/strace -f -qq --seccomp-bpf -e trace=connect -o /dev/null /bin/true 2>/dev/null; then
  # `strace -f` waits for every process it traces, and a CLI may leave one running when it ends
  # (the executor kills the CLI's process group then): so the wrapper waits for the CLI itself,
  # then stops strace and ends with the CLI's exit code.
  rm -f "$out/cli-exit" "$out/cli-exit.tmp"
  /usr/bin/strace -f -qq --seccomp-bpf -e trace=connect -e signal=none -o "$out/connect.trace" /bin/sh -c \
    '"$0" "$@"; echo $? > /tmp/superagent-offline/cli-exit.tmp; mv /tmp/superagent-offline/cli-exit.tmp /tmp/superagent-offline/cli-exit' \
    "$REAL_CLI" "$@" &
  tracer=$!
  while [ ! -e "$out/cli-exit" ] && kill -0 "$tracer" 2>/dev/null; do sleep 0.1; done
  code=$(cat "$out/cli-exit" 2>/dev/null || echo 125)
  kill "$tracer" 2>/dev/null || true
  wait "$tracer" 2>/dev/null || true
  exit "$code"
fi
echo "strace does not run here" > "$out/connect.trace.missing"
exec "$REAL_CLI" "$@"

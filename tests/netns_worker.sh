#!/bin/sh
# Runs a command (`superagent worker …`) in the network namespace `unshare --net` gave it: only an
# empty loopback, brought up here. The one address it can reach is 127.0.0.1:PORT, the sandbox
# half of tests/offline_bridge.py, which carries each connection to the unix SOCKET whose host
# half (started by the test) forwards to the daemon's worker listener. Stopping or killing that
# host half cuts this namespace off the daemon, as a network cut would.
#   unshare --net tests/netns_worker.sh PORT SOCKET PROGRAM ARGS...
set -e
port=$1
socket=$2
shift 2
ip link set lo up
ready="${TMPDIR:-/tmp}/superagent-netns-ready-$$"
rm -f "$ready"
# The bridge serves while its parent lives: this shell, which becomes PROGRAM by exec.
/usr/bin/python3 "$(dirname "$0")/offline_bridge.py" tcp-listen "$port" "$socket" "$ready" &
i=0
while [ ! -e "$ready" ]; do
  i=$((i + 1))
  if [ "$i" -gt 400 ]; then
    echo "netns_worker: the bridge did not start" >&2
    exit 97
  fi
  sleep 0.02
done
rm -f "$ready"
exec "$@"

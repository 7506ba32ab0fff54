#!/usr/bin/env bash
# Builds the .deb from an existing build directory and checks what a deployment relies on: the
# files, the conffiles (an upgrade keeps the team's config), the maintainer scripts, and a
# packaged config that validates. Separate from the test suite because it packs the whole binary.
#
#   cmake/check-package.sh [BUILD_DIR]     (default: build; run `cmake/dev.sh build` first)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
cmake --build "$build" --target package >/dev/null
deb="$build/superagent_$(grep -m1 '^CMAKE_PROJECT_VERSION:' "$build/CMakeCache.txt" | cut -d= -f2)_$(dpkg --print-architecture).deb"
echo "package: $deb"
fail=0
contents="$(dpkg-deb -c "$deb")"
for f in ./usr/bin/superagent ./lib/systemd/system/superagent.service ./etc/superagent/superagent.yaml \
         ./etc/superagent/policy.yaml ./usr/share/doc/superagent/007-operations.md \
         ./usr/share/doc/superagent/superagent.example.yaml ./lib/systemd/system/superagent-worker.service \
         ./usr/share/doc/superagent/worker.example.yaml; do
  grep -q " $f\$" <<<"$contents" || { echo "missing: $f"; fail=1; }
done
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
dpkg-deb -e "$deb" "$tmp/control"
diff <(sort "$tmp/control/conffiles") <(printf '/etc/superagent/policy.yaml\n/etc/superagent/superagent.yaml\n') \
  || { echo "conffiles differ"; fail=1; }
for s in postinst prerm postrm; do
  [ -x "$tmp/control/$s" ] || { echo "missing or not executable: $s"; fail=1; }
done
grep -q 'adduser --system' "$tmp/control/postinst" || { echo "postinst does not create the user"; fail=1; }
grep -q '^Depends:.*adduser' "$tmp/control/control" || { echo "Depends lacks adduser"; fail=1; }
# The sandbox is on by default: without bwrap the service refuses to start.
grep -q '^Depends:.*bubblewrap' "$tmp/control/control" || { echo "Depends lacks bubblewrap"; fail=1; }
# Secrets are systemd's to read, not the service user's (and so not a worker's).
grep -q 'chmod 0600 /etc/superagent/secrets.env' "$tmp/control/postinst" || { echo "postinst leaves secrets.env readable"; fail=1; }
grep -q 'install -d -o superagent -g superagent -m 0700 /var/lib/superagent' "$tmp/control/postinst" ||
  { echo "postinst does not make the state directory doctor checks"; fail=1; }
# The packaged config must be valid as installed (paths relative to /etc/superagent).
dpkg-deb -x "$deb" "$tmp/root"
unit="$tmp/root/lib/systemd/system/superagent.service"
for line in 'ProtectProc=invisible' 'UMask=0077' 'MemoryMax=' 'TasksMax=' 'NoNewPrivileges=yes'; do
  grep -q "^$line" "$unit" || { echo "the unit lacks $line"; fail=1; }
done
cfg="$tmp/root/etc/superagent/superagent.yaml"
grep -q '^data_dir: /var/lib/superagent$' "$cfg" || { echo "packaged data_dir is not /var/lib/superagent"; fail=1; }
"$tmp/root/usr/bin/superagent" check --config "$cfg" >/dev/null || { echo "packaged config does not validate"; fail=1; }
# The installed policy lets nobody ask until it is edited, and says so (issue 34): a sample
# login's @-mention is not admitted, and its comments say why.
pol="$tmp/root/etc/superagent/policy.yaml"
grep -q 'NOBODY MAY ASK FOR WORK' "$pol" || { echo "the packaged policy does not say it admits nobody"; fail=1; }
cat >"$tmp/mention.json" <<'JSON'
{"id": "github:comment:1@2026-01-01T00:00:00Z", "source": "github", "scope": "comments", "actor": "alice",
 "human": true, "addressed": true, "text": "@agent hi", "at": "2026-01-01T00:00:00Z",
 "threads": ["github:issue:1"], "channel": "github:issue:1"}
JSON
gate="$("$tmp/root/usr/bin/superagent" gate --policy "$pol" --trigger "$tmp/mention.json")" ||
  { echo "gate failed on the packaged policy"; fail=1; }
grep -q '"candidate":false' <<<"$gate" || { echo "the packaged policy admits alice: $gate"; fail=1; }
# …and check says so once GitHub is on.
sed 's|^  repo: ""|  repo: "o/r"|' "$cfg" >"$tmp/root/etc/superagent/on.yaml"
"$tmp/root/usr/bin/superagent" check --config "$tmp/root/etc/superagent/on.yaml" | grep -q 'Nobody may ask for work yet' ||
  { echo "check does not say nobody may ask with the packaged policy"; fail=1; }
if [ "$fail" -ne 0 ]; then
  echo "package check FAILED"
  exit 1
fi
echo "package ok"

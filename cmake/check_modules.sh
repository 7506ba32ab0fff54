#!/usr/bin/env bash
# The module table of ARCHITECTURE.md, enforced: every #include "…" in src/<module>/ and in the
# public headers a module owns must point at a module it may use. `core` and `store` know no
# platform, no HTTP, no config file and no process; only `app` (the composition root) knows
# everything. Run by `cmake/dev.sh test` (so by CI); exits 1 listing every include that crosses
# the table the wrong way, with its file and line.
#
# A public header belongs to the module that implements it (the table below); a private header
# ("core/…", "sources/github/…") to the folder it lives in. A new header must be added to the
# table: an unknown one is an error too, so nothing slips in unowned.
set -euo pipefail
cd "$(dirname "$0")/.."

# Headers every module may use: values and tools with no dependency on any module.
declare -A OWNER=(
  [status.h]=base [assign_or_return.h]=base [clock.h]=base [text.h]=base [json_read.h]=base
  [catch_all.h]=base [beneath.h]=base [chat.h]=base
  [domain.h]=core [trigger.h]=core [engine.h]=core [eval.h]=core [gate.h]=core [assessment.h]=core
  [channel.h]=core [quarantine.h]=core [session.h]=core [mailbox.h]=core [source_state.h]=core
  [metrics.h]=core [github_threads.h]=core [question.h]=core [budget.h]=core [answer.h]=core [judgement.h]=core
  [periodic.h]=base [secret_filter.h]=base [digest.h]=base [mutex.h]=base
  # views.h is the read face of the domain: every module that may read the domain may include it;
  # its SQL lives in store/views.cpp (core and store use each other).
  [views.h]=core
  [policy.h]=policy
  [prompts.h]=prompts
  [http.h]=net [host_port.h]=net
  [llm.h]=llm [model_assessor.h]=llm
  [exec.h]=exec [jobs.h]=exec [process.h]=exec [sandbox.h]=exec [scheduler.h]=exec [worker.h]=exec
  [worker_sessions.h]=exec [workspace.h]=exec [model_gateway.h]=exec [worker_pool.h]=exec
  [effects.h]=effects
  [intercom.h]=intercom
  [panel.h]=panel
  [github.h]=sources [github_client.h]=sources [github_app.h]=sources [feishu.h]=sources [panel_source.h]=sources
)

# What each module may include besides itself and `base`. `core` and `store` use each other (the
# Engine is the only writer; the Store speaks the domain's values) and nothing else but policy.
declare -A ALLOWED=(
  [base]=""
  [core]="store policy"
  [store]="core policy"
  [policy]="core"
  [prompts]="core policy"
  [net]=""
  [llm]="core net prompts policy"
  [exec]="core llm prompts policy intercom net"
  [effects]="core"
  [intercom]="core"
  [panel]="core store policy intercom exec net sources"
  [sources]="core net policy"
  [app]="*"
)

problems=0
complain() {
  echo "$1" >&2
  problems=$((problems + 1))
}

# The module a quoted include names, or "" when it is not one of ours.
owner_of() {
  local inc=$1
  case "$inc" in
    superagent/*)
      local h=${inc#superagent/}
      echo "${OWNER[$h]:-unknown}"
      ;;
    sources/*) echo sources ;;
    */*) echo "${inc%%/*}" ;;
    *) echo "" ;;
  esac
}

may_use() {
  local from=$1 to=$2
  [[ "$to" == "$from" || "$to" == base ]] && return 0
  [[ "${ALLOWED[$from]}" == "*" ]] && return 0
  [[ " ${ALLOWED[$from]} " == *" $to "* ]]
}

check_file() {
  local file=$1 module=$2
  local n=0 line inc to
  while IFS= read -r line; do
    n=$((n + 1))
    [[ "$line" =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]+\"([^\"]+)\" ]] || continue
    inc=${BASH_REMATCH[1]}
    to=$(owner_of "$inc")
    [[ -z "$to" ]] && continue
    if [[ "$to" == unknown ]]; then
      complain "$file:$n: includes $inc, which no module owns (add it to cmake/check_modules.sh)"
    elif ! may_use "$module" "$to"; then
      complain "$file:$n: $module may not include $inc ($to): see ARCHITECTURE.md's module table"
    fi
  done <"$file"
}

for dir in src/*/; do
  module=$(basename "$dir")
  if [[ -z "${ALLOWED[$module]+set}" ]]; then
    complain "$dir: a module the table does not know (add it to cmake/check_modules.sh)"
    continue
  fi
  while IFS= read -r f; do check_file "$f" "$module"; done < <(find "$dir" -name '*.cpp' -o -name '*.h')
done

for f in include/superagent/*.h; do
  h=$(basename "$f")
  module=${OWNER[$h]:-}
  if [[ -z "$module" ]]; then
    complain "$f: a public header no module owns (add it to cmake/check_modules.sh)"
    continue
  fi
  check_file "$f" "$module"
done

# Only app/ reads the environment (secrets, the worker allow-list): modules are handed values.
while IFS= read -r hit; do
  complain "$hit: reads the environment outside src/app (hand the value down in the module's Options)"
done < <(grep -rnE '\bgetenv\(' src --include='*.cpp' --include='*.h' | grep -v '^src/app/' | cut -d: -f1,2 || true)
# Nor systemd's credential files (LoadCredential=): app/secrets.cpp reads them, once.
while IFS= read -r hit; do
  complain "$hit: reads systemd credentials outside src/app (secrets come from app/secrets.h, in Options)"
done < <(grep -rnE 'CREDENTIALS_DIRECTORY|/run/credentials' src include --include='*.cpp' --include='*.h' |
         grep -v '^src/app/' | cut -d: -f1,2 || true)

if ((problems > 0)); then
  echo "check_modules: $problems include(s) cross the module table" >&2
  exit 1
fi
echo "check_modules: every include follows the module table"

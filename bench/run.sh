#!/usr/bin/env bash
# Runs every benchmark and prints its figures, then the `BENCH ...` summary lines together.
# Usage: bench/run.sh [--smoke] [DIR_WITH_BENCH_PROGRAMS]   (default build/bench)
# Built and run by `cmake --build build --target bench`. Budget: < 10 minutes on 2 cores.
# BENCH_INTAKE_N overrides the Intake size (default the 100 000; on a disk where each
# commit's fsync takes milliseconds bench_intake stops at its 240 s budget and prints how far it got).
#
# --smoke (CI, `cmake/dev.sh bench-smoke`): every program with sizes too small for its target, in
# about a minute, to prove each still builds, runs and prints its summary line. Its figures are not
# the benchmark's: only a crash, a non-zero exit (a benchmark exits 1 on a run that did not measure
# what it says, e.g. fewer acknowledged than sent), a missing summary line or a figure that is not
# a number fails it — never a missed target.
set -uo pipefail
smoke=0
if [ "${1:-}" = "--smoke" ]; then smoke=1; shift; fi
dir=${1:-build/bench}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
run() {
  local name=$1
  echo "== $*"
  if ! "$dir/$@" | tee -a "$out"; then
    echo "run.sh: $name failed" >&2
    status=1
  elif ! grep -q "^BENCH name=${name#bench_} " "$out"; then
    echo "run.sh: $name printed no summary line" >&2
    status=1
  elif grep "^BENCH name=${name#bench_} " "$out" | grep -qiE '=(-?nan|-?inf)( |$)'; then
    # A figure computed from nothing (no sample taken): the run measured nothing, whatever it says.
    echo "run.sh: $name printed a figure that is not a number" >&2
    status=1
  fi
}
if [ $smoke -eq 1 ]; then
  run bench_prompt_tokens
  run bench_orchestration --runs 1
  run bench_intake --n 2000 --blocks 2
  run bench_webhook_ack --mentions 20
  run bench_startup --n 5000 --starts 2
  run bench_idle --seconds 3 --repos 20
  run bench_sandbox --runs 5
  run bench_commits --runs 1 --files 20 --base 40
  run bench_gateway --calls 20
  run bench_cli_turn --runs 1
  run bench_workers --runs 1 --turns 2 --held 20
  run bench_judgement --decisions 400 --runs 1
else
  run bench_prompt_tokens
  run bench_orchestration
  run bench_intake --n "${BENCH_INTAKE_N:-100000}"
  run bench_webhook_ack
  run bench_startup
  run bench_idle
  run bench_idle --repos 200
  run bench_sandbox
  run bench_sandbox --network 0
  run bench_commits
  run bench_gateway
  run bench_cli_turn
  run bench_workers
  run bench_judgement
fi
echo "== summary$([ $smoke -eq 1 ] && echo ' (smoke: sizes too small for the targets; pass= is not judged)')"
grep '^BENCH ' "$out"
exit $status

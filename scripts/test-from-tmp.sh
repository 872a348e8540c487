#!/usr/bin/env bash
# Proves that the tests do not depend on where the clone lives: copies this checkout (every file a
# clone holds, plus uncommitted changes) under the temp dir and runs the real-Codex tests whose
# commands need Codex's sandbox helper there. Codex refuses to set that helper up when its home is
# under the temp dir, so these fail if any test puts a CLI home inside the clone.
#
# Reuses this checkout's .tools (linked) and target dir (only this crate is rebuilt).
# Environment: TEST_FILTER=NAME runs other codex_real tests (default: the evidence and check tests).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

dest=$(mktemp -d "${TMPDIR:-/tmp}/agent-dispatch-clone-XXXXXX")
trap 'rm -rf "$dest"' EXIT
git -C "$root" ls-files -z --cached --others --exclude-standard |
  (cd "$root" && xargs -0 tar -c --ignore-failed-read -f - 2>/dev/null) |
  tar -x -C "$dest"
ln -s "$(cd "$root/.tools" && pwd -P)" "$dest/.tools"
echo "test-from-tmp: copy of the checkout at $dest" >&2

cd "$dest"
export CARGO_TARGET_DIR="$root/target"
cargo test --locked --test codex_real -- "${TEST_FILTER:-read_only}"

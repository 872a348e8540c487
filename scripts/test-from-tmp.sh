#!/usr/bin/env bash
# Proves that the tests do not depend on where the clone lives: copies this checkout (every file a
# clone holds, plus uncommitted changes) under the temp dir and runs the real-Codex tests whose
# commands need Codex's sandbox helper there. Codex refuses to set that helper up when its home is
# under the temp dir, so these fail if any test puts a CLI home inside the clone.
#
# The copy links this checkout's .tools and builds into its own target dir (target/from-tmp, kept
# between runs): sharing this checkout's target dir would let one build's test binaries, which
# have their source path compiled in, pass for the other's. Its path is fixed per checkout so
# that cargo's freshness checks stay exact; a lock keeps two runs of one checkout apart.
# Environment: TEST_FILTER=NAME runs other codex_real tests (default: the evidence and check tests).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

tmp="${TMPDIR:-/tmp}"
dest="$tmp/agent-dispatch-clone-$(printf '%s' "$root" | sha256sum | cut -c1-12)"
exec 9>"$dest.lock"
flock 9
rm -rf "$dest"
mkdir -p "$dest"
trap 'rm -rf "$dest"' EXIT
# Modification times are kept, so cargo rebuilds exactly what changed since the last run.
git -C "$root" ls-files -z --cached --others --exclude-standard |
  (cd "$root" && xargs -0 tar -c --ignore-failed-read -f - 2>/dev/null) |
  tar -x -C "$dest"
ln -s "$(cd "$root/.tools" && pwd -P)" "$dest/.tools"
echo "test-from-tmp: copy of the checkout at $dest" >&2

cd "$dest"
export CARGO_TARGET_DIR="$root/target/from-tmp"
cargo test --locked --test codex_real -- "${TEST_FILTER:-read_only}"

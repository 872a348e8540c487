//! Where the tests put every CLI home they create (`HOME`, `CODEX_HOME`, `CLAUDE_CONFIG_DIR`):
//! under `$HOME/.cache/agent-dispatch-tests/`, outside the temp dir and outside the clone,
//! wherever the clone lives. Codex 0.171.0 refuses to set up its sandbox helper when its home
//! is under the temp dir (`Refusing to create helper binaries under temporary dir`), so a
//! clone under `/tmp` must not put homes inside itself.
//!
//! `AGENT_DISPATCH_TEST_HOMES` names another root (it must not be under the temp dir either).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The root every test home lives under, created on demand.
pub fn homes_root() -> PathBuf {
    let root = match std::env::var_os("AGENT_DISPATCH_TEST_HOMES") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => {
            let home = std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .expect("HOME is not set: the tests put CLI homes under $HOME/.cache/agent-dispatch-tests (or set AGENT_DISPATCH_TEST_HOMES)");
            PathBuf::from(home).join(".cache/agent-dispatch-tests")
        }
    };
    std::fs::create_dir_all(&root).unwrap();
    let root = root.canonicalize().unwrap();
    assert!(
        !under_temp_dir(&root),
        "test homes root {} is under the temp dir, where Codex's sandbox cannot start; \
         set AGENT_DISPATCH_TEST_HOMES to a directory elsewhere",
        root.display()
    );
    root
}

/// A named, shared directory under the root (kept between runs; reused, not accumulated).
pub fn shared_home(name: &str) -> PathBuf {
    let d = homes_root().join(name);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A fresh, unique directory under the root, removed on drop.
pub fn fresh_home(prefix: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("{prefix}-"))
        .tempdir_in(homes_root())
        .unwrap()
}

/// Whether `p` is inside the temp dir (as Codex sees it: `$TMPDIR`, else `/tmp`).
pub fn under_temp_dir(p: &Path) -> bool {
    let tmp = std::env::temp_dir();
    let tmp = tmp.canonicalize().unwrap_or(tmp);
    p.starts_with(&tmp)
}

//! Claude Code's temp dir, moved off the one every Claude session of the user shares.
//!
//! By default the CLI keeps its temp dir, the sandbox's `TMPDIR` and the outputs of background
//! tasks in `${TMPDIR:-/tmp}/claude-<uid>`, shared by all of the user's Claude sessions — so an
//! agent could read what other sessions ran (seen on 2.1.332). The launch points
//! `CLAUDE_CODE_TMPDIR` at `${TMPDIR:-/tmp}/agent-dispatch-<uid>/claude` (owner-only, created by
//! the preflight) and denies reading the shared one; verified: the sandbox's `TMPDIR` moves
//! there, stays writable, and the shared directory reads as empty. 2.1.332 silently ignores a
//! `CLAUDE_CODE_TMPDIR` with a dot-directory in its path (it fell back to `/tmp/claude-<uid>`
//! for one under `~/.cache`), so such a path is never used.

use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

use crate::adapter::Env;
use crate::secrets::{Secret, SecretClass};

/// The effective uid: the owner of this process's `/proc` entry.
fn uid() -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").map(|m| m.uid()).ok()
}

/// `$TMPDIR` when absolute, else `/tmp`.
fn temp_root(parent: &Env) -> PathBuf {
    parent
        .get(OsStr::new("TMPDIR"))
        .map(PathBuf::from)
        .filter(|t| t.is_absolute())
        .unwrap_or_else(|| PathBuf::from("/tmp"))
}

/// The private temp dir for the CLI, or `None` when it cannot be named usably (the CLI then
/// keeps its own default).
pub fn private_tmp(parent: &Env) -> Option<PathBuf> {
    let dir = temp_root(parent)
        .join(format!("agent-dispatch-{}", uid()?))
        .join("claude");
    let dotted = dir
        .components()
        .any(|c| matches!(c, Component::Normal(n) if n.to_string_lossy().starts_with('.')));
    (!dotted).then_some(dir)
}

/// The shared temp dirs the CLI would use on its own (`/tmp/claude-<uid>` and
/// `$TMPDIR/claude-<uid>`), to deny reading — only when [`private_tmp`] replaces them.
pub fn shared_tmp_secrets(parent: &Env) -> Vec<Secret> {
    let (Some(_), Some(uid)) = (private_tmp(parent), uid()) else {
        return Vec::new();
    };
    let mut out: Vec<Secret> = Vec::new();
    for r in [PathBuf::from("/tmp"), temp_root(parent)] {
        let path = r.join(format!("claude-{uid}"));
        if !out.iter().any(|s| s.path == path) {
            out.push(Secret {
                path,
                dir: true,
                class: SecretClass::AgentTranscripts,
            });
        }
    }
    out
}

/// Create the private temp dir, owner-only, and refuse one another user planted (a symlink,
/// or a directory not ours or open to others).
pub fn ensure(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let mine = dir.parent().unwrap_or(dir);
    for d in [mine, dir] {
        match std::fs::DirBuilder::new().mode(0o700).create(d) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e),
            _ => {}
        }
    }
    let m = std::fs::symlink_metadata(mine)?;
    if !m.is_dir() || Some(m.uid()) != uid() || m.mode() & 0o077 != 0 {
        return Err(std::io::Error::other(format!(
            "{} is not a private directory of this user (a symlink, another owner, or open to others)",
            mine.display()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::from_pairs as env;

    #[test]
    fn private_and_shared_dirs() {
        let e = env(&[("HOME", "/h"), ("TMPDIR", "/var/tmp")]);
        let private = private_tmp(&e).unwrap();
        assert!(private.starts_with("/var/tmp"), "{}", private.display());
        assert!(private.ends_with("claude"));
        let s = shared_tmp_secrets(&e);
        assert_eq!(s.len(), 2);
        assert!(s[0].path.starts_with("/tmp") && s[0].dir);
        assert!(s[1].path.starts_with("/var/tmp"));
        let name = s[0].path.file_name().unwrap().to_str().unwrap();
        assert!(name.starts_with("claude-"), "{name}");
        // A dotted temp root: the CLI would ignore the override, so none is made.
        let dotted = env(&[("TMPDIR", "/home/u/.cache/tmp")]);
        assert!(private_tmp(&dotted).is_none());
        assert!(shared_tmp_secrets(&dotted).is_empty());
    }

    #[test]
    fn ensure_makes_an_owner_only_dir_and_refuses_an_open_one() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("agent-dispatch-x/claude");
        ensure(&dir).unwrap();
        ensure(&dir).unwrap();
        let mode = std::fs::metadata(d.path().join("agent-dispatch-x"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
        std::fs::set_permissions(
            d.path().join("agent-dispatch-x"),
            std::fs::Permissions::from_mode(0o777),
        )
        .unwrap();
        assert!(ensure(&dir).is_err());
    }
}

//! The `--settings` JSON every launch carries: Claude Code's own bubblewrap sandbox, on and
//! mandatory, with the working tree and its git directories read-only, the user's credential
//! files unreadable, and every hook off.
//!
//! Paths use Claude's `//` prefix for absolute paths (`//home/me/repo` is `/home/me/repo`).
//! Verified on 2.1.332: `denyWrite` turns a sandboxed write into `Read-only file system`,
//! `denyRead` turns a `cat` of a file into `Permission denied` and a denied directory into an
//! empty one; a denied path that does not exist is harmless (nothing is created for it).

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::contract::{Failure, FailureKind};
use crate::git::GitLayout;
use crate::secrets::Secret;

/// The settings object (serialised with camelCase keys as Claude Code expects).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Settings {
    pub sandbox: Sandbox,
    pub permissions: Permissions,
    /// No hook from any settings file runs (user, project, local).
    pub disable_all_hooks: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Sandbox {
    pub enabled: bool,
    /// Refuse to run at all when bubblewrap/socat are missing, instead of running unsandboxed.
    pub fail_if_unavailable: bool,
    /// Bash commands run without a permission prompt, inside the sandbox.
    pub auto_allow_bash_if_sandboxed: bool,
    /// No escape hatch: a command the sandbox refuses is never retried outside it.
    pub allow_unsandboxed_commands: bool,
    pub filesystem: Filesystem,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Filesystem {
    pub deny_write: Vec<String>,
    pub deny_read: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Permissions {
    /// `Read(//path)` rules mirroring `denyRead` for the Read tool (which the Bash sandbox
    /// does not cover).
    pub deny: Vec<String>,
}

/// `/abs/path` → `//abs/path`. Refuses a path Claude's settings cannot express exactly (not
/// absolute, or not UTF-8): a wrong deny path would fail open.
pub fn claude_path(p: &Path) -> Result<String, Failure> {
    let s = p.to_str().ok_or_else(|| {
        Failure::new(
            FailureKind::ReadOnlyUnavailable,
            format!(
                "{} is not valid UTF-8, so it cannot be made read-only in Claude Code's sandbox settings",
                p.display()
            ),
        )
    })?;
    if !p.is_absolute() {
        return Err(Failure::new(
            FailureKind::ReadOnlyUnavailable,
            format!("{s} is not an absolute path"),
        ));
    }
    Ok(format!("/{s}"))
}

/// The directories that must stay read-only for a run in `cwd`: the cwd, the top of its
/// working tree, and the git directories (which Claude's sandbox leaves writable in a linked
/// worktree when they are outside the tree — verified). Canonical, no duplicates.
pub fn read_only_roots(cwd: &Path) -> Vec<PathBuf> {
    let mut roots = vec![cwd.to_path_buf()];
    if let Some(g) = GitLayout::discover(cwd) {
        for p in [g.work_tree, g.git_dir, g.common_dir] {
            if !roots.iter().any(|r| p.starts_with(r)) {
                roots.push(p);
            }
        }
    }
    roots
}

/// Build the settings for a run in `cwd` (canonical).
pub fn build(cwd: &Path, secrets: &[Secret]) -> Result<Settings, Failure> {
    let deny_write = read_only_roots(cwd)
        .iter()
        .map(|p| claude_path(p))
        .collect::<Result<Vec<_>, _>>()?;
    // A secret path that is not UTF-8 cannot be named; it is skipped rather than failing the
    // run (the tree's read-only guarantee does not depend on it).
    let mut deny_read = Vec::new();
    let mut deny = Vec::new();
    for secret in secrets {
        let Ok(s) = claude_path(&secret.path) else {
            continue;
        };
        deny.push(format!("Read({s})"));
        if secret.dir {
            // A Read rule covers what is inside a directory only with a glob.
            deny.push(format!("Read({s}/**)"));
        }
        deny_read.push(s);
    }
    Ok(Settings {
        sandbox: Sandbox {
            enabled: true,
            fail_if_unavailable: true,
            auto_allow_bash_if_sandboxed: true,
            allow_unsandboxed_commands: false,
            filesystem: Filesystem {
                deny_write,
                deny_read,
            },
        },
        permissions: Permissions { deny },
        disable_all_hooks: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secrets::secret_paths;

    #[test]
    fn absolute_paths_get_the_double_slash() {
        assert_eq!(claude_path(Path::new("/a/b c")).unwrap(), "//a/b c");
        assert!(claude_path(Path::new("rel")).is_err());
    }

    #[test]
    fn non_utf8_cwd_is_refused() {
        use std::os::unix::ffi::OsStrExt;
        let p = Path::new(std::ffi::OsStr::from_bytes(b"/tmp/\xff"));
        let e = claude_path(p).unwrap_err();
        assert_eq!(e.kind, FailureKind::ReadOnlyUnavailable);
    }

    #[test]
    fn settings_shape() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().canonicalize().unwrap();
        let secrets = secret_paths(Some(Path::new("/home/u")), &|v| {
            (v == "CLAUDE_CONFIG_DIR").then(|| PathBuf::from("/cfg"))
        });
        let s = build(&cwd, &secrets).unwrap();
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["sandbox"]["enabled"], true);
        assert_eq!(v["sandbox"]["failIfUnavailable"], true);
        assert_eq!(v["sandbox"]["autoAllowBashIfSandboxed"], true);
        assert_eq!(v["sandbox"]["allowUnsandboxedCommands"], false);
        assert_eq!(v["disableAllHooks"], true);
        assert_eq!(
            v["sandbox"]["filesystem"]["denyWrite"],
            serde_json::json!([format!("/{}", cwd.display())])
        );
        let deny_read = v["sandbox"]["filesystem"]["denyRead"].as_array().unwrap();
        assert!(deny_read.contains(&"//home/u/.ssh".into()));
        assert!(deny_read.contains(&"//cfg/.credentials.json".into()));
        let deny = v["permissions"]["deny"].as_array().unwrap();
        assert!(deny.contains(&"Read(//home/u/.ssh)".into()));
        assert!(deny.contains(&"Read(//home/u/.ssh/**)".into()));
        assert!(deny.contains(&"Read(//cfg/.credentials.json)".into()));
        assert!(!deny.contains(&"Read(//cfg/.credentials.json/**)".into()));
    }
}

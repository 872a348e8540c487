//! A private global git configuration for the `claude` process, so that the CLI — which runs
//! outside its own sandbox — stops appending to the user's global git ignore file.
//!
//! Claude Code 2.1.332, once its sandbox's write-staging directory exists, asks git whether
//! `.claude/.cc-writes/` is ignored in the repository; if not, it appends
//! `**/.claude/.cc-writes/` to the global excludes file (`core.excludesFile`, else
//! `$XDG_CONFIG_HOME/git/ignore`, else `~/.config/git/ignore`). It reads that setting through
//! `GIT_CONFIG_GLOBAL` when set. So the launch points `GIT_CONFIG_GLOBAL` at a file of ours that
//! includes the user's own global configuration and then names an excludes file of ours that
//! already holds the line: git says "ignored", and the CLI writes nothing (verified on 2.1.332;
//! without it the line appears in `~/.config/git/ignore`).
//!
//! The agent's git commands read the same file: the user's global settings (identity,
//! aliases, diff drivers) still apply through the include, but the user's own global excludes
//! file is replaced by ours, so files only it ignores show as untracked to the agent.
//!
//! The files live under the dispatcher's cache (`crate::env::cache_dir`), in a directory named
//! after what they include, written by the adapter's preflight; the agent cannot write there
//! (its sandbox writes nowhere outside its temp dirs).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::adapter::Env;

/// The line Claude Code wants in the global excludes file.
pub const CC_WRITES_IGNORE: &str = "**/.claude/.cc-writes/";

/// The private configuration for one caller environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitHome {
    pub dir: PathBuf,
    /// The user's own global configuration files, included in this order.
    pub includes: Vec<PathBuf>,
}

impl GitHome {
    /// For the caller's environment: `None` without a cache directory or a home (the CLI then
    /// behaves as it does on its own).
    pub fn for_env(parent: &Env) -> Option<GitHome> {
        let get = |k: &str| {
            parent
                .get(OsStr::new(k))
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
        };
        let cache = crate::env::cache_dir(parent).filter(|p| p.is_absolute())?;
        let home = get("HOME")?;
        // Git's own order: the XDG file, then ~/.gitconfig (later wins) — or only the file
        // GIT_CONFIG_GLOBAL names.
        let includes = match get("GIT_CONFIG_GLOBAL") {
            Some(g) => vec![g],
            None => vec![
                get("XDG_CONFIG_HOME")
                    .unwrap_or_else(|| home.join(".config"))
                    .join("git/config"),
                home.join(".gitconfig"),
            ],
        };
        let mut h = Sha256::new();
        for p in &includes {
            h.update(p.as_os_str().as_encoded_bytes());
            h.update([0]);
        }
        let short: String = format!("{:x}", h.finalize()).chars().take(16).collect();
        Some(GitHome {
            dir: cache.join("claude-git").join(short),
            includes,
        })
    }

    /// The value of `GIT_CONFIG_GLOBAL` for the CLI.
    pub fn config_path(&self) -> PathBuf {
        self.dir.join("config")
    }

    pub fn ignore_path(&self) -> PathBuf {
        self.dir.join("ignore")
    }

    /// The configuration file's text.
    pub fn config_text(&self) -> String {
        let mut s = String::from(
            "# Written by agent-dispatch: the global git configuration of Claude Code dispatches.\n\
             # It includes your own, then names an excludes file of its own (see the adapter's\n\
             # git_home.rs for why).\n[include]\n",
        );
        for p in &self.includes {
            s.push_str(&format!("\tpath = {}\n", quote(p)));
        }
        s.push_str(&format!(
            "[core]\n\texcludesFile = {}\n",
            quote(&self.ignore_path())
        ));
        s
    }

    /// Write both files when missing or different (atomically: a concurrent dispatch reads
    /// either the old or the new file, never half of one).
    pub fn ensure(&self) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        write_if_changed(&self.ignore_path(), &format!("{CC_WRITES_IGNORE}\n"))?;
        write_if_changed(&self.config_path(), &self.config_text())
    }
}

fn write_if_changed(path: &Path, text: &str) -> std::io::Result<()> {
    if std::fs::read_to_string(path).is_ok_and(|t| t == text) {
        return Ok(());
    }
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

/// A git config value in double quotes (`"` and `\` escaped).
fn quote(p: &Path) -> String {
    let s = p.to_string_lossy();
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::from_pairs as env;

    #[test]
    fn includes_follow_gits_order_and_the_callers_override() {
        let g = GitHome::for_env(&env(&[("HOME", "/h")])).unwrap();
        assert_eq!(
            g.includes,
            [
                PathBuf::from("/h/.config/git/config"),
                PathBuf::from("/h/.gitconfig")
            ]
        );
        assert!(g.dir.starts_with("/h/.cache/agent-dispatch/claude-git"));
        let g2 = GitHome::for_env(&env(&[
            ("HOME", "/h"),
            ("GIT_CONFIG_GLOBAL", "/etc/my.gitconfig"),
            ("AGENT_DISPATCH_CACHE_DIR", "/c"),
        ]))
        .unwrap();
        assert_eq!(g2.includes, [PathBuf::from("/etc/my.gitconfig")]);
        assert!(g2.dir.starts_with("/c/claude-git"));
        assert_ne!(g.dir.file_name(), g2.dir.file_name());
        assert!(GitHome::for_env(&env(&[("PATH", "/bin")])).is_none());
    }

    #[test]
    fn written_files_are_what_git_reads() {
        let d = tempfile::tempdir().unwrap();
        let home = d.path().join("h \"q\"");
        let cache = d.path().join("cache");
        let e = env(&[
            ("HOME", home.to_str().unwrap()),
            ("AGENT_DISPATCH_CACHE_DIR", cache.to_str().unwrap()),
        ]);
        let g = GitHome::for_env(&e).unwrap();
        g.ensure().unwrap();
        g.ensure().unwrap();
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(home.join(".gitconfig"), "[alias]\n\thi = !echo hi\n").unwrap();
        let out = std::process::Command::new("git")
            .args(["config", "--get-all", "core.excludesFile"])
            .env("GIT_CONFIG_GLOBAL", g.config_path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            g.ignore_path().to_str().unwrap()
        );
        let out = std::process::Command::new("git")
            .args(["config", "alias.hi"])
            .env("GIT_CONFIG_GLOBAL", g.config_path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "!echo hi");
        assert_eq!(
            std::fs::read_to_string(g.ignore_path()).unwrap(),
            format!("{CC_WRITES_IGNORE}\n")
        );
    }
}

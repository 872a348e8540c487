//! The permission profile every `codex exec` runs under, in place of `-s read-only`.
//!
//! `-s read-only` denies writes but lets the agent read every file the user can, so
//! `$CODEX_HOME/auth.json` or `~/.ssh/id_ed25519` reach the model. Codex 0.171.0's permission
//! profiles add reads that are denied: with `--ignore-user-config` the whole profile is given
//! with `-c`:
//!
//! ```toml
//! default_permissions = "agent_dispatch_read_only"
//! [permissions.agent_dispatch_read_only.filesystem]
//! ":root" = "read"                 # everything readable, nothing writable (as -s read-only)
//! glob_scan_max_depth = 6          # how deep a `**` deny glob is expanded on Linux
//! "/home/u/.ssh" = "deny"          # one entry per secret of crate::secrets
//! "/home/u/**/.env" = "deny"       # globs are deny-only in Codex
//! ```
//!
//! Verified with the real binary (`tests/codex_real.rs`): a shell write still gets `Read-only
//! file system`, `apply_patch` is rejected, the tree stays byte-identical, the network stays
//! off, and a `cat` of a denied path gets `Permission denied`. `-s` and a profile cannot be
//! combined: with both, codex silently ignores the profile, so the launch has no `-s` at all.
//!
//! Two things Codex needs readable are never denied whole: `$CODEX_HOME` itself (the sandbox
//! helper is exec'd from `$CODEX_HOME/tmp/arg0`; denying it makes every command fail) and its
//! ancestors. Codex's own secrets inside it are denied file by file instead
//! ([`CODEX_HOME_SECRETS`]); Codex itself still authenticates, as it reads `auth.json` in its
//! own process, outside the sandbox.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use toml::{Table, Value};

use super::config;
use crate::secrets::Secret;

/// The profile's name. Codex merges config layers key by key, so a layer Codex still loads
/// under `--ignore-user-config` (`/etc/codex/config.toml`, managed configuration) that defines
/// the same name could add entries; the name is specific to make that an explicit act.
pub const PROFILE: &str = "agent_dispatch_read_only";

/// How deep Codex expands a deny glob with `**` on Linux (it walks the tree at launch).
pub const GLOB_SCAN_MAX_DEPTH: i64 = 6;

/// Codex's own files under `$CODEX_HOME` that hold credentials or what was said: the login,
/// prompt history, session transcripts, logs (all also on the shared list, kept here so the
/// profile never depends on it) and its SQLite state (threads, memories, logs), which only
/// Codex's profile can name, as globs.
pub const CODEX_HOME_SECRETS: &[&str] = &[
    "auth.json",
    "history.jsonl",
    "sessions",
    "archived_sessions",
    "log",
    "*.sqlite",
    "*.sqlite-*",
];

/// A deny-list entry left out because denying it would break Codex itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    pub path: PathBuf,
    pub why: &'static str,
}

/// The paths to deny, as Codex filesystem keys, and the entries that had to be kept readable.
pub fn deny_paths(secrets: &[Secret], codex_home: Option<&Path>) -> (Vec<String>, Vec<Kept>) {
    let mut deny = Vec::new();
    let mut kept = Vec::new();
    let mut known = HashMap::new();
    let homes: Vec<PathBuf> = codex_home
        .into_iter()
        .flat_map(|h| {
            let real = real_path(h, &mut known).unwrap_or_else(|| h.into());
            [h.to_path_buf(), real]
        })
        .collect();
    let mut paths: Vec<PathBuf> = secrets.iter().map(|s| s.path.clone()).collect();
    if let Some(home) = codex_home {
        paths.extend(CODEX_HOME_SECRETS.iter().map(|name| home.join(name)));
    }
    for path in paths.into_iter().filter(|p| p.is_absolute()) {
        let Some(real) = real_path(&path, &mut known) else {
            kept.push(Kept {
                path,
                why: "it is a symbolic link to nothing (there is nothing to read)",
            });
            continue;
        };
        if homes
            .iter()
            .any(|h| h.starts_with(&path) || h.starts_with(&real))
        {
            kept.push(Kept {
                path,
                why: "it holds $CODEX_HOME, from which codex runs its sandbox helper",
            });
            continue;
        }
        deny.push(real.to_string_lossy().into_owned());
    }
    deny.sort();
    deny.dedup();
    (deny, kept)
}

/// The path as the sandbox sees it, with every symbolic link resolved: bwrap cannot mask a path
/// that goes through a link (`Can't mkdir …`) or is one (`Can't mount tmpfs …`), and then no
/// command runs at all. An existing path resolves whole (a linked secret denies its target);
/// a missing one resolves its longest existing ancestor and keeps the rest (globs included).
/// `None` for a link that points nowhere. The deny list's entries share a few ancestors (`$HOME`,
/// `~/.config`, …), so resolved directories are remembered in `known` across one launch.
fn real_path(path: &Path, known: &mut HashMap<PathBuf, Option<PathBuf>>) -> Option<PathBuf> {
    if let Some(real) = known.get(path) {
        return real.clone();
    }
    let real = if path.symlink_metadata().is_ok() {
        path.canonicalize().ok()
    } else {
        match (path.parent(), path.file_name()) {
            (Some(parent), Some(name)) => real_path(parent, known).map(|p| p.join(name)),
            _ => Some(path.to_path_buf()),
        }
    };
    known.insert(path.to_path_buf(), real.clone());
    real
}

/// Does this key need `glob_scan_max_depth` (Codex warns about an unbounded `**` otherwise)?
fn has_globstar(key: &str) -> bool {
    key.contains("**")
}

/// The `-c` values that select the profile: `default_permissions=…` and the profile table.
pub fn overrides(deny: &[String]) -> Vec<String> {
    let mut fs = Table::new();
    fs.insert(":root".into(), Value::String("read".into()));
    if deny.iter().any(|k| has_globstar(k)) {
        fs.insert(
            "glob_scan_max_depth".into(),
            Value::Integer(GLOB_SCAN_MAX_DEPTH),
        );
    }
    for k in deny {
        fs.insert(k.clone(), Value::String("deny".into()));
    }
    let mut profile = Table::new();
    profile.insert("filesystem".into(), Value::Table(fs));
    vec![
        config::override_arg("default_permissions", &Value::String(PROFILE.into())),
        config::override_arg(&format!("permissions.{PROFILE}"), &Value::Table(profile)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secrets::SecretClass;

    fn secret(p: &str, dir: bool) -> Secret {
        Secret {
            path: PathBuf::from(p),
            dir,
            class: SecretClass::Ssh,
        }
    }

    #[test]
    fn codex_home_and_its_ancestors_are_never_denied_whole() {
        let secrets = [
            secret("/h/.ssh", true),
            secret("/h/.codex", true),
            secret("/h", true),
            secret("/h/.codex/auth.json", false),
            secret("relative/x", false),
        ];
        let (deny, kept) = deny_paths(&secrets, Some(Path::new("/h/.codex")));
        assert!(deny.contains(&"/h/.ssh".to_string()));
        assert!(deny.contains(&"/h/.codex/auth.json".to_string()));
        assert!(deny.contains(&"/h/.codex/*.sqlite".to_string()));
        assert!(!deny.iter().any(|d| d == "/h/.codex" || d == "/h"));
        assert!(!deny.iter().any(|d| d.starts_with("relative")));
        assert_eq!(kept.len(), 2);
        // Sorted, no duplicates (auth.json came from both lists).
        let mut sorted = deny.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(deny, sorted);
    }

    #[test]
    fn links_are_resolved_because_bwrap_cannot_mask_through_them() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(real.join("home/.ssh")).unwrap();
        std::fs::create_dir_all(real.join("elsewhere/gh")).unwrap();
        std::os::unix::fs::symlink(real.join("home"), real.join("homelink")).unwrap();
        std::fs::create_dir_all(real.join("home/.config")).unwrap();
        std::os::unix::fs::symlink(real.join("elsewhere/gh"), real.join("home/.config/gh"))
            .unwrap();
        std::os::unix::fs::symlink(real.join("nowhere"), real.join("home/.netrc")).unwrap();
        let link = real.join("homelink");
        let secrets = [
            secret(link.join(".ssh").to_str().unwrap(), true),
            secret(link.join(".gnupg/private").to_str().unwrap(), true),
            secret(link.join(".config/gh").to_str().unwrap(), true),
            secret(link.join(".netrc").to_str().unwrap(), false),
        ];
        let (deny, kept) = deny_paths(&secrets, None);
        let s = |p: PathBuf| p.to_string_lossy().into_owned();
        assert_eq!(
            deny,
            [
                s(real.join("elsewhere/gh")),
                s(real.join("home/.gnupg/private")),
                s(real.join("home/.ssh")),
            ]
        );
        assert_eq!(kept.len(), 1);
        assert!(kept[0].path.ends_with(".netrc"));
    }

    #[test]
    fn profile_is_read_only_root_plus_denies_and_bounds_globstars() {
        let o = overrides(&["/h/.ssh".into()]);
        assert_eq!(o[0], "default_permissions=\"agent_dispatch_read_only\"");
        assert_eq!(
            o[1],
            "permissions.agent_dispatch_read_only={ filesystem = { \"/h/.ssh\" = \"deny\", \":root\" = \"read\" } }"
        );
        let o = overrides(&["/h/**/.env".into()]);
        assert!(o[1].contains("glob_scan_max_depth = 6"), "{}", o[1]);
        // Nothing is ever writable.
        assert!(!o[1].contains("write"));
    }
}

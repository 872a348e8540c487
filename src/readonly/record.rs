//! The record of a passed read-only check, kept in the user's cache directory, and what it is
//! keyed on.
//!
//! A record is reused only while everything that decides what a launch enforces is unchanged:
//! - the CLI as found on `PATH`, and every file its adapter names as deciding the sandbox (the
//!   native binary behind an npm shim, the shim's interpreter, `bwrap`/`socat` as the CLI will
//!   resolve them, the configuration files read at launch), each by path and file identity
//!   (device, inode, size, modification time), small files also by a hash of their contents,
//!   and a missing file as missing;
//! - the launch: program, argv and the child's complete environment, names *and* values, hashed
//!   together (no value is stored);
//! - the kernel release.
//!
//! Looking a record up costs `stat`s, reads and hashes of small files and one launch build — no
//! process. Written atomically (temp file + rename); a record that cannot be read or parsed, or
//! whose key differs in anything, is no record. Only passes are recorded: a failure is
//! re-checked next time, since its cause (a missing bubblewrap, say) may have been fixed without
//! changing anything keyed on.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::adapter::{Adapter, Env, FileRole, LaunchContext};
use crate::contract::{Failure, FailureKind};

/// Files up to this size are also keyed by a hash of their contents (sandbox helpers,
/// launcher scripts, configuration); larger ones (the CLIs' native binaries, hundreds of MB)
/// by identity alone, so that a lookup stays cheap.
pub const CONTENT_HASH_LIMIT: u64 = 1024 * 1024;

/// What the record cannot see: a change here does not run the check again by itself.
pub const NOT_COVERED: &[&str] = &[
    "kernel settings and security modules (user namespaces, seccomp, AppArmor/SELinux policy)",
    "shared libraries the binaries load, and files they read besides those listed",
    "a binary larger than 1 MiB rewritten in place with its size and modification time kept",
    "the repository under review: the check runs in a scratch repository, so that repository's \
     own content and configuration are not part of it",
];

/// What a record is keyed on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckKey {
    pub agent: String,
    /// Canonical path of the CLI as found on `PATH`.
    pub program: String,
    /// The CLI and every file that decides its sandbox, as they were when checked.
    pub files: Vec<FileStamp>,
    /// Hash of the launch: program, argv, and the child's environment (names and values).
    pub launch_hash: String,
    /// The names of the child's environment variables whose values `launch_hash` covers.
    pub environment: Vec<String>,
    /// The kernel release (`/proc/sys/kernel/osrelease`); empty where there is none.
    pub kernel: String,
}

/// One file as the record saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileStamp {
    pub role: FileRole,
    pub path: String,
    /// `None`: there was no such file (creating it changes the key).
    pub identity: Option<FileIdentity>,
}

/// A file's identity (following links), read with one `stat`; small files also by content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileIdentity {
    pub device: u64,
    pub inode: u64,
    pub size: u64,
    /// Modification time, nanoseconds since the Unix epoch.
    pub modified_ns: i128,
    /// SHA-256 of the contents, for files up to [`CONTENT_HASH_LIMIT`] bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

impl FileStamp {
    /// Stamp the file at `path` now.
    pub fn take(role: FileRole, path: &Path) -> Self {
        Self {
            role,
            path: path.display().to_string(),
            identity: FileIdentity::of(path).ok(),
        }
    }

    /// The role as it is spelled on the wire (`native-cli`, `sandbox-helper`, …).
    pub fn role_name(&self) -> String {
        serde_json::to_value(self.role)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default()
    }

    /// Device, inode, size, modification time (and the content hash's head), for reports.
    pub fn describe(&self) -> String {
        match &self.identity {
            None => "absent".into(),
            Some(i) => {
                let mut s = format!(
                    "device:inode {}:{}, {} bytes, mtime {}.{:09}",
                    i.device,
                    i.inode,
                    i.size,
                    i.modified_ns.div_euclid(1_000_000_000),
                    i.modified_ns.rem_euclid(1_000_000_000)
                );
                if let Some(h) = &i.sha256 {
                    s.push_str(&format!(", sha256 {}…", &h[..h.len().min(12)]));
                }
                s
            }
        }
    }
}

impl FileIdentity {
    pub fn of(path: &Path) -> std::io::Result<Self> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path)?;
        let sha256 = if m.is_file() && m.size() <= CONTENT_HASH_LIMIT {
            Some(format!("{:x}", Sha256::digest(std::fs::read(path)?)))
        } else {
            None
        };
        Ok(Self {
            device: m.dev(),
            inode: m.ino(),
            size: m.size(),
            modified_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
            sha256,
        })
    }
}

impl CheckKey {
    /// What differs from `old` (a record of the same CLI), in words, for the notice that says
    /// why the check runs again. Values are never named: only that the launch changed.
    pub fn changes_from(&self, old: &CheckKey) -> Vec<String> {
        let mut out = Vec::new();
        if self.program != old.program {
            out.push(format!("the CLI is now {}", self.program));
        }
        for f in &self.files {
            match old
                .files
                .iter()
                .find(|o| o.role == f.role && o.path == f.path)
            {
                None => out.push(format!("{} {} is new", f.role_name(), f.path)),
                Some(o) if o.identity != f.identity => {
                    let what = match (&o.identity, &f.identity) {
                        (None, Some(_)) => "appeared",
                        (Some(_), None) => "is gone",
                        _ => "changed",
                    };
                    out.push(format!("{} {} {what}", f.role_name(), f.path));
                }
                Some(_) => {}
            }
        }
        for o in &old.files {
            if !self
                .files
                .iter()
                .any(|f| f.role == o.role && f.path == o.path)
            {
                out.push(format!("{} {} is no longer used", o.role_name(), o.path));
            }
        }
        if self.launch_hash != old.launch_hash {
            out.push(if self.environment != old.environment {
                "the launch's environment variables changed".to_owned()
            } else {
                "the launch changed (its arguments or an environment value)".to_owned()
            });
        }
        if self.kernel != old.kernel {
            out.push(format!("the kernel is now {}", self.kernel));
        }
        out
    }
}

/// The running kernel's release, or empty where it cannot be read.
pub fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckRecord {
    pub key: CheckKey,
    /// What the CLI printed for its version when it was checked.
    pub version: String,
    /// Seconds since the Unix epoch.
    pub checked_at: u64,
    /// The evidence, one line per probe, for `agent-dispatch check` to show later.
    pub evidence: Vec<String>,
}

/// Where records live: see [`crate::env::cache_dir`].
pub use crate::env::cache_dir;

fn record_path(dir: &Path, key: &CheckKey) -> PathBuf {
    let json = serde_json::to_vec(key).unwrap_or_default();
    let short: String = format!("{:x}", Sha256::digest(json))
        .chars()
        .take(16)
        .collect();
    dir.join("checks")
        .join(format!("{}-{short}.json", key.agent))
}

/// The passing record for exactly this key, if there is a readable one.
pub fn load(dir: &Path, key: &CheckKey) -> Option<CheckRecord> {
    let bytes = std::fs::read(record_path(dir, key)).ok()?;
    let record: CheckRecord = serde_json::from_slice(&bytes).ok()?;
    (record.key == *key).then_some(record)
}

/// The most recent readable record for `agent` at `program` (whatever its key), to say what
/// changed when the lookup for the current key missed.
pub fn latest(dir: &Path, agent: &str, program: &str) -> Option<CheckRecord> {
    std::fs::read_dir(dir.join("checks"))
        .ok()?
        .filter_map(|e| {
            let e = e.ok()?;
            let name = e.file_name();
            let name = name.to_str()?;
            if !(name.starts_with(&format!("{agent}-")) && name.ends_with(".json")) {
                return None;
            }
            serde_json::from_slice::<CheckRecord>(&std::fs::read(e.path()).ok()?).ok()
        })
        .filter(|r| r.key.agent == agent && r.key.program == program)
        .max_by_key(|r| r.checked_at)
}

/// Store a passing record atomically.
pub fn store(dir: &Path, record: &CheckRecord) -> std::io::Result<PathBuf> {
    let path = record_path(dir, &record.key);
    let parent = path.parent().expect("record path has a parent");
    std::fs::create_dir_all(parent)?;
    let mut tmp = tempfile::NamedTempFile::new_in(parent)?;
    tmp.write_all(&serde_json::to_vec_pretty(record).map_err(std::io::Error::other)?)?;
    tmp.as_file().sync_all()?;
    tmp.persist(&path).map_err(|e| e.error)?;
    Ok(path)
}

/// Hash of the production launch, for a canonical request (placeholder prompt, cwd `/`, no
/// model): program, argv, the child's complete environment, names and values, and the wall's
/// rules (a walled launch's private directory spelled `<private>`). Values enter
/// only this hash, never the record in clear (they may hold credentials). Also returns the
/// variables' names, for the report.
pub fn launch_fingerprint(
    adapter: &dyn Adapter,
    program: &Path,
    parent_env: &Env,
) -> Result<(String, Vec<String>), Failure> {
    let ctx = LaunchContext {
        program,
        prompt: "<prompt>",
        model: None,
        effort: None,
        cwd: Path::new("/"),
        parent_env,
        endpoint: None,
    };
    let launch = adapter.launch(&ctx)?;
    // A walled launch's private directory is new every time: spelled `<private>` here.
    let private = launch
        .wall
        .as_ref()
        .and_then(|w| w.private_path())
        .and_then(|p| p.canonicalize().ok());
    let private_str = private.as_ref().map(|p| p.to_string_lossy().into_owned());
    let stable = |v: &std::ffi::OsStr| match &private_str {
        Some(p) => v
            .to_string_lossy()
            .replace(p.as_str(), "<private>")
            .into_bytes(),
        None => v.as_encoded_bytes().to_vec(),
    };
    let mut h = Sha256::new();
    let mut field = |tag: u8, bytes: &[u8]| {
        h.update([tag]);
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    field(0, launch.program.as_os_str().as_encoded_bytes());
    for a in &launch.args {
        field(1, &stable(a));
    }
    let mut env = launch.env.clone();
    env.sort();
    for (k, v) in &env {
        field(2, k.as_encoded_bytes());
        field(3, &stable(v));
    }
    // The wall is part of the configuration the check proved.
    if let Some(wall) = &launch.wall {
        let spec = wall.spec.normalized(private.as_deref());
        field(4, &serde_json::to_vec(&spec).unwrap_or_default());
    }
    let names = env
        .iter()
        .map(|(k, _)| k.to_string_lossy().into_owned())
        .collect();
    Ok((format!("{:x}", h.finalize()), names))
}

/// The record key for this adapter on this machine, as things are now: the CLI found at
/// `program` and the files its adapter names (see [`crate::adapter::Adapter::enforcing_files`]),
/// the launch, the kernel. Stats, small reads and one launch build; no process.
pub fn check_key(
    adapter: &dyn Adapter,
    program: &Path,
    parent_env: &Env,
) -> Result<CheckKey, Failure> {
    let canonical = program.canonicalize().map_err(|e| {
        Failure::new(
            FailureKind::NotInstalled,
            format!("{}: {e}", program.display()),
        )
    })?;
    let mut files = vec![FileStamp::take(FileRole::Cli, program)];
    files.extend(
        adapter
            .enforcing_files(program, parent_env)
            .iter()
            .map(|f| FileStamp::take(f.role, &f.path)),
    );
    let (launch_hash, environment) = launch_fingerprint(adapter, program, parent_env)?;
    Ok(CheckKey {
        agent: adapter.id().to_owned(),
        program: canonical.display().to_string(),
        files,
        launch_hash,
        environment,
        kernel: kernel_release(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> CheckKey {
        CheckKey {
            agent: "codex".into(),
            program: "/bin/codex".into(),
            files: vec![FileStamp {
                role: FileRole::Cli,
                path: "/bin/codex".into(),
                identity: Some(FileIdentity {
                    device: 1,
                    inode: 2,
                    size: 3,
                    modified_ns: 4,
                    sha256: None,
                }),
            }],
            launch_hash: "abc".into(),
            environment: vec!["PATH".into()],
            kernel: "6.1.0".into(),
        }
    }

    #[test]
    fn round_trip_and_key_mismatch() {
        let dir = tempfile::tempdir().unwrap();
        let rec = CheckRecord {
            key: key(),
            version: "1.0".into(),
            checked_at: 1,
            evidence: vec!["shell-write: Read-only file system".into()],
        };
        store(dir.path(), &rec).unwrap();
        assert_eq!(load(dir.path(), &key()), Some(rec));
        let mut newer = key();
        newer.files[0].identity.as_mut().unwrap().inode = 9;
        assert_eq!(
            load(dir.path(), &newer),
            None,
            "a CLI upgrade invalidates it"
        );
        let reconfigured = CheckKey {
            launch_hash: "def".into(),
            ..key()
        };
        assert_eq!(load(dir.path(), &reconfigured), None);
        let rebooted = CheckKey {
            kernel: "6.2.0".into(),
            ..key()
        };
        assert_eq!(load(dir.path(), &rebooted), None);
    }

    #[test]
    fn changes_are_named_without_values() {
        let old = key();
        let mut new = key();
        new.files[0].identity.as_mut().unwrap().inode = 9;
        new.files.push(FileStamp {
            role: FileRole::SandboxHelper,
            path: "/x/bwrap".into(),
            identity: None,
        });
        new.launch_hash = "other".into();
        assert_eq!(
            new.changes_from(&old),
            [
                "cli /bin/codex changed",
                "sandbox-helper /x/bwrap is new",
                "the launch changed (its arguments or an environment value)"
            ]
        );
        assert!(key().changes_from(&old).is_empty());
    }

    #[test]
    fn a_corrupt_record_is_no_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = record_path(dir.path(), &key());
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, b"{ not json").unwrap();
        assert_eq!(load(dir.path(), &key()), None);
    }

    #[test]
    fn small_files_are_stamped_by_content_and_missing_ones_as_missing() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("bwrap");
        assert_eq!(FileStamp::take(FileRole::SandboxHelper, &f).identity, None);
        std::fs::write(&f, "#!/bin/sh\nexec /usr/bin/bwrap \"$@\"\n").unwrap();
        let before = FileStamp::take(FileRole::SandboxHelper, &f);
        let id = before.identity.clone().unwrap();
        assert!(id.sha256.is_some());
        // Rewritten in place with the same size and modification time: the content differs.
        let mtime = std::fs::metadata(&f).unwrap().modified().unwrap();
        std::fs::write(&f, "#!/bin/sh\nexec /tmp/evil/bwra \"$@\"\n").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&f)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        let after = FileStamp::take(FileRole::SandboxHelper, &f);
        let id2 = after.identity.clone().unwrap();
        assert_eq!(
            (id.inode, id.size, id.modified_ns),
            (id2.inode, id2.size, id2.modified_ns)
        );
        assert_ne!(before, after);
    }
}

//! The record of a passed read-only check, per CLI path + version + launch-configuration hash,
//! kept in the user's cache directory. The version is keyed through the binary file's identity
//! (an upgrade replaces the file), so looking a record up costs a `stat`, not a process. Written atomically (temp file + rename); a record that
//! cannot be read or parsed, or that names another binary, version or configuration, is treated
//! as no record. Only passes are recorded: a failure is re-checked next time, since its cause
//! (a missing bubblewrap, say) may have been fixed without changing anything we key on.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::adapter::{Adapter, Env, LaunchContext};
use crate::contract::{Failure, FailureKind};

/// What a record is keyed on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckKey {
    pub agent: String,
    /// Canonical path of the CLI binary.
    pub program: String,
    /// The binary file's identity (device, inode, size, modification time): an upgrade or any
    /// other change to the file invalidates the record, and it is read with one `stat`, so a
    /// dispatch with a record on file starts no extra process.
    pub binary: String,
    /// Hash of the production launch configuration (see `check::launch_fingerprint`).
    pub config_hash: String,
}

impl CheckKey {
    /// The identity of the file at `program`, following links.
    pub fn binary_identity(program: &Path) -> std::io::Result<String> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(program)?;
        Ok(format!(
            "{}:{}:{}:{}.{}",
            m.dev(),
            m.ino(),
            m.size(),
            m.mtime(),
            m.mtime_nsec()
        ))
    }
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

/// Where records live: `$AGENT_DISPATCH_CACHE_DIR`, else `$XDG_CACHE_HOME/agent-dispatch`,
/// else `$HOME/.cache/agent-dispatch`.
pub fn cache_dir(env: &Env) -> Option<PathBuf> {
    let get = |k: &str| {
        env.get(std::ffi::OsStr::new(k))
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    get("AGENT_DISPATCH_CACHE_DIR")
        .or_else(|| get("XDG_CACHE_HOME").map(|d| d.join("agent-dispatch")))
        .or_else(|| get("HOME").map(|h| h.join(".cache/agent-dispatch")))
}

fn record_path(dir: &Path, key: &CheckKey) -> PathBuf {
    let digest = Sha256::digest(format!(
        "{}\0{}\0{}\0{}",
        key.agent, key.program, key.binary, key.config_hash
    ));
    let short: String = format!("{digest:x}").chars().take(16).collect();
    dir.join("checks")
        .join(format!("{}-{short}.json", key.agent))
}

/// The passing record for exactly this key, if there is a readable one.
pub fn load(dir: &Path, key: &CheckKey) -> Option<CheckRecord> {
    let bytes = std::fs::read(record_path(dir, key)).ok()?;
    let record: CheckRecord = serde_json::from_slice(&bytes).ok()?;
    (record.key == *key).then_some(record)
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

/// Hash of the production launch configuration: program, argv, the names of the child's
/// environment variables and the wall's rules, for a canonical request (placeholder prompt,
/// cwd `/`, no model).
pub fn launch_fingerprint(
    adapter: &dyn Adapter,
    program: &Path,
    parent_env: &Env,
) -> Result<String, Failure> {
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
    let mut h = Sha256::new();
    h.update(launch.program.as_os_str().as_encoded_bytes());
    for a in &launch.args {
        h.update([0]);
        match &private_str {
            Some(p) => h.update(a.to_string_lossy().replace(p.as_str(), "<private>")),
            None => h.update(a.as_encoded_bytes()),
        }
    }
    // The wall is part of the configuration the check proved.
    if let Some(wall) = &launch.wall {
        h.update([2]);
        h.update(serde_json::to_vec(&wall.spec.normalized(private.as_deref())).unwrap_or_default());
    }
    let mut names: Vec<_> = launch.env.iter().map(|(k, _)| k.clone()).collect();
    names.sort();
    for n in names {
        h.update([1]);
        h.update(n.as_encoded_bytes());
    }
    Ok(format!("{:x}", h.finalize()))
}

/// The record key for this adapter on this machine. Cheap: one `stat`, one launch build.
pub fn check_key(
    adapter: &dyn Adapter,
    program: &Path,
    parent_env: &Env,
) -> Result<CheckKey, Failure> {
    let canonical = program
        .canonicalize()
        .unwrap_or_else(|_| program.to_path_buf());
    let binary = CheckKey::binary_identity(&canonical).map_err(|e| {
        Failure::new(
            FailureKind::NotInstalled,
            format!("{}: {e}", canonical.display()),
        )
    })?;
    Ok(CheckKey {
        agent: adapter.id().to_owned(),
        program: canonical.display().to_string(),
        binary,
        config_hash: launch_fingerprint(adapter, program, parent_env)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> CheckKey {
        CheckKey {
            agent: "codex".into(),
            program: "/bin/codex".into(),
            binary: "1:2:3:4.5".into(),
            config_hash: "abc".into(),
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
        let newer = CheckKey {
            binary: "1:9:3:7.0".into(),
            ..key()
        };
        assert_eq!(
            load(dir.path(), &newer),
            None,
            "a CLI upgrade invalidates it"
        );
        let reconfigured = CheckKey {
            config_hash: "def".into(),
            ..key()
        };
        assert_eq!(load(dir.path(), &reconfigured), None);
    }

    #[test]
    fn a_corrupt_record_is_no_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = record_path(dir.path(), &key());
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, b"{ not json").unwrap();
        assert_eq!(load(dir.path(), &key()), None);
    }
}

//! Finding an agent CLI on the caller's `PATH`.
//!
//! Only absolute `PATH` entries count: a relative entry (`.`, `bin`, an empty entry) would
//! resolve against the current directory — the repository under review — where a planted
//! `codex` would run, and would even pass its own check.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::adapter::{Adapter, Env};
use crate::contract::{Failure, FailureKind};
use crate::launch::{Launch, StdinPlan};
use crate::supervise::Supervisor;

/// A CLI that does not print its version within this long is treated as broken.
const VERSION_TIMEOUT: Duration = Duration::from_secs(20);

/// Find `program` in the absolute entries of the environment's `PATH`.
pub fn find_on_path(program: &str, env: &Env) -> Option<PathBuf> {
    let dirs =
        crate::env::absolute_path_entries(env.get(OsStr::new("PATH")).map(OsString::as_os_str));
    let joined = std::env::join_paths(dirs).ok()?;
    which::which_in(program, Some(joined), Path::new("/")).ok()
}

/// Find the adapter's CLI, or say how to install it.
pub fn resolve_program(adapter: &dyn Adapter, env: &Env) -> Result<PathBuf, Failure> {
    find_on_path(adapter.program(), env).ok_or_else(|| {
        Failure::new(
            FailureKind::NotInstalled,
            format!(
                "{} CLI `{}` was not found on PATH (absolute entries only); install it with: {}",
                adapter.display_name(),
                adapter.program(),
                adapter.install_hint()
            ),
        )
    })
}

/// The CLI's version, as it prints it (`--version` or the adapter's equivalent), run in a
/// neutral directory with a minimal environment, under supervision and a time bound.
pub async fn version(
    adapter: &dyn Adapter,
    program: &Path,
    parent_env: &Env,
    supervisor: &Supervisor,
) -> Result<String, Failure> {
    let launch = Launch {
        program: program.to_path_buf(),
        args: adapter.version_args().iter().map(Into::into).collect(),
        cwd: std::env::temp_dir(),
        env: crate::env::allowlisted(parent_env, &[], &[]),
        stdin: StdinPlan::Null,
        wall: None,
    };
    let failed = || {
        Failure::new(
            FailureKind::SpawnFailed,
            format!("`{} --version` failed", program.display()),
        )
    };
    // The capture is killed on drop, so a timeout leaves nothing running.
    let cancel = CancellationToken::new();
    let probe = supervisor.capture(&launch, &cancel, 64 * 1024);
    let out = tokio::time::timeout(VERSION_TIMEOUT, probe)
        .await
        .map_err(|_| failed())??;
    let v = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if out.status.success() && !v.is_empty() {
        Ok(v)
    } else {
        Err(failed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_path_entries_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let exe = bin.join("planted-cli");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();

        let rel = dir.path().strip_prefix("/").unwrap().join("bin");
        let env = |p: String| Env::from([(OsString::from("PATH"), OsString::from(p))]);
        // Relative entries (which would resolve against the repository) are never searched.
        let entries = crate::env::absolute_path_entries(Some(OsStr::new(&format!(
            "bin::.:{}",
            rel.display()
        ))));
        assert!(entries.is_empty(), "{entries:?}");
        assert_eq!(
            find_on_path("planted-cli", &env(format!("{}:.", rel.display()))),
            None
        );
        assert_eq!(
            find_on_path("planted-cli", &env(format!("bin:{}", bin.display()))),
            Some(exe)
        );
    }
}

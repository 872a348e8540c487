//! Scratch git repositories for read-only checks: one commit plus an uncommitted change, so an
//! agent's `git diff` has something to see.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The uncommitted line `git diff` must show.
pub const UNCOMMITTED_MARKER: &str = "UNCOMMITTED_CHANGE_MARKER";

/// A temporary git repository, removed on drop.
pub struct ScratchRepo {
    dir: tempfile::TempDir,
}

impl ScratchRepo {
    /// Create a repo under `parent` (or the system temp dir) with `README.md` committed and then
    /// modified without committing.
    pub fn create(parent: Option<&Path>) -> std::io::Result<Self> {
        let dir = match parent {
            Some(p) => tempfile::Builder::new()
                .prefix("dispatch-scratch-")
                .tempdir_in(p)?,
            None => tempfile::Builder::new()
                .prefix("dispatch-scratch-")
                .tempdir()?,
        };
        let root = dir.path();
        git(root, &["init", "-q", "-b", "main"])?;
        std::fs::write(root.join("README.md"), "scratch repository\n")?;
        git(root, &["add", "README.md"])?;
        git(
            root,
            &[
                "-c",
                "user.name=agent-dispatch",
                "-c",
                "user.email=check@localhost",
                "-c",
                "commit.gpgsign=false",
                "commit",
                "-q",
                "-m",
                "initial",
            ],
        )?;
        std::fs::write(
            root.join("README.md"),
            format!("scratch repository\n{UNCOMMITTED_MARKER}\n"),
        )?;
        Ok(Self { dir })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn into_path(self) -> PathBuf {
        self.dir.keep()
    }
}

fn git(cwd: &Path, args: &[&str]) -> std::io::Result<()> {
    let out = Command::new("git")
        .args(args)
        .current_dir(cwd)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_SYSTEM", "/dev/null")
        .output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        )))
    }
}

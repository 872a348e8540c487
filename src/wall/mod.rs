//! The wall: a Landlock ruleset the dispatcher applies to a CLI that has no sandbox of its own.
//!
//! An adapter describes the wall as data ([`WallSpec`]: paths readable, paths writable,
//! optionally the TCP ports the CLI may connect to); [`prepare`] turns it into a kernel ruleset
//! *before* the fork, and the supervisor applies it in the child between fork and exec
//! ([`PreparedWall::restrict_child`]: `PR_SET_NO_NEW_PRIVS` and `landlock_restrict_self`, nothing
//! else). Everything the CLI starts inherits it, across `setsid`, double forks and `exec`.
//!
//! Reads are an allowlist too: whatever no rule names (`~/.ssh`, cloud credentials, the rest of
//! `$HOME`, `/proc`) cannot be read. Landlock forbids `mount(2)`, so a CLI that brings its own
//! bubblewrap sandbox cannot run inside the wall: the wall is for CLIs without one.
//!
//! Best effort, done right: the rights read-only depends on are a hard requirement (Landlock
//! ABI 3, which also handles `truncate`; ABI 4 when ports are restricted). A kernel without
//! Landlock, or with an ABI that cannot express the ruleset, is an error here and
//! `read-only-unavailable` for the dispatch, never an unwalled run. Newer rights (device ioctls,
//! ABI 5) and scopes (signals and abstract UNIX sockets leaving the wall, ABI 6) are added where
//! the kernel has them.

mod ruleset;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

pub use ruleset::{PreparedWall, REFUSED_ERRNO, is_wall_refusal, prepare};

/// The Landlock ABI the read-only guarantee needs: every filesystem write right, including
/// `truncate` (ABI 3).
pub const MIN_FS_ABI: u32 = 3;
/// The ABI TCP port rules need.
pub const MIN_NET_ABI: u32 = 4;

/// A wall as data: what the walled process tree may read and write. Paths that do not exist
/// are skipped (a system without `/lib64`); everything else is denied.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WallSpec {
    /// Read, list and execute beneath these paths.
    pub read: Vec<PathBuf>,
    /// Every right beneath these paths (the CLI's private home and temp dir, device nodes).
    pub write: Vec<PathBuf>,
    /// When set, TCP `connect` is allowed only to these ports (and `bind` to none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connect_ports: Option<Vec<u16>>,
    /// The lowest Landlock ABI this wall accepts; at least what its rules need.
    pub min_abi: u32,
}

impl WallSpec {
    pub fn new() -> Self {
        Self {
            min_abi: MIN_FS_ABI,
            ..Self::default()
        }
    }

    pub fn read(mut self, path: impl Into<PathBuf>) -> Self {
        push_unique(&mut self.read, path.into());
        self
    }

    pub fn write(mut self, path: impl Into<PathBuf>) -> Self {
        push_unique(&mut self.write, path.into());
        self
    }

    pub fn connect_ports(mut self, ports: Vec<u16>) -> Self {
        self.connect_ports = Some(ports);
        self.min_abi = self.min_abi.max(MIN_NET_ABI);
        self
    }

    /// The ABI the rules need, whatever `min_abi` says.
    pub fn required_abi(&self) -> u32 {
        let rules = if self.connect_ports.is_some() {
            MIN_NET_ABI
        } else {
            MIN_FS_ABI
        };
        rules.max(self.min_abi)
    }

    /// The same spec with `dir` spelled `<private>`: per-dispatch directories do not change
    /// what a launch configuration is (used for the check record's fingerprint).
    pub fn normalized(&self, dir: Option<&Path>) -> Self {
        let norm = |p: &PathBuf| match dir.and_then(|d| p.strip_prefix(d).ok()) {
            Some(rest) => Path::new("<private>").join(rest),
            None => p.clone(),
        };
        Self {
            read: self.read.iter().map(norm).collect(),
            write: self.write.iter().map(norm).collect(),
            ..self.clone()
        }
    }
}

fn push_unique(v: &mut Vec<PathBuf>, p: PathBuf) {
    if !v.contains(&p) {
        v.push(p);
    }
}

/// A wall on a launch: the rules, and the private directory the walled CLI writes into (its
/// home, its temp dir), owned by the launch and removed when the last clone is dropped.
#[derive(Debug, Clone)]
pub struct Wall {
    pub spec: WallSpec,
    pub private_dir: Option<Arc<tempfile::TempDir>>,
}

impl Wall {
    pub fn private_path(&self) -> Option<&Path> {
        self.private_dir.as_deref().map(tempfile::TempDir::path)
    }
}

/// The running kernel's Landlock ABI, or `None` without Landlock (not built in, or disabled at
/// boot). For reports only: whether a wall can be built is [`prepare`]'s decision.
pub fn kernel_abi() -> Option<u32> {
    ruleset::kernel_abi()
}

/// The system directories every walled CLI may read and execute from (programs, libraries,
/// configuration, certificates), when they exist.
pub const SYSTEM_READ: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
];

/// Device nodes a walled process may read and write (`/dev/null` for git, terminals, the
/// random sources). Never the whole of `/dev`: block devices would be writable to root.
pub const DEVICE_RW: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builder_keeps_each_path_once_and_the_abi_it_needs() {
        let spec = WallSpec::new()
            .read("/usr")
            .read("/usr")
            .write("/tmp/p")
            .connect_ports(vec![443]);
        assert_eq!(spec.read, [PathBuf::from("/usr")]);
        assert_eq!(spec.write, [PathBuf::from("/tmp/p")]);
        assert_eq!(spec.required_abi(), MIN_NET_ABI);
        let raised = WallSpec {
            min_abi: 6,
            ..WallSpec::new()
        };
        assert_eq!(raised.required_abi(), 6);
    }

    #[test]
    fn a_private_dir_is_spelled_the_same_every_time() {
        let a = WallSpec::new().read("/usr").write("/tmp/x-1/home");
        let b = WallSpec::new().read("/usr").write("/tmp/x-2/home");
        assert_eq!(
            a.normalized(Some(Path::new("/tmp/x-1"))),
            b.normalized(Some(Path::new("/tmp/x-2")))
        );
        assert_ne!(a.normalized(None), b.normalized(None));
    }

    #[test]
    fn no_system_path_is_under_a_home_and_dev_is_never_whole() {
        assert!(
            SYSTEM_READ
                .iter()
                .all(|p| !p.starts_with("/home") && *p != "/")
        );
        assert!(!DEVICE_RW.contains(&"/dev"));
        assert!(!SYSTEM_READ.contains(&"/proc") && !SYSTEM_READ.contains(&"/tmp"));
    }
}

//! Building the Landlock ruleset (in the dispatcher, before the fork) and restricting the
//! child with it (between fork and exec). `libc` and `landlock` stay inside this file.

use std::io;
use std::path::Path;

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath,
    PathFd, Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetStatus, Scope,
};

use super::WallSpec;

/// The errno a child reports when it could not restrict itself. `execve` and `chdir` never
/// return it, so the parent can tell a wall refusal from a program that failed to start.
pub const REFUSED_ERRNO: i32 = libc::ENOTRECOVERABLE;

/// Did this spawn error come from the wall (the child could not restrict itself)?
pub fn is_wall_refusal(e: &io::Error) -> bool {
    e.raw_os_error() == Some(REFUSED_ERRNO)
}

/// The newest ABI whose rights this build knows and has tested: rights and scopes up to it are
/// added when the kernel has them.
const BEST_ABI: ABI = ABI::V6;

/// Why a wall cannot be built. The dispatch is refused; nothing is started.
#[derive(Debug, thiserror::Error)]
pub enum WallError {
    #[error("this kernel has no Landlock (not built in, or disabled at boot)")]
    Unsupported,
    #[error("this kernel's Landlock ABI {kernel} cannot express the wall (it needs ABI {needed})")]
    AbiTooOld { kernel: u32, needed: u32 },
    #[error("cannot open {path} for a wall rule: {source}")]
    Path {
        path: String,
        #[source]
        source: landlock::PathFdError,
    },
    #[error("the kernel refused the wall's ruleset: {0}")]
    Ruleset(#[from] landlock::RulesetError),
}

/// A ruleset ready to be applied: the kernel object exists; the child only has to call
/// `restrict_self` with it.
#[derive(Debug)]
pub struct PreparedWall {
    ruleset: Option<RulesetCreated>,
    /// The running kernel's ABI when the wall was built.
    pub abi: u32,
}

pub(super) fn kernel_abi() -> Option<u32> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute and size 0 this call only returns the ABI version.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    (v > 0).then_some(v as u32)
}

fn abi_of(n: u32) -> ABI {
    ABI::from(n as i32)
}

/// Build the kernel ruleset for `spec`. Fails unless this kernel can enforce every rule the
/// read-only guarantee depends on.
pub fn prepare(spec: &WallSpec) -> Result<PreparedWall, WallError> {
    let kernel = kernel_abi().ok_or(WallError::Unsupported)?;
    let needed = spec.required_abi();
    if kernel < needed {
        return Err(WallError::AbiTooOld { kernel, needed });
    }
    let required_fs = AccessFs::from_all(abi_of(super::MIN_FS_ABI));
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(required_fs)?;
    if spec.connect_ports.is_some() {
        ruleset = ruleset.handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)?;
    }
    let mut ruleset = ruleset
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(BEST_ABI))?
        .scope(Scope::Signal | Scope::AbstractUnixSocket)?
        .create()?;
    let read = AccessFs::from_read(BEST_ABI);
    let all = AccessFs::from_all(BEST_ABI);
    for (paths, access) in [(&spec.read, read), (&spec.write, all)] {
        for path in paths {
            ruleset = add_path(ruleset, path, access)?;
        }
    }
    if let Some(ports) = &spec.connect_ports {
        for &port in ports {
            ruleset = ruleset.add_rule(NetPort::new(port, AccessNet::ConnectTcp))?;
        }
    }
    Ok(PreparedWall {
        ruleset: Some(ruleset),
        abi: kernel,
    })
}

fn add_path(
    ruleset: RulesetCreated,
    path: &Path,
    access: BitFlags<AccessFs>,
) -> Result<RulesetCreated, WallError> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(ruleset); // missing: nothing to allow
    };
    let access = if meta.is_dir() {
        access
    } else {
        access & AccessFs::from_file(BEST_ABI)
    };
    let fd = PathFd::new(path).map_err(|source| WallError::Path {
        path: path.display().to_string(),
        source,
    })?;
    Ok(ruleset.add_rule(PathBeneath::new(fd, access))?)
}

impl PreparedWall {
    /// Restrict the calling process. For the child between fork and exec: only the
    /// `prctl(PR_SET_NO_NEW_PRIVS)` and `landlock_restrict_self` system calls, no allocation.
    /// Errors carry [`REFUSED_ERRNO`].
    pub fn restrict_child(&mut self) -> io::Result<()> {
        let refused = || io::Error::from_raw_os_error(REFUSED_ERRNO);
        let ruleset = self.ruleset.take().ok_or_else(refused)?;
        match ruleset.restrict_self() {
            Ok(s) if s.no_new_privs && s.ruleset != RulesetStatus::NotEnforced => Ok(()),
            _ => Err(refused()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_abi_beyond_the_kernel_is_refused() {
        let Some(kernel) = kernel_abi() else { return };
        let spec = WallSpec {
            min_abi: kernel + 1,
            ..WallSpec::new().read("/usr")
        };
        match prepare(&spec) {
            Err(WallError::AbiTooOld { kernel: k, needed }) => {
                assert_eq!((k, needed), (kernel, kernel + 1));
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn ports_raise_the_required_abi() {
        let spec = WallSpec::new();
        assert_eq!(spec.required_abi(), super::super::MIN_FS_ABI);
        let spec = spec.connect_ports(vec![443]);
        assert_eq!(spec.required_abi(), super::super::MIN_NET_ABI);
    }

    #[test]
    fn missing_paths_are_skipped_and_files_get_file_rights() {
        if kernel_abi().is_none() {
            return;
        }
        let spec = WallSpec::new()
            .read("/definitely/not/here")
            .write("/dev/null")
            .read("/usr");
        let wall = prepare(&spec).expect("a wall on this kernel");
        assert!(wall.abi >= super::super::MIN_FS_ABI);
    }
}

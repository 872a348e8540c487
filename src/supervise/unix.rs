//! Linux process plumbing, fenced off from the rest of the crate: process-tree scans over
//! `/proc`, group and tree signalling, reaping, and the `prctl` calls. Nothing of `nix` leaks
//! out of this module's API.

use std::collections::HashSet;

use nix::errno::Errno;
use nix::sys::signal::{self, Signal};
use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::Pid;

/// One line of `/proc/<pid>/stat` that matters here.
#[derive(Debug, Clone, Copy)]
pub struct ProcInfo {
    pub pid: i32,
    pub ppid: i32,
    pub pgid: i32,
    pub zombie: bool,
}

/// Parse `/proc/<pid>/stat`. The command name may hold spaces and parentheses, so fields are
/// read after the last `)`.
pub fn parse_stat(stat: &str) -> Option<ProcInfo> {
    let pid = stat.split_once(' ')?.0.parse().ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut fields = rest.split(' ');
    let state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgid = fields.next()?.parse().ok()?;
    Some(ProcInfo {
        pid,
        ppid,
        pgid,
        zombie: state == "Z" || state == "X",
    })
}

/// Every process visible in `/proc`.
pub fn scan() -> Vec<ProcInfo> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| {
        let e = e.ok()?;
        let name = e.file_name();
        let name = name.to_str()?;
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        parse_stat(&std::fs::read_to_string(format!("/proc/{name}/stat")).ok()?)
    })
    .collect()
}

/// Processes that belong to a run: members of its group, and every descendant of the direct
/// child or of a group member (this catches a descendant that moved to a new group or session).
pub fn run_members(procs: &[ProcInfo], pgid: i32, seeds: &HashSet<i32>) -> HashSet<i32> {
    let mut set: HashSet<i32> = procs
        .iter()
        .filter(|p| p.pgid == pgid)
        .map(|p| p.pid)
        .collect();
    set.extend(seeds.iter().copied().filter(|&p| p > 1));
    loop {
        let before = set.len();
        for p in procs {
            if set.contains(&p.ppid) {
                set.insert(p.pid);
            }
        }
        if set.len() == before {
            return set;
        }
    }
}

/// Which of `pids` are still running (present and not zombies).
pub fn alive(procs: &[ProcInfo], pids: &HashSet<i32>) -> Vec<i32> {
    procs
        .iter()
        .filter(|p| pids.contains(&p.pid) && !p.zombie)
        .map(|p| p.pid)
        .collect()
}

/// How a process tree is stopped: politely first, then for good.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    Term,
    Kill,
}

/// The conventional name of a signal number (`SIGTERM`), for failure texts.
pub fn signal_name(sig: i32) -> String {
    Signal::try_from(sig)
        .map(|s| s.as_str().to_owned())
        .unwrap_or_else(|_| format!("signal {sig}"))
}

/// Send `stop` to the group and to each listed pid. Never signals a pid or group <= 1: a failed
/// spawn has no pid, and group 0/1 would mean "our own group" or init.
pub fn signal_all(pgid: i32, pids: &[i32], stop: Stop) {
    let sig = match stop {
        Stop::Term => Signal::SIGTERM,
        Stop::Kill => Signal::SIGKILL,
    };
    if pgid > 1 {
        let _ = signal::killpg(Pid::from_raw(pgid), sig);
    }
    for &pid in pids {
        if pid > 1 {
            let _ = signal::kill(Pid::from_raw(pid), sig);
        }
    }
}

/// Reap any of `pids` that are our (reparented) children and have exited. The direct child is
/// excluded by the caller: tokio owns its wait.
pub fn reap(pids: impl IntoIterator<Item = i32>) {
    for pid in pids {
        if pid > 1 {
            match waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG)) {
                Ok(_) | Err(Errno::ECHILD) | Err(_) => {}
            }
        }
    }
}

/// Make orphaned descendants of our children re-parent to this process instead of init, so
/// they stay findable as a run's descendants and we can reap them.
pub fn become_subreaper() {
    #[cfg(target_os = "linux")]
    {
        let _ = nix::sys::prctl::set_child_subreaper(true);
    }
}

/// Ask the kernel to send us `SIGTERM` when our parent dies (the dispatcher treats it as a
/// cancel and cleans up). Re-checks the parent afterwards: if it already died between our start
/// and the `prctl`, no signal would ever come, so raise it ourselves.
pub fn terminate_with_parent() {
    #[cfg(target_os = "linux")]
    {
        let parent = nix::unistd::getppid();
        if nix::sys::prctl::set_pdeathsig(Signal::SIGTERM).is_ok()
            && nix::unistd::getppid() != parent
        {
            let _ = signal::raise(Signal::SIGTERM);
        }
    }
}

/// For the child between fork and exec: die with the dispatcher (SIGKILL on parent death),
/// with the same re-check. Only async-signal-safe calls.
pub fn child_die_with_parent(parent: i32) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: prctl and getppid are async-signal-safe.
        unsafe {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                libc::raise(libc::SIGKILL);
            }
        }
    }
    let _ = parent;
    Ok(())
}

/// For a background job's worker between fork and exec: a session of its own (no terminal's
/// hangup or Ctrl-C reaches it), and SIGTERM, SIGINT and SIGHUP ignored until it installs its own
/// handlers, so a cancel that arrives in that instant is not a silent death (the worker also
/// looks for the cancel marker once its handlers are in place). Only async-signal-safe calls.
pub fn detach_worker() -> std::io::Result<()> {
    // SAFETY: setsid and signal are async-signal-safe.
    unsafe {
        if libc::setsid() < 0 {
            return Err(std::io::Error::last_os_error());
        }
        for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            libc::signal(sig, libc::SIG_IGN);
        }
    }
    Ok(())
}

/// Ask one process to stop (SIGTERM). Refuses pids <= 1.
pub fn terminate_pid(pid: i32) -> bool {
    pid > 1 && signal::kill(Pid::from_raw(pid), Signal::SIGTERM).is_ok()
}

/// Whether `pid` is alive and its command line holds `needle` as one argument: how a pid read
/// from a file is confirmed to still be the process that wrote it before it is signalled.
pub fn runs_with_arg(pid: i32, needle: &str) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .is_ok_and(|c| c.split(|b| *b == 0).any(|a| a == needle.as_bytes()))
}

/// SIGKILL every live descendant of this process (a subreaper's orphans included), then reap
/// what died. For a worker whose dispatch is over: nothing it started may outlive it.
pub fn kill_descendants() {
    let me = std::process::id() as i32;
    let procs = scan();
    let mut set = HashSet::from([me]);
    loop {
        let before = set.len();
        for p in &procs {
            if set.contains(&p.ppid) {
                set.insert(p.pid);
            }
        }
        if set.len() == before {
            break;
        }
    }
    set.remove(&me);
    let live = alive(&procs, &set);
    signal_all(0, &live, Stop::Kill);
    reap(set);
}

/// Put the wall around the child: the ruleset is built here, before the fork (a kernel that
/// cannot enforce it refuses the spawn: `read-only-unavailable`, nothing started); the child
/// only restricts itself between fork and exec.
pub fn wall_child(
    cmd: &mut tokio::process::Command,
    spec: &crate::wall::WallSpec,
) -> Result<(), crate::contract::Failure> {
    let mut wall = crate::wall::prepare(spec).map_err(|e| {
        crate::contract::Failure::new(
            crate::contract::FailureKind::ReadOnlyUnavailable,
            format!(
                "the dispatcher's Landlock wall cannot be built here, so nothing was started: {e}"
            ),
        )
    })?;
    // SAFETY: the closure only makes the prctl and landlock_restrict_self system calls.
    unsafe {
        cmd.pre_exec(move || wall.restrict_child());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_with_odd_command_names() {
        let p = parse_stat("42 (a) b (c)) S 7 42 42 0 -1").unwrap();
        assert_eq!((p.pid, p.ppid, p.pgid, p.zombie), (42, 7, 42, false));
        let z = parse_stat("9 (x) Z 1 9 9 0").unwrap();
        assert!(z.zombie);
    }

    #[test]
    fn members_follow_descendants_out_of_the_group() {
        let procs = [
            ProcInfo {
                pid: 10,
                ppid: 1,
                pgid: 10,
                zombie: false,
            },
            ProcInfo {
                pid: 11,
                ppid: 10,
                pgid: 10,
                zombie: false,
            },
            ProcInfo {
                pid: 12,
                ppid: 11,
                pgid: 12,
                zombie: false,
            }, // setsid'd away
            ProcInfo {
                pid: 13,
                ppid: 12,
                pgid: 12,
                zombie: false,
            },
            ProcInfo {
                pid: 20,
                ppid: 1,
                pgid: 20,
                zombie: false,
            }, // unrelated
        ];
        let m = run_members(&procs, 10, &HashSet::from([10]));
        assert_eq!(m, HashSet::from([10, 11, 12, 13]));
    }
}

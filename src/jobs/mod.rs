//! Background jobs: `run --background` hands a dispatch to a detached worker and returns at once;
//! `jobs …` lists, shows, waits for, follows, cancels and prunes them.
//!
//! A job is exactly a blocking `run` with someone else waiting: the worker (a session of its
//! own, holding the job's lock for its whole life) waits for a running slot, then starts
//! `agent-dispatch run --lifeline …` for the job and copies its protocol lines into the store.
//! That inner `run` supervises the agent CLI as always; if the worker dies, the lifeline and the
//! parent-death signal make it stop the whole tree, and the job reads `lost` because its lock is
//! free and it has no result. Cancel is the lifeline too: the worker closes it.

pub mod id;
pub mod queue;
pub mod store;
pub mod worker;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

pub use id::JobId;
pub use store::{JobSpec, JobState, JobView, Store};

use crate::supervise::unix;

/// The line `run --background` prints: `{"type":"job","protocol":1,"id":…}`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "type", rename = "job")]
pub struct JobLine {
    pub protocol: u32,
    pub id: String,
}

/// The hidden subcommand the worker runs as: `agent-dispatch jobs __worker DIR`.
pub const WORKER_ARGS: [&str; 2] = ["jobs", "__worker"];

/// Create the job and start its detached worker (`program` is this binary). The worker inherits
/// this process's environment (never written to disk) and, as its stdin, the job's locked lock
/// file: the lock passes to it without a moment unheld.
pub fn submit(store: &Store, spec: JobSpec, task: &str, program: &Path) -> std::io::Result<JobId> {
    let created_at = spec.created_at;
    let job = store.create(spec, task)?;
    // In line now, in submission order; live while the job's lock is held (by us, then the
    // worker we hand it to).
    let ticket = queue::ticket_name(created_at, job.id.as_str());
    queue::enqueue(store.root(), &ticket)?;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(job.dir.join(store::LOG_FILE))?;
    let mut cmd = Command::new(program);
    cmd.args(WORKER_ARGS)
        .arg(&job.dir)
        .stdin(Stdio::from(job.lock))
        .stdout(Stdio::null())
        .stderr(Stdio::from(log));
    // SAFETY: detach_worker only makes async-signal-safe calls.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, unix::detach_worker);
    }
    let child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            // Never leave a job behind that nothing will run (it would read `lost`).
            queue::dequeue(store.root(), &ticket);
            let _ = std::fs::remove_dir_all(&job.dir);
            return Err(e);
        }
    };
    store::write_atomic(
        &job.dir.join(store::PID_FILE),
        child.id().to_string().as_bytes(),
    )?;
    // Not waited for: it outlives us, and is re-parented when we exit.
    drop(child);
    Ok(job.id)
}

/// Ask a job's worker to cancel. Returns false when no live worker could be told (the job had
/// already ended, or was lost).
pub fn request_cancel(dir: &Path) -> std::io::Result<bool> {
    store::write_atomic(&dir.join(store::CANCEL_FILE), b"")?;
    if !store::is_locked(&dir.join(store::LOCK_FILE)) {
        return Ok(false);
    }
    let pid: i32 = std::fs::read_to_string(dir.join(store::PID_FILE))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0);
    // Signal the pid only while it is still this job's worker (pids are reused).
    let needle = dir.to_string_lossy();
    Ok(unix::runs_with_arg(pid, &needle) && unix::terminate_pid(pid))
}

/// Wait until the job's worker is gone (its lock free), at most `limit` (`None`: no limit).
/// Blocks on the lock itself: no polling, woken the moment the worker exits or dies.
pub async fn wait_for_worker(dir: &Path, limit: Option<Duration>) -> bool {
    let lock = dir.join(store::LOCK_FILE);
    // A lock file that cannot be opened has no worker behind it either.
    let waiter = tokio::task::spawn_blocking(move || {
        if let Ok(f) = std::fs::File::open(&lock) {
            let _ = f.lock_shared();
        }
    });
    match limit {
        Some(d) => tokio::time::timeout(d, waiter).await.is_ok(),
        None => {
            let _ = waiter.await;
            true
        }
    }
}

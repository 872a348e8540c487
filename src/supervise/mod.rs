//! Supervision (D12): every process the dispatcher starts — agent runs and short discovery
//! commands alike — is spawned here, in its own process group, and registered until its whole
//! tree is gone.
//!
//! Cancel and shutdown share one idempotent cleanup routine per group ([`Group::terminate`]):
//! SIGTERM to the group and the run's descendants, at most [`GRACE`] for them to exit, SIGKILL to
//! the survivors, reap. Concurrent callers all wait for the same cleanup. Shutdown refuses new
//! spawns first, then cleans every registered group.

pub mod lifeline;
pub mod unix;

use std::collections::{HashMap, HashSet};
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{ChildStderr, ChildStdout, Command};
use tokio::sync::{OnceCell, watch};
use tokio_util::sync::CancellationToken;

use crate::contract::{Failure, FailureKind};
use crate::launch::{Launch, StdinPlan};

/// How long a group gets between SIGTERM and SIGKILL.
pub const GRACE: Duration = Duration::from_secs(2);
/// After SIGKILL, how long we keep reaping before giving up on a process (uninterruptible sleep).
const KILL_WAIT: Duration = Duration::from_secs(1);
/// Fallback re-check interval while waiting for a tree to empty, for descendants whose death
/// sends us no SIGCHLD (they re-parented elsewhere).
const POLL: Duration = Duration::from_millis(5);

/// How a group's cleanup ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Termination {
    /// Nothing was left to stop (a failed spawn, or already cleaned up and empty).
    AlreadyGone,
    /// Every process exited within the grace period after SIGTERM.
    Graceful,
    /// Survivors were killed with SIGKILL.
    Killed,
}

/// One supervised process group.
pub struct Group {
    id: u64,
    /// The direct child's pid, which is also its group id. 0 when the spawn failed.
    pgid: i32,
    exit: watch::Receiver<Option<ExitStatus>>,
    cleanup: OnceCell<Termination>,
    supervisor: std::sync::Weak<Inner>,
}

impl Group {
    pub fn pid(&self) -> i32 {
        self.pgid
    }

    /// The direct child's exit status, once it has exited.
    pub fn exit_status(&self) -> Option<ExitStatus> {
        *self.exit.borrow()
    }

    /// Wait for the direct child to exit (not for stdio to close, not for descendants).
    pub async fn exited(&self) -> Option<ExitStatus> {
        let mut rx = self.exit.clone();
        rx.wait_for(|s| s.is_some()).await.ok().and_then(|s| *s)
    }

    /// Synchronous last resort for unwinding paths (a panic, a dropped future) where no
    /// cleanup can be awaited: SIGKILL the group and the run's descendants right now. tokio's
    /// reaper collects the direct child; orphans re-parented to us are reaped here once dead.
    pub fn kill_now(&self) {
        if self.pgid <= 1 || self.cleanup.initialized() {
            return;
        }
        let procs = unix::scan();
        let members = unix::run_members(&procs, self.pgid, &HashSet::from([self.pgid]));
        unix::signal_all(self.pgid, &unix::alive(&procs, &members), unix::Stop::Kill);
        if let Some(inner) = self.supervisor.upgrade() {
            inner.groups.lock().unwrap().remove(&self.id);
        }
    }

    /// Stop the whole tree: idempotent, and every concurrent caller waits for the same cleanup.
    pub async fn terminate(&self) -> Termination {
        let t = *self.cleanup.get_or_init(|| self.stop_tree()).await;
        if let Some(inner) = self.supervisor.upgrade() {
            inner.groups.lock().unwrap().remove(&self.id);
        }
        t
    }

    async fn stop_tree(&self) -> Termination {
        if self.pgid <= 1 {
            return Termination::AlreadyGone;
        }
        let direct = HashSet::from([self.pgid]);
        let mut tracked = unix::run_members(&unix::scan(), self.pgid, &direct);
        let live = unix::alive(&unix::scan(), &tracked);
        if live.is_empty() && self.exit_status().is_some() {
            return Termination::AlreadyGone;
        }
        unix::signal_all(self.pgid, &live, unix::Stop::Term);
        if self.wait_empty(&mut tracked, GRACE).await {
            return Termination::Graceful;
        }
        let survivors = unix::alive(&unix::scan(), &tracked);
        unix::signal_all(self.pgid, &survivors, unix::Stop::Kill);
        self.wait_empty(&mut tracked, KILL_WAIT).await;
        Termination::Killed
    }

    /// Wait until the direct child has exited and no tracked process is alive, reaping our
    /// re-parented orphans as they die. Woken by SIGCHLD and the child's exit, with a short
    /// fallback poll for processes whose death we are not told about.
    async fn wait_empty(&self, tracked: &mut HashSet<i32>, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        let mut sigchld =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::child()).ok();
        let mut exit = self.exit.clone();
        loop {
            let procs = unix::scan();
            // Newly spawned descendants (a fork racing the signal) join the tracked set.
            tracked.extend(unix::run_members(&procs, self.pgid, tracked));
            if self.exit_status().is_some() {
                unix::reap(tracked.iter().copied().filter(|&p| p != self.pgid));
            }
            let procs = unix::scan();
            if self.exit_status().is_some() && unix::alive(&procs, tracked).is_empty() {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            let nap = POLL.min(deadline - now);
            tokio::select! {
                _ = async { match sigchld.as_mut() { Some(s) => { s.recv().await; } None => std::future::pending().await } } => {}
                _ = exit.changed() => {}
                _ = tokio::time::sleep(nap) => {}
            }
        }
    }
}

/// Kills a group's tree on the spot if dropped before its cleanup finished: a panic unwinding
/// through the run loop, or a future (a dispatch, a captured helper command) dropped by a
/// `select!` or a timeout. Holding one costs nothing on the normal path.
pub struct KillOnDrop(pub Arc<Group>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        self.0.kill_now();
    }
}

/// A spawned, registered child. stdout and stderr are handed to the caller; the direct child's
/// wait is owned by a background task that publishes the exit status.
pub struct SupervisedChild {
    pub group: Arc<Group>,
    pub stdout: Option<ChildStdout>,
    pub stderr: Option<ChildStderr>,
}

/// Output of a short captured command (discovery, version probes).
#[derive(Debug, Clone)]
pub struct Captured {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

struct Inner {
    groups: Mutex<HashMap<u64, Arc<Group>>>,
    next_id: AtomicU64,
    shutting_down: CancellationToken,
    shutdown_done: OnceCell<()>,
}

/// The registry of active process groups. Cheap to clone; clones share the registry.
#[derive(Clone)]
pub struct Supervisor {
    inner: Arc<Inner>,
    /// Cancels this handle's captured commands (see [`Supervisor::with_cancel`]).
    scope: CancellationToken,
}

impl Default for Supervisor {
    fn default() -> Self {
        Self::new()
    }
}

impl Supervisor {
    pub fn new() -> Self {
        Self {
            inner: Arc::new(Inner {
                groups: Mutex::new(HashMap::new()),
                next_id: AtomicU64::new(1),
                shutting_down: CancellationToken::new(),
                shutdown_done: OnceCell::new(),
            }),
            scope: CancellationToken::new(),
        }
    }

    /// A handle on the same registry whose captured commands also stop when `cancel` fires:
    /// how a dispatch's cancel reaches an adapter's discovery subprocesses.
    pub fn with_cancel(&self, cancel: CancellationToken) -> Self {
        Self {
            inner: self.inner.clone(),
            scope: cancel,
        }
    }

    /// Number of groups still registered (running, or not yet cleaned up).
    pub fn active(&self) -> usize {
        self.inner.groups.lock().unwrap().len()
    }

    pub fn is_shutting_down(&self) -> bool {
        self.inner.shutting_down.is_cancelled()
    }

    /// Spawn `launch` in a new process group and register it. Refused during shutdown.
    pub fn spawn(&self, launch: &Launch) -> Result<SupervisedChild, Failure> {
        let mut cmd = Command::new(&launch.program);
        cmd.args(&launch.args)
            .current_dir(&launch.cwd)
            .env_clear()
            .envs(launch.env.iter().map(|(k, v)| (k, v)))
            .stdin(match launch.stdin {
                StdinPlan::Null => Stdio::null(),
                StdinPlan::Bytes(_) => Stdio::piped(),
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(false);
        let parent = std::process::id() as i32;
        // SAFETY: the closure only makes async-signal-safe calls (prctl, getppid, raise).
        unsafe {
            cmd.pre_exec(move || unix::child_die_with_parent(parent));
        }
        if let Some(wall) = &launch.wall {
            unix::wall_child(&mut cmd, &wall.spec)?;
        }

        // Registration and the shutdown check happen under one lock, so a shutdown that has
        // started never misses a group and never lets a new one in.
        let mut groups = self.inner.groups.lock().unwrap();
        if self.is_shutting_down() {
            return Err(Failure::new(
                FailureKind::Cancelled,
                "the dispatcher is shutting down; nothing was started",
            ));
        }
        let mut child = cmd.spawn().map_err(|e| {
            let kind = if crate::wall::is_wall_refusal(&e) {
                FailureKind::ReadOnlyUnavailable
            } else if e.kind() == std::io::ErrorKind::NotFound {
                FailureKind::NotInstalled
            } else {
                FailureKind::SpawnFailed
            };
            Failure::new(
                kind,
                format!("could not start {}: {e}", launch.program.display()),
            )
        })?;
        let pgid = child.id().map(|p| p as i32).unwrap_or(0);
        if let (StdinPlan::Bytes(bytes), Some(mut stdin)) = (&launch.stdin, child.stdin.take()) {
            let bytes = bytes.clone();
            tokio::spawn(async move {
                // A CLI that exits without reading gets EPIPE; that is its business.
                let _ = stdin.write_all(&bytes).await;
                let _ = stdin.shutdown().await;
            });
        }
        let (tx, rx) = watch::channel(None);
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        tokio::spawn(async move {
            let status = child.wait().await.ok();
            let _ = tx.send(status);
        });
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let group = Arc::new(Group {
            id,
            pgid,
            exit: rx,
            cleanup: OnceCell::new(),
            supervisor: Arc::downgrade(&self.inner),
        });
        groups.insert(id, group.clone());
        Ok(SupervisedChild {
            group,
            stdout,
            stderr,
        })
    }

    /// Run a short command to completion, capturing at most `limit` bytes of each stream.
    /// Cancellable; the command's group is cleaned up whatever happens.
    pub async fn capture(
        &self,
        launch: &Launch,
        cancel: &CancellationToken,
        limit: usize,
    ) -> Result<Captured, Failure> {
        if cancel.is_cancelled() || self.scope.is_cancelled() {
            return Err(Failure::new(
                FailureKind::Cancelled,
                "cancelled before start",
            ));
        }
        let mut child = self.spawn(launch)?;
        let group = child.group.clone();
        let _guard = KillOnDrop(group.clone());
        let out = tokio::spawn(read_capped(child.stdout.take(), limit));
        let err = tokio::spawn(read_capped(child.stderr.take(), limit));
        let status = tokio::select! {
            s = group.exited() => Ok(s),
            _ = cancel.cancelled() => Err(Failure::new(FailureKind::Cancelled, "cancelled")),
            _ = self.scope.cancelled() => Err(Failure::new(FailureKind::Cancelled, "cancelled")),
        };
        // The command is done (or cancelled): stop whatever it left behind, then collect what
        // the pipes still hold, without waiting on a pipe an escaped process keeps open.
        group.terminate().await;
        let stdout = drain(out).await;
        let stderr = drain(err).await;
        let status = status?.ok_or_else(|| {
            Failure::new(FailureKind::SpawnFailed, "lost track of a captured command")
        })?;
        Ok(Captured {
            status,
            stdout,
            stderr,
        })
    }

    /// Refuse new spawns and stop every registered group. Idempotent: concurrent and repeated
    /// callers all wait for the same cleanup.
    pub async fn shutdown(&self) {
        self.inner
            .shutdown_done
            .get_or_init(|| async {
                let groups: Vec<Arc<Group>> = {
                    let g = self.inner.groups.lock().unwrap();
                    self.inner.shutting_down.cancel();
                    g.values().cloned().collect()
                };
                futures::future::join_all(groups.iter().map(|g| g.terminate())).await;
            })
            .await;
    }

    /// Resolves when shutdown has begun.
    pub async fn shutdown_started(&self) {
        self.inner.shutting_down.cancelled().await
    }
}

/// Bound on collecting a captured command's output once its tree is gone.
const CAPTURE_DRAIN: Duration = Duration::from_millis(500);

async fn drain(task: tokio::task::JoinHandle<Vec<u8>>) -> Vec<u8> {
    let abort = task.abort_handle();
    match tokio::time::timeout(CAPTURE_DRAIN, task).await {
        Ok(Ok(bytes)) => bytes,
        _ => {
            abort.abort();
            Vec::new()
        }
    }
}

async fn read_capped<R: tokio::io::AsyncRead + Unpin>(reader: Option<R>, limit: usize) -> Vec<u8> {
    let Some(mut reader) = reader else {
        return Vec::new();
    };
    let mut buf = Vec::new();
    let mut chunk = [0u8; 64 * 1024];
    loop {
        match reader.read(&mut chunk).await {
            Ok(0) | Err(_) => return buf,
            Ok(n) => {
                let room = limit.saturating_sub(buf.len());
                buf.extend_from_slice(&chunk[..n.min(room)]);
            }
        }
    }
}

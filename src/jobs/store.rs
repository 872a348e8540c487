//! The job store: one directory per job under `<state>/jobs/<id>/`.
//!
//! Every file has exactly one writer and is written once, atomically (a temporary file renamed
//! into place), so concurrent workers and readers never see a torn or half-written file:
//!
//! | file | writer | content |
//! |---|---|---|
//! | `job.json` | `run --background` | what was asked: agent, cwd, model, effort, scope, limits, creation time |
//! | `task` | `run --background` | the task text |
//! | `lock` | `run --background`, then the worker | empty; **flock-ed by the worker for its whole life** |
//! | `pid` | `run --background` | the worker's pid (to signal it on cancel) |
//! | `started` | the worker | empty; its mtime is when the job got a running slot |
//! | `events.jsonl` | the worker (append) | every protocol line of the dispatch, as `run` writes them |
//! | `result.json` | the worker | the protocol `result` line, verbatim; its mtime is the finish time |
//! | `cancel` | `jobs cancel` | empty; asks a worker that has not yet installed its handler to stop |
//!
//! Liveness is never guessed: a job without a result whose lock nobody holds has no worker, so
//! it is `lost` (and its process tree went with its worker). The whole directory is built under
//! a hidden name and renamed into place with the lock already held, so no reader ever sees a job
//! that is neither locked nor finished before its worker started.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::id::JobId;
use crate::adapter::Env;
use crate::contract::{DispatchResult, FailureKind};
use crate::limits::Limits;
use crate::protocol::Line;

pub const JOB_FILE: &str = "job.json";
pub const TASK_FILE: &str = "task";
pub const LOCK_FILE: &str = "lock";
pub const PID_FILE: &str = "pid";
pub const STARTED_FILE: &str = "started";
pub const EVENTS_FILE: &str = "events.jsonl";
pub const RESULT_FILE: &str = "result.json";
pub const CANCEL_FILE: &str = "cancel";
/// The worker's own diagnostics (stderr of the worker and of the dispatch it runs).
pub const LOG_FILE: &str = "worker.log";

/// What was asked, written once when the job is created.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobSpec {
    pub id: String,
    pub agent: String,
    pub cwd: PathBuf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    pub limits: Limits,
    /// Milliseconds since the Unix epoch.
    pub created_at: u64,
}

/// Where a job is in its life. `lost`: its worker died without writing a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum JobState {
    Queued,
    Running,
    Succeeded,
    Failed,
    Cancelled,
    Lost,
}

impl JobState {
    pub fn is_finished(self) -> bool {
        !matches!(self, JobState::Queued | JobState::Running)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Succeeded => "succeeded",
            JobState::Failed => "failed",
            JobState::Cancelled => "cancelled",
            JobState::Lost => "lost",
        }
    }
}

/// A job as a reader sees it at one moment.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JobView {
    #[serde(flatten)]
    pub spec: JobSpec,
    pub state: JobState,
    /// Milliseconds since the Unix epoch, once it got a running slot.
    pub started_at: Option<u64>,
    /// Milliseconds since the Unix epoch, once its result was written.
    pub finished_at: Option<u64>,
    /// The protocol `result` line (`type`, `protocol` and the result's fields), once finished.
    pub result: Option<Line>,
}

impl JobView {
    /// The final result, if the job has one.
    pub fn dispatch_result(&self) -> Option<&DispatchResult> {
        match &self.result {
            Some(Line::Result { result, .. }) => Some(result),
            _ => None,
        }
    }
}

/// `$AGENT_DISPATCH_STATE_DIR/jobs`, else `$XDG_STATE_HOME/agent-dispatch/jobs`, else
/// `$HOME/.local/state/agent-dispatch/jobs`.
pub fn default_root(env: &Env) -> Option<PathBuf> {
    let get = |k: &str| {
        env.get(std::ffi::OsStr::new(k))
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    get("AGENT_DISPATCH_STATE_DIR")
        .or_else(|| get("XDG_STATE_HOME").map(|d| d.join("agent-dispatch")))
        .or_else(|| get("HOME").map(|h| h.join(".local/state/agent-dispatch")))
        .map(|d| d.join("jobs"))
}

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn mtime_ms(path: &Path) -> Option<u64> {
    millis(std::fs::metadata(path).ok()?)
}

fn millis(meta: std::fs::Metadata) -> Option<u64> {
    let m = meta.modified().ok()?;
    m.duration_since(UNIX_EPOCH)
        .ok()
        .map(|d| d.as_millis() as u64)
}

/// A file's bytes and its modification time, from one open (listing reads many of these).
fn read_with_mtime(path: &Path) -> Option<(Vec<u8>, u64)> {
    use std::io::Read;
    let mut f = File::open(path).ok()?;
    let meta = f.metadata().ok()?;
    let mut bytes = Vec::with_capacity(meta.len() as usize + 1);
    f.read_to_end(&mut bytes).ok()?;
    Some((bytes, millis(meta)?))
}

/// Write `bytes` to `path` atomically: a temporary file in the same directory, renamed over it.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new().prefix(".tmp-").tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Whether some process holds the lock file's lock (a worker is alive).
pub fn is_locked(lock: &Path) -> bool {
    let Ok(f) = File::open(lock) else {
        return false;
    };
    match f.try_lock_shared() {
        Ok(()) => false,
        Err(std::fs::TryLockError::WouldBlock) => true,
        Err(std::fs::TryLockError::Error(_)) => false,
    }
}

/// A job just created: its directory, and the open lock file whose exclusive lock is held.
/// Handing the file to the worker (as its stdin) hands the lock over with it.
pub struct NewJob {
    pub id: JobId,
    pub dir: PathBuf,
    pub lock: File,
}

/// The job store rooted at one directory.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
}

impl Store {
    /// Open (creating it if needed) the store at `root`.
    pub fn open(root: impl Into<PathBuf>) -> std::io::Result<Self> {
        use std::os::unix::fs::PermissionsExt;
        let root = root.into();
        if !root.is_dir() {
            std::fs::create_dir_all(&root)?;
            // Tasks and answers are the user's business only.
            std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o700))?;
        }
        Ok(Self { root })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn dir(&self, id: &JobId) -> PathBuf {
        self.root.join(id.as_str())
    }

    /// Create a job, locked, fully written before it becomes visible under its id.
    pub fn create(&self, mut spec: JobSpec, task: &str) -> std::io::Result<NewJob> {
        let id = JobId::new()?;
        spec.id = id.to_string();
        let staging = tempfile::Builder::new()
            .prefix(".new-")
            .tempdir_in(&self.root)?;
        let json = serde_json::to_vec(&spec).map_err(std::io::Error::other)?;
        std::fs::write(staging.path().join(JOB_FILE), json)?;
        std::fs::write(staging.path().join(TASK_FILE), task)?;
        let lock = OpenOptions::new()
            .create_new(true)
            .read(true)
            .write(true)
            .open(staging.path().join(LOCK_FILE))?;
        lock.lock()?;
        let dir = self.dir(&id);
        std::fs::rename(staging.path(), &dir)?;
        // The staging directory is gone (renamed); nothing left to clean up.
        let _ = staging.keep();
        Ok(NewJob { id, dir, lock })
    }

    /// The job with this id, if it exists.
    pub fn find(&self, id: &JobId) -> Option<JobView> {
        read_view(&self.dir(id))
    }

    /// Every job, newest first. Unreadable or half-removed entries are skipped.
    pub fn list(&self) -> Vec<JobView> {
        let Ok(entries) = std::fs::read_dir(&self.root) else {
            return Vec::new();
        };
        let mut jobs: Vec<JobView> = entries
            .filter_map(|e| {
                let e = e.ok()?;
                let name = e.file_name();
                let name = name.to_str()?;
                JobId::parse(name).ok()?;
                read_view(&e.path())
            })
            .collect();
        jobs.sort_by(|a, b| {
            b.spec
                .created_at
                .cmp(&a.spec.created_at)
                .then_with(|| a.spec.id.cmp(&b.spec.id))
        });
        jobs
    }

    /// Remove finished (and lost) jobs that ended more than `older_than` ago. Never touches a
    /// job whose worker is alive. Returns the ids removed.
    pub fn prune(&self, older_than: Duration) -> Vec<String> {
        let cutoff = now_ms().saturating_sub(older_than.as_millis() as u64);
        let mut removed = Vec::new();
        for job in self.list() {
            let ended = match job.state {
                JobState::Queued | JobState::Running => continue,
                JobState::Lost => job.spec.created_at,
                _ => job.finished_at.unwrap_or(job.spec.created_at),
            };
            if ended > cutoff {
                continue;
            }
            let Ok(id) = JobId::parse(&job.spec.id) else {
                continue;
            };
            let dir = self.dir(&id);
            // Move it out of sight first, so a reader never sees half a directory.
            let doomed = self.root.join(format!(".prune-{id}"));
            if std::fs::rename(&dir, &doomed).is_ok() && std::fs::remove_dir_all(&doomed).is_ok() {
                removed.push(job.spec.id);
            }
        }
        removed
    }
}

/// Read one job directory into a view. The order of the reads matters: result, then lock, then
/// result again — a worker writes its result before it lets go of the lock, so a free lock with
/// no result on the second read means the worker died without one.
pub fn read_view(dir: &Path) -> Option<JobView> {
    let spec: JobSpec = serde_json::from_slice(&std::fs::read(dir.join(JOB_FILE)).ok()?).ok()?;
    let started_at = mtime_ms(&dir.join(STARTED_FILE));
    let finished = read_result(dir).or_else(|| {
        if is_locked(&dir.join(LOCK_FILE)) {
            None
        } else {
            // Read again: the worker may have written it just before it let go of the lock.
            Some(read_result(dir).unwrap_or((JobState::Lost, None, 0)))
        }
    });
    let (state, result, finished_at) = match finished {
        Some((state, result, at)) => (state, result, (at > 0).then_some(at)),
        None if started_at.is_some() => (JobState::Running, None, None),
        None => (JobState::Queued, None, None),
    };
    Some(JobView {
        spec,
        state,
        started_at,
        finished_at,
        result,
    })
}

/// The job's result line and the state it means, if the worker wrote one.
fn read_result(dir: &Path) -> Option<(JobState, Option<Line>, u64)> {
    let (bytes, finished_at) = read_with_mtime(&dir.join(RESULT_FILE))?;
    let line: Line = serde_json::from_slice(&bytes).ok()?;
    let state = match &line {
        Line::Result { result, .. } if result.ok => JobState::Succeeded,
        Line::Result { result, .. }
            if result.failure.as_ref().map(|f| f.kind) == Some(FailureKind::Cancelled) =>
        {
            JobState::Cancelled
        }
        Line::Result { .. } => JobState::Failed,
        _ => return None,
    };
    Some((state, Some(line), finished_at))
}

/// The raw result line, verbatim as the dispatch wrote it.
pub fn read_result_line(dir: &Path) -> Option<String> {
    let s = std::fs::read_to_string(dir.join(RESULT_FILE)).ok()?;
    Some(s.trim_end().to_owned())
}

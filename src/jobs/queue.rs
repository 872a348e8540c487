//! The concurrency limit: at most N jobs run at once (default 3, `$AGENT_DISPATCH_MAX_JOBS`), the
//! rest wait in arrival order, so a fan-out cannot start twenty agents at once.
//!
//! A worker that dies frees what it held with no clean-up:
//! - `.slots/<n>`: a running job holds slot n's flock for as long as it runs;
//! - `.queue/<created>-<id>`: a waiting job's ticket, written by `run --background` before the
//!   worker starts, so the line is in submission order whichever worker wakes first. Only the
//!   oldest live ticket may take a free slot (first come, first served); a ticket is live while
//!   its job's lock is held (by the submitter, then by the worker it handed the lock to), and a
//!   dead one is swept by whoever sees it.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::lock_file;

/// Running jobs allowed at once, unless `$AGENT_DISPATCH_MAX_JOBS` says otherwise.
pub const DEFAULT_MAX_RUNNING: usize = 3;
pub const MAX_RUNNING_VAR: &str = "AGENT_DISPATCH_MAX_JOBS";

/// How often a waiting worker looks again. Waiting jobs are few and the look is a short
/// directory read, so a poll is cheaper than a notification channel between processes.
const POLL: Duration = Duration::from_millis(50);

/// The limit from the environment (a positive integer), else the default.
pub fn max_running(env: &crate::adapter::Env) -> usize {
    env.get(std::ffi::OsStr::new(MAX_RUNNING_VAR))
        .and_then(|v| v.to_str()?.trim().parse::<usize>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(DEFAULT_MAX_RUNNING)
}

/// A running slot, held until dropped (or the process dies).
pub struct Slot {
    _lock: File,
    pub index: usize,
}

/// Join the line: write this job's ticket (at submission, before its worker starts).
pub fn enqueue(root: &Path, ticket: &str) -> std::io::Result<()> {
    let queue = root.join(".queue");
    std::fs::create_dir_all(&queue)?;
    std::fs::write(queue.join(ticket), b"")
}

/// Leave the line without running (a submission that failed).
pub fn dequeue(root: &Path, ticket: &str) {
    let _ = std::fs::remove_file(root.join(".queue").join(ticket));
}

/// The job id a ticket names (`<created>-<id>`).
pub fn job_of(ticket: &str) -> &str {
    ticket.split_once('-').map_or(ticket, |(_, id)| id)
}

/// Wait in line for a running slot. `root` is the job store's root; `ticket` orders this job
/// among the waiting ones (creation time, then id); `alive` says whether a ticket's job still
/// has a worker (or a submitter) behind it.
pub async fn acquire(
    root: &Path,
    ticket: &str,
    max: usize,
    alive: impl Fn(&str) -> bool,
) -> std::io::Result<Slot> {
    let slots = root.join(".slots");
    std::fs::create_dir_all(&slots)?;
    let mine = root.join(".queue").join(ticket);
    if !mine.exists() {
        enqueue(root, ticket)?;
    }
    let result = loop {
        if head_of_queue(&mine, &alive)
            && let Some(slot) = try_slot(&slots, max)?
        {
            break Ok(slot);
        }
        tokio::time::sleep(POLL).await;
    };
    let _ = std::fs::remove_file(&mine);
    result
}

/// Whether `mine` is the oldest live ticket. Dead tickets ahead are swept.
fn head_of_queue(mine: &Path, alive: &impl Fn(&str) -> bool) -> bool {
    let Some(queue) = mine.parent() else {
        return true;
    };
    let Ok(entries) = std::fs::read_dir(queue) else {
        return true;
    };
    let mut tickets: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            !p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    tickets.sort();
    for t in tickets {
        if t == mine {
            return true;
        }
        let name = t.file_name().map(|n| n.to_string_lossy().into_owned());
        if name.as_deref().is_some_and(alive) {
            return false;
        }
        // Its job has no worker any more: sweep the ticket.
        let _ = std::fs::remove_file(&t);
    }
    true
}

fn try_slot(slots: &Path, max: usize) -> std::io::Result<Option<Slot>> {
    for index in 0..max {
        let f = lock_file::open(&slots.join(index.to_string()))?;
        if f.try_lock().is_ok() {
            return Ok(Some(Slot { _lock: f, index }));
        }
    }
    Ok(None)
}

/// The ticket name for a job: creation time first so names sort in arrival order.
pub fn ticket_name(created_at_ms: u64, id: &str) -> String {
    format!("{created_at_ms:020}-{id}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn slots_are_limited_and_freed_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let a = acquire(dir.path(), &ticket_name(1, "a"), 2, |_| true)
            .await
            .unwrap();
        let b = acquire(dir.path(), &ticket_name(2, "b"), 2, |_| true)
            .await
            .unwrap();
        assert_ne!(a.index, b.index);
        let waiting = tokio::spawn({
            let root = dir.path().to_owned();
            async move {
                acquire(&root, &ticket_name(3, "c"), 2, |_| true)
                    .await
                    .unwrap()
            }
        });
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!waiting.is_finished(), "a third job waits");
        drop(a);
        let c = tokio::time::timeout(Duration::from_secs(2), waiting)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(c.index, 0);
    }

    #[tokio::test]
    async fn the_line_is_in_submission_order_whichever_worker_wakes_first() {
        let dir = tempfile::tempdir().unwrap();
        // The first job is submitted (its ticket written, its lock held) but its worker has
        // not started yet; the second job's worker is already asking for a slot.
        enqueue(dir.path(), &ticket_name(1, "first")).unwrap();
        let second = tokio::spawn({
            let root = dir.path().to_owned();
            async move { acquire(&root, &ticket_name(2, "second"), 1, |_| true).await }
        });
        tokio::time::sleep(POLL * 4).await;
        assert!(!second.is_finished(), "the second job waits for the first");
        let first = acquire(dir.path(), &ticket_name(1, "first"), 1, |_| true)
            .await
            .unwrap();
        drop(first);
        let second = tokio::time::timeout(Duration::from_secs(2), second).await;
        assert!(second.unwrap().unwrap().is_ok());
    }

    #[tokio::test]
    async fn a_ticket_whose_job_has_no_worker_is_swept() {
        let dir = tempfile::tempdir().unwrap();
        enqueue(dir.path(), &ticket_name(1, "dead")).unwrap();
        let alive = |t: &str| job_of(t) != "dead";
        let slot = tokio::time::timeout(
            Duration::from_secs(2),
            acquire(dir.path(), &ticket_name(2, "live"), 1, alive),
        )
        .await;
        assert!(slot.unwrap().is_ok());
        assert!(
            !dir.path()
                .join(".queue")
                .join(ticket_name(1, "dead"))
                .exists()
        );
    }
}

//! The concurrency limit: at most N jobs run at once (default 3, `$AGENT_DISPATCH_MAX_JOBS`), the
//! rest wait in arrival order, so a fan-out cannot start twenty agents at once.
//!
//! Both halves are lock files, so a worker that dies frees what it held with no clean-up:
//! - `.slots/<n>`: a running job holds slot n's flock for as long as it runs;
//! - `.queue/<created>-<id>`: a waiting job holds its ticket's flock. Only the oldest live ticket
//!   may take a free slot (first come, first served); a ticket whose lock is free is a dead
//!   worker's and is swept by whoever sees it.

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

/// Wait in line for a running slot. `root` is the job store's root; `ticket` orders this job
/// among the waiting ones (creation time, then id).
pub async fn acquire(root: &Path, ticket: &str, max: usize) -> std::io::Result<Slot> {
    let slots = root.join(".slots");
    let queue = root.join(".queue");
    std::fs::create_dir_all(&slots)?;
    std::fs::create_dir_all(&queue)?;
    let mine = queue.join(ticket);
    let ticket_lock = lock_file::open(&mine)?;
    ticket_lock.lock()?;
    let result = loop {
        if head_of_queue(&queue, &mine)
            && let Some(slot) = try_slot(&slots, max)?
        {
            break Ok(slot);
        }
        tokio::time::sleep(POLL).await;
    };
    let _ = std::fs::remove_file(&mine);
    drop(ticket_lock);
    result
}

/// Whether `mine` is the oldest ticket whose worker is alive. Dead tickets ahead are swept.
fn head_of_queue(queue: &Path, mine: &Path) -> bool {
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
        let Ok(f) = File::open(&t) else { continue };
        match f.try_lock() {
            // Nobody holds it: its worker is gone. Sweep it while we hold its lock.
            Ok(()) => {
                let _ = std::fs::remove_file(&t);
            }
            Err(_) => return false,
        }
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
        let a = acquire(dir.path(), &ticket_name(1, "a"), 2).await.unwrap();
        let b = acquire(dir.path(), &ticket_name(2, "b"), 2).await.unwrap();
        assert_ne!(a.index, b.index);
        let waiting = tokio::spawn({
            let root = dir.path().to_owned();
            async move { acquire(&root, &ticket_name(3, "c"), 2).await.unwrap() }
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
}

//! Leave the tree as it was found: removal of the empty mount-point stubs an agent CLI's sandbox
//! leaves behind (Claude Code's bubblewrap sandbox creates `.claude/.cc-writes/` and a dozen
//! empty files and directories under `.git/` so it can bind-mount over them, and does not
//! remove them).
//!
//! Generic: the stub paths are adapter data ([`Adapter::sandbox_stubs`]); nothing here knows a
//! CLI. The engine brackets every run:
//!
//! ```no_run
//! # use agent_dispatch::tree_guard::TreeGuard;
//! # fn run(adapter: &dyn agent_dispatch::adapter::Adapter, cwd: &std::path::Path) -> std::io::Result<()> {
//! let guard = TreeGuard::enter(cwd, adapter.sandbox_stubs())?;
//! // ... spawn the CLI, wait for its whole process tree to be gone ...
//! let report = guard.leave()?;
//! # let _ = report; Ok(())
//! # }
//! ```
//!
//! Rules:
//! - Only listed stubs are ever touched, and only those that did not exist when the first of the
//!   dispatches currently active in the tree entered, and only while they are still empty
//!   (directories: no entries; files: zero bytes). A person may be editing the tree meanwhile.
//! - Several dispatches may run in the same tree (the same repository, or the same directory
//!   outside one), from one process or many. Each holds a shared `flock` on a per-tree activity
//!   file for as long as it runs; the last one out (the one that can take the lock exclusively)
//!   cleans. The kernel drops the locks of a process that dies, so a crash never leaves a stale
//!   count behind.
//! - The locks and the record of which stubs pre-existed live OUTSIDE the tree, in
//!   [`default_state_dir`] (`$XDG_RUNTIME_DIR/agent-dispatch/trees`, else the user's cache dir,
//!   else the temp dir), one set of files per tree, named by a hash of the tree's path.
//!
//! Known limit: stubs left by a dispatcher that was killed outright (SIGKILL) before `leave` are
//! not recognised later (a new first dispatch records them as pre-existing) and stay.
//!
//! [`Adapter::sandbox_stubs`]: crate::adapter::Adapter::sandbox_stubs

use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::adapter::{SandboxStub, StubBase};
use crate::git::GitLayout;
use crate::lock_file;

/// The absolute stub paths for a run in `cwd`, deepest first, without duplicates.
pub fn resolve_stubs(cwd: &Path, stubs: &[SandboxStub]) -> Vec<PathBuf> {
    let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let git = GitLayout::discover(&cwd);
    let mut out: Vec<PathBuf> = Vec::new();
    for stub in stubs {
        let base = match stub.base {
            StubBase::Cwd => Some(cwd.clone()),
            StubBase::WorkTree => git.as_ref().map(|g| g.work_tree.clone()),
            StubBase::GitDir => git.as_ref().map(|g| g.git_dir.clone()),
            StubBase::GitCommonDir => git.as_ref().map(|g| g.common_dir.clone()),
            StubBase::MainWorkTree => git.as_ref().and_then(GitLayout::main_work_tree),
        };
        if let Some(base) = base {
            let p = stub.path.split('/').fold(base, |p, c| p.join(c));
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out.sort_by(|a, b| {
        b.components()
            .count()
            .cmp(&a.components().count())
            .then(a.cmp(b))
    });
    out
}

/// The tree a run belongs to for locking: the repository (its common git directory) when the
/// cwd is inside one, else the cwd itself.
pub fn tree_key(cwd: &Path) -> PathBuf {
    let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    match GitLayout::discover(&cwd) {
        Some(g) => g.common_dir,
        None => cwd,
    }
}

/// Where the per-tree locks and records live: the first of `$XDG_RUNTIME_DIR`, the user's
/// cache directory and the temp directory (each + `agent-dispatch/trees`).
pub fn default_state_dir() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(rt) = std::env::var_os("XDG_RUNTIME_DIR") {
        let rt = PathBuf::from(rt);
        if rt.is_absolute() && rt.is_dir() {
            dirs.push(rt.join("agent-dispatch").join("trees"));
        }
    }
    if let Some(cache) = dirs::cache_dir() {
        dirs.push(cache.join("agent-dispatch").join("trees"));
    }
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    dirs.push(
        std::env::temp_dir()
            .join(format!("agent-dispatch-{uid}"))
            .join("trees"),
    );
    dirs
}

/// What `leave` did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaveReport {
    /// Stubs removed (this group of dispatches created them and they were still empty).
    pub removed: Vec<PathBuf>,
    /// Created stubs left in place because they are no longer empty (or could not be removed).
    pub kept: Vec<PathBuf>,
    /// Another dispatch in the same tree is still running; cleaning is left to the last one.
    pub deferred: bool,
}

/// One run's registration in its tree. Call [`TreeGuard::leave`] after the run; dropping the
/// guard without it leaves the tree the same way, ignoring errors.
#[derive(Debug)]
pub struct TreeGuard {
    active: Option<Active>,
}

#[derive(Debug)]
struct Active {
    files: TreeFiles,
    /// Our shared lock on the activity file, held for the whole run.
    activity: File,
}

#[derive(Debug, Clone)]
struct TreeFiles {
    mutex: PathBuf,
    activity: PathBuf,
    record: PathBuf,
    stubs: Vec<PathBuf>,
}

impl TreeGuard {
    /// Register a run in `cwd` before it starts, using the first usable [`default_state_dir`]
    /// that is not inside the tree.
    pub fn enter(cwd: &Path, stubs: &[SandboxStub]) -> io::Result<TreeGuard> {
        let resolved = resolve_stubs(cwd, stubs);
        let key = tree_key(cwd);
        let trees = tree_roots(cwd);
        let mut last_err = io::Error::other("no state directory candidate");
        for dir in default_state_dir() {
            match prepare_state_dir(&dir, &trees) {
                Ok(dir) => return Self::enter_with(&dir, &key, resolved),
                Err(e) => last_err = e,
            }
        }
        Err(last_err)
    }

    /// Like [`TreeGuard::enter`] with an explicit state directory (tests; a host with its own
    /// runtime directory). It must not be inside the tree.
    pub fn enter_in(state_dir: &Path, cwd: &Path, stubs: &[SandboxStub]) -> io::Result<TreeGuard> {
        let resolved = resolve_stubs(cwd, stubs);
        let key = tree_key(cwd);
        let dir = prepare_state_dir(state_dir, &tree_roots(cwd))?;
        Self::enter_with(&dir, &key, resolved)
    }

    /// A guard with nothing to guard (an adapter without stubs still takes part in the count,
    /// so this is only for callers that opt out entirely).
    pub fn disabled() -> TreeGuard {
        TreeGuard { active: None }
    }

    fn enter_with(state_dir: &Path, key: &Path, stubs: Vec<PathBuf>) -> io::Result<TreeGuard> {
        let hash = format!("{:x}", Sha256::digest(key.as_os_str().as_encoded_bytes()));
        let name = &hash[..32];
        let files = TreeFiles {
            mutex: state_dir.join(format!("{name}.lock")),
            activity: state_dir.join(format!("{name}.active")),
            record: state_dir.join(format!("{name}.json")),
            stubs,
        };
        let _mutex = lock_mutex(&files.mutex)?;
        // Alone in the tree? Then any record is stale (its writer died): start afresh.
        let (activity, alone) = match try_lock_exclusive(&files.activity)? {
            Some(exclusive) => {
                // flock converts the lock in place: exclusive → shared.
                exclusive.lock_shared()?;
                (exclusive, true)
            }
            None => (lock(&files.activity, Lock::Shared)?, false),
        };
        let mut record = if alone {
            Record::default()
        } else {
            Record::load(&files.record)
        };
        for p in &files.stubs {
            let key = p.to_string_lossy().into_owned();
            record
                .preexisting
                .entry(key)
                .or_insert_with(|| std::fs::symlink_metadata(p).is_ok());
        }
        record.store(&files.record)?;
        Ok(TreeGuard {
            active: Some(Active { files, activity }),
        })
    }

    /// After the run (its whole process tree gone): unregister, and if this was the last
    /// dispatch in the tree, remove the stubs the active group created that are still empty.
    pub fn leave(mut self) -> io::Result<LeaveReport> {
        match self.active.take() {
            Some(active) => leave_tree(active),
            None => Ok(LeaveReport::default()),
        }
    }
}

impl Drop for TreeGuard {
    fn drop(&mut self) {
        if let Some(active) = self.active.take() {
            let _ = leave_tree(active);
        }
    }
}

fn leave_tree(active: Active) -> io::Result<LeaveReport> {
    let Active { files, activity } = active;
    let _mutex = lock_mutex(&files.mutex)?;
    drop(activity);
    let Some(last) = try_lock_exclusive(&files.activity)? else {
        return Ok(LeaveReport {
            deferred: true,
            ..LeaveReport::default()
        });
    };
    let record = Record::load(&files.record);
    let mut created: Vec<PathBuf> = record
        .preexisting
        .iter()
        .filter(|(_, existed)| !**existed)
        .map(|(p, _)| PathBuf::from(p))
        .collect();
    created.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    let mut report = LeaveReport::default();
    for p in created {
        match remove_if_empty(&p) {
            Removal::Removed => report.removed.push(p),
            Removal::Kept => report.kept.push(p),
            Removal::Absent => {}
        }
    }
    let _ = std::fs::remove_file(&files.record);
    // Remove the activity file while still holding the mutex: anyone who wants it must take
    // the mutex first, so nobody can be holding a lock on the unlinked inode.
    let _ = std::fs::remove_file(&files.activity);
    drop(last);
    // And the mutex itself: whoever waits on the unlinked inode notices and retries
    // (`lock_mutex`), so no file is left behind per tree.
    let _ = std::fs::remove_file(&files.mutex);
    Ok(report)
}

enum Removal {
    Removed,
    Kept,
    Absent,
}

fn remove_if_empty(p: &Path) -> Removal {
    let Ok(meta) = std::fs::symlink_metadata(p) else {
        return Removal::Absent;
    };
    let ok = if meta.is_dir() {
        // `remove_dir` refuses a non-empty directory atomically.
        std::fs::remove_dir(p).is_ok()
    } else if meta.is_file() && meta.len() == 0 {
        std::fs::remove_file(p).is_ok()
    } else {
        false
    };
    if ok { Removal::Removed } else { Removal::Kept }
}

/// Which stub paths existed before the first of the active dispatches touched them.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Record {
    preexisting: BTreeMap<String, bool>,
}

impl Record {
    fn load(path: &Path) -> Record {
        std::fs::read(path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    fn store(&self, path: &Path) -> io::Result<()> {
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, serde_json::to_vec_pretty(self)?)?;
        std::fs::rename(&tmp, path)
    }
}

/// Take the per-tree mutex: an exclusive lock on a file that the last dispatch out of a tree
/// unlinks. A lock obtained on an inode that is no longer the one at `path` is worthless, so it
/// is dropped and taken again.
fn lock_mutex(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::MetadataExt;
    loop {
        let locked = lock(path, Lock::Exclusive)?;
        let held = locked.metadata()?;
        match std::fs::metadata(path) {
            Ok(now) if now.ino() == held.ino() && now.dev() == held.dev() => return Ok(locked),
            Ok(_) => continue,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        }
    }
}

/// A whole-file lock (`flock`), held until the returned file is dropped; the kernel drops it
/// when a holder dies.
#[derive(Debug, Clone, Copy)]
enum Lock {
    Shared,
    Exclusive,
}

fn lock(path: &Path, how: Lock) -> io::Result<File> {
    let file = lock_file::open(path)?;
    match how {
        Lock::Shared => file.lock_shared()?,
        Lock::Exclusive => file.lock()?,
    }
    Ok(file)
}

/// The exclusive lock if nobody else holds the file, else `None`.
fn try_lock_exclusive(path: &Path) -> io::Result<Option<File>> {
    let file = lock_file::open(path)?;
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

/// Every directory tree a run in `cwd` may leave stubs in.
fn tree_roots(cwd: &Path) -> Vec<PathBuf> {
    let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let mut roots = vec![cwd.clone()];
    if let Some(g) = GitLayout::discover(&cwd) {
        roots.extend(g.main_work_tree());
        roots.extend([g.work_tree, g.git_dir, g.common_dir]);
    }
    roots
}

/// Create the state directory (0700) after making sure it is outside every tree of the run
/// (checked before anything is created, so a refused candidate leaves no trace).
fn prepare_state_dir(dir: &Path, trees: &[PathBuf]) -> io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let resolved = resolve_existing_prefix(dir)?;
    if let Some(tree) = trees.iter().find(|t| resolved.starts_with(t)) {
        return Err(io::Error::other(format!(
            "state directory {} is inside the tree {}",
            resolved.display(),
            tree.display()
        )));
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    dir.canonicalize()
}

/// `path` with its longest existing prefix canonicalised (symlinks resolved).
fn resolve_existing_prefix(path: &Path) -> io::Result<PathBuf> {
    let mut rest = Vec::new();
    let mut cur = path;
    loop {
        if let Ok(c) = cur.canonicalize() {
            return Ok(rest.iter().rev().fold(c, |p, c| p.join(c)));
        }
        match (cur.parent(), cur.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                cur = parent;
            }
            _ => {
                return Err(io::Error::other(format!(
                    "{} has no existing ancestor",
                    path.display()
                )));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapter::{SandboxStub, StubBase};

    const STUBS: &[SandboxStub] = &[
        SandboxStub {
            base: StubBase::Cwd,
            path: ".claude",
        },
        SandboxStub {
            base: StubBase::Cwd,
            path: ".claude/.cc-writes",
        },
        SandboxStub {
            base: StubBase::GitCommonDir,
            path: "config.worktree",
        },
        SandboxStub {
            base: StubBase::GitCommonDir,
            path: "remotes",
        },
    ];

    fn repo() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join(".git/objects")).unwrap();
        std::fs::write(d.path().join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        d
    }

    /// What a sandbox does: create every stub, empty.
    fn sandbox_creates(cwd: &Path) {
        std::fs::create_dir_all(cwd.join(".claude/.cc-writes")).unwrap();
        std::fs::write(cwd.join(".git/config.worktree"), "").unwrap();
        std::fs::create_dir_all(cwd.join(".git/remotes")).unwrap();
    }

    #[test]
    fn removes_exactly_the_new_empty_stubs() {
        let tree = repo();
        let state = tempfile::tempdir().unwrap();
        let cwd = tree.path();
        std::fs::create_dir(cwd.join(".git/remotes")).unwrap(); // pre-existing: kept
        let g = TreeGuard::enter_in(state.path(), cwd, STUBS).unwrap();
        sandbox_creates(cwd);
        std::fs::write(cwd.join("notes.txt"), "").unwrap(); // not a stub: untouched
        let report = g.leave().unwrap();
        assert!(!report.deferred);
        assert!(!cwd.join(".claude").exists());
        assert!(!cwd.join(".git/config.worktree").exists());
        assert!(cwd.join(".git/remotes").is_dir());
        assert!(cwd.join("notes.txt").exists());
        assert_eq!(report.removed.len(), 3, "{report:?}");
        // Nothing left behind in the state directory.
        let left: Vec<_> = std::fs::read_dir(state.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn keeps_stubs_that_someone_filled() {
        let tree = repo();
        let state = tempfile::tempdir().unwrap();
        let cwd = tree.path();
        let g = TreeGuard::enter_in(state.path(), cwd, STUBS).unwrap();
        sandbox_creates(cwd);
        std::fs::write(cwd.join(".claude/settings.json"), "{}").unwrap();
        std::fs::write(cwd.join(".git/config.worktree"), "[core]\n").unwrap();
        let report = g.leave().unwrap();
        assert!(!cwd.join(".claude/.cc-writes").exists());
        assert!(cwd.join(".claude/settings.json").exists());
        assert!(cwd.join(".git/config.worktree").exists());
        assert!(!cwd.join(".git/remotes").exists());
        assert_eq!(report.kept.len(), 2, "{report:?}");
    }

    #[test]
    fn the_last_one_out_cleans() {
        let tree = repo();
        let state = tempfile::tempdir().unwrap();
        let cwd = tree.path();
        let a = TreeGuard::enter_in(state.path(), cwd, STUBS).unwrap();
        sandbox_creates(cwd);
        // A second dispatch enters while the stubs exist: they still count as created.
        let b = TreeGuard::enter_in(state.path(), cwd, STUBS).unwrap();
        let ra = a.leave().unwrap();
        assert!(ra.deferred);
        assert!(
            cwd.join(".claude/.cc-writes").is_dir(),
            "pulled from under b"
        );
        let rb = b.leave().unwrap();
        assert!(!rb.deferred);
        assert!(!cwd.join(".claude").exists());
        assert!(!cwd.join(".git/remotes").exists());
    }

    #[test]
    fn concurrent_dispatches_never_lose_their_stubs() {
        let tree = repo();
        let state = tempfile::tempdir().unwrap();
        let cwd = tree.path().to_path_buf();
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..25 {
                        let g = TreeGuard::enter_in(state.path(), &cwd, STUBS).unwrap();
                        sandbox_creates(&cwd);
                        std::thread::yield_now();
                        // While this run is active nobody removes what its sandbox needs.
                        assert!(cwd.join(".claude/.cc-writes").is_dir());
                        assert!(cwd.join(".git/remotes").is_dir());
                        g.leave().unwrap();
                    }
                });
            }
        });
        assert!(!cwd.join(".claude").exists());
        assert!(!cwd.join(".git/remotes").exists());
        assert!(!cwd.join(".git/config.worktree").exists());
        assert_eq!(std::fs::read_dir(state.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_stale_record_is_ignored() {
        let tree = repo();
        let state = tempfile::tempdir().unwrap();
        let cwd = tree.path();
        let mut a = TreeGuard::enter_in(state.path(), cwd, STUBS).unwrap();
        // Simulate a crashed dispatcher: its lock is gone, its record stays.
        let active = a.active.take().unwrap();
        drop(a);
        let record = std::fs::read(&active.files.record).unwrap();
        let record_path = active.files.record.clone();
        drop(active);
        // The user now creates a `.claude` directory themselves.
        std::fs::create_dir(cwd.join(".claude")).unwrap();
        std::fs::write(&record_path, record).unwrap();
        let b = TreeGuard::enter_in(state.path(), cwd, STUBS).unwrap();
        sandbox_creates(cwd);
        b.leave().unwrap();
        assert!(
            cwd.join(".claude").is_dir(),
            "the user's directory was removed"
        );
        assert!(!cwd.join(".claude/.cc-writes").exists());
    }

    #[test]
    fn dropping_the_guard_leaves_too() {
        let tree = repo();
        let state = tempfile::tempdir().unwrap();
        let cwd = tree.path();
        {
            let _g = TreeGuard::enter_in(state.path(), cwd, STUBS).unwrap();
            sandbox_creates(cwd);
        }
        assert!(!cwd.join(".claude").exists());
    }

    #[test]
    fn refuses_a_state_dir_inside_the_tree() {
        let tree = repo();
        let err = TreeGuard::enter_in(&tree.path().join("state"), tree.path(), STUBS).unwrap_err();
        assert!(err.to_string().contains("inside the tree"), "{err}");
        assert!(!tree.path().join("state").exists());
    }

    #[test]
    fn linked_worktree_layout() {
        let main = tempfile::tempdir().unwrap();
        let m = main.path().canonicalize().unwrap();
        std::fs::create_dir_all(m.join("repo/.git/worktrees/wt")).unwrap();
        std::fs::write(m.join("repo/.git/worktrees/wt/commondir"), "../..\n").unwrap();
        std::fs::create_dir_all(m.join("wt/sub")).unwrap();
        std::fs::write(
            m.join("wt/.git"),
            format!("gitdir: {}\n", m.join("repo/.git/worktrees/wt").display()),
        )
        .unwrap();
        let g = GitLayout::discover(&m.join("wt/sub")).unwrap();
        assert_eq!(g.work_tree, m.join("wt"));
        assert_eq!(g.git_dir, m.join("repo/.git/worktrees/wt"));
        assert_eq!(g.common_dir, m.join("repo/.git"));
        assert_eq!(g.main_work_tree(), Some(m.join("repo")));
        let stubs = resolve_stubs(
            &m.join("wt/sub"),
            &[
                SandboxStub {
                    base: StubBase::MainWorkTree,
                    path: ".claude/.cc-writes",
                },
                SandboxStub {
                    base: StubBase::GitDir,
                    path: "glab-cli",
                },
                SandboxStub {
                    base: StubBase::WorkTree,
                    path: ".claude",
                },
            ],
        );
        assert_eq!(
            stubs,
            [
                m.join("repo/.git/worktrees/wt/glab-cli"),
                m.join("repo/.claude/.cc-writes"),
                m.join("wt/.claude"),
            ]
        );
    }
}

//! Where a directory's git repository lives: its working tree and git directories, linked
//! worktrees included. Read by the tree guard and by adapters that protect `.git`.

use std::path::{Path, PathBuf};

/// Where a directory's git repository lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitLayout {
    /// Top of the working tree (the directory holding `.git`).
    pub work_tree: PathBuf,
    /// The working tree's git directory.
    pub git_dir: PathBuf,
    /// The repository's common git directory (differs from `git_dir` in linked worktrees).
    pub common_dir: PathBuf,
}

impl GitLayout {
    /// Walk up from `start` to the nearest `.git` (a directory, or a `gitdir:` file as in linked
    /// worktrees and submodules). All paths are canonical. `None` outside a repository.
    pub fn discover(start: &Path) -> Option<GitLayout> {
        let start = start.canonicalize().ok()?;
        for dir in start.ancestors() {
            let dot_git = dir.join(".git");
            let Ok(meta) = std::fs::metadata(&dot_git) else {
                continue;
            };
            let git_dir = if meta.is_dir() {
                dot_git
            } else {
                let text = std::fs::read_to_string(&dot_git).ok()?;
                let target = text.lines().find_map(|l| l.strip_prefix("gitdir:"))?.trim();
                dir.join(target)
            }
            .canonicalize()
            .ok()?;
            let common_dir = match std::fs::read_to_string(git_dir.join("commondir")) {
                Ok(rel) => git_dir.join(rel.trim()).canonicalize().ok()?,
                Err(_) => git_dir.clone(),
            };
            return Some(GitLayout {
                work_tree: dir.to_path_buf(),
                git_dir,
                common_dir,
            });
        }
        None
    }

    /// The main working tree: the parent of a common git directory named `.git`.
    pub fn main_work_tree(&self) -> Option<PathBuf> {
        (self.common_dir.file_name()? == ".git")
            .then(|| self.common_dir.parent().map(Path::to_path_buf))
            .flatten()
    }
}

//! Byte-for-byte snapshots of a directory tree, `.git` included: the disk-level evidence that a
//! run left the tree as it found it. An agent that merely declined to write proves nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// One entry of a tree: what it is and, for files and links, exactly what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    Dir { mode: u32 },
    File { mode: u32, sha256: String, len: u64 },
    Symlink { target: PathBuf },
    Other,
}

/// Path (relative to the root) → entry.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Snapshot(pub BTreeMap<PathBuf, Entry>);

impl Snapshot {
    /// Walk `root` without following links.
    pub fn take(root: &Path) -> std::io::Result<Self> {
        let mut map = BTreeMap::new();
        walk(root, root, &mut map)?;
        Ok(Snapshot(map))
    }

    /// Human-readable differences (`added`, `removed`, `changed`), empty when identical.
    pub fn diff(&self, after: &Snapshot) -> Vec<String> {
        let mut out = Vec::new();
        for (p, e) in &self.0 {
            match after.0.get(p) {
                None => out.push(format!("removed {}", p.display())),
                Some(a) if a != e => out.push(format!("changed {}", p.display())),
                _ => {}
            }
        }
        for p in after.0.keys() {
            if !self.0.contains_key(p) {
                out.push(format!("added {}", p.display()));
            }
        }
        out
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

fn walk(root: &Path, dir: &Path, map: &mut BTreeMap<PathBuf, Entry>) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let rel = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
        let meta = std::fs::symlink_metadata(&path)?;
        let mode = meta.permissions().mode();
        let ft = meta.file_type();
        if ft.is_symlink() {
            map.insert(
                rel,
                Entry::Symlink {
                    target: std::fs::read_link(&path)?,
                },
            );
        } else if ft.is_dir() {
            map.insert(rel, Entry::Dir { mode });
            walk(root, &path, map)?;
        } else if ft.is_file() {
            let bytes = std::fs::read(&path)?;
            let sha256 = format!("{:x}", Sha256::digest(&bytes));
            map.insert(
                rel,
                Entry::File {
                    mode,
                    sha256,
                    len: meta.len(),
                },
            );
        } else {
            map.insert(rel, Entry::Other);
        }
    }
    Ok(())
}

//! Lock files: a whole-file `flock` (std's `File::lock`), held until the file is dropped and
//! dropped by the kernel when its holder dies, so a crashed process frees what it held with no
//! clean-up. The tree guard's mutexes and the job queue's slots and tickets are such files.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;

/// Open (creating it if need be, never truncating) a lock file, ready to be locked.
pub fn open(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(path)
}

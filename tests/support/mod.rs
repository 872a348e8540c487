//! Shared test support: paths, a test adapter over the fake CLI, and /proc-based survival checks.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;

pub mod homes;

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn fake_cli_dir() -> PathBuf {
    repo_root().join("tests/fake-cli")
}

/// A unique tag; put in a run's environment it marks every process of that run's tree.
pub fn unique_tag(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "{prefix}-{}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

/// Live (non-zombie) processes for which `matches(pid)` holds.
fn live_where(matches: impl Fn(i32) -> bool) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if !matches(pid) {
            continue;
        }
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rfind(')')
            .and_then(|i| stat.get(i + 2..i + 3))
            .unwrap_or("?");
        if state != "Z" && state != "X" && !stat.is_empty() {
            out.push(pid);
        }
    }
    out
}

/// Live (non-zombie) processes whose environment carries `FAKE_RUN_TAG=<tag>`.
pub fn live_tagged(tag: &str) -> Vec<i32> {
    let needle = format!("FAKE_RUN_TAG={tag}");
    live_where(|pid| {
        std::fs::read(format!("/proc/{pid}/environ"))
            .is_ok_and(|env| env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()))
    })
}

/// The test process's environment plus the fake CLI first on PATH and a run tag.
pub fn env_with_fake_path(tag: &str) -> BTreeMap<OsString, OsString> {
    let mut env: BTreeMap<OsString, OsString> = std::env::vars_os().collect();
    let path = std::env::var("PATH").unwrap_or_default();
    env.insert(
        "PATH".into(),
        format!("{}:{path}", fake_cli_dir().display()).into(),
    );
    env.insert("FAKE_RUN_TAG".into(), tag.into());
    env
}

/// Live (non-zombie) processes whose working directory is `dir`. A dispatch's CLI and every
/// descendant inherit the cwd the dispatcher gives it, so a unique cwd marks a run's whole tree
/// even when the adapter's environment allowlist (rightly) drops the test's own variables.
pub fn live_in_dir(dir: &std::path::Path) -> Vec<i32> {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    live_where(|pid| {
        std::fs::read_link(format!("/proc/{pid}/cwd"))
            .ok()
            .as_deref()
            == Some(dir.as_path())
    })
}

/// A fresh, unique working directory for one dispatch (see [`live_in_dir`]).
pub fn run_dir(prefix: &str) -> tempfile::TempDir {
    let base = homes::shared_home("run-dirs");
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(base)
        .unwrap()
}

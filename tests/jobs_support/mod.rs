//! What the jobs and limits tests share: a private job store, CODEX_HOME and working directory
//! under `$HOME/.cache/agent-dispatch-tests/` (outside the temp dir and the clone), the binary
//! with the fake codex CLI first on PATH, and /proc scans for a job's processes.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

#[path = "../support/mod.rs"]
mod support;
pub use support::{fake_cli_dir, live_in_dir};

pub const SKIP: (&str, &str) = ("AGENT_DISPATCH_SKIP_CHECK", "yes-skip-the-read-only-check");

/// One test's world: store, CLI home and working directory, removed afterwards.
pub struct World {
    base: tempfile::TempDir,
    pub max_jobs: Option<usize>,
}

impl World {
    pub fn new(name: &str) -> Self {
        let home = std::env::var("HOME").expect("HOME");
        let root = PathBuf::from(home).join(".cache/agent-dispatch-tests");
        std::fs::create_dir_all(&root).unwrap();
        let base = tempfile::Builder::new()
            .prefix(&format!("{name}-"))
            .tempdir_in(root)
            .unwrap();
        for d in ["state", "codex-home", "cwd"] {
            std::fs::create_dir_all(base.path().join(d)).unwrap();
        }
        Self {
            base,
            max_jobs: None,
        }
    }

    pub fn state(&self) -> PathBuf {
        self.base.path().join("state")
    }

    pub fn jobs_root(&self) -> PathBuf {
        self.state().join("jobs")
    }

    pub fn job_dir(&self, id: &str) -> PathBuf {
        self.jobs_root().join(id)
    }

    /// The working directory every dispatch of this world runs in: a /proc scan of it finds the
    /// CLI and every descendant.
    pub fn cwd(&self) -> PathBuf {
        self.base.path().join("cwd").canonicalize().unwrap()
    }

    /// A fresh working directory, for a second dispatch whose tree must be told apart.
    pub fn another_cwd(&self, name: &str) -> PathBuf {
        let d = self.base.path().join(name);
        std::fs::create_dir_all(&d).unwrap();
        d.canonicalize().unwrap()
    }

    /// The binary with this world's environment.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_agent-dispatch"));
        let path = format!(
            "{}:{}",
            fake_cli_dir().display(),
            std::env::var("PATH").unwrap()
        );
        c.args(args)
            .env("PATH", path)
            .env("CODEX_HOME", self.base.path().join("codex-home"))
            .env("AGENT_DISPATCH_STATE_DIR", self.state())
            .env_remove("AGENT_DISPATCH_TIMEOUT")
            .env(SKIP.0, SKIP.1)
            .stdin(Stdio::null());
        if let Some(n) = self.max_jobs {
            c.env("AGENT_DISPATCH_MAX_JOBS", n.to_string());
        }
        c
    }

    /// `run --background` of a fake scenario in `cwd`; the job id.
    pub fn submit_in(&self, cwd: &Path, scenario: &str, extra: &[&str]) -> String {
        let cwd = cwd.to_str().unwrap();
        let mut args = vec!["run", "--background", "--agent", "codex", "--cwd", cwd];
        args.extend_from_slice(extra);
        let task = format!("SCENARIO:{scenario}");
        args.extend(["--", task.as_str()]);
        let out = self.cmd(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let line: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(line["type"], "job");
        line["id"].as_str().unwrap().to_owned()
    }

    pub fn submit(&self, scenario: &str) -> String {
        self.submit_in(&self.cwd(), scenario, &[])
    }

    /// `jobs show ID --json`.
    pub fn show(&self, id: &str) -> Value {
        let out = self.cmd(&["jobs", "show", id, "--json"]).output().unwrap();
        assert!(out.status.success(), "{}", text(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    pub fn state_of(&self, id: &str) -> String {
        self.show(id)["state"].as_str().unwrap().to_owned()
    }

    /// Follow the job's protocol lines (`jobs logs --follow`) until one matches `pred`.
    pub fn follow_until(&self, id: &str, pred: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut child = self
            .cmd(&["jobs", "logs", id, "--follow"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut seen = Vec::new();
        let mut line = String::new();
        loop {
            line.clear();
            if out.read_line(&mut line).unwrap() == 0 {
                break;
            }
            let v: Value = serde_json::from_str(&line).unwrap();
            let hit = pred(&v);
            seen.push(v);
            if hit {
                break;
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        seen
    }

    /// Wait until the job's agent is visibly at work (its first command event).
    pub fn until_running(&self, id: &str) {
        let seen = self.follow_until(id, is_command);
        assert!(
            seen.last().is_some_and(is_command),
            "the job never started working: {seen:?}"
        );
    }
}

pub fn is_command(v: &Value) -> bool {
    v["type"] == "event" && v["event"]["type"] == "command"
}

pub fn text(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Live processes whose argv mentions `needle` (a job's worker and its inner `run` name the
/// job's directory).
pub fn live_with_arg(needle: &str) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        if !String::from_utf8_lossy(&cmd).contains(needle) {
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

/// Nothing of the job survives: no worker, no inner `run`, no CLI or descendant in `cwd`.
/// `within` bounds how long the kernel may take to finish kills already sent.
pub fn assert_no_survivors(world: &World, id: &str, cwd: &Path, within: Duration) {
    let dir = world.job_dir(id);
    let needle = dir.to_str().unwrap().to_owned();
    let deadline = Instant::now() + within;
    loop {
        let mut live = live_with_arg(&needle);
        live.extend(live_in_dir(cwd));
        if live.is_empty() {
            return;
        }
        if Instant::now() > deadline {
            panic!("processes of job {id} survive: {live:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A result line, without what differs between two runs of the same scenario.
pub fn comparable(result: &Value) -> Value {
    let mut r = result.clone();
    let o = r.as_object_mut().unwrap();
    for k in ["durationMs", "sessionId"] {
        o.remove(k);
    }
    r
}

//! Shared setup for the tests that drive the real, pinned `codex` binary.
//!
//! * The binary is `$CARGO_MANIFEST_DIR/.tools/node_modules/.bin/codex` (installed by
//!   `scripts/install-tools.sh`); a missing binary FAILS the test, it never skips.
//! * Every run gets a fresh `CODEX_HOME` and `HOME` under `$HOME/.cache/agent-dispatch-tests/`
//!   ([`homes`]) — never under the temp dir, where codex's sandbox helper cannot start, and
//!   never inside the clone, which may itself be under the temp dir.
//! * The caller environment handed to the engine is built here, never inherited wholesale.
#![allow(dead_code)]

#[path = "../support/hostile.rs"]
pub mod hostile;
pub mod scenarios;
pub mod secrets;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agent_dispatch::adapter::Env;
use agent_dispatch::contract::{DispatchRequest, DispatchResult, StreamEvent};
use agent_dispatch::dispatch::{self, DispatchOptions};
use agent_dispatch::loopback::ModelEndpoint;
use agent_dispatch::readonly::gate::GatePolicy;
use agent_dispatch::readonly::scratch::ScratchRepo;
use agent_dispatch::supervise::Supervisor;
use tokio_util::sync::CancellationToken;

// Each support module belongs to the test crates that load it; some load two of them.
#[allow(clippy::duplicate_mod)]
#[path = "../support/homes.rs"]
pub mod homes;

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The directory holding the pinned `codex` (and `node`) shims. Panics if codex is missing.
pub fn bin_dir() -> PathBuf {
    let dir = root().join(".tools/node_modules/.bin");
    let codex = dir.join("codex");
    assert!(
        codex.exists(),
        "the pinned codex binary is missing at {}; run scripts/install-tools.sh",
        codex.display()
    );
    dir
}

pub fn codex() -> PathBuf {
    bin_dir().join("codex")
}

/// `$HOME/.cache/agent-dispatch-tests/codex-tests`, created on demand (see [`homes`]).
pub fn cache() -> PathBuf {
    homes::shared_home("codex-tests")
}

/// A fresh world for one run: a scratch git repo (one commit + an uncommitted change), a home
/// directory and a `CODEX_HOME`, all under [`cache`] and removed on drop.
pub struct World {
    pub dir: tempfile::TempDir,
    pub repo: ScratchRepo,
}

impl World {
    pub fn new(name: &str) -> Self {
        let dir = tempfile::Builder::new()
            .prefix(&format!("{name}-"))
            .tempdir_in(cache())
            .unwrap();
        std::fs::create_dir_all(dir.path().join("home/codex")).unwrap();
        std::fs::create_dir_all(dir.path().join("marks")).unwrap();
        let repo = ScratchRepo::create(Some(dir.path())).unwrap();
        Self { dir, repo }
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    pub fn codex_home(&self) -> PathBuf {
        self.home().join("codex")
    }

    /// A directory outside the repo where hostile hooks / MCP servers would leave markers.
    pub fn marks(&self) -> PathBuf {
        self.dir.path().join("marks")
    }

    pub fn marks_present(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.marks())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    pub fn repo_path(&self) -> PathBuf {
        self.repo.path().to_path_buf()
    }

    /// The caller environment for a dispatch: the pinned tools first on PATH, this world's
    /// HOME and CODEX_HOME, a UTF-8 locale, plus a canary that must never reach the child.
    pub fn env(&self) -> Env {
        let mut env = Env::new();
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut p = OsString::from(bin_dir());
        p.push(":");
        p.push(path);
        env.insert("PATH".into(), p);
        env.insert("HOME".into(), self.home().into());
        env.insert("CODEX_HOME".into(), self.codex_home().into());
        env.insert("LANG".into(), "C.UTF-8".into());
        env.insert("DISPATCH_TEST_CANARY".into(), "canary-must-not-leak".into());
        env
    }

    /// Write a user config that trusts `repo`: codex would then load the repository's `.codex/`
    /// if it read the user's config.
    pub fn trust(&self, repo: &Path) {
        self.write_codex_config(
            "config.toml",
            &format!(
                "[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
                repo.display()
            ),
        );
    }

    pub fn write_codex_config(&self, name: &str, body: &str) {
        std::fs::write(self.codex_home().join(name), body).unwrap();
    }

    pub fn request(&self, model: Option<&str>, effort: Option<&str>) -> DispatchRequest {
        DispatchRequest {
            agent: "codex".into(),
            task: "Inspect the repository.".into(),
            scope: None,
            model: model.map(str::to_owned),
            effort: effort.map(str::to_owned),
            cwd: self.repo_path(),
        }
    }
}

/// What one dispatch produced.
pub struct Run {
    pub result: DispatchResult,
    pub events: Vec<StreamEvent>,
    pub elapsed: Duration,
}

impl Run {
    pub fn notices(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::Notice { message, .. } => Some(message.clone()),
                _ => None,
            })
            .collect()
    }

    pub fn failure_kind(&self) -> Option<String> {
        self.result
            .failure
            .as_ref()
            .map(|f| f.kind.as_str().to_owned())
    }

    pub fn failure_message(&self) -> String {
        self.result
            .failure
            .as_ref()
            .map(|f| f.message.clone())
            .unwrap_or_default()
    }
}

/// Run one dispatch through the engine (`runner::dispatch`). These tests exercise the adapter,
/// so the engine's read-only check policy is bypassed here (the bypass is visible in every
/// result); `codex_real::read_only_check_*` runs the check itself with the real binary.
pub async fn dispatch(req: DispatchRequest, env: Env, endpoint: Option<ModelEndpoint>) -> Run {
    dispatch_with(
        req,
        env,
        endpoint,
        &Supervisor::new(),
        CancellationToken::new(),
        |_| {},
    )
    .await
}

/// [`dispatch`] under the engine's default policy: a passing read-only check must be on record
/// (it runs first when there is none).
pub async fn dispatch_enforced(
    req: DispatchRequest,
    env: Env,
    endpoint: Option<ModelEndpoint>,
) -> Run {
    run_with_policy(
        req,
        env,
        endpoint,
        GatePolicy::Enforce,
        &Supervisor::new(),
        CancellationToken::new(),
        |_| {},
    )
    .await
}

/// [`dispatch`] with a supervisor, a cancel token and an event hook of the caller's.
pub async fn dispatch_with(
    req: DispatchRequest,
    env: Env,
    endpoint: Option<ModelEndpoint>,
    supervisor: &Supervisor,
    cancel: CancellationToken,
    on_event: impl FnMut(&StreamEvent) + Send,
) -> Run {
    run_with_policy(
        req,
        env,
        endpoint,
        GatePolicy::Bypass,
        supervisor,
        cancel,
        on_event,
    )
    .await
}

async fn run_with_policy(
    req: DispatchRequest,
    env: Env,
    endpoint: Option<ModelEndpoint>,
    gate: GatePolicy,
    supervisor: &Supervisor,
    cancel: CancellationToken,
    mut on_event: impl FnMut(&StreamEvent) + Send,
) -> Run {
    let opts = DispatchOptions {
        parent_env: env,
        endpoint,
        gate,
        limits: Default::default(),
    };
    let mut events = Vec::new();
    let started = Instant::now();
    let result = dispatch::dispatch(&req, &opts, supervisor, cancel, &mut |e| {
        on_event(&e);
        events.push(e);
    })
    .await;
    Run {
        result,
        events,
        elapsed: started.elapsed(),
    }
}

/// `codex --version`, trimmed.
pub fn codex_version() -> String {
    let out = std::process::Command::new(codex())
        .arg("--version")
        .env("PATH", format!("{}:/usr/bin:/bin", bin_dir().display()))
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A port on 127.0.0.1 with nothing listening (bound, then released).
pub fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// Replace machine-specific parts of a string for the evidence document.
pub fn redact(s: &str, pairs: &[(&Path, &str)]) -> String {
    let mut out = s.to_owned();
    for (p, with) in pairs {
        out = out.replace(&p.display().to_string(), with);
    }
    out
}

//! Shared harness of the real-`claude` tests: one dispatch against a fresh fake Messages
//! endpoint, isolated home, tree snapshots around it, and the verification document writer.
#![allow(dead_code)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agent_dispatch::adapter::{Adapter, Env, LaunchContext, Terminal};
use agent_dispatch::adapters::claude::ClaudeAdapter;
use agent_dispatch::adapters::claude::fake_api::{FakeMessages, Script, ToolResultSeen};
use agent_dispatch::contract::{
    CommandStatus, DispatchRequest, DispatchResult, Failure, FailureKind, StreamEvent, Usage,
};
use agent_dispatch::dispatch::{self, DispatchOptions};
use agent_dispatch::launch::{Launch, StdinPlan};
use agent_dispatch::loopback::ModelEndpoint;
use agent_dispatch::readonly::gate::GatePolicy;
use agent_dispatch::readonly::snapshot::Snapshot;
use agent_dispatch::runner::outcome::Observed;
use agent_dispatch::supervise::Supervisor;
use agent_dispatch::tree_guard::TreeGuard;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio_util::sync::CancellationToken;

// Each support module belongs to the test crates that load it; some load two of them.
#[allow(clippy::duplicate_mod)]
#[path = "../support/homes.rs"]
pub mod homes;

/// How long one real run may take before the test fails.
pub const RUN_LIMIT: Duration = Duration::from_secs(120);

pub fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The pinned binary. Tests fail (never skip) when it is missing.
pub fn claude_bin() -> PathBuf {
    let p = manifest_dir().join(".tools/node_modules/.bin/claude");
    assert!(
        p.exists(),
        "{} is missing: run scripts/install-tools.sh",
        p.display()
    );
    p
}

/// `$HOME/.cache/agent-dispatch-tests/claude-real`: homes live outside the temp dir and the
/// clone (see [`homes`]).
pub fn cache_dir() -> PathBuf {
    homes::shared_home("claude-real")
}

/// Fill `dir` with links to every program on the standard PATH except `omit`.
pub fn path_without(dir: &Path, omit: &[&str]) {
    for d in [
        "/usr/local/sbin",
        "/usr/local/bin",
        "/usr/sbin",
        "/usr/bin",
        "/sbin",
        "/bin",
    ] {
        let Ok(entries) = std::fs::read_dir(d) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            if omit.iter().any(|o| name == *o) || dir.join(&name).exists() {
                continue;
            }
            let _ = std::os::unix::fs::symlink(e.path(), dir.join(&name));
        }
    }
}

type Mutator = Box<dyn Fn(&mut Launch) + Send + Sync>;

/// One dispatch to run.
pub struct Dispatch {
    pub cwd: PathBuf,
    pub script: Script,
    pub home: tempfile::TempDir,
    pub parent_env: Env,
    pub prompt: String,
    pub model: Option<String>,
    pub effort: Option<String>,
    /// The read-only check policy; `Bypass` by default: the scenarios assert the read-only
    /// behaviour themselves (the check itself is exercised by `check_*` tests).
    pub gate: GatePolicy,
    /// The dispatch's cancel token (a fresh one by default).
    pub cancel: CancellationToken,
    /// Time and token limits (none by default).
    pub limits: agent_dispatch::limits::Limits,
    snapshot: bool,
    preflight: bool,
    mutate: Option<Mutator>,
    /// Engine runs only: run this adapter (a wrapper over Claude's) through `runner::run`
    /// directly, past the gate.
    adapter: Option<&'static dyn Adapter>,
}

impl Dispatch {
    pub fn new(cwd: &Path, script: Script) -> Self {
        let home = tempfile::Builder::new()
            .prefix("home-")
            .tempdir_in(cache_dir())
            .unwrap();
        let mut parent_env = Env::new();
        let path = format!(
            "{}:{}",
            claude_bin().parent().unwrap().display(),
            std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into())
        );
        parent_env.insert("PATH".into(), path.into());
        parent_env.insert("HOME".into(), home.path().into());
        parent_env.insert(
            "CLAUDE_CONFIG_DIR".into(),
            home.path().join(".claude").into(),
        );
        parent_env.insert("TERM".into(), "dumb".into());
        parent_env.insert("LANG".into(), "C.UTF-8".into());
        Self {
            cwd: cwd.canonicalize().unwrap(),
            script,
            home,
            parent_env,
            prompt: "Run the scripted steps.".into(),
            model: None,
            effort: None,
            gate: GatePolicy::Bypass,
            cancel: CancellationToken::new(),
            limits: Default::default(),
            snapshot: true,
            preflight: true,
            mutate: None,
            adapter: None,
        }
    }

    pub fn config_dir(&self) -> PathBuf {
        self.home.path().join(".claude")
    }

    pub fn parent_env_set(&mut self, k: &str, v: &str) {
        self.parent_env.insert(k.into(), v.into());
    }

    pub fn with_snapshot(mut self, on: bool) -> Self {
        self.snapshot = on;
        self
    }

    /// Engine runs only: run `adapter` instead of Claude's, through the runner.
    pub fn with_adapter(mut self, adapter: &'static dyn Adapter) -> Self {
        self.adapter = Some(adapter);
        self
    }

    /// Direct runs only: launch without the adapter's preflight.
    pub fn skip_preflight(mut self) -> Self {
        self.preflight = false;
        self
    }

    /// Direct runs only: change the launch before it starts (control runs).
    pub fn mutate_launch(mut self, f: impl Fn(&mut Launch) + Send + Sync + 'static) -> Self {
        self.mutate = Some(Box::new(f));
        self
    }

    fn ctx<'a>(&'a self, program: &'a Path, endpoint: &'a ModelEndpoint) -> LaunchContext<'a> {
        LaunchContext {
            program,
            prompt: &self.prompt,
            model: self.model.as_deref(),
            effort: self.effort.as_deref(),
            cwd: &self.cwd,
            parent_env: &self.parent_env,
            endpoint: Some(endpoint),
        }
    }

    pub async fn preflight(&self) -> Result<Vec<StreamEvent>, Failure> {
        let program = claude_bin();
        let endpoint = ModelEndpoint {
            base_url: "http://127.0.0.1:9".into(),
            api_key: "unused".into(),
        };
        ClaudeAdapter
            .preflight(&self.ctx(&program, &endpoint), &Supervisor::new())
            .await
    }

    /// Run it through the engine (`runner::dispatch`): fake endpoint up, snapshot, dispatch
    /// (its tree guard included), snapshot. A snapshot is also taken when the stream's terminal
    /// event arrives, while the CLI is still up, to record the stubs its sandbox created.
    pub async fn run(self) -> Run {
        let fake = FakeMessages::start(self.script.clone()).await.unwrap();
        let endpoint = ModelEndpoint {
            base_url: fake.base_url(),
            api_key: "fake-auth-token-for-tests".into(),
        };
        let req = DispatchRequest {
            agent: "claude".into(),
            task: self.prompt.clone(),
            scope: None,
            model: self.model.clone(),
            effort: self.effort.clone(),
            cwd: self.cwd.clone(),
        };
        let opts = DispatchOptions {
            parent_env: self.parent_env.clone(),
            endpoint: Some(endpoint.clone()),
            gate: self.gate,
            limits: self.limits,
        };
        let launch = self.launch_for(&endpoint);
        let before = self.snapshot.then(|| Snapshot::take(&self.cwd).unwrap());
        let mut events = Vec::new();
        let mut during = None;
        let snapshot = self.snapshot;
        let cwd = self.cwd.clone();
        let cancel = self.cancel.clone();
        let mut sink = |e: StreamEvent| {
            if snapshot && matches!(e, StreamEvent::Done { .. }) && during.is_none() {
                during = Snapshot::take(&cwd).ok();
            }
            events.push(e);
        };
        let started = Instant::now();
        let supervisor = Supervisor::new();
        let program = claude_bin();
        let work = async {
            match self.adapter {
                None => dispatch::dispatch(&req, &opts, &supervisor, cancel, &mut sink).await,
                Some(adapter) => {
                    let valid = agent_dispatch::request::ValidRequest {
                        adapter,
                        task: self.prompt.clone(),
                        scope: None,
                        model: self.model.clone(),
                        effort: self.effort.clone(),
                        cwd: self.cwd.clone(),
                    };
                    agent_dispatch::runner::run(
                        &valid,
                        &program,
                        &self.parent_env,
                        Some(&endpoint),
                        &supervisor,
                        cancel,
                        &mut sink,
                    )
                    .await
                }
            }
        };
        let result = tokio::time::timeout(RUN_LIMIT, work)
            .await
            .unwrap_or_else(|_| panic!("dispatch did not finish within {RUN_LIMIT:?}"));
        let duration = started.elapsed();
        assert_eq!(
            supervisor.active(),
            0,
            "a process group outlived the dispatch"
        );
        let after = self.snapshot.then(|| Snapshot::take(&self.cwd).unwrap());
        eprintln!(
            "dispatch in {}: {:?} (engine: {} ms), ok {}",
            self.cwd.display(),
            duration,
            result.duration_ms,
            result.ok
        );
        Run {
            ok: result.ok,
            failure: result.failure.clone(),
            text: result.text.clone(),
            usage: result.usage,
            session_id: result.session_id.clone(),
            exit_code: result.exit.as_ref().and_then(|e| e.code),
            stderr: result.stderr_tail.clone(),
            stdout_lines: Vec::new(),
            result: Some(result),
            events,
            stdin_used: matches!(launch.stdin, StdinPlan::Bytes(_)),
            launch,
            fake,
            before,
            during,
            after,
            duration,
            cwd: self.cwd.clone(),
            home: self.home.path().to_path_buf(),
            _home: self.home,
        }
    }

    /// The launch the engine builds for this dispatch (for the record and the docs).
    fn launch_for(&self, endpoint: &ModelEndpoint) -> Launch {
        let program = claude_bin();
        let prompt = agent_dispatch::prompt::assemble(&self.prompt, None);
        let mut ctx = self.ctx(&program, endpoint);
        ctx.prompt = &prompt;
        ClaudeAdapter.launch(&ctx).expect("launch")
    }

    /// Run it by hand, without the engine: the adapter's launch spawned with
    /// `Supervisor::spawn`, stdout and stderr parsed line by line, the tree guard around it.
    /// For what the engine does not expose (the raw stream) and for launches the engine would
    /// refuse (`skip_preflight`, `mutate_launch`).
    pub async fn run_direct(self) -> Run {
        let fake = FakeMessages::start(self.script.clone()).await.unwrap();
        let endpoint = ModelEndpoint {
            base_url: fake.base_url(),
            api_key: "fake-auth-token-for-tests".into(),
        };
        let program = claude_bin();
        let ctx = self.ctx(&program, &endpoint);
        let supervisor = Supervisor::new();
        let adapter = ClaudeAdapter;
        if self.preflight {
            adapter
                .preflight(&ctx, &supervisor)
                .await
                .expect("preflight");
        }
        let mut launch = adapter.launch(&ctx).expect("launch");
        if let Some(m) = &self.mutate {
            m(&mut launch);
        }
        let before = self.snapshot.then(|| Snapshot::take(&self.cwd).unwrap());
        let guard = TreeGuard::enter(&self.cwd, adapter.sandbox_stubs()).expect("tree guard");
        let started = Instant::now();
        let mut child = supervisor.spawn(&launch).expect("spawn");
        let mut parser = adapter.parser();
        let mut events = Vec::new();
        let mut stdout_lines = Vec::new();
        let mut stderr = String::new();
        let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut err = BufReader::new(child.stderr.take().unwrap()).lines();
        let work = async {
            let (mut out_done, mut err_done) = (false, false);
            while !(out_done && err_done) {
                tokio::select! {
                    l = out.next_line(), if !out_done => match l.unwrap() {
                        Some(line) => {
                            if !line.trim().is_empty() {
                                events.extend(parser.parse_line(&line).unwrap_or_else(|e| panic!("parse error {e}: {line}")));
                            }
                            stdout_lines.push(line);
                        }
                        None => out_done = true,
                    },
                    l = err.next_line(), if !err_done => match l.unwrap() {
                        Some(line) => {
                            events.extend(parser.stderr_line(&line));
                            stderr.push_str(&line);
                            stderr.push('\n');
                        }
                        None => err_done = true,
                    },
                }
            }
            child.group.exited().await
        };
        let status = tokio::time::timeout(RUN_LIMIT, work).await;
        child.group.terminate().await;
        let status = status
            .unwrap_or_else(|_| panic!("claude did not finish within {RUN_LIMIT:?}"))
            .expect("exit status");
        let duration = started.elapsed();
        let during = self.snapshot.then(|| Snapshot::take(&self.cwd).unwrap());
        guard.leave().expect("tree guard leave");
        let after = self.snapshot.then(|| Snapshot::take(&self.cwd).unwrap());
        let outcome = parser.outcome();
        eprintln!(
            "direct claude run in {}: {:?}, exit {:?}",
            self.cwd.display(),
            duration,
            status.code()
        );
        // Classified exactly as the engine classifies a run.
        let failure = agent_dispatch::runner::outcome::classify(&Observed {
            exit: Some(status),
            terminal: outcome.terminal.clone(),
            ..Observed::default()
        });
        Run {
            ok: outcome.terminal == Some(Terminal::Success) && status.code() == Some(0),
            failure,
            text: outcome.text,
            usage: outcome.usage,
            session_id: outcome.session_id,
            exit_code: status.code(),
            stderr,
            stdout_lines,
            result: None,
            events,
            stdin_used: matches!(launch.stdin, StdinPlan::Bytes(_)),
            launch,
            fake,
            before,
            during,
            after,
            duration,
            cwd: self.cwd.clone(),
            home: self.home.path().to_path_buf(),
            _home: self.home,
        }
    }
}

/// What one run produced.
pub struct Run {
    pub ok: bool,
    pub failure: Option<Failure>,
    pub text: String,
    pub usage: Option<Usage>,
    pub session_id: Option<String>,
    pub exit_code: Option<i32>,
    pub stderr: String,
    /// Raw stdout (direct runs only).
    pub stdout_lines: Vec<String>,
    /// The engine's result (engine runs only).
    pub result: Option<DispatchResult>,
    pub events: Vec<StreamEvent>,
    pub stdin_used: bool,
    pub launch: Launch,
    pub fake: FakeMessages,
    pub before: Option<Snapshot>,
    pub during: Option<Snapshot>,
    pub after: Option<Snapshot>,
    pub duration: Duration,
    pub cwd: PathBuf,
    pub home: PathBuf,
    _home: tempfile::TempDir,
}

impl Run {
    pub fn assert_ok(&self) {
        assert!(
            self.ok,
            "failure {:?}\nevents: {:#?}\nstderr: {}",
            self.failure, self.events, self.stderr
        );
        assert_eq!(self.exit_code, Some(0), "stderr: {}", self.stderr);
        assert!(self.events.contains(&StreamEvent::Done { success: true }));
    }

    /// A failed run ending in the CLI's error envelope. Returns the message.
    pub fn assert_error_envelope(&self) -> String {
        assert!(!self.ok);
        assert_ne!(self.exit_code, Some(0), "stderr: {}", self.stderr);
        match &self.failure {
            Some(f) if f.kind == FailureKind::ErrorEnvelope => f.message.clone(),
            other => panic!(
                "expected an error envelope, got {other:?}; events {:#?}; stderr {}",
                self.events, self.stderr
            ),
        }
    }

    pub fn assert_tree_identical(&self) {
        let (Some(b), Some(a)) = (&self.before, &self.after) else {
            panic!("run without snapshots")
        };
        assert_eq!(
            b.diff(a),
            Vec::<String>::new(),
            "the tree changed (stubs seen during the run: {:?})",
            self.stubs_seen()
        );
    }

    pub fn tool_results(&self) -> Vec<ToolResultSeen> {
        self.fake.tool_results()
    }

    pub fn commands(&self) -> Vec<(String, CommandStatus)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::Command {
                    command, status, ..
                } => Some((command.clone(), *status)),
                _ => None,
            })
            .collect()
    }

    /// The raw `system/init` event (direct runs).
    pub fn init_event(&self) -> Option<serde_json::Value> {
        self.stdout_lines.iter().find_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).ok()?;
            (v["type"] == "system" && v["subtype"] == "init").then_some(v)
        })
    }

    /// Paths the run added to the tree before the guard cleaned up.
    pub fn stubs_seen(&self) -> Vec<String> {
        match (&self.before, &self.during) {
            (Some(b), Some(d)) => b.diff(d),
            _ => Vec::new(),
        }
    }

    pub fn evidence(&self, title: &str) -> Evidence {
        let steps = self
            .commands()
            .into_iter()
            .filter(|(_, s)| *s == CommandStatus::Started)
            .map(|(c, _)| c)
            .zip(self.tool_results())
            .map(|(c, t)| (c, t.is_error, t.text))
            .collect();
        Evidence {
            title: title.to_owned(),
            steps,
            stubs_seen: self.stubs_seen(),
            args: self.launch.display_args(),
            env_names: self
                .launch
                .env
                .iter()
                .map(|(k, _)| k.to_string_lossy().into_owned())
                .collect(),
            init: None,
            env_visible_to_bash: None,
            notes: Vec::new(),
            redactions: vec![
                (format!("/{}", self.cwd.display()), "//<repo>".to_owned()),
                (format!("/{}", self.home.display()), "//<home>".to_owned()),
                (self.cwd.display().to_string(), "<repo>".to_owned()),
                (self.home.display().to_string(), "<home>".to_owned()),
                (self.fake.base_url(), "http://127.0.0.1:<port>".to_owned()),
            ],
            duration: self.duration,
        }
    }
}

/// What a scenario showed, for the verification document.
pub struct Evidence {
    pub title: String,
    /// (command, is_error, the text the CLI sent back to the model)
    pub steps: Vec<(String, bool, String)>,
    pub stubs_seen: Vec<String>,
    pub args: Vec<String>,
    pub env_names: Vec<String>,
    pub init: Option<serde_json::Value>,
    pub env_visible_to_bash: Option<Vec<String>>,
    /// Free text added under the scenario.
    pub notes: Vec<String>,
    pub redactions: Vec<(String, String)>,
    pub duration: Duration,
}

impl Evidence {
    fn redact(&self, s: &str) -> String {
        let mut out = s.to_owned();
        for (from, to) in &self.redactions {
            out = out.replace(from, to);
        }
        out
    }
}

fn claude_version() -> String {
    let out = std::process::Command::new(claude_bin())
        .arg("--version")
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", cache_dir())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn fence(s: &str) -> String {
    format!("```text\n{}\n```\n", s.trim_end())
}

/// Write `docs/verification/claude.md` from the scenarios' evidence.
pub fn write_verification_doc(evidence: &[Evidence]) {
    use agent_dispatch::adapters::claude::{STUBS, env as cenv, launch};
    use std::fmt::Write;
    let first = &evidence[0];
    let mut d = String::new();
    d.push_str("# Claude Code adapter — verification record\n\n");
    d.push_str(
        "GENERATED — do not edit. Regenerate with\n`cargo test --test claude_real read_only_guarantees`\n\
         (it rewrites this file on every run, from what the real pinned `claude` binary did against the\n\
         library's fake Messages endpoint on 127.0.0.1; paths are shown as `<repo>` / `<home>`).\n\n",
    );
    let _ = writeln!(d, "## Version\n\n{}", fence(&claude_version()));

    d.push_str("## Launch\n\nThe argv of the first scenario (program, then arguments; the prompt — the standing instruction and the task — follows `--`, or comes on stdin when it is longer than 100 KiB):\n\n");
    let mut args = String::from("claude");
    let mut settings = String::new();
    let mut it = first.args.iter();
    while let Some(a) = it.next() {
        if a == "--" {
            args.push_str(" -- <prompt>");
            break;
        } else if a == "--settings" {
            settings = it.next().cloned().unwrap_or_default();
            args.push_str(" --settings <settings JSON below>");
        } else {
            args.push(' ');
            args.push_str(&first.redact(a));
        }
    }
    d.push_str(&fence(&args));
    let pretty = serde_json::from_str::<serde_json::Value>(&settings)
        .map(|v| serde_json::to_string_pretty(&v).unwrap())
        .unwrap_or(settings);
    let _ = writeln!(
        d,
        "\nSettings JSON (`--settings`):\n\n```json\n{}\n```\n",
        first.redact(&pretty)
    );
    let _ = writeln!(
        d,
        "Every flag the adapter may pass, each checked against `claude --help` by `tests/claude_launch.rs`: {}.\n",
        launch::ALL_FLAG_NAMES
            .iter()
            .map(|f| format!("`{f}`"))
            .collect::<Vec<_>>()
            .join(", ")
    );

    d.push_str("## Environment policy\n\n");
    let list = |rules: &[&str]| {
        rules
            .iter()
            .map(|r| format!("`{r}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(
        d,
        "Base allowlist (`crate::env::BASE_ALLOWLIST`): {}.\n\n\
         Claude's own (`CLAUDE_ALLOWLIST`): {}.\n\n\
         Only with `CLAUDE_CODE_USE_BEDROCK` on: {}.\n\n\
         Only with `CLAUDE_CODE_USE_VERTEX` on: {}.\n\n\
         Only with `CLAUDE_CODE_USE_FOUNDRY` on: {}.\n\n\
         Never passed from the caller: {}.\n\n\
         Set by the adapter on every launch: {}; `GIT_CONFIG_GLOBAL` (a private global git \
         configuration that includes the user's, so the CLI stops appending to the user's global git \
         ignore file: `adapters/claude/git_home.rs`); `CLAUDE_CODE_TMPDIR` (a private temp dir instead \
         of the `/tmp/claude-<uid>` all of the user's Claude sessions share, which is denied: \
         `adapters/claude/tmp.rs`).\n\n\
         With a loopback endpoint (tests, self-check) these are dropped and replaced by the endpoint's \
         `ANTHROPIC_BASE_URL`, `ANTHROPIC_AUTH_TOKEN` and `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`: {}.\n",
        list(agent_dispatch::env::BASE_ALLOWLIST),
        list(cenv::CLAUDE_ALLOWLIST),
        list(cenv::BEDROCK_ALLOWLIST),
        list(cenv::VERTEX_ALLOWLIST),
        list(cenv::FOUNDRY_ALLOWLIST),
        list(cenv::NEVER),
        cenv::FIXED
            .iter()
            .map(|(k, v)| format!("`{k}={v}`"))
            .collect::<Vec<_>>()
            .join(", "),
        list(cenv::ENDPOINT_REPLACES),
    );
    for e in evidence {
        if let Some(names) = &e.env_visible_to_bash {
            let _ = writeln!(
                d,
                "Child environment of the \"{}\" run (names): {}.\n\n\
                 Names the Bash tool saw there (`env`; the CLI adds its own sandbox and proxy variables): {}.\n\n\
                 So the authentication variable passed to the CLI (here `ANTHROPIC_AUTH_TOKEN`) **is readable by \
                 commands the agent runs**; `CLAUDE_CODE_SUBPROCESS_ENV_SCRUB` would hide it but is off (DECISIONS \
                 amendment 1). Credential files are closed by `denyRead` (evidence below).\n",
                e.title,
                list(&e.env_names.iter().map(String::as_str).collect::<Vec<_>>()),
                list(&names.iter().map(String::as_str).collect::<Vec<_>>()),
            );
        }
    }

    d.push_str("## Evidence\n\nEach step is a tool call the fake endpoint scripted; the text is exactly what the CLI sent back to the model.\n\n");
    for e in evidence {
        let _ = writeln!(d, "### {}\n", e.title);
        for (cmd, is_error, text) in &e.steps {
            let _ = writeln!(
                d,
                "- `{}` → {}\n",
                e.redact(cmd),
                if *is_error { "error" } else { "ok" }
            );
            let mut t = e.redact(text);
            if t.lines().count() > 12 {
                let head: Vec<_> = t.lines().take(12).collect();
                t = format!("{}\n… ({} lines)", head.join("\n"), text.lines().count());
            }
            d.push_str(&fence(&t));
            d.push('\n');
        }
        for n in &e.notes {
            let _ = writeln!(d, "{n}\n");
        }
        if let Some(init) = &e.init {
            let _ = writeln!(
                d,
                "`system/init`: tools `{}`, mcp_servers `{}`, sandbox_enabled `{}`, permissionMode `{}`.\n",
                init["tools"], init["mcp_servers"], init["sandbox_enabled"], init["permissionMode"]
            );
        }
        let _ = writeln!(
            d,
            "Added to the tree by the run (before the tree guard removed them): {}.\n\nAfter the guard: byte-identical to the snapshot before the run (`.git` included).\n",
            if e.stubs_seen.is_empty() {
                "nothing".to_owned()
            } else {
                e.stubs_seen
                    .iter()
                    .map(|s| format!("`{}`", s.trim_start_matches("added ")))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        );
    }
    d.push_str("## Sandbox stubs the adapter declares\n\n");
    for s in STUBS {
        let _ = writeln!(d, "- {:?}: `{}`", s.base, s.path);
    }
    let path = manifest_dir().join("docs/verification/claude.md");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, d).unwrap();
    for e in evidence {
        eprintln!("{}: {:?}", e.title, e.duration);
    }
}

pub fn os(s: &str) -> OsString {
    s.into()
}

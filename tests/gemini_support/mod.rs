//! Harness of the real-`gemini` tests: one dispatch of the pinned binary against a fresh fake
//! Gemini API, a scratch `HOME` full of secrets (with a user `~/.gemini`) outside the temp dir
//! and the clone, and tree snapshots around it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agent_dispatch::adapter::{Adapter, Env, LaunchContext};
use agent_dispatch::adapters::gemini::GeminiAdapter;
use agent_dispatch::adapters::gemini::fake_api::{FakeGemini, Script};
use agent_dispatch::contract::{DispatchRequest, DispatchResult, StreamEvent};
use agent_dispatch::dispatch::{self, DispatchOptions};
use agent_dispatch::launch::Launch;
use agent_dispatch::loopback::ModelEndpoint;
use agent_dispatch::readonly::gate::GatePolicy;
use agent_dispatch::readonly::snapshot::Snapshot;
use agent_dispatch::supervise::Supervisor;
use tokio_util::sync::CancellationToken;

/// How long one real run may take before the test fails.
pub const RUN_LIMIT: Duration = Duration::from_secs(120);
/// The throw-away key the fake endpoint gets (it must never appear in a request body).
pub const FAKE_KEY: &str = "fake-gemini-key-4b1d";

pub fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The pinned binary. Tests fail (never skip) when it is missing.
pub fn gemini_bin() -> PathBuf {
    let p = manifest_dir().join(".tools/node_modules/.bin/gemini");
    assert!(
        p.exists(),
        "{} is missing: run scripts/install-tools.sh",
        p.display()
    );
    p
}

/// A fresh directory under `$HOME/.cache/agent-dispatch-tests/` (outside the temp dir and the
/// clone), removed on drop.
pub fn scratch_dir(prefix: &str) -> tempfile::TempDir {
    let base = dirs::home_dir()
        .unwrap()
        .join(".cache/agent-dispatch-tests");
    std::fs::create_dir_all(&base).unwrap();
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(base)
        .unwrap()
}

/// Secrets planted in the scratch home: (relative path, content). None may reach the endpoint.
pub const HOME_SECRETS: &[(&str, &str)] = &[
    (".ssh/id_ed25519", "SSH-SECRET-9c1e"),
    (".aws/credentials", "AWS-SECRET-55aa"),
    (
        ".gemini/oauth_creds.json",
        "{\"refresh_token\":\"OAUTH-SECRET-d00d\"}",
    ),
    (".env", "DOTENV-SECRET-0f0f"),
];

/// A scratch `HOME`: secrets, and a user `~/.gemini` with settings the dispatch must not write.
pub fn scratch_home() -> tempfile::TempDir {
    let home = scratch_dir("gemini-home-");
    for (rel, content) in HOME_SECRETS {
        let p = home.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }
    std::fs::write(
        home.path().join(".gemini/settings.json"),
        r#"{"security":{"auth":{"selectedType":"oauth-personal"}},"model":{"name":"gemini-user-default"},"telemetry":{"enabled":true}}"#,
    )
    .unwrap();
    home
}

/// One dispatch to run.
pub struct Dispatch {
    /// The dispatcher's cache dir (check records, Gemini's private homes), outside `HOME`.
    pub cache: tempfile::TempDir,
    pub cwd: PathBuf,
    pub script: Script,
    pub home: tempfile::TempDir,
    pub parent_env: Env,
    pub prompt: String,
    pub model: Option<String>,
    pub cancel: CancellationToken,
    /// Cancel once the first command has started.
    pub cancel_on_first_command: bool,
}

impl Dispatch {
    pub fn new(cwd: &Path, script: Script) -> Self {
        let home = scratch_home();
        let mut parent_env = Env::new();
        let path = format!(
            "{}:{}",
            gemini_bin().parent().unwrap().display(),
            std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into())
        );
        parent_env.insert("PATH".into(), path.into());
        parent_env.insert("HOME".into(), home.path().into());
        parent_env.insert("TERM".into(), "dumb".into());
        parent_env.insert("LANG".into(), "C.UTF-8".into());
        // A real-looking key of the user's: replaced by the endpoint's, never sent anywhere.
        parent_env.insert("GEMINI_API_KEY".into(), "USER-REAL-KEY-77e2".into());
        parent_env.insert("MY_PRIVATE_TOKEN".into(), "ENV-SECRET-1234".into());
        let cache = scratch_dir("gemini-cache-");
        parent_env.insert("AGENT_DISPATCH_CACHE_DIR".into(), cache.path().into());
        Self {
            cache,
            cwd: cwd.canonicalize().unwrap(),
            script,
            home,
            parent_env,
            prompt: "Run the scripted steps.".into(),
            model: None,
            cancel: CancellationToken::new(),
            cancel_on_first_command: false,
        }
    }

    /// The launch the engine builds for this dispatch (for the record and the docs).
    pub fn launch_for(&self, endpoint: &ModelEndpoint) -> Launch {
        let program = gemini_bin();
        let prompt = agent_dispatch::prompt::assemble(&self.prompt, None);
        GeminiAdapter
            .launch(&LaunchContext {
                program: &program,
                prompt: &prompt,
                model: self.model.as_deref(),
                effort: None,
                cwd: &self.cwd,
                parent_env: &self.parent_env,
                endpoint: Some(endpoint),
            })
            .expect("launch")
    }

    pub async fn run(self) -> Run {
        let fake = FakeGemini::start(self.script.clone()).await.unwrap();
        let endpoint = ModelEndpoint {
            base_url: fake.base_url(),
            api_key: FAKE_KEY.into(),
        };
        let req = DispatchRequest {
            agent: "gemini".into(),
            task: self.prompt.clone(),
            scope: None,
            model: self.model.clone(),
            effort: None,
            cwd: self.cwd.clone(),
        };
        let opts = DispatchOptions {
            parent_env: self.parent_env.clone(),
            endpoint: Some(endpoint.clone()),
            // The scenarios assert the read-only behaviour themselves; the check has its own test.
            gate: GatePolicy::Bypass,
            limits: Default::default(),
        };
        let launch = self.launch_for(&endpoint);
        let before = Snapshot::take(&self.cwd).unwrap();
        let home_before = Snapshot::take(self.home.path()).unwrap();
        let mut events = Vec::new();
        let cancel = self.cancel.clone();
        let cancel_on_first = self.cancel_on_first_command;
        let mut sink = |e: StreamEvent| {
            if cancel_on_first && matches!(e, StreamEvent::Command { .. }) {
                cancel.cancel();
            }
            events.push(e);
        };
        let started = Instant::now();
        let supervisor = Supervisor::new();
        let result = tokio::time::timeout(
            RUN_LIMIT,
            dispatch::dispatch(&req, &opts, &supervisor, self.cancel.clone(), &mut sink),
        )
        .await
        .unwrap_or_else(|_| panic!("dispatch did not finish within {RUN_LIMIT:?}"));
        let duration = started.elapsed();
        assert_eq!(
            supervisor.active(),
            0,
            "a process group outlived the dispatch"
        );
        let after = Snapshot::take(&self.cwd).unwrap();
        let home_after = Snapshot::take(self.home.path()).unwrap();
        eprintln!(
            "gemini dispatch: {duration:?}, ok {}, failure {:?}",
            result.ok, result.failure
        );
        Run {
            result,
            events,
            launch,
            fake,
            tree_changes: before.diff(&after),
            home_changes: home_before.diff(&home_after),
            duration,
            cwd: self.cwd.clone(),
            home: self.home.path().to_path_buf(),
            _home: self.home,
            _cache: self.cache,
        }
    }
}

/// What one dispatch did.
pub struct Run {
    pub result: DispatchResult,
    pub events: Vec<StreamEvent>,
    pub launch: Launch,
    pub fake: FakeGemini,
    pub tree_changes: Vec<String>,
    pub home_changes: Vec<String>,
    pub duration: Duration,
    pub cwd: PathBuf,
    pub home: PathBuf,
    _home: tempfile::TempDir,
    _cache: tempfile::TempDir,
}

impl Run {
    pub fn assert_ok(&self) {
        assert!(
            self.result.ok,
            "failure {:?}\nevents: {:#?}\nstderr: {}",
            self.result.failure, self.events, self.result.stderr_tail
        );
    }

    /// (command, the text the CLI sent back to the model), in order.
    pub fn steps(&self) -> Vec<(String, String)> {
        let commands = self.events.iter().filter_map(|e| match e {
            StreamEvent::Command {
                command,
                status: agent_dispatch::contract::CommandStatus::Started,
                ..
            } => Some(command.clone()),
            _ => None,
        });
        commands
            .zip(self.fake.tool_results())
            .map(|(c, t)| (c, t.text))
            .collect()
    }

    /// Every text the model saw, joined (request bodies).
    pub fn redact(&self, s: &str) -> String {
        let mut out = s.to_owned();
        if let Some(p) = self.launch.wall.as_ref().and_then(|w| w.private_path()) {
            let p = p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
            out = out.replace(&p.display().to_string(), "<private>");
        }
        out.replace(&self.cwd.display().to_string(), "<repo>")
            .replace(&self.home.display().to_string(), "<home>")
            .replace(&self.fake.base_url(), "http://127.0.0.1:<port>")
            .replace(&manifest_dir().display().to_string(), "<clone>")
    }
}

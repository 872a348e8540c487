//! `agent-dispatch check` and the dispatch policy, with the real pinned CLIs: a pass is recorded
//! and reused; a CLI upgrade or a weakened launch configuration invalidates it; so does anything
//! else that enforces the sandbox (a replaced vendor binary behind the npm shim, another `bwrap`
//! on `PATH`, another environment value, the user's configuration); a machine where the sandbox
//! cannot work (no bubblewrap, a `bwrap` that does not sandbox) fails the check with the right
//! reason, and the dispatch is refused with nothing started.

#[path = "codex_support/mod.rs"]
mod codex_support;

use std::path::{Path, PathBuf};
use std::process::Command;

use agent_dispatch::adapter::{Adapter, Capabilities, Env, LaunchContext, ModelInfo, StreamParser};
use agent_dispatch::adapters;
use agent_dispatch::adapters::codex::fake_api::{FakeResponses, Script, Step};
use agent_dispatch::contract::{Failure, FailureKind, StreamEvent};
use agent_dispatch::dispatch::{DispatchOptions, dispatch_valid};
use agent_dispatch::launch::Launch;
use agent_dispatch::loopback::ModelEndpoint;
use agent_dispatch::readonly::check;
use agent_dispatch::readonly::gate::GatePolicy;
use agent_dispatch::readonly::probe::SelfCheck;
use agent_dispatch::readonly::report::Verdict;
use agent_dispatch::request::ValidRequest;
use agent_dispatch::supervise::Supervisor;
use async_trait::async_trait;
use codex_support::World;
use tokio_util::sync::CancellationToken;

fn codex() -> &'static dyn Adapter {
    adapters::find("codex").unwrap()
}

/// The Codex adapter with its launch deliberately weakened (Codex's `:workspace` profile): a stand-in
/// for a bad build or a setting that re-enables writes. Test code only.
struct Weakened;
static WEAKENED: Weakened = Weakened;

#[async_trait]
impl Adapter for Weakened {
    fn id(&self) -> &'static str {
        "codex"
    }
    fn display_name(&self) -> &'static str {
        "Codex (weakened)"
    }
    fn program(&self) -> &'static str {
        codex().program()
    }
    fn install_hint(&self) -> &'static str {
        codex().install_hint()
    }
    fn capabilities(&self) -> Capabilities {
        codex().capabilities()
    }
    fn launch(&self, ctx: &LaunchContext<'_>) -> Result<Launch, Failure> {
        let mut l = codex().launch(ctx)?;
        for a in l.args.iter_mut() {
            if a == "default_permissions=\"agent_dispatch_read_only\"" {
                *a = "default_permissions=\":workspace\"".into();
            }
        }
        Ok(l)
    }
    fn parser(&self) -> Box<dyn StreamParser> {
        codex().parser()
    }
    async fn discover_models(
        &self,
        program: &Path,
        env: &Env,
        sup: &Supervisor,
    ) -> Option<Result<Vec<ModelInfo>, Failure>> {
        codex().discover_models(program, env, sup).await
    }
    fn self_check(&self) -> Option<&dyn SelfCheck> {
        codex().self_check()
    }
}

fn with_records(w: &World, mut env: Env) -> Env {
    env.insert(
        "AGENT_DISPATCH_CACHE_DIR".into(),
        w.dir.path().join("records").into(),
    );
    env
}

fn records(w: &World) -> usize {
    std::fs::read_dir(w.dir.path().join("records/checks"))
        .map(|d| d.count())
        .unwrap_or(0)
}

async fn enforced(
    adapter: &'static dyn Adapter,
    w: &World,
    env: Env,
    endpoint: ModelEndpoint,
) -> (agent_dispatch::contract::DispatchResult, Vec<String>) {
    let req = ValidRequest {
        adapter,
        task: "Inspect the repository.".into(),
        scope: None,
        model: None,
        effort: None,
        cwd: w.repo_path(),
    };
    let opts = DispatchOptions {
        parent_env: env,
        endpoint: Some(endpoint),
        gate: GatePolicy::Enforce,
        limits: Default::default(),
    };
    let mut notices = Vec::new();
    let mut sink = |e: StreamEvent| {
        if let StreamEvent::Notice { message, .. } = e {
            notices.push(message)
        }
    };
    let r = dispatch_valid(
        &req,
        &opts,
        &Supervisor::new(),
        CancellationToken::new(),
        &mut sink,
    )
    .await;
    (r, notices)
}

fn ran_check(notices: &[String]) -> bool {
    notices
        .iter()
        .any(|n| n.contains("running the offline read-only check"))
}

#[tokio::test]
async fn a_weakened_launch_fails_the_check_and_the_dispatch_is_refused() {
    let w = World::new("weakened");
    let env = with_records(&w, w.env());
    let report = check::run_check(
        &WEAKENED,
        &env,
        &Supervisor::new(),
        CancellationToken::new(),
    )
    .await;
    assert!(!report.passed, "{report}");
    assert!(
        report
            .launch_args
            .iter()
            .any(|a| a == "default_permissions=\":workspace\"")
    );
    assert!(
        report.probes.iter().any(|p| p.verdict == Verdict::Written),
        "{report}"
    );
    assert!(
        report.fixes.iter().any(|f| f.contains("re-enables writes")),
        "{report}"
    );

    // A pass on record for the real configuration does not cover the weakened one.
    let fake = FakeResponses::start(Script::new(vec![Step::message("should not run")]))
        .await
        .unwrap();
    let (ok, _) = enforced(codex(), &w, env.clone(), fake.endpoint()).await;
    assert!(ok.ok, "{:?}", ok.failure);
    let served = fake.model_requests().len();
    let (refused, notices) = enforced(&WEAKENED, &w, env, fake.endpoint()).await;
    assert!(
        ran_check(&notices),
        "the changed configuration is checked anew"
    );
    let f = refused.failure.expect("refused");
    assert_eq!(f.kind, FailureKind::ReadOnlyUnavailable);
    assert!(
        f.message.contains("failed the read-only check"),
        "{}",
        f.message
    );
    assert_eq!(
        fake.model_requests().len(),
        served,
        "nothing was dispatched"
    );
    assert_eq!(
        records(&w),
        1,
        "only the real configuration's pass is on record"
    );
}

fn wrapper(dir: &Path, version: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("codex");
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo '{version}'; exit 0; fi\nexec '{}' \"$@\"\n",
        codex_support::codex().display()
    );
    // Replace, never edit in place: an upgrade installs a new file.
    let tmp = dir.join(".codex.new");
    std::fs::write(&tmp, script).unwrap();
    Command::new("chmod").arg("+x").arg(&tmp).status().unwrap();
    std::fs::rename(&tmp, &path).unwrap();
    path
}

#[tokio::test]
async fn the_record_is_reused_and_a_cli_upgrade_invalidates_it() {
    let w = World::new("upgrade");
    let bin = w.dir.path().join("wrapped-bin");
    wrapper(&bin, "codex-cli 0.171.0+wrapped.1");
    let mut env = with_records(&w, w.env());
    let path = format!(
        "{}:{}",
        bin.display(),
        env["PATH".as_ref() as &std::ffi::OsStr].to_string_lossy()
    );
    env.insert("PATH".into(), path.into());
    let fake = FakeResponses::start(Script::new(vec![Step::message("done")]))
        .await
        .unwrap();

    let (first, n1) = enforced(codex(), &w, env.clone(), fake.endpoint()).await;
    assert!(first.ok, "{:?}", first.failure);
    assert!(ran_check(&n1), "{n1:?}");
    let (second, n2) = enforced(codex(), &w, env.clone(), fake.endpoint()).await;
    assert!(second.ok);
    assert!(!ran_check(&n2), "the record is reused: {n2:?}");
    assert_eq!(records(&w), 1);

    wrapper(&bin, "codex-cli 0.171.1+wrapped.2");
    let (third, n3) = enforced(codex(), &w, env.clone(), fake.endpoint()).await;
    assert!(third.ok, "{:?}", third.failure);
    assert!(ran_check(&n3), "an upgraded CLI is checked again: {n3:?}");
    assert_eq!(records(&w), 2);

    // A corrupt record is no record: the check runs again and rewrites it atomically.
    for e in std::fs::read_dir(w.dir.path().join("records/checks")).unwrap() {
        std::fs::write(e.unwrap().path(), b"{ truncated").unwrap();
    }
    let (fourth, n4) = enforced(codex(), &w, env, fake.endpoint()).await;
    assert!(fourth.ok);
    assert!(ran_check(&n4), "{n4:?}");
}

#[tokio::test]
async fn codex_home_under_the_temp_dir_refuses_the_dispatch() {
    let w = World::new("tmphome-policy");
    let tmp = w.dir.path().join("tmp");
    let home = tmp.join("codex");
    std::fs::create_dir_all(&home).unwrap();
    let mut env = with_records(&w, w.env());
    env.insert("TMPDIR".into(), tmp.into());
    env.insert("CODEX_HOME".into(), home.into());
    let fake = FakeResponses::start(Script::new(vec![Step::message("must not run")]))
        .await
        .unwrap();
    let (r, _) = enforced(codex(), &w, env, fake.endpoint()).await;
    let f = r.failure.expect("refused");
    assert_eq!(f.kind, FailureKind::ReadOnlyUnavailable);
    assert!(f.message.contains("CODEX_HOME"), "{}", f.message);
    assert_eq!(fake.model_requests().len(), 0, "no dispatch was started");
    assert_eq!(records(&w), 0, "a failure is not recorded");
}

#[test]
fn the_check_command_reports_cli_flags_and_evidence() {
    let w = World::new("check-cli");
    let out = Command::new(env!("CARGO_BIN_EXE_agent-dispatch"))
        .args(["check", "codex", "--json"])
        .env_clear()
        .envs(with_records(&w, w.env()))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = &v[0];
    assert_eq!(r["agent"], "codex");
    assert_eq!(r["passed"], true);
    assert_eq!(r["version"], codex_support::codex_version());
    assert!(r["program"].as_str().unwrap().contains(".tools"));
    let args: Vec<&str> = r["launchArgs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(
        args.windows(2)
            .any(|p| p == ["-c", "default_permissions=\"agent_dispatch_read_only\""]),
        "{args:?}"
    );
    let kinds: Vec<&str> = r["probes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "shell-write",
            "file-tool-write",
            "interpreter-write",
            "read"
        ]
    );
    for p in r["probes"].as_array().unwrap() {
        assert!(p["evidence"].is_string(), "{p}");
    }
    assert_eq!(r["treeIdentical"], true);
    assert_eq!(records(&w), 1, "the pass was recorded");
    let roles: Vec<&str> = r["covers"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["role"].as_str().unwrap())
        .collect();
    for role in [
        "cli",
        "native-cli",
        "interpreter",
        "sandbox-helper",
        "config",
    ] {
        assert!(roles.contains(&role), "{role}: {roles:?}");
    }

    // The same as a report a person reads.
    let out = Command::new(env!("CARGO_BIN_EXE_agent-dispatch"))
        .args(["check", "codex"])
        .env_clear()
        .envs(with_records(&w, w.env()))
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("PASS  codex read-only check"), "{text}");
    assert!(text.contains("Read-only file system"), "{text}");
    assert!(text.contains("byte-identical"), "{text}");
    // What the record covers, and what it cannot see.
    assert!(text.contains("native-cli"), "{text}");
    assert!(text.contains("not seen"), "{text}");
    assert!(text.contains("the repository under review"), "{text}");
}

#[path = "claude_common/mod.rs"]
#[allow(unused_imports)]
mod claude_common;

#[tokio::test]
async fn without_bubblewrap_claude_fails_the_check_and_the_dispatch_is_refused() {
    let w = World::new("no-bwrap");
    let farm = w.dir.path().join("path-farm");
    std::fs::create_dir_all(&farm).unwrap();
    claude_common::path_without(&farm, &["bwrap"]);
    let mut env = with_records(&w, w.env());
    env.insert(
        "PATH".into(),
        format!("{}:{}", codex_support::bin_dir().display(), farm.display()).into(),
    );
    env.insert("CLAUDE_CONFIG_DIR".into(), w.home().join(".claude").into());
    let claude = adapters::find("claude").unwrap();

    let report = check::run_check(claude, &env, &Supervisor::new(), CancellationToken::new()).await;
    assert!(!report.passed, "{report}");
    assert!(report.reason().contains("bubblewrap"), "{report}");
    assert!(
        report
            .fixes
            .iter()
            .any(|f| f.contains("apt-get install bubblewrap socat")),
        "{report}"
    );

    let fake = agent_dispatch::adapters::claude::fake_api::FakeMessages::start(
        agent_dispatch::adapters::claude::fake_api::Script::new().text("must not run"),
    )
    .await
    .unwrap();
    let endpoint = ModelEndpoint {
        base_url: fake.base_url(),
        api_key: "throwaway".into(),
    };
    let (r, _) = enforced(claude, &w, env, endpoint).await;
    let f = r.failure.expect("refused");
    assert_eq!(f.kind, FailureKind::ReadOnlyUnavailable);
    assert!(
        f.message.contains("apt-get install bubblewrap socat"),
        "{}",
        f.message
    );
    assert!(r.exit.is_none(), "nothing was started");
    assert!(fake.log().all().is_empty(), "no model request");
    assert_eq!(records(&w), 0);
}

#[test]
fn check_passes_for_both_pinned_clis_on_this_machine() {
    let w = World::new("check-all");
    let mut env = with_records(&w, w.env());
    env.insert("CLAUDE_CONFIG_DIR".into(), w.home().join(".claude").into());
    let out = Command::new(env!("CARGO_BIN_EXE_agent-dispatch"))
        .args(["check", "--json"])
        .env_clear()
        .envs(env)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{v:#}");
    let agents: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["agent"].as_str().unwrap())
        .collect();
    assert_eq!(agents, ["codex", "claude", "gemini"]);
    for r in v.as_array().unwrap() {
        assert_eq!(r["passed"], true, "{r:#}");
        assert_eq!(r["treeIdentical"], true);
        let denied = r["probes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["verdict"] == "denied")
            .count();
        assert!(denied >= 2, "{r:#}");
    }
    assert_eq!(records(&w), 3);
}

/// Through the binary, as Pi runs it: the first dispatch runs the check and its progress is on
/// the protocol stream (the Pi extension shows notices in the tool row), then the real dispatch;
/// the second finds the record. The user's own provider (a loopback fake here) is honoured.
#[tokio::test]
async fn the_binary_runs_the_check_first_and_streams_its_progress() {
    let w = World::new("bin-check");
    let fake = FakeResponses::start(Script::new(vec![
        Step::shell("git diff"),
        Step::message("REVIEW: looks fine"),
    ]))
    .await
    .unwrap();
    w.write_codex_config(
        "config.toml",
        &format!(
            "model = \"gpt-5.5\"\nmodel_provider = \"mine\"\n\n[model_providers.mine]\nname = \"mine\"\nbase_url = \"{}\"\nenv_key = \"MY_PROVIDER_KEY\"\nwire_api = \"responses\"\n",
            fake.base_url()
        ),
    );
    let mut env = with_records(&w, w.env());
    env.insert("MY_PROVIDER_KEY".into(), fake.api_key().into());
    let run = |env: Env| {
        let cwd = w.repo_path();
        async move {
            let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_agent-dispatch"))
                .args(["run", "--agent", "codex", "--cwd"])
                .arg(&cwd)
                .args(["--", "Review the uncommitted change."])
                .env_clear()
                .envs(env)
                .stdin(std::process::Stdio::null())
                .output()
                .await
                .unwrap();
            let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            (out.status.code(), lines)
        }
    };
    let notices = |lines: &[serde_json::Value]| -> Vec<String> {
        lines
            .iter()
            .filter(|l| l["event"]["type"] == "notice")
            .map(|l| l["event"]["message"].as_str().unwrap().to_owned())
            .collect()
    };
    let (code, first) = run(env.clone()).await;
    let result = first.last().unwrap();
    assert_eq!(code, Some(0), "{result}");
    assert_eq!(result["text"], "REVIEW: looks fine");
    assert_eq!(result["checkBypassed"], false);
    let n = notices(&first);
    let started = n
        .iter()
        .position(|m| m.contains("running the offline read-only check"));
    let passed = n
        .iter()
        .position(|m| m.starts_with("Read-only check passed"));
    assert!(started.is_some() && passed > started, "{n:?}");
    let (code, second) = run(env).await;
    assert_eq!(code, Some(0));
    assert!(
        !notices(&second)
            .iter()
            .any(|m| m.contains("read-only check")),
        "record reused"
    );
}

// ---------------------------------------------------------------------------------------------
// What the record covers: the files that enforce the sandbox, and the launch's values.

use agent_dispatch::adapter::FileRole;
use agent_dispatch::readonly::record::{self, CheckKey};
use agent_dispatch::readonly::snapshot::Snapshot;

/// The paths the key holds for `role`.
fn stamped(key: &CheckKey, role: FileRole) -> Vec<String> {
    key.files
        .iter()
        .filter(|f| f.role == role)
        .map(|f| f.path.clone())
        .collect()
}

/// The first `name` on the test process's PATH (the machine's real sandbox tools).
fn system_program(name: &str) -> PathBuf {
    which::which(name).unwrap_or_else(|_| panic!("{name} is required on this machine"))
}

/// `PATH` of `env` with `dir` put first.
fn path_first(env: &mut Env, dir: &Path) {
    let old = env["PATH".as_ref() as &std::ffi::OsStr]
        .to_string_lossy()
        .into_owned();
    env.insert("PATH".into(), format!("{}:{old}", dir.display()).into());
}

/// Write an executable script by creating a new file and renaming it into place (as an
/// installer would), so that the record sees a new file.
fn install_script(path: &Path, body: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let tmp = path.with_extension("new");
    std::fs::write(&tmp, body).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// A copy of the pinned Codex npm install (`node_modules/@openai/...` and `.bin/codex`) under
/// `dir`, never touching `.tools`: small files are copied; the large native binaries are
/// hard-linked (never written through; a test replaces them by renaming a new file over them).
fn copy_codex_install(dir: &Path) -> PathBuf {
    fn clone_tree(src: &Path, dst: &Path) {
        std::fs::create_dir_all(dst).unwrap();
        for e in std::fs::read_dir(src).unwrap() {
            let e = e.unwrap();
            let (from, to) = (e.path(), dst.join(e.file_name()));
            let meta = std::fs::symlink_metadata(&from).unwrap();
            if meta.is_dir() {
                clone_tree(&from, &to);
            } else if meta.is_symlink() {
                std::os::unix::fs::symlink(std::fs::read_link(&from).unwrap(), &to).unwrap();
            } else if meta.len() > 1024 * 1024 {
                std::fs::hard_link(&from, &to).unwrap();
            } else {
                std::fs::copy(&from, &to).unwrap();
            }
        }
    }
    let tools = codex_support::root().join(".tools/node_modules");
    let nm = dir.join("node_modules");
    clone_tree(&tools.join("@openai"), &nm.join("@openai"));
    std::fs::create_dir_all(nm.join(".bin")).unwrap();
    std::os::unix::fs::symlink("../@openai/codex/bin/codex.js", nm.join(".bin/codex")).unwrap();
    nm.join(".bin")
}

/// The native binary the key names for the codex found on `env`'s PATH.
fn native_codex(env: &Env) -> PathBuf {
    let program = agent_dispatch::program::resolve_program(codex(), env).unwrap();
    let key = record::check_key(codex(), &program, env).unwrap();
    let native = stamped(&key, FileRole::NativeCli);
    assert_eq!(native.len(), 1, "{key:#?}");
    PathBuf::from(&native[0])
}

#[test]
fn the_record_is_keyed_on_what_enforces_the_sandbox_and_a_lookup_is_cheap() {
    let w = World::new("record-key");
    let mut env = with_records(&w, w.env());
    env.insert("CLAUDE_CONFIG_DIR".into(), w.home().join(".claude").into());
    env.insert("CODEX_API_KEY".into(), "sk-record-secret-1".into());
    let bwrap = system_program("bwrap");

    let program = agent_dispatch::program::resolve_program(codex(), &env).unwrap();
    let key = record::check_key(codex(), &program, &env).unwrap();
    // Codex: the npm shim is followed to the native binary, which runs the first bwrap on PATH.
    assert!(
        key.program.ends_with("@openai/codex/bin/codex.js"),
        "{key:#?}"
    );
    let native = stamped(&key, FileRole::NativeCli);
    assert!(
        native.len() == 1 && native[0].contains("/vendor/") && native[0].ends_with("/bin/codex"),
        "{key:#?}"
    );
    assert!(
        stamped(&key, FileRole::Interpreter)
            .iter()
            .any(|p| p.ends_with("/node")),
        "{key:#?}"
    );
    assert_eq!(
        stamped(&key, FileRole::SandboxHelper),
        [bwrap.display().to_string()]
    );
    assert!(
        stamped(&key, FileRole::Config)
            .contains(&w.codex_home().join("config.toml").display().to_string())
    );
    assert!(key.environment.contains(&"CODEX_API_KEY".to_owned()));
    // Values are hashed, never stored: the credential is not in the record, but changing it
    // changes the key.
    let json = serde_json::to_string(&key).unwrap();
    assert!(!json.contains("sk-record-secret-1"));
    let mut rotated = env.clone();
    rotated.insert("CODEX_API_KEY".into(), "sk-record-secret-2".into());
    assert_ne!(
        record::check_key(codex(), &program, &rotated)
            .unwrap()
            .launch_hash,
        key.launch_hash
    );
    // A variable the child never gets does not change it.
    let mut unrelated = env.clone();
    unrelated.insert("SOME_UNRELATED_SETTING".into(), "1".into());
    assert_eq!(
        record::check_key(codex(), &program, &unrelated).unwrap(),
        key
    );

    // Claude: the native binary is the npm package's `claude.exe`; bwrap and socat from PATH.
    let claude = adapters::find("claude").unwrap();
    let claude_program = agent_dispatch::program::resolve_program(claude, &env).unwrap();
    let ckey = record::check_key(claude, &claude_program, &env).unwrap();
    assert_eq!(
        stamped(&ckey, FileRole::NativeCli),
        std::slice::from_ref(&ckey.program)
    );
    assert_eq!(
        stamped(&ckey, FileRole::SandboxHelper),
        [
            bwrap.display().to_string(),
            system_program("socat").display().to_string()
        ]
    );
    assert!(
        stamped(&ckey, FileRole::Config)
            .contains(&w.home().join(".claude/settings.json").display().to_string())
    );

    // The cost of a lookup as a dispatch pays it: key (stats, small hashes, launch build) and
    // record read.
    let dir = record::cache_dir(&env).unwrap();
    for (adapter, program) in [(codex(), &program), (claude, &claude_program)] {
        let mut times: Vec<std::time::Duration> = (0..25)
            .map(|_| {
                let t = std::time::Instant::now();
                let key = record::check_key(adapter, program, &env).unwrap();
                let _ = record::load(&dir, &key);
                t.elapsed()
            })
            .collect();
        times.sort();
        eprintln!(
            "record lookup for {}: median {:?}, min {:?}, max {:?} ({} files)",
            adapter.id(),
            times[times.len() / 2],
            times[0],
            times[times.len() - 1],
            record::check_key(adapter, program, &env)
                .unwrap()
                .files
                .len()
        );
        assert!(
            times[times.len() / 2] < std::time::Duration::from_millis(500),
            "{times:?}"
        );
    }
}

#[tokio::test]
async fn replacing_the_vendor_binary_runs_the_check_again() {
    let w = World::new("record-vendor");
    let bin = copy_codex_install(&w.dir.path().join("tools"));
    let mut env = with_records(&w, w.env());
    path_first(&mut env, &bin);
    let native = native_codex(&env);
    assert!(native.starts_with(w.dir.path()), "{}", native.display());
    let fake = FakeResponses::start(Script::new(vec![Step::message("done")]))
        .await
        .unwrap();

    let (first, n1) = enforced(codex(), &w, env.clone(), fake.endpoint()).await;
    assert!(first.ok, "{:?}", first.failure);
    assert!(ran_check(&n1), "{n1:?}");
    let (second, n2) = enforced(codex(), &w, env.clone(), fake.endpoint()).await;
    assert!(second.ok, "{:?}", second.failure);
    assert!(!ran_check(&n2), "the record is reused: {n2:?}");

    // A new native binary in place of the old one (same bytes, a new file), the shim untouched.
    let tmp = native.with_extension("new");
    std::fs::copy(&native, &tmp).unwrap();
    std::fs::rename(&tmp, &native).unwrap();
    let (third, n3) = enforced(codex(), &w, env, fake.endpoint()).await;
    assert!(third.ok, "{:?}", third.failure);
    assert!(
        ran_check(&n3),
        "a replaced vendor binary is checked again: {n3:?}"
    );
    let why = format!("native-cli {} changed", native.display());
    assert!(n3.iter().any(|m| m.contains(&why)), "{n3:?}");
    assert_eq!(records(&w), 2);
}

#[tokio::test]
async fn another_bwrap_on_path_an_environment_value_or_the_user_config_runs_the_check_again() {
    let w = World::new("record-bwrap");
    let sbin = w.dir.path().join("sbin");
    std::fs::create_dir_all(&sbin).unwrap();
    let (tmp_a, tmp_b) = (w.dir.path().join("tmp-a"), w.dir.path().join("tmp-b"));
    std::fs::create_dir_all(&tmp_a).unwrap();
    std::fs::create_dir_all(&tmp_b).unwrap();
    let mut env = with_records(&w, w.env());
    path_first(&mut env, &sbin);
    env.insert("TMPDIR".into(), tmp_a.into());
    let fake = FakeResponses::start(Script::new(vec![Step::message("done")]))
        .await
        .unwrap();
    let run = |env: Env| enforced(codex(), &w, env, fake.endpoint());

    let (r, n) = run(env.clone()).await;
    assert!(r.ok && ran_check(&n), "{:?} {n:?}", r.failure);
    let (r, n) = run(env.clone()).await;
    assert!(r.ok && !ran_check(&n), "reused: {:?} {n:?}", r.failure);

    // A variable the CLI never receives changes nothing.
    let mut unrelated = env.clone();
    unrelated.insert("SOME_UNRELATED_SETTING".into(), "1".into());
    let (r, n) = run(unrelated).await;
    assert!(r.ok && !ran_check(&n), "reused: {:?} {n:?}", r.failure);

    // Another bwrap appears in a directory already first on PATH (PATH itself unchanged): Codex
    // runs it, so the check runs again — through it.
    let log = w.dir.path().join("bwrap.log");
    install_script(
        &sbin.join("bwrap"),
        &format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
            log.display(),
            system_program("bwrap").display()
        ),
    );
    let (r, n) = run(env.clone()).await;
    assert!(r.ok, "{:?}", r.failure);
    assert!(ran_check(&n), "a new bwrap on PATH is checked: {n:?}");
    let why = format!("sandbox-helper {} is new", sbin.join("bwrap").display());
    assert!(n.iter().any(|m| m.contains(&why)), "{n:?}");
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        calls.contains("--ro-bind / /"),
        "the check ran through it: {calls}"
    );

    // The same variables with one value changed.
    env.insert("TMPDIR".into(), tmp_b.into());
    let (r, n) = run(env.clone()).await;
    assert!(r.ok, "{:?}", r.failure);
    assert!(ran_check(&n), "a changed TMPDIR value is checked: {n:?}");
    assert!(n.iter().any(|m| m.contains("the launch changed")), "{n:?}");

    // The user's Codex configuration appears (even a setting that leaves the argv alone).
    w.write_codex_config("config.toml", "[history]\npersistence = \"none\"\n");
    let (r, n) = run(env).await;
    assert!(r.ok, "{:?}", r.failure);
    let why = format!(
        "config {} appeared",
        w.codex_home().join("config.toml").display()
    );
    assert!(n.iter().any(|m| m.contains(&why)), "{n:?}");
    assert_eq!(records(&w), 4);
}

/// A `bwrap` that sandboxes nothing: it answers `--help` like bubblewrap, then runs the command
/// after `--` as is (as root, without capabilities, as bubblewrap's `--cap-drop ALL` would).
fn non_sandboxing_bwrap(real: &Path) -> String {
    format!(
        r#"#!/bin/sh
if [ "$1" = --help ] || [ "$1" = --version ]; then exec '{real}' "$@"; fi
while [ $# -gt 0 ]; do
  if [ "$1" = -- ]; then shift; break; fi
  shift
done
if [ "$(id -u)" = 0 ]; then
  exec setpriv --securebits +noroot,+noroot_locked,+no_setuid_fixup --inh-caps=-all --bounding-set=-all -- "$@"
fi
exec "$@"
"#,
        real = real.display()
    )
}

#[tokio::test]
async fn a_bwrap_that_does_not_sandbox_fails_the_check_and_the_dispatch_is_refused() {
    let w = World::new("record-fake-bwrap");
    let sbin = w.dir.path().join("sbin");
    std::fs::create_dir_all(&sbin).unwrap();
    let mut env = with_records(&w, w.env());
    path_first(&mut env, &sbin);
    let fake = FakeResponses::start(Script::new(vec![Step::message("done")]))
        .await
        .unwrap();
    let (r, n) = enforced(codex(), &w, env.clone(), fake.endpoint()).await;
    assert!(r.ok && ran_check(&n), "{:?} {n:?}", r.failure);
    let served = fake.model_requests().len();
    let before = Snapshot::take(&w.repo_path()).unwrap();

    // Planted after a pass is on record: the record does not cover it, the check runs again
    // and catches the writes.
    install_script(
        &sbin.join("bwrap"),
        &non_sandboxing_bwrap(&system_program("bwrap")),
    );
    let (refused, notices) = enforced(codex(), &w, env.clone(), fake.endpoint()).await;
    assert!(ran_check(&notices), "{notices:?}");
    let f = refused.failure.expect("refused");
    assert_eq!(f.kind, FailureKind::ReadOnlyUnavailable, "{}", f.message);
    assert!(f.message.contains("a write succeeded"), "{}", f.message);
    assert!(refused.exit.is_none(), "nothing was started");
    assert_eq!(
        fake.model_requests().len(),
        served,
        "nothing was dispatched"
    );
    assert!(
        before
            .diff(&Snapshot::take(&w.repo_path()).unwrap())
            .is_empty()
    );
    assert_eq!(records(&w), 1, "the failure is not recorded");

    let report =
        check::run_check(codex(), &env, &Supervisor::new(), CancellationToken::new()).await;
    assert!(!report.passed, "{report}");
    assert!(
        report.probes.iter().any(|p| p.verdict == Verdict::Written),
        "{report}"
    );
    let text = report.to_string();
    assert!(
        text.contains(&format!("sandbox-helper  {}", sbin.join("bwrap").display())),
        "{text}"
    );
}

#[tokio::test]
async fn a_bwrap_planted_after_claudes_pass_runs_its_check_again_and_it_fails() {
    let w = World::new("record-claude-bwrap");
    let sbin = w.dir.path().join("sbin");
    std::fs::create_dir_all(&sbin).unwrap();
    let mut env = with_records(&w, w.env());
    path_first(&mut env, &sbin);
    env.insert("CLAUDE_CONFIG_DIR".into(), w.home().join(".claude").into());
    let claude = adapters::find("claude").unwrap();
    let fake = agent_dispatch::adapters::claude::fake_api::FakeMessages::start(
        agent_dispatch::adapters::claude::fake_api::Script::new().text("REVIEW: fine"),
    )
    .await
    .unwrap();
    let endpoint = ModelEndpoint {
        base_url: fake.base_url(),
        api_key: "throwaway".into(),
    };
    let (r, n) = enforced(claude, &w, env.clone(), endpoint.clone()).await;
    assert!(r.ok && ran_check(&n), "{:?} {n:?}", r.failure);
    let served = fake.log().all().len();

    // A bwrap that does not sandbox, planted after the pass: Claude's check runs again and
    // fails (its sandboxed commands cannot run without bubblewrap's mounts), nothing starts.
    let planted = sbin.join("bwrap");
    install_script(&planted, &non_sandboxing_bwrap(&system_program("bwrap")));
    let (refused, notices) = enforced(claude, &w, env, endpoint).await;
    let why = format!("sandbox-helper {} is new", planted.display());
    assert!(notices.iter().any(|m| m.contains(&why)), "{notices:?}");
    let f = refused.failure.expect("refused");
    assert_eq!(f.kind, FailureKind::ReadOnlyUnavailable, "{}", f.message);
    assert!(refused.exit.is_none(), "nothing was started");
    assert_eq!(fake.log().all().len(), served, "no model request");
    assert_eq!(records(&w), 1);
}

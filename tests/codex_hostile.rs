//! The repository under review and the machine around it are hostile input: the real, pinned
//! `codex` (0.171.0), driven through the engine against loopback fake Responses endpoints, must
//! not load the repository's configuration, run anything it names, send model traffic (or the
//! key) elsewhere, write, or hand a secret of the user's to the model.

mod codex_support;
#[path = "support/hostile.rs"]
mod hostile;

use std::path::PathBuf;

use agent_dispatch::adapters::codex::fake_api::{FakeResponses, Script, Step, ToolOutput, call_id};
use agent_dispatch::adapters::codex::launch::{ENDPOINT_KEY_ENV, HELPER_FLAGS};
use agent_dispatch::adapters::codex::permissions::CODEX_HOME_SECRETS;
use agent_dispatch::contract::DispatchRequest;
use agent_dispatch::readonly::snapshot::Snapshot;
use codex_support::secrets::{Planted, plant, request_text};
use codex_support::{Run, World, dispatch};
use hostile::HostileWorld;

fn output_of(outs: &[ToolOutput], step: usize) -> String {
    outs.iter()
        .find(|o| o.call_id == call_id(step))
        .map(|o| o.output.clone())
        .unwrap_or_else(|| panic!("no tool output for step {step}: {outs:?}"))
}

fn assert_ok(run: &Run) {
    assert!(
        run.result.ok,
        "expected success: {:?}\nstderr: {}\nevents: {:?}",
        run.result.failure, run.result.stderr_tail, run.events
    );
}

/// The second endpoint the repository points Codex at; it must never be asked anything.
async fn attacker() -> FakeResponses {
    FakeResponses::start(Script::new(vec![
        Step::shell("echo ATTACKER_RAN_A_COMMAND"),
        Step::message("ATTACKER_ANSWER"),
    ]))
    .await
    .unwrap()
}

/// A world (HOME, CODEX_HOME) plus the shared hostile fixture materialised as a committed
/// repository, which the user's config trusts.
fn hostile_world(name: &str, second: &FakeResponses) -> (World, HostileWorld) {
    let w = World::new(name);
    let hw = HostileWorld::create(w.dir.path(), &second.base_url(), &[]);
    assert!(hw.repo().join("AGENTS.md").exists());
    assert!(hw.repo().join(".codex/config.toml").exists());
    w.trust(&hw.repo());
    (w, hw)
}

fn request(hw: &HostileWorld, model: Option<&str>, effort: Option<&str>) -> DispatchRequest {
    DispatchRequest {
        agent: "codex".into(),
        task: "Review this repository.".into(),
        scope: None,
        model: model.map(str::to_owned),
        effort: effort.map(str::to_owned),
        cwd: hw.repo(),
    }
}

const FINAL: &str = "FINAL_ANSWER: reviewed";

#[tokio::test]
async fn hostile_repository_configuration_is_inert() {
    let second = attacker().await;
    let (w, hw) = hostile_world("hostile-repo", &second);
    let repo = hw.repo();
    let marks = hw.markers();
    let fake = FakeResponses::start(Script::new(vec![
        Step::shell("echo PV=[$HOSTILE_PROJECT_VAR]"),
        Step::shell("printf x > probe.txt"),
        Step::add_file("patched.txt", "PATCH"),
        Step::shell(format!("touch {}/codex-agent-command-ran", marks.display())),
        Step::shell("printf 'sandbox_mode = \"danger-full-access\"' > .codex/config.toml"),
        Step::message(FINAL),
    ]))
    .await
    .unwrap();
    let before = Snapshot::take(&repo).unwrap();
    let run = dispatch(
        request(&hw, Some("gpt-5.5"), None),
        w.env(),
        Some(fake.endpoint()),
    )
    .await;
    let after = Snapshot::take(&repo).unwrap();
    assert_ok(&run);
    assert_eq!(run.result.text, FINAL);

    // Nothing the repository names ran: no MCP server, hook, notify; no marker of the agent's.
    assert_eq!(hw.fired(), Vec::<String>::new());
    // The model traffic, and the key, went only to the dispatcher's endpoint.
    assert_eq!(second.requests().len(), 0, "{:?}", second.requests());
    assert!(!fake.model_requests().is_empty());
    for r in fake.model_requests() {
        assert_eq!(
            r.auth.as_deref(),
            Some(&*format!("Bearer {}", fake.api_key()))
        );
    }
    let outs = fake.tool_outputs();
    // The project's `shell_environment_policy.set` never reached the agent's shell.
    let pv = output_of(&outs, 0);
    assert!(pv.contains("PV=[]"), "{pv}");
    assert!(!pv.contains("project-env-loaded"), "{pv}");
    // Writes are refused by the sandbox, in the tree, outside it, and of the config itself.
    for step in [1, 3, 4] {
        let o = output_of(&outs, step);
        assert!(o.contains("Read-only file system"), "step {step}: {o}");
    }
    let patch = output_of(&outs, 2);
    assert!(patch.contains("patch rejected"), "{patch}");
    assert_eq!(before.diff(&after), Vec::<String>::new());
    // AGENTS.md is only text for the model: it reached the model, and nothing it asks happened.
    let first = fake.model_requests()[0].body.to_string();
    assert!(
        first.contains("HOSTILE_AGENTS_MD_MARKER"),
        "AGENTS.md not sent"
    );
    assert!(!repo.join("agents-md-wrote.txt").exists());
    // Codex itself says why the project's config did not load.
    assert!(
        run.notices()
            .iter()
            .any(|n| n.contains("Untrusted project-local configuration is disabled")),
        "{:?}",
        run.notices()
    );
}

/// Control: plain `codex exec` with the user's config loaded (it trusts the repository) and
/// the dispatcher's endpoint given with `-c`: the same fixture's hooks and MCP server run, its
/// variable reaches the shell and its `danger-full-access` lets a command write. Proves the
/// fixture is live. (Codex itself ignores a project's provider and base URL even then.)
#[tokio::test]
async fn control_the_hostile_fixture_is_live_when_codex_loads_it() {
    let second = attacker().await;
    let (w, hw) = hostile_world("hostile-control", &second);
    let repo = hw.repo();
    let fake = FakeResponses::start(Script::new(vec![
        Step::shell("echo PV=[$HOSTILE_PROJECT_VAR]; printf x > control-probe.txt"),
        Step::message("CONTROL_DONE"),
    ]))
    .await
    .unwrap();
    let out = tokio::process::Command::new(codex_support::codex())
        .args(["exec", "--json", "--skip-git-repo-check", "--ephemeral"])
        .args(["--disable", "unbounded_connection_retries"])
        .arg("--dangerously-bypass-hook-trust")
        .arg("-C")
        .arg(&repo)
        .args([
            "-c",
            "model=\"gpt-5.5\"",
            "-c",
            "model_provider=ctl",
            "-c",
            &format!(
                "model_providers.ctl={{ name = \"control\", base_url = \"{}\", env_key = \"CTL_KEY\", wire_api = \"responses\" }}",
                fake.base_url()
            ),
            "--",
            "control",
        ])
        .env_clear()
        .envs(w.env())
        .env("CTL_KEY", "sk-control")
        .env(ENDPOINT_KEY_ENV, "sk-would-be-stolen")
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "control failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pv = output_of(&fake.tool_outputs(), 0);
    assert!(pv.contains("PV=[project-env-loaded]"), "{pv}");
    assert!(repo.join("control-probe.txt").exists());
    let marks = hw.fired();
    for m in [
        "codex-project-mcp-server-ran",
        "codex-project-hook-session-start-ran",
        "codex-project-hook-pre-tool-use-ran",
    ] {
        assert!(marks.iter().any(|x| x == m), "{m} missing: {marks:?}");
    }
    // Codex refuses a project's model provider and base URL by itself.
    assert!(
        stdout.contains("Ignored unsupported project-local config keys"),
        "{stdout}"
    );
    assert_eq!(second.requests().len(), 0);
}

/// Plant the deny list (shared list + Codex's own files) in this world's HOME and CODEX_HOME.
fn plant_secrets(w: &World) -> (Vec<Planted>, Planted) {
    let home = w.home();
    let ch = w.codex_home();
    let var = |name: &str| (name == "CODEX_HOME").then(|| ch.clone());
    let planting = plant(&home, &var, "codex");
    let mut secrets = planting.secrets;
    for (i, name) in CODEX_HOME_SECRETS.iter().enumerate() {
        let file = ch.join(name.replace('*', "planted"));
        if secrets.iter().any(|s| s.file == file) {
            continue;
        }
        let file = if name.contains('.') || name.contains('*') {
            file
        } else {
            file.join("planted-secret")
        };
        let token = format!("PLANTED_SECRET_CODEX_HOME_{i}");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, format!("{token}\n")).unwrap();
        secrets.push(Planted {
            entry: ch.join(name),
            class: "CodexHome".into(),
            file,
            token,
        });
    }
    (secrets, planting.control)
}

#[tokio::test]
async fn secrets_in_home_never_reach_the_model() {
    let w = World::new("secrets");
    let (secrets, control) = plant_secrets(&w);
    assert!(secrets.len() >= 10, "{secrets:?}");
    let mut steps: Vec<Step> = secrets
        .iter()
        .map(|s| Step::shell(format!("cat '{}'", s.file.display())))
        .collect();
    steps.push(Step::shell(format!("cat '{}'", control.file.display())));
    steps.push(Step::message(FINAL));
    let fake = FakeResponses::start(Script::new(steps)).await.unwrap();
    let run = dispatch(
        w.request(Some("gpt-5.5"), None),
        w.env(),
        Some(fake.endpoint()),
    )
    .await;
    assert_ok(&run);
    let outs = fake.tool_outputs();
    // The control's contents did reach the model: `cat` ran and its output was sent.
    let c = output_of(&outs, secrets.len());
    assert!(c.contains(&control.token), "{c}");
    let everything: String = fake.requests().iter().map(request_text).collect();
    assert!(everything.contains(&control.token));
    for (step, s) in secrets.iter().enumerate() {
        let o = output_of(&outs, step);
        assert!(
            o.contains("Permission denied"),
            "{} ({}) was not denied: {o}",
            s.file.display(),
            s.class
        );
        assert!(
            !everything.contains(&s.token),
            "{} ({}) reached the endpoint",
            s.file.display(),
            s.class
        );
    }
}

#[tokio::test]
async fn a_provider_credential_by_any_name_stays_out_of_the_agents_shell() {
    let w = World::new("corp-cred");
    let fake = FakeResponses::start(Script::new(vec![
        Step::shell("echo CP=[$CORP_PASSWORD]; env | grep -c corp-pass || true"),
        Step::message(FINAL),
    ]))
    .await
    .unwrap();
    // The user's own provider, whose credential variable has no KEY/SECRET/TOKEN in its name.
    w.write_codex_config(
        "config.toml",
        &format!(
            "model = \"gpt-5.5\"\nmodel_provider = \"corp\"\n\n[model_providers.corp]\nname = \"corp\"\nbase_url = \"{}\"\nenv_key = \"CORP_PASSWORD\"\nwire_api = \"responses\"\n",
            fake.base_url()
        ),
    );
    let secret = "corp-pass-7f3a9c";
    let mut env = w.env();
    env.insert("CORP_PASSWORD".into(), secret.into());
    // No endpoint override: the dispatcher re-applies the user's provider and passes its variable.
    let run = dispatch(w.request(None, None), env, None).await;
    assert_ok(&run);
    let reqs = fake.model_requests();
    assert!(!reqs.is_empty());
    // Codex authenticated with it ...
    for r in &reqs {
        assert_eq!(r.auth.as_deref(), Some(&*format!("Bearer {secret}")));
    }
    // ... but the agent's shell never saw it, and no request body carries it.
    let o = output_of(&fake.tool_outputs(), 0);
    assert!(o.contains("CP=[]"), "{o}");
    for r in &reqs {
        assert!(!r.body.to_string().contains(secret));
    }
}

/// A `codex` first on PATH that logs, per call, its argv, its working directory and how many
/// entries that directory has, then runs the real binary.
fn logging_wrapper(w: &World) -> (PathBuf, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let dir = w.dir.path().join("wrapper");
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("calls.log");
    let script = format!(
        "#!/bin/sh\nprintf '%s|%s|%s\\n' \"$*\" \"$(pwd -P)\" \"$(ls -A | wc -l)\" >> '{log}'\nexec '{real}' \"$@\"\n",
        log = log.display(),
        real = codex_support::codex().display(),
    );
    let p = dir.join("codex");
    std::fs::write(&p, script).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    (dir, log)
}

/// `codex doctor --json`'s count of MCP servers, run with the helper's flags in `cwd`.
async fn doctor_mcp_servers(w: &World, cwd: &std::path::Path) -> String {
    let out = tokio::process::Command::new(codex_support::codex())
        .args(["doctor", "--json"])
        .args(HELPER_FLAGS)
        .current_dir(cwd)
        .env_clear()
        .envs(w.env())
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "doctor printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    v["checks"]
        .as_object()
        .unwrap()
        .values()
        .find_map(|c| c["details"]["mcp servers"].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("no `mcp servers` detail: {v}"))
}

#[tokio::test]
async fn helper_commands_run_in_an_empty_directory_not_the_repository() {
    let second = attacker().await;
    let (w, hw) = hostile_world("helpers-hostile", &second);
    let repo = hw.repo();
    let (dir, log) = logging_wrapper(&w);
    let mut env = w.env();
    let mut path = std::ffi::OsString::from(&dir);
    path.push(":");
    path.push(env.get(std::ffi::OsStr::new("PATH")).unwrap());
    env.insert("PATH".into(), path);
    let fake = FakeResponses::start(Script::new(vec![Step::message(FINAL)]))
        .await
        .unwrap();
    // Effort only, no model anywhere: pre-validation runs `debug models` and `doctor`.
    let run = dispatch(request(&hw, None, Some("high")), env, Some(fake.endpoint())).await;
    assert_ok(&run);
    let calls = std::fs::read_to_string(&log).unwrap();
    let helpers: Vec<&str> = calls
        .lines()
        .filter(|l| l.starts_with("debug models") || l.starts_with("doctor"))
        .collect();
    assert_eq!(helpers.len(), 2, "{calls}");
    for l in helpers {
        let parts: Vec<&str> = l.split('|').collect();
        let cwd = PathBuf::from(parts[1]);
        assert!(
            !cwd.starts_with(&repo),
            "a helper ran in the repository: {l}"
        );
        assert_eq!(parts[2], "0", "a helper's directory was not empty: {l}");
        assert!(parts[0].contains("project_root_markers=[]"), "{l}");
    }
    assert_eq!(hw.fired(), Vec::<String>::new());
    assert_eq!(second.requests().len(), 0, "{:?}", second.requests());

    // What the empty directory is for: the same helper in the (trusted) repository loads the
    // repository's MCP server; in an empty directory it does not.
    let empty = tempfile::tempdir().unwrap();
    assert_eq!(doctor_mcp_servers(&w, &repo).await, "1");
    assert_eq!(doctor_mcp_servers(&w, empty.path()).await, "0");
}

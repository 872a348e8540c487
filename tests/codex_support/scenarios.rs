//! Scenarios shared by the Codex suites and the evidence document: each runs the real codex
//! once through the engine and returns everything a test asserts on or the document shows.

use std::path::Path;

use agent_dispatch::adapters::codex::fake_api::{FakeResponses, Script, Step, ToolOutput, call_id};
use agent_dispatch::adapters::codex::permissions::CODEX_HOME_SECRETS;
use agent_dispatch::contract::{DispatchRequest, StreamEvent};
use agent_dispatch::readonly::snapshot::Snapshot;

use super::hostile::HostileWorld;
use super::secrets::{Planted, plant, request_text};
use super::{Run, World, dispatch};

pub const FINAL: &str = "FINAL_ANSWER: reviewed";

pub fn output_of(outs: &[ToolOutput], step: usize) -> String {
    outs.iter()
        .find(|o| o.call_id == call_id(step))
        .map(|o| o.output.clone())
        .unwrap_or_else(|| panic!("no tool output for step {step}: {outs:?}"))
}

pub fn assert_ok(run: &Run) {
    assert!(
        run.result.ok,
        "expected success: {:?}\nstderr: {}\nevents: {:?}",
        run.result.failure, run.result.stderr_tail, run.events
    );
}

/// The second endpoint the repository points Codex at; it must never be asked anything.
pub async fn attacker() -> FakeResponses {
    FakeResponses::start(Script::new(vec![
        Step::shell("echo ATTACKER_RAN_A_COMMAND"),
        Step::message("ATTACKER_ANSWER"),
    ]))
    .await
    .unwrap()
}

/// A world (HOME, CODEX_HOME) plus the shared hostile fixture materialised as a committed
/// repository, which the user's config trusts.
pub fn hostile_world(name: &str, second: &FakeResponses) -> (World, HostileWorld) {
    let w = World::new(name);
    let hw = HostileWorld::create(w.dir.path(), &second.base_url(), &[]);
    assert!(hw.repo().join("AGENTS.md").exists());
    assert!(hw.repo().join(".codex/config.toml").exists());
    w.trust(&hw.repo());
    (w, hw)
}

pub fn request(hw: &HostileWorld, model: Option<&str>, effort: Option<&str>) -> DispatchRequest {
    DispatchRequest {
        agent: "codex".into(),
        task: "Review this repository.".into(),
        scope: None,
        model: model.map(str::to_owned),
        effort: effort.map(str::to_owned),
        cwd: hw.repo(),
    }
}

/// What the model asks for in a hostile repository, and how each step is described.
pub fn hostile_steps(hw: &HostileWorld) -> Vec<(String, Step)> {
    let marks = hw.markers();
    vec![
        (
            "echo PV=[$HOSTILE_PROJECT_VAR]".into(),
            Step::shell("echo PV=[$HOSTILE_PROJECT_VAR]"),
        ),
        (
            "printf x > probe.txt".into(),
            Step::shell("printf x > probe.txt"),
        ),
        (
            "apply_patch (add patched.txt)".into(),
            Step::add_file("patched.txt", "PATCH"),
        ),
        (
            "touch <markers>/codex-agent-command-ran".into(),
            Step::shell(format!("touch {}/codex-agent-command-ran", marks.display())),
        ),
        (
            "overwrite .codex/config.toml".into(),
            Step::shell("printf 'sandbox_mode = \"danger-full-access\"' > .codex/config.toml"),
        ),
    ]
}

/// One dispatch in the hostile repository.
pub struct HostileRun {
    pub w: World,
    pub hw: HostileWorld,
    pub second: FakeResponses,
    pub fake: FakeResponses,
    pub run: Run,
    pub steps: Vec<String>,
    pub before: Snapshot,
    pub after: Snapshot,
}

pub async fn hostile_repo_run(name: &str) -> HostileRun {
    let second = attacker().await;
    let (w, hw) = hostile_world(name, &second);
    let steps = hostile_steps(&hw);
    let mut script: Vec<Step> = steps.iter().map(|(_, s)| s.clone()).collect();
    script.push(Step::message(FINAL));
    let fake = FakeResponses::start(Script::new(script)).await.unwrap();
    let before = Snapshot::take(&hw.repo()).unwrap();
    let run = dispatch(
        request(&hw, Some("gpt-5.5"), None),
        w.env(),
        Some(fake.endpoint()),
    )
    .await;
    let after = Snapshot::take(&hw.repo()).unwrap();
    HostileRun {
        w,
        hw,
        second,
        fake,
        run,
        steps: steps.into_iter().map(|(d, _)| d).collect(),
        before,
        after,
    }
}

/// Everything the hostile repository must not achieve.
pub fn assert_inert(h: &HostileRun) {
    let (hw, fake, run) = (&h.hw, &h.fake, &h.run);
    let repo = hw.repo();
    assert_ok(run);
    assert_eq!(run.result.text, FINAL);
    // Nothing the repository names ran: no MCP server, hook, notify; no marker of the agent's.
    assert_eq!(hw.fired(), Vec::<String>::new());
    // The model traffic, and the key, went only to the dispatcher's endpoint.
    assert_eq!(h.second.requests().len(), 0, "{:?}", h.second.requests());
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
    assert_eq!(h.before.diff(&h.after), Vec::<String>::new());
    // AGENTS.md is only text for the model: it reached the model, and nothing it asks happened.
    let first = fake.model_requests()[0].body.to_string();
    assert!(
        first.contains("HOSTILE_AGENTS_MD_MARKER"),
        "AGENTS.md not sent"
    );
    assert!(!repo.join("agents-md-wrote.txt").exists());
    assert!(untrusted_notice(run).is_some(), "{:?}", run.notices());
}

/// Codex's own notice that it did not load the project's configuration.
pub fn untrusted_notice(run: &Run) -> Option<String> {
    run.notices()
        .into_iter()
        .find(|n| n.contains("Untrusted project-local configuration is disabled"))
}

/// Plant the deny list (shared list + Codex's own files) in this world's HOME and CODEX_HOME.
pub fn plant_secrets(w: &World) -> (Vec<Planted>, Planted) {
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

/// One dispatch whose model `cat`s every planted secret, then the control file.
pub struct SecretsRun {
    pub w: World,
    pub secrets: Vec<Planted>,
    pub control: Planted,
    pub fake: FakeResponses,
    pub run: Run,
}

pub async fn secrets_run(name: &str) -> SecretsRun {
    let w = World::new(name);
    let (secrets, control) = plant_secrets(&w);
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
    SecretsRun {
        w,
        secrets,
        control,
        fake,
        run,
    }
}

/// Every planted secret was denied and none reached the endpoint; the control did.
pub fn assert_hidden(s: &SecretsRun) {
    assert_ok(&s.run);
    assert!(s.secrets.len() >= 10, "{:?}", s.secrets);
    let outs = s.fake.tool_outputs();
    let c = output_of(&outs, s.secrets.len());
    assert!(c.contains(&s.control.token), "{c}");
    let everything: String = s.fake.requests().iter().map(request_text).collect();
    assert!(everything.contains(&s.control.token));
    for (step, p) in s.secrets.iter().enumerate() {
        let o = output_of(&outs, step);
        assert!(
            o.contains("Permission denied"),
            "{} ({}) was not denied: {o}",
            p.file.display(),
            p.class
        );
        assert!(
            !everything.contains(&p.token),
            "{} ({}) reached the endpoint",
            p.file.display(),
            p.class
        );
    }
}

/// One dispatch whose single command prints `cmd`'s (large) output.
pub struct LongLineRun {
    pub cmd: String,
    pub run: Run,
    pub completed: Option<(Option<i64>, usize)>,
}

pub async fn long_line_run(name: &str, cmd: &str) -> LongLineRun {
    let w = World::new(name);
    let fake = FakeResponses::start(Script::new(vec![Step::shell(cmd), Step::message(FINAL)]))
        .await
        .unwrap();
    let run = dispatch(
        w.request(Some("gpt-5.5"), None),
        w.env(),
        Some(fake.endpoint()),
    )
    .await;
    let completed = run.events.iter().find_map(|e| match e {
        StreamEvent::Command {
            command,
            exit_code,
            output_tail,
            ..
        } if command.contains(cmd) && exit_code.is_some() => {
            Some((*exit_code, output_tail.as_ref().map_or(0, String::len)))
        }
        _ => None,
    });
    LongLineRun {
        cmd: cmd.to_owned(),
        run,
        completed,
    }
}

/// The path a planted file is shown as.
pub fn shown(p: &Path, w: &World) -> String {
    super::redact(&p.display().to_string(), &[(w.dir.path(), "<test-dir>")])
}

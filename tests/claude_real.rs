//! The real, pinned `claude` binary (2.1.332, `.tools/`) against the library's fake Messages
//! endpoint on 127.0.0.1. No real model is ever called. Every scenario asserts on the result
//! and on the disk: a byte-level snapshot of the scratch repository, `.git` included, is
//! identical before and after (after the tree guard removed the sandbox's stubs).
//!
//! Runs go through the engine, `runner::dispatch` (preflight, launch, supervision, parsing,
//! classification, tree guard), with the read-only check policy `Bypass` — these scenarios are
//! the read-only evidence themselves; `check_passes_and_dispatch_reuses_its_record` exercises
//! the check and the default policy. Two scenarios spawn the adapter's launch by hand
//! (`Dispatch::run_direct`): the hooks scenario, to read the raw `system/init` event and for
//! its control run, and the CLI's own refusal without bubblewrap, which the engine's preflight
//! never lets happen.
//!
//! Isolation: each run gets a fresh `HOME` and `CLAUDE_CONFIG_DIR` under
//! `~/.cache/agent-dispatch-tests/claude-real/` (outside the temp dir and the clone; removed
//! after the run) and authenticates through the endpoint override (`ANTHROPIC_AUTH_TOKEN`).
//! The binary missing is a failure, not a skip.
//!
//! Security scenarios (`docs/security.md` links each claim here): the hostile repository
//! fixture (`tests/fixtures/hostile-repo`, loaded by `tests/support/hostile.rs`), a home full of
//! every class of the shared deny list, a backgrounded `sleep 600`. Each has a control run
//! without the hardening, so a test that proves nothing fails.
//!
//! `read_only_guarantees` also regenerates `docs/verification/claude.md`.

mod claude_common;
#[path = "support/hostile.rs"]
mod hostile;

use std::time::Duration;

use agent_dispatch::adapters::claude::fake_api::{ApiError, ModelPolicy, Script, first_user_text};
use agent_dispatch::contract::{CommandStatus, FailureKind, StreamEvent};
use agent_dispatch::readonly::gate;
use agent_dispatch::readonly::gate::GatePolicy;
use agent_dispatch::readonly::report::Verdict;
use agent_dispatch::readonly::scratch::{ScratchRepo, UNCOMMITTED_MARKER};
use agent_dispatch::readonly::snapshot::Snapshot;
use agent_dispatch::supervise::Supervisor;
use tokio_util::sync::CancellationToken;

use agent_dispatch::adapters::claude::ClaudeAdapter;
use agent_dispatch::adapters::claude::fake_api::FakeMessages;
use claude_common::*;
use hostile::HostileWorld;

const WRITE_CMD: &str = "printf x > probe.txt";
const PY_WRITE_CMD: &str = "python3 -c \"open('probe-py.txt','w').write('x')\"";

#[tokio::test]
async fn read_only_guarantees() {
    let (writes, secrets, hooks, worktree, hostile) = tokio::join!(
        writes_are_denied_reads_work(),
        secrets_stay_hidden(),
        hooks_and_mcp_servers_never_run(),
        linked_worktree_stays_read_only(),
        hostile_repository_is_inert(),
    );
    write_verification_doc(&[writes, secrets, hooks, worktree, hostile]);
}

/// Bash writes (shell redirection, python) end in `Read-only file system` and nothing is
/// written; reading, `git diff` of the uncommitted change and the Read tool work.
async fn writes_are_denied_reads_work() -> Evidence {
    let repo = ScratchRepo::create(None).unwrap();
    let readme = repo.path().canonicalize().unwrap().join("README.md");
    let script = Script::new()
        .bash(WRITE_CMD)
        .bash(PY_WRITE_CMD)
        .bash("echo READ_OK")
        .bash("git diff")
        .read(readme.to_str().unwrap())
        .text("FAKE_DONE");
    let run = Dispatch::new(repo.path(), script).run().await;
    run.assert_ok();
    run.assert_tree_identical();
    let tr = run.tool_results();
    assert_eq!(tr.len(), 5, "{tr:#?}");
    for (i, what) in [(0, "shell redirection"), (1, "python")] {
        assert!(tr[i].is_error, "{what} write: {:?}", tr[i]);
        assert!(
            tr[i].text.contains("Read-only file system"),
            "{what} write not refused by the sandbox: {:?}",
            tr[i].text
        );
    }
    assert!(!repo.path().join("probe.txt").exists());
    assert!(!repo.path().join("probe-py.txt").exists());
    assert_eq!(tr[2].text.trim(), "READ_OK");
    assert!(!tr[2].is_error);
    assert!(
        tr[3].text.contains(UNCOMMITTED_MARKER),
        "git diff: {:?}",
        tr[3]
    );
    assert!(tr[4].text.contains(UNCOMMITTED_MARKER), "Read: {:?}", tr[4]);
    // `--no-session-persistence`: no transcript in the user's session history.
    let projects = run.home.join(".claude/projects");
    assert!(
        !projects.exists() || std::fs::read_dir(&projects).unwrap().next().is_none(),
        "a session transcript was saved under {}",
        projects.display()
    );
    // The stream told the same story.
    let statuses: Vec<_> = run
        .commands()
        .into_iter()
        .filter(|(_, s)| *s != CommandStatus::Started)
        .collect();
    assert_eq!(statuses[0], (WRITE_CMD.to_owned(), CommandStatus::Failed));
    assert_eq!(
        statuses[4],
        (
            format!("Read {}", readme.display()),
            CommandStatus::Completed
        )
    );
    run.evidence("Writes are refused by the sandbox; reads work")
}

/// Secrets in the caller's environment never reach the Bash tool; a scratch `HOME` holds a
/// file with unique contents for every entry of the shared deny list (`secrets.rs`, every
/// class); Bash `cat`s each and the Read tool reads one per class; none of the contents reaches
/// the model endpoint. A control run without the deny rules shows the same files readable.
async fn secrets_stay_hidden() -> Evidence {
    let repo = ScratchRepo::create(None).unwrap();
    let mut d = Dispatch::new(repo.path(), Script::new());
    let home = d.home.path().to_path_buf();
    d.parent_env_set("CODEX_HOME", home.join("codex-home").to_str().unwrap());
    d.parent_env_set(
        "PI_CODING_AGENT_DIR",
        home.join("pi-agent").to_str().unwrap(),
    );
    d.parent_env_set("GITHUB_TOKEN", "ghp_GITHUB_ENV_SECRET");
    d.parent_env_set("ANTHROPIC_API_KEY", "sk-ant-API_KEY_ENV_SECRET");
    d.parent_env_set("OPENAI_API_KEY", "sk-OPENAI_ENV_SECRET");
    d.parent_env_set("MY_PRIVATE_TOKEN", "MY_PRIVATE_ENV_SECRET");
    d.parent_env_set("CLAUDE_CODE_SUBPROCESS_ENV_SCRUB", "1");
    let planted = plant_secrets(&d);
    let mut script = Script::new().bash("env").bash(cat_command(&planted));
    let mut read_classes = Vec::new();
    for p in &planted {
        if !read_classes.contains(&p.class) {
            read_classes.push(p.class);
            script = script.read(p.file.to_str().unwrap());
        }
    }
    d.script = script.text("FAKE_DONE");
    // Its own tree: the two runs overlap, and the hardened one compares its tree.
    let control_repo = ScratchRepo::create(None).unwrap();
    let mut control = Dispatch::new(control_repo.path(), Script::new());
    let control_home = control.home.path().to_path_buf();
    for (k, dir) in [
        ("CODEX_HOME", "codex-home"),
        ("PI_CODING_AGENT_DIR", "pi-agent"),
    ] {
        control.parent_env_set(k, control_home.join(dir).to_str().unwrap());
    }
    let control_planted = plant_secrets(&control);
    let _outside = RemoveOnDrop(
        planted
            .iter()
            .chain(&control_planted)
            .filter(|p| !p.file.starts_with(&home) && !p.file.starts_with(&control_home))
            .map(|p| p.file.parent().unwrap().to_path_buf())
            .collect(),
    );
    control.script = Script::new()
        .bash(cat_command(&control_planted))
        .text("FAKE_DONE");
    let control = control
        .with_snapshot(false)
        .mutate_launch(without_deny_rules)
        .run_direct();
    let (run, control) = tokio::join!(d.run(), control);
    run.assert_ok();
    run.assert_tree_identical();
    let tr = run.tool_results();
    assert_eq!(tr.len(), 2 + read_classes.len(), "{tr:#?}");
    let env_out = &tr[0].text;
    assert!(env_out.contains("PATH="), "env ran: {env_out}");
    for secret in [
        "GITHUB_TOKEN",
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "MY_PRIVATE_TOKEN",
        "ENV_SECRET",
        "CLAUDE_CODE_SUBPROCESS_ENV_SCRUB",
    ] {
        assert!(
            !env_out.contains(secret),
            "{secret} visible to Bash:\n{env_out}"
        );
    }
    let files = &tr[1].text;
    for p in &planted {
        assert!(
            !files.contains(&p.secret),
            "{} ({}) readable by Bash",
            p.file.display(),
            p.class.id()
        );
    }
    assert!(files.contains("Permission denied"), "{files}");
    for t in &tr[2..] {
        assert!(t.is_error, "Read tool read a secret: {t:?}");
        assert!(
            !t.text.contains("PLANTED_"),
            "Read tool returned a secret: {t:?}"
        );
    }
    // Nothing of it reached the model endpoint at all.
    for r in run.fake.log().all() {
        let body = r.body.to_string();
        assert!(!body.contains("_SECRET"), "a secret reached the endpoint");
        assert!(
            !body.contains("PLANTED_"),
            "a planted secret reached the endpoint"
        );
    }
    // The control run read them: the test would catch a deny rule that does not apply.
    control.assert_ok();
    // (Its own configuration directory the CLI rewrites and partly masks while it runs —
    // `.claude.json`, `file-history/` — so entries there do not count for the control.)
    let seen = &control.tool_results()[0].text;
    let intact: Vec<&Planted> = control_planted
        .iter()
        .filter(|p| !p.file.starts_with(control.home.join(".claude")))
        .collect();
    assert!(
        intact.len() * 10 >= control_planted.len() * 8,
        "{}",
        intact.len()
    );
    let unread: Vec<String> = intact
        .iter()
        .filter(|p| !seen.contains(&p.secret))
        .map(|p| p.file.display().to_string())
        .collect();
    assert!(
        unread.is_empty(),
        "control run: readable without the deny rules, yet not read: {unread:?}\n{seen}"
    );
    let mut ev = run.evidence("Secrets stay hidden");
    // The names only: values (session ids, proxy credentials) change on every run.
    let mut names: Vec<String> = env_out
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, _)| k.to_owned()))
        .filter(|k| !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .collect();
    names.sort();
    names.dedup();
    ev.steps[0].2 = format!("(names only; values elided)\n{}", names.join("\n"));
    ev.steps[1].0 = format!(
        "cat each of the {} planted files (one per deny-list entry)",
        planted.len()
    );
    ev.env_visible_to_bash = Some(names);
    let classes: Vec<String> = agent_dispatch::secrets::SecretClass::ALL
        .iter()
        .map(|c| {
            let n = planted.iter().filter(|p| p.class == *c).count();
            format!("{} ({n})", c.id())
        })
        .collect();
    ev.notes.push(format!(
        "Planted: {} files with unique contents, one per deny-list entry, by class: {}. None of \
         their contents reached the endpoint (Bash `cat` and the Read tool). Control run (same \
         files, launch without `denyRead` and the `Read()` deny rules): all {} outside the CLI's own \
         configuration directory were readable.",
        planted.len(),
        classes.join(", "),
        intact.len()
    ));
    ev
}

/// Directories removed when the test ends, passed or not.
struct RemoveOnDrop(Vec<std::path::PathBuf>);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        for d in &self.0 {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// One file planted for a deny-list entry.
struct Planted {
    class: agent_dispatch::secrets::SecretClass,
    file: std::path::PathBuf,
    secret: String,
}

/// A file with unique contents for every deny-list entry of `d`'s environment: the entry
/// itself, or `planted-secret` inside a directory entry. JSON files get JSON (the CLI reads
/// some of them itself).
fn plant_secrets(d: &Dispatch) -> Vec<Planted> {
    let var = |k: &str| {
        d.parent_env
            .get(std::ffi::OsStr::new(k))
            .map(std::path::PathBuf::from)
    };
    let mut entries = agent_dispatch::secrets::secret_paths(Some(d.home.path()), &var);
    // Claude's shared temp dir (`/tmp/claude-<uid>`): what other sessions left there.
    entries.extend(agent_dispatch::adapters::claude::tmp::shared_tmp_secrets(
        &d.parent_env,
    ));
    let home = d.home.path().to_path_buf();
    entries
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            let file = if !s.path.starts_with(&home) {
                // Outside the scratch home: a unique name, removed by the test.
                s.path.join(format!(
                    "agent-dispatch-test-{}-{}/task.output",
                    std::process::id(),
                    home.file_name().unwrap().to_string_lossy()
                ))
            } else if s.dir {
                s.path.join("planted-secret")
            } else {
                s.path.clone()
            };
            let secret = format!("PLANTED_{i:03}_{}", s.class.id().replace('-', "_"));
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            let text = if file
                .extension()
                .is_some_and(|e| e == "json" || e == "jsonl")
            {
                format!("{{\"planted\":\"{secret}\"}}\n")
            } else {
                format!("token={secret}\n")
            };
            std::fs::write(&file, text).unwrap();
            Planted {
                class: s.class,
                file,
                secret,
            }
        })
        .collect()
}

fn cat_command(planted: &[Planted]) -> String {
    let files: Vec<String> = planted
        .iter()
        .map(|p| format!("'{}'", p.file.display()))
        .collect();
    format!("cat {} 2>&1; true", files.join(" "))
}

/// Control runs: the launch's settings without `denyRead` and the `Read()` deny rules.
fn without_deny_rules(l: &mut agent_dispatch::launch::Launch) {
    for a in l.args.iter_mut() {
        let Some(mut v) = a
            .to_str()
            .and_then(|s| serde_json::from_str::<serde_json::Value>(s).ok())
            .filter(|v| v.get("sandbox").is_some())
        else {
            continue;
        };
        v["sandbox"]["filesystem"]["denyRead"] = serde_json::json!([]);
        v["permissions"]["deny"] = serde_json::json!([]);
        *a = v.to_string().into();
    }
}

/// The hostile repository fixture (`tests/fixtures/hostile-repo`): committed
/// `.claude/settings.json` and `settings.local.json` (an `apiKeyHelper` and other helper
/// commands touching markers outside the tree, `env` pointing `ANTHROPIC_BASE_URL` at a second
/// fake endpoint plus project variables, permissive permissions, sandbox off, hooks, a model
/// override, an output style, plugins), `.mcp.json`, `.claude/agents|skills|commands|rules|
/// output-styles`, `CLAUDE.md` (with imports of a secret and of a file outside the tree),
/// `CLAUDE.local.md`, `.claude/CLAUDE.md`, a plugin marketplace, and hostile repository-local
/// git configuration (fsmonitor, pager, hooks path, filters, textconv). The model runs `env`, tries
/// writes in and outside the tree and reads a secret. Nothing of the repository applies: no
/// marker, zero requests at the attacker, no project variable in the agent's shell, none of the
/// repository's instructions or definitions in any request, the user's git ignore untouched,
/// the tree byte-identical. A control run without the hardening flags shows each kind of input
/// is live.
async fn hostile_repository_is_inert() -> Evidence {
    let attacker_script = Script::new()
        .text("ATTACKER_ANSWER")
        .models(ModelPolicy::Any);
    let attacker = FakeMessages::start(attacker_script.clone()).await.unwrap();
    let control_attacker = FakeMessages::start(attacker_script).await.unwrap();
    let world = HostileWorld::create(&cache_dir(), &attacker.base_url(), &[]);
    let control_world = HostileWorld::create(&cache_dir(), &control_attacker.base_url(), &[]);
    world.plant_git_config();
    let mut d = Dispatch::new(&world.repo(), Script::new());
    let home = d.home.path().to_path_buf();
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "SSH_KEY_HOSTILE_SECRET\n").unwrap();
    d.script = Script::new()
        .bash("env")
        .bash(format!(
            "printf x > pwned.txt; echo pwned >> {}/.bashrc; touch {}/from-the-agent",
            home.display(),
            world.markers().display()
        ))
        .bash(PY_WRITE_CMD)
        .bash(format!("cat {}/.ssh/id_ed25519", home.display()))
        .text("REAL_ANSWER");
    // The sandboxed agent's own git runs the repository's git configuration (inside the
    // sandbox, read-only); what matters is that nothing outside it does.
    let control = Dispatch::new(
        &control_world.repo(),
        Script::new().bash("env").text("REAL_ANSWER"),
    )
    .with_snapshot(false)
    .mutate_launch(|l| {
        let mut args = Vec::new();
        let mut it = std::mem::take(&mut l.args).into_iter();
        while let Some(a) = it.next() {
            if a == "--setting-sources" {
                it.next();
            } else if a != "--safe-mode" && a != "--strict-mcp-config" {
                args.push(a);
            }
        }
        l.args = args;
        for a in l.args.iter_mut() {
            if let Some(s) = a
                .to_str()
                .filter(|s| s.contains("\"disableAllHooks\":true"))
            {
                *a = s
                    .replace("\"disableAllHooks\":true", "\"disableAllHooks\":false")
                    .into();
            }
        }
    })
    .run_direct();
    let (run, control) = tokio::join!(d.run(), control);
    run.assert_ok();
    assert_eq!(run.text, "REAL_ANSWER");
    run.assert_tree_identical();
    assert_eq!(
        world.fired(),
        Vec::<String>::new(),
        "something ran outside the sandbox"
    );
    assert!(
        attacker.log().all().is_empty(),
        "the attacker's endpoint was called"
    );
    let tr = run.tool_results();
    assert_eq!(tr.len(), 4, "{tr:#?}");
    let env_out = &tr[0].text;
    for leaked in [
        "HOSTILE_PROJECT_VAR",
        "HOSTILE_LOCAL_VAR",
        "env-loaded",
        "attacker",
    ] {
        assert!(
            !env_out.contains(leaked),
            "{leaked} in the agent's env:\n{env_out}"
        );
    }
    assert!(
        env_out.contains("CLAUDE_CODE_DISABLE_BACKGROUND_TASKS=1"),
        "{env_out}"
    );
    assert!(
        env_out.contains(&format!("ANTHROPIC_BASE_URL={}", run.fake.base_url())),
        "{env_out}"
    );
    for t in &tr[1..3] {
        assert!(t.text.contains("Read-only file system"), "{t:?}");
    }
    assert!(!world.repo().join("pwned.txt").exists());
    assert!(!home.join(".bashrc").exists());
    assert!(
        !tr[3].text.contains("SSH_KEY_HOSTILE_SECRET"),
        "{:?}",
        tr[3]
    );
    // Nothing the repository defines reached the model: instructions, imports, agents, skills,
    // commands, output style, rules, model override.
    let forbidden = [
        "HOSTILE_",
        "hostile-agent",
        "hostile-skill",
        "hostile-command",
        "hostile-style",
        "hostile-mcp",
        "hostile-plugin",
        "attacker-model",
        hostile::OUTSIDE_IMPORT_TEXT,
        "SSH_KEY_HOSTILE_SECRET",
    ];
    for r in run.fake.message_requests() {
        let body = r.body.to_string();
        for f in forbidden {
            assert!(!body.contains(f), "{f} reached the model endpoint");
        }
        assert_ne!(r.body["model"], "attacker-model-from-project-settings");
    }
    // The CLI itself left the user's global git ignore file alone.
    assert!(
        !home.join(".config/git/ignore").exists(),
        "the CLI wrote {}",
        home.join(".config/git/ignore").display()
    );

    // Control: the same repository, launched without --setting-sources user, --safe-mode,
    // --strict-mcp-config and with hooks allowed: the repository takes over.
    let fired = control_world.fired();
    for must in [
        "local-api-key-helper",
        "project-mcp-server",
        "project-session-start",
    ] {
        assert!(
            fired.iter().any(|f| f == must),
            "control run: {must} did not fire ({fired:?}): the test would prove nothing"
        );
    }
    assert_eq!(
        control.text, "ATTACKER_ANSWER",
        "control run: the repository's ANTHROPIC_BASE_URL did not apply"
    );
    let attacker_bodies: String = control_attacker
        .log()
        .all()
        .iter()
        .map(|r| r.body.to_string())
        .collect();
    let candidates = [
        "HOSTILE_CLAUDE_MD_LOADED",
        "HOSTILE_CLAUDE_LOCAL_MD_LOADED",
        "HOSTILE_DOT_CLAUDE_MD_LOADED",
        "HOSTILE_IMPORTED_NOTE_LOADED",
        "HOSTILE_RULE_LOADED",
        "HOSTILE_OUTPUT_STYLE_LOADED",
        "hostile-agent",
        "hostile-skill",
        "HOSTILE_PROJECT_VAR",
        hostile::OUTSIDE_IMPORT_TEXT,
    ];
    let (live, not_live): (Vec<&str>, Vec<&str>) = candidates
        .into_iter()
        .partition(|t| attacker_bodies.contains(t));
    assert!(
        live.contains(&"HOSTILE_CLAUDE_MD_LOADED"),
        "control run: CLAUDE.md did not load: {live:?}"
    );
    let init = control.init_event().expect("control: a system/init event");
    for (field, want) in [
        ("agents", "hostile-agent"),
        ("skills", "hostile-skill"),
        ("slash_commands", "hostile-command"),
        ("mcp_servers", "hostile-mcp"),
        ("output_style", "hostile-style"),
        ("model", "attacker-model-from-project-settings"),
    ] {
        assert!(
            init[field].to_string().contains(want),
            "control run: {field} lacks {want}: {}",
            init[field]
        );
    }
    let mut ev = run.evidence("A hostile repository is inert");
    ev.steps[0].2 = "(names only) no HOSTILE_PROJECT_VAR, no HOSTILE_LOCAL_VAR; \
                     CLAUDE_CODE_DISABLE_BACKGROUND_TASKS=1; ANTHROPIC_BASE_URL = the real endpoint"
        .to_owned();
    ev.redactions
        .push((world.markers().display().to_string(), "<markers>".into()));
    ev.notes.push(format!(
        "Markers outside the tree: none. Requests at the attacker's endpoint: 0 (hardened run). \
         `~/.config/git/ignore`: not written.\n\n\
         Control run (same fixture; launched without `--setting-sources user`, `--safe-mode`, \
         `--strict-mcp-config`, with `disableAllHooks: false`): markers {}; the answer came from \
         the attacker's endpoint (`{}`); what reached it from the repository: {} (not: {}); its \
         `system/init` listed the repository's agent, skill, command, MCP server, output style \
         and model (`hostile-agent`, `hostile-skill`, `hostile-command`, `hostile-mcp`, \
         `hostile-style`, `attacker-model-from-project-settings`).",
        fired
            .iter()
            .map(|f| format!("`{f}`"))
            .collect::<Vec<_>>()
            .join(", "),
        control.text,
        live.iter()
            .map(|f| format!("`{f}`"))
            .collect::<Vec<_>>()
            .join(", "),
        not_live
            .iter()
            .map(|f| format!("`{f}`"))
            .collect::<Vec<_>>()
            .join(", "),
    ));
    ev
}

/// A hook in the user's settings, a hook in the project's settings and an MCP server in the
/// project's `.mcp.json` would each write a marker file; none runs. The init event lists exactly
/// the Bash and Read tools and no MCP server. A control run of the same setup without
/// `--setting-sources user`, `--safe-mode`, `--strict-mcp-config` and `disableAllHooks` shows the
/// hooks are real.
async fn hooks_and_mcp_servers_never_run() -> Evidence {
    let (run, markers, _repo) = hook_run(false).await;
    run.assert_ok();
    run.assert_tree_identical();
    let init = run.init_event().expect("a system/init event");
    assert_eq!(init["tools"], serde_json::json!(["Bash", "Read"]));
    assert_eq!(init["mcp_servers"], serde_json::json!([]));
    let fired = list_dir(markers.path());
    assert!(fired.is_empty(), "hooks or MCP servers ran: {fired:?}");

    let (control, control_markers, _control_repo) = hook_run(true).await;
    control.assert_ok();
    let fired = list_dir(control_markers.path());
    for hook in [
        "user-session-start",
        "user-pre-tool-use",
        "project-pre-tool-use",
    ] {
        assert!(
            fired.iter().any(|f| f == hook),
            "control run: hook {hook} did not fire ({fired:?}): the test would prove nothing"
        );
    }
    let mut ev = run.evidence("Hooks and MCP servers never run");
    ev.init = Some(init);
    ev.notes.push(format!(
        "Control run (same files, launched without `--setting-sources user`, `--safe-mode`, `--strict-mcp-config` and with \
         `disableAllHooks: false`): markers written: {}.",
        fired
            .iter()
            .map(|f| format!("`{f}`"))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    ev
}

fn list_dir(p: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(p)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// A scratch repo with hooks in the user's and the project's settings and an MCP server in
/// `.mcp.json`, each writing a marker outside the tree; run once (`control`: with the
/// customisation-disabling flags removed).
async fn hook_run(control: bool) -> (Run, tempfile::TempDir, ScratchRepo) {
    let repo = ScratchRepo::create(None).unwrap();
    let markers = tempfile::tempdir().unwrap();
    let m = markers.path().display().to_string();
    let hook = |name: &str| serde_json::json!([{ "matcher": "*", "hooks": [{ "type": "command", "command": format!("touch {m}/{name}") }] }]);
    std::fs::create_dir_all(repo.path().join(".claude")).unwrap();
    std::fs::write(
        repo.path().join(".claude/settings.json"),
        serde_json::json!({ "hooks": { "PreToolUse": hook("project-pre-tool-use"),
                                        "SessionStart": hook("project-session-start") } })
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        repo.path().join(".mcp.json"),
        serde_json::json!({ "mcpServers": { "marker": {
            "command": "sh", "args": ["-c", format!("touch {m}/mcp-server; sleep 5")] } } })
        .to_string(),
    )
    .unwrap();
    let mut d = Dispatch::new(
        repo.path(),
        Script::new().bash("echo READ_OK").text("FAKE_DONE"),
    );
    let user_settings = serde_json::json!({ "hooks": {
        "SessionStart": hook("user-session-start"),
        "UserPromptSubmit": hook("user-prompt-submit"),
        "PreToolUse": hook("user-pre-tool-use"),
        "PostToolUse": hook("user-post-tool-use"),
        "Stop": hook("user-stop"),
    }, "enableAllProjectMcpServers": true });
    std::fs::create_dir_all(d.config_dir()).unwrap();
    std::fs::write(
        d.config_dir().join("settings.json"),
        user_settings.to_string(),
    )
    .unwrap();
    if control {
        d = d.mutate_launch(|l| {
            l.args
                .retain(|a| a != "--safe-mode" && a != "--strict-mcp-config");
            if let Some(i) = l.args.iter().position(|a| a == "--setting-sources") {
                l.args.drain(i..i + 2);
            }
            for a in l.args.iter_mut() {
                if let Some(s) = a
                    .to_str()
                    .filter(|s| s.contains("\"disableAllHooks\":true"))
                {
                    *a = s
                        .replace("\"disableAllHooks\":true", "\"disableAllHooks\":false")
                        .into();
                }
            }
        });
    }
    (d.run_direct().await, markers, repo)
}

/// In a linked worktree the repository's common git directory lies outside the tree and
/// Claude's sandbox would let a command write there (verified by hand on 2.1.332); the adapter
/// denies it. Both trees are byte-identical afterwards (stubs land in both).
async fn linked_worktree_stays_read_only() -> Evidence {
    let main = ScratchRepo::create(None).unwrap();
    let parent = tempfile::tempdir().unwrap();
    let linked = parent.path().canonicalize().unwrap().join("linked");
    let ok = std::process::Command::new("git")
        .args(["worktree", "add", "-q"])
        .arg(&linked)
        .args(["-b", "side"])
        .current_dir(main.path())
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_SYSTEM", "/dev/null")
        .status()
        .unwrap()
        .success();
    assert!(ok, "git worktree add");
    let common = main.path().canonicalize().unwrap().join(".git");
    let py =
        |p: std::path::PathBuf| format!("python3 -c \"open('{}','w').write('x')\"", p.display());
    let script = Script::new()
        .bash(py(common.join("probe")))
        .bash(py(common.join("worktrees/linked/probe")))
        .bash("git status --short --branch")
        .text("FAKE_DONE");
    let main_before = Snapshot::take(main.path()).unwrap();
    let run = Dispatch::new(&linked, script).run().await;
    run.assert_ok();
    run.assert_tree_identical();
    let main_after = Snapshot::take(main.path()).unwrap();
    assert_eq!(
        main_before.diff(&main_after),
        Vec::<String>::new(),
        "main tree changed"
    );
    let tr = run.tool_results();
    for t in &tr[..2] {
        assert!(t.text.contains("Read-only file system"), "{t:?}");
    }
    assert!(!common.join("probe").exists());
    assert!(!common.join("worktrees/linked/probe").exists());
    assert!(tr[2].text.contains("## side"), "{:?}", tr[2]);
    let mut ev = run.evidence("A linked worktree's git directories stay read-only");
    ev.redactions.insert(
        0,
        (
            format!("/{}", main.path().canonicalize().unwrap().display()),
            "//<main>".into(),
        ),
    );
    ev.redactions.insert(
        1,
        (
            main.path().canonicalize().unwrap().display().to_string(),
            "<main>".into(),
        ),
    );
    ev.notes.push(
        "The main working tree (`<main>`) was byte-identical before and after too; the stubs the run \
         left there (`.claude/.cc-writes`, the common git directory's stubs) were removed by the tree guard."
            .to_owned(),
    );
    ev
}

/// A requested model and effort reach the endpoint; the model is confirmed by the stream.
#[tokio::test]
async fn model_and_effort_reach_the_endpoint() {
    let repo = ScratchRepo::create(None).unwrap();
    let mut d = Dispatch::new(repo.path(), Script::new().text("FAKE_DONE"));
    d.model = Some("claude-opus-5-5".into());
    d.effort = Some("high".into());
    let run = d.run().await;
    run.assert_ok();
    let req = &run.fake.message_requests()[0].body;
    assert_eq!(req["model"], "claude-opus-5-5");
    assert_eq!(
        req["output_config"]["effort"], "high",
        "{}",
        req["output_config"]
    );
    assert!(run.events.contains(&StreamEvent::Metadata {
        session_id: run.session_id.clone(),
        model: Some("claude-opus-5-5".into()),
        effort: None,
    }));
    run.assert_tree_identical();
}

/// Six dispatches at once in the same tree all succeed; the stubs are gone once the last one
/// has left and the tree is byte-identical.
#[tokio::test]
async fn six_parallel_dispatches_in_one_tree() {
    let repo = ScratchRepo::create(None).unwrap();
    let before = Snapshot::take(repo.path()).unwrap();
    let started = std::time::Instant::now();
    let runs = futures::future::join_all((0..6).map(|i| {
        let d = Dispatch::new(
            repo.path(),
            Script::new()
                .bash(format!("printf {i} > probe-{i}.txt"))
                .bash("git diff --stat")
                .text(format!("DONE {i}")),
        );
        d.with_snapshot(false).run()
    }))
    .await;
    for (i, run) in runs.iter().enumerate() {
        run.assert_ok();
        assert_eq!(run.text, format!("DONE {i}"));
        let tr = run.tool_results();
        assert!(
            tr[0].text.contains("Read-only file system"),
            "run {i}: {:?}",
            tr[0]
        );
        assert!(tr[1].text.contains("README.md"), "run {i}: {:?}", tr[1]);
    }
    let after = Snapshot::take(repo.path()).unwrap();
    assert_eq!(before.diff(&after), Vec::<String>::new());
    eprintln!("six parallel dispatches: {:?}", started.elapsed());
}

/// Claude's sandbox settings take paths, some of which may be globs: a tree whose path holds
/// glob characters is still denied literally (a pattern that matched nothing would fail open).
#[tokio::test]
async fn glob_characters_in_the_path_stay_literal() {
    let parent = tempfile::Builder::new()
        .prefix("glob[ab]*?{x}-")
        .tempdir()
        .unwrap();
    let repo = ScratchRepo::create(Some(parent.path())).unwrap();
    let run = Dispatch::new(
        repo.path(),
        Script::new().bash(WRITE_CMD).bash(PY_WRITE_CMD),
    )
    .run()
    .await;
    run.assert_ok();
    run.assert_tree_identical();
    for t in run.tool_results() {
        assert!(t.text.contains("Read-only file system"), "{t:?}");
    }
}

/// Cancelling while a sandboxed command runs stops Claude, bubblewrap, socat and the command
/// (nothing with the command's unique argument survives), ends as `cancelled`, and the tree
/// guard still cleans the stubs.
#[tokio::test]
async fn cancel_mid_command_stops_everything_and_cleans_the_tree() {
    let repo = ScratchRepo::create(None).unwrap();
    let token = format!("{}.{}", 40 + std::process::id() % 50, std::process::id());
    let d = Dispatch::new(
        repo.path(),
        Script::new().bash(format!("echo waiting && sleep {token}")),
    );
    let cancel = d.cancel.clone();
    let cwd = d.cwd.clone();
    let before = Snapshot::take(&cwd).unwrap();
    // The sandboxed command's process appearing is the signal to cancel; there is no event
    // for it, so /proc is watched (bounded).
    let watcher = async {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        let mut tick = tokio::time::interval(Duration::from_millis(20));
        loop {
            tick.tick().await;
            if !processes_with(&token).is_empty() {
                let stubs = before.diff(&Snapshot::take(&cwd).unwrap());
                cancel.cancel();
                return stubs;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the command never started"
            );
        }
    };
    let (run, stubs_while_running) = tokio::join!(d.run(), watcher);
    let failure = run.failure.clone().expect("cancelled");
    assert_eq!(failure.kind, FailureKind::Cancelled, "{failure}");
    assert!(run.duration < Duration::from_secs(30), "{:?}", run.duration);
    let survivors = processes_with(&token);
    assert!(
        survivors.is_empty(),
        "processes survived the cancel: {survivors:?}"
    );
    assert!(
        !stubs_while_running.is_empty(),
        "the sandbox was up when cancelled"
    );
    run.assert_tree_identical();
}

/// Command lines of live processes containing `needle` (this test process excluded).
fn processes_with(needle: &str) -> Vec<String> {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| e.file_name() != me.as_str())
        .filter_map(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            // Zombies are gone already; only running processes count.
            let state = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .next()?
                .to_owned();
            let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            (state != "Z" && cmd.contains(needle)).then_some(cmd)
        })
        .collect()
}

/// A model the endpoint does not know (404): a typed failure carrying the CLI's message.
#[tokio::test]
async fn unknown_model_is_a_typed_failure() {
    let repo = ScratchRepo::create(None).unwrap();
    let mut d = Dispatch::new(repo.path(), Script::new().models(ModelPolicy::ClaudeNames));
    d.model = Some("nope-not-a-model".into());
    let run = d.run().await;
    let msg = run.assert_error_envelope();
    assert!(
        msg.contains("There's an issue with the selected model (nope-not-a-model)"),
        "{msg}"
    );
    assert!(msg.contains("HTTP 404"), "{msg}");
    assert!(run.events.iter().any(|e| matches!(e,
        StreamEvent::Notice { message, .. } if message.contains("does not recognise the model name \"nope-not-a-model\""))),
        "the stderr warning became a notice: {:?}", run.events);
    // The 404 came before any token: the CLI's block of zeros is no usage report.
    assert!(run.usage.is_none(), "{:?}", run.usage);
    run.assert_tree_identical();
}

/// HTTP 400: a typed failure with the API's message, no retries.
#[tokio::test]
async fn bad_request_is_a_typed_failure() {
    let repo = ScratchRepo::create(None).unwrap();
    let script =
        Script::new().always_fail(ApiError::bad_request("fake bad request: messages: invalid"));
    let run = Dispatch::new(repo.path(), script).run().await;
    let msg = run.assert_error_envelope();
    assert!(msg.contains("fake bad request: messages: invalid"), "{msg}");
    assert!(msg.contains("HTTP 400"), "{msg}");
    run.assert_tree_identical();
}

/// 5xx after a successful first turn: the CLI retries (`CLAUDE_CODE_MAX_RETRIES`, passed as
/// configuration), each retry is a warning, and the failure keeps the first turn's usage.
#[tokio::test]
async fn server_errors_retry_then_fail_with_usage_kept() {
    let repo = ScratchRepo::create(None).unwrap();
    let script = Script::new()
        .bash("echo READ_OK")
        .fail(ApiError::server_error("fake internal server error"));
    let mut d = Dispatch::new(repo.path(), script);
    d.parent_env_set("CLAUDE_CODE_MAX_RETRIES", "1");
    let run = d.run().await;
    let msg = run.assert_error_envelope();
    assert!(
        msg.contains("500") && msg.contains("fake internal server error"),
        "{msg}"
    );
    let retries = run
        .events
        .iter()
        .filter(
            |e| matches!(e, StreamEvent::Notice { message, .. } if message.contains("retry 1/1")),
        )
        .count();
    assert_eq!(retries, 1, "{:?}", run.events);
    let u = run.usage.expect("usage kept");
    assert!(
        u.input >= 100 && u.output >= 20,
        "first turn's usage: {u:?}"
    );
    // 1 successful turn + the failing one and its retry.
    assert_eq!(run.fake.message_requests().len(), 3);
    run.assert_tree_identical();

    // 529 with no retries at all.
    let script = Script::new().always_fail(ApiError::overloaded());
    let mut d = Dispatch::new(repo.path(), script);
    d.parent_env_set("CLAUDE_CODE_MAX_RETRIES", "0");
    let run = d.run().await;
    let msg = run.assert_error_envelope();
    assert!(msg.contains("529") && msg.contains("Overloaded"), "{msg}");
    assert_eq!(run.fake.message_requests().len(), 1);
}

/// A prompt too long for one argv string goes through stdin (written, then closed) and reaches
/// the endpoint intact.
#[tokio::test]
async fn multi_megabyte_prompt_arrives_intact() {
    let repo = ScratchRepo::create(None).unwrap();
    let mut prompt = String::with_capacity(2_100_000);
    let mut i = 0u64;
    while prompt.len() < 2_000_000 {
        prompt.push_str(&format!("line {i:07} of a long prompt ✓\n"));
        i += 1;
    }
    prompt.push_str("END_OF_PROMPT");
    let mut d = Dispatch::new(repo.path(), Script::new().text("FAKE_DONE"));
    d.prompt = prompt.clone();
    let run = d.run().await;
    run.assert_ok();
    assert!(run.stdin_used, "a 2 MB prompt must go through stdin");
    let reqs = run.fake.message_requests();
    let first = first_user_text(&reqs[0].body).expect("a user message");
    assert!(
        first.contains(&prompt),
        "prompt altered (len {} vs {})",
        first.len(),
        prompt.len()
    );
    run.assert_tree_identical();
}

/// Without bubblewrap and socat on PATH the engine refuses to start Claude
/// (`read-only-unavailable`, from the adapter's preflight), and the CLI itself — launched anyway,
/// by hand — refuses with `sandbox_required_unavailable`; never an unsandboxed run.
#[tokio::test]
async fn missing_sandbox_programs_are_refused() {
    let repo = ScratchRepo::create(None).unwrap();
    let farm = tempfile::tempdir().unwrap();
    path_without(farm.path(), &["bwrap", "socat"]);
    let path = format!(
        "{}:{}",
        claude_bin().parent().unwrap().display(),
        farm.path().display()
    );
    let mut d = Dispatch::new(repo.path(), Script::new().bash(WRITE_CMD));
    d.parent_env_set("PATH", &path);
    let run = d.run().await;
    let failure = run.failure.clone().expect("refused");
    assert_eq!(failure.kind, FailureKind::ReadOnlyUnavailable, "{failure}");
    assert!(
        failure.message.contains("apt-get install bubblewrap socat"),
        "{failure}"
    );
    assert!(
        failure.message.contains("bwrap and socat not found"),
        "{failure}"
    );
    assert!(run.result.as_ref().unwrap().exit.is_none(), "nothing ran");
    assert!(run.fake.log().all().is_empty(), "no model call");
    run.assert_tree_identical();

    // Launched anyway (bypassing preflight): the CLI's own refusal.
    let mut d = Dispatch::new(repo.path(), Script::new().bash(WRITE_CMD));
    d.parent_env_set("PATH", &path);
    let run = d.skip_preflight().run_direct().await;
    assert_ne!(run.exit_code, Some(0));
    let f = run.failure.clone().expect("refused");
    assert_eq!(f.kind, FailureKind::ReadOnlyUnavailable, "{f}");
    let msg = f.message;
    assert!(msg.contains("apt-get install bubblewrap socat"), "{msg}");
    assert!(msg.contains("bubblewrap (bwrap) not installed"), "{msg}");
    assert!(run.fake.message_requests().is_empty(), "no model call");
    assert!(!repo.path().join("probe.txt").exists());
    run.assert_tree_identical();
}

/// `agent-dispatch check claude` on this machine: the Claude probes (shell write, python
/// write, `git diff`) through the production launch; every write denied with evidence, the
/// read works, the scratch tree byte-identical. A dispatch under the default policy then finds
/// the passing record and runs without re-checking.
#[tokio::test]
async fn check_passes_and_dispatch_reuses_its_record() {
    let repo = ScratchRepo::create(None).unwrap();
    let records = tempfile::tempdir().unwrap();
    let mut d = Dispatch::new(repo.path(), Script::new().text("FAKE_DONE"));
    d.parent_env_set("AGENT_DISPATCH_CACHE_DIR", records.path().to_str().unwrap());
    let adapter = agent_dispatch::adapters::find("claude").unwrap();
    let report = gate::check_and_record(
        adapter,
        &d.parent_env,
        &Supervisor::new(),
        CancellationToken::new(),
    )
    .await;
    eprintln!("{report}");
    assert!(report.passed, "{report}");
    assert!(report.tree_identical);
    let verdicts: Vec<_> = report.probes.iter().map(|p| p.verdict).collect();
    assert_eq!(
        verdicts,
        [Verdict::Denied, Verdict::Denied, Verdict::ReadOk]
    );
    assert!(
        report.probes[0]
            .evidence
            .as_deref()
            .unwrap()
            .contains("Read-only file system")
    );

    d.gate = GatePolicy::Enforce;
    let run = d.run().await;
    run.assert_ok();
    assert!(!run.result.as_ref().unwrap().check_bypassed);
    assert!(
        !run.events.iter().any(|e| matches!(e,
            StreamEvent::Notice { message, .. } if message.contains("read-only check"))),
        "the record was not reused: {:?}",
        run.events
    );
    run.assert_tree_identical();
}

#[test]
fn the_pinned_binary_is_installed() {
    let p = claude_bin();
    assert!(
        p.exists(),
        "{} missing: run scripts/install-tools.sh",
        p.display()
    );
    let _ = Duration::ZERO;
}

/// Claude's adapter with background tasks left on (the launch without
/// `CLAUDE_CODE_DISABLE_BACKGROUND_TASKS`): the control of the background-task test, for the
/// runner's own guarantee — after the answer the CLI gets a short grace, then its tree is
/// cleaned up.
struct BackgroundTasksOn;

#[async_trait::async_trait]
impl agent_dispatch::adapter::Adapter for BackgroundTasksOn {
    fn id(&self) -> &'static str {
        "claude"
    }
    fn display_name(&self) -> &'static str {
        "Claude Code (background tasks on)"
    }
    fn program(&self) -> &'static str {
        "claude"
    }
    fn install_hint(&self) -> &'static str {
        ClaudeAdapter.install_hint()
    }
    fn capabilities(&self) -> agent_dispatch::adapter::Capabilities {
        ClaudeAdapter.capabilities()
    }
    fn launch(
        &self,
        ctx: &agent_dispatch::adapter::LaunchContext<'_>,
    ) -> Result<agent_dispatch::launch::Launch, agent_dispatch::contract::Failure> {
        let mut l = ClaudeAdapter.launch(ctx)?;
        l.env
            .retain(|(k, _)| k != "CLAUDE_CODE_DISABLE_BACKGROUND_TASKS");
        Ok(l)
    }
    async fn preflight(
        &self,
        ctx: &agent_dispatch::adapter::LaunchContext<'_>,
        supervisor: &Supervisor,
    ) -> Result<Vec<StreamEvent>, agent_dispatch::contract::Failure> {
        ClaudeAdapter.preflight(ctx, supervisor).await
    }
    fn parser(&self) -> Box<dyn agent_dispatch::adapter::StreamParser> {
        ClaudeAdapter.parser()
    }
    fn sandbox_stubs(&self) -> &'static [agent_dispatch::adapter::SandboxStub] {
        ClaudeAdapter.sandbox_stubs()
    }
}

static BACKGROUND_TASKS_ON: BackgroundTasksOn = BackgroundTasksOn;

/// A Bash call with `run_in_background: true` (`sleep 600`): Claude's background tasks are off,
/// so the call is refused as an input error and the dispatch answers at once — one `done`, no
/// survivor in /proc. Control (background tasks on): the CLI would keep running after its
/// answer and start a second turn; the runner stops it within its grace after the first
/// answer — still one `done`, the first answer, no survivor.
#[tokio::test]
async fn background_task_never_outlives_the_dispatch() {
    // One tree each: the two runs overlap, and each compares its own tree before and after.
    let (repo, control_repo) = (
        ScratchRepo::create(None).unwrap(),
        ScratchRepo::create(None).unwrap(),
    );
    let token = |n: u32| format!("600.{}{n}", std::process::id());
    let script = |t: &str| {
        Script::new()
            .bash_input(serde_json::json!({
                "command": format!("sleep {t}"),
                "description": "Wait in the background",
                "run_in_background": true,
            }))
            .text("BACKGROUND_ANSWER")
    };
    let (off, on) = (token(1), token(2));
    let (run, control) = tokio::join!(
        Dispatch::new(repo.path(), script(&off)).run(),
        Dispatch::new(control_repo.path(), script(&on))
            .with_adapter(&BACKGROUND_TASKS_ON)
            .run()
    );
    run.assert_ok();
    // The control's CLI was still running after its answer and was stopped by the runner
    // (SIGTERM, exit 143): still a successful dispatch.
    assert!(control.ok, "control: {:?}", control.failure);
    for (name, r, t) in [("off", &run, &off), ("control", &control, &on)] {
        assert_eq!(r.text, "BACKGROUND_ANSWER", "{name}");
        let done = r
            .events
            .iter()
            .filter(|e| matches!(e, StreamEvent::Done { .. }))
            .count();
        assert_eq!(done, 1, "{name}: {:?}", r.events);
        let survivors = processes_with(t);
        assert!(survivors.is_empty(), "{name}: survivors {survivors:?}");
        assert!(
            r.duration < Duration::from_secs(60),
            "{name}: {:?}",
            r.duration
        );
        r.assert_tree_identical();
    }
    let tr = run.tool_results();
    assert!(tr[0].is_error, "{:?}", tr[0]);
    assert!(
        tr[0].text.contains("run_in_background"),
        "background call refused: {:?}",
        tr[0]
    );
    // The control's command did start in the background.
    let tr = control.tool_results();
    assert!(!tr[0].is_error, "{:?}", tr[0]);
    assert!(
        tr[0].text.contains("background"),
        "control: the command was backgrounded: {:?}",
        tr[0]
    );
    eprintln!(
        "background off: {:?}; background on (runner grace): {:?}",
        run.duration, control.duration
    );
}

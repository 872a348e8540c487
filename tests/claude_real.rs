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
//! `$CARGO_MANIFEST_DIR/.cache/claude-real/` (git-ignored) and authenticates through the
//! endpoint override (`ANTHROPIC_AUTH_TOKEN`). The binary missing is a failure, not a skip.
//!
//! `read_only_guarantees` also regenerates `docs/verification/claude.md`.

mod claude_common;

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

use claude_common::*;

const WRITE_CMD: &str = "printf x > probe.txt";
const PY_WRITE_CMD: &str = "python3 -c \"open('probe-py.txt','w').write('x')\"";

#[tokio::test]
async fn read_only_guarantees() {
    let (writes, secrets, hooks, worktree) = tokio::join!(
        writes_are_denied_reads_work(),
        secrets_stay_hidden(),
        hooks_and_mcp_servers_never_run(),
        linked_worktree_stays_read_only(),
    );
    write_verification_doc(&[writes, secrets, hooks, worktree]);
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

/// Secrets in the caller's environment never reach the Bash tool; credential files are
/// unreadable for Bash (`denyRead`) and for the Read tool (`permissions.deny`).
async fn secrets_stay_hidden() -> Evidence {
    let repo = ScratchRepo::create(None).unwrap();
    let mut d = Dispatch::new(repo.path(), Script::new());
    let home = d.home.path().to_path_buf();
    std::fs::create_dir_all(home.join(".claude")).unwrap();
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(
        home.join(".claude/.credentials.json"),
        "{\"token\":\"CRED_FILE_SECRET\"}",
    )
    .unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "SSH_KEY_SECRET").unwrap();
    std::fs::write(home.join(".netrc"), "machine x password NETRC_SECRET").unwrap();
    d.parent_env_set("GITHUB_TOKEN", "ghp_GITHUB_ENV_SECRET");
    d.parent_env_set("ANTHROPIC_API_KEY", "sk-ant-API_KEY_ENV_SECRET");
    d.parent_env_set("OPENAI_API_KEY", "sk-OPENAI_ENV_SECRET");
    d.parent_env_set("MY_PRIVATE_TOKEN", "MY_PRIVATE_ENV_SECRET");
    d.parent_env_set("CLAUDE_CODE_SUBPROCESS_ENV_SCRUB", "1");
    let h = home.display();
    d.script = Script::new()
        .bash("env")
        .bash(format!(
            "cat {h}/.claude/.credentials.json; cat {h}/.netrc; ls -A {h}/.ssh; cat {h}/.ssh/id_ed25519"
        ))
        .read(format!("{h}/.claude/.credentials.json"))
        .read(format!("{h}/.ssh/id_ed25519"))
        .text("FAKE_DONE");
    let run = d.run().await;
    run.assert_ok();
    run.assert_tree_identical();
    let tr = run.tool_results();
    assert_eq!(tr.len(), 4, "{tr:#?}");
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
    for secret in ["CRED_FILE_SECRET", "NETRC_SECRET", "SSH_KEY_SECRET"] {
        assert!(
            !files.contains(secret),
            "{secret} readable by Bash: {files}"
        );
    }
    // `ls -A ~/.ssh` lists nothing: the directory is replaced by an empty one.
    assert!(
        !files.lines().any(|l| l.trim() == "id_ed25519"),
        "~/.ssh listable by Bash: {files}"
    );
    assert!(files.contains("Permission denied"), "{files}");
    for t in &tr[2..] {
        assert!(t.is_error, "Read tool read a secret: {t:?}");
        assert!(
            !t.text.contains("SECRET"),
            "Read tool returned a secret: {t:?}"
        );
    }
    // Nothing of it reached the model endpoint at all.
    for r in run.fake.log().all() {
        let body = r.body.to_string();
        assert!(!body.contains("_SECRET"), "a secret reached the endpoint");
    }
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
    ev.env_visible_to_bash = Some(names);
    ev
}

/// A hook in the user's settings, a hook in the project's settings and an MCP server in the
/// project's `.mcp.json` would each write a marker file; none runs. The init event lists exactly
/// the Bash and Read tools and no MCP server. A control run of the same setup without
/// `--safe-mode`, `--strict-mcp-config` and `disableAllHooks` shows the hooks are real.
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
        "Control run (same files, launched without `--safe-mode`, `--strict-mcp-config` and with \
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

//! Real hosts, offline: each pinned CLI as the MCP client of `agent-dispatch mcp`, dispatching
//! to the other pinned CLI. Both models are the project's fake endpoints (Messages for
//! `claude` 2.1.332, Responses for `codex` 0.171.0); the host's model scripts the call of the
//! `dispatch` tool, and the dispatched agent's answer must come back to the host's model as the
//! tool result. The repository is byte-identical afterwards (`.git` included) and no process
//! of the run is left in it.
//!
//! The server runs under the default read-only policy with a fresh cache directory: nothing is
//! on record, so its first dispatch runs the agent's read-only check first (offline, against
//! the check's own loopback model), then the real dispatch.
//!
//! Homes (`HOME`, `CLAUDE_CONFIG_DIR`, `CODEX_HOME`) live under `$CARGO_MANIFEST_DIR/.cache/`,
//! never under the temp dir, and are removed afterwards. A missing binary fails the test.

mod claude_common;
mod codex_support;
mod support;

use std::process::Stdio;
use std::time::Duration;

use agent_dispatch::adapters::claude::fake_api::{FakeMessages, Script as ClaudeScript};
use agent_dispatch::adapters::codex::fake_api::{FakeResponses, Script as CodexScript, Step};
use agent_dispatch::readonly::snapshot::Snapshot;
use serde_json::{Value, json};

const SERVER: &str = "agent-dispatch";
const TOOL: &str = "mcp__agent-dispatch__dispatch";
const ANSWER: &str = "CODEX_SECOND_OPINION: the uncommitted change is safe.";

#[tokio::test]
async fn claude_as_host_gets_the_codex_answer_through_the_dispatch_tool() {
    let w = codex_support::World::new("mcp-host");
    let repo = w.repo_path().canonicalize().unwrap();

    // Codex's model: one answer. Codex reaches it through the user's own provider config,
    // which the adapter re-applies (the dispatch itself has no test hook in the binary).
    let codex_model = FakeResponses::start(CodexScript::new(vec![Step::message(ANSWER)]))
        .await
        .unwrap();
    w.write_codex_config(
        "config.toml",
        &format!(
            "model_provider = \"corp\"\n\n[model_providers.corp]\nname = \"Corp gateway\"\n\
             base_url = \"{}\"\nenv_key = \"CORP_API_KEY\"\nwire_api = \"responses\"\n",
            codex_model.base_url()
        ),
    );

    // Claude's model: call the dispatch tool, then finish.
    let claude_model = FakeMessages::start(
        ClaudeScript::new()
            .tool(
                TOOL,
                json!({
                    "agent": "codex",
                    "task": "Is the uncommitted change safe? Answer in one sentence.",
                    "scope": "the uncommitted change",
                    "cwd": repo,
                }),
            )
            // A bad request: an error result the model can read, nothing started.
            .tool(
                TOOL,
                json!({ "agent": "codex", "task": "again", "model": "-rm", "cwd": repo }),
            )
            .text("FAKE_DONE"),
    )
    .await
    .unwrap();

    let cache = w.dir.path().join("dispatch-cache");
    let system_path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
    let path = format!("{}:{system_path}", codex_support::bin_dir().display());
    let server_env = json!({
        "PATH": path,
        "HOME": w.home(),
        "CODEX_HOME": w.codex_home(),
        "CORP_API_KEY": codex_model.api_key(),
        "AGENT_DISPATCH_CACHE_DIR": cache,
        "LANG": "C.UTF-8",
    });
    let config = json!({ "mcpServers": { SERVER: {
        "command": env!("CARGO_BIN_EXE_agent-dispatch"),
        "args": ["mcp"],
        "env": server_env,
    }}});
    let config_path = w.dir.path().join("mcp.json");
    std::fs::write(&config_path, config.to_string()).unwrap();

    let claude_home = w.dir.path().join("claude-home");
    std::fs::create_dir_all(claude_home.join(".claude")).unwrap();
    let before = Snapshot::take(&repo).unwrap();

    let run = tokio::process::Command::new(claude_common::claude_bin())
        .args([
            "-p",
            "Get a second opinion from codex on the uncommitted change.",
            "--output-format",
            "stream-json",
            "--verbose",
            "--strict-mcp-config",
            "--mcp-config",
        ])
        .arg(&config_path)
        .args(["--allowedTools", TOOL])
        .current_dir(&repo)
        .env_clear()
        .env("PATH", &path)
        .env("HOME", &claude_home)
        .env("CLAUDE_CONFIG_DIR", claude_home.join(".claude"))
        .env("ANTHROPIC_BASE_URL", claude_model.base_url())
        .env("ANTHROPIC_AUTH_TOKEN", "fake-auth-token-for-tests")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("TERM", "dumb")
        .env("LANG", "C.UTF-8")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(180), run)
        .await
        .expect("claude finishes within 180 s")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "claude failed: {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );

    // Claude connected to the server and offered the tool to its model.
    let init: Value = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "system" && v["subtype"] == "init")
        .expect("a system/init event");
    let servers = init["mcp_servers"].to_string();
    assert!(
        servers.contains(SERVER) && servers.contains("connected"),
        "{servers}"
    );

    // The codex answer is what Claude sent back to its model as the tool result. Claude Code
    // hands its model the structured result (the protocol's `result` object) as JSON.
    let results = claude_model.tool_results();
    assert_eq!(results.len(), 2, "{results:#?}\n{stdout}");
    assert!(!results[0].is_error, "{:?}", results[0]);
    let seen: Value = serde_json::from_str(&results[0].text).unwrap_or(Value::Null);
    assert_eq!(seen["text"], ANSWER, "{:?}", results[0].text);
    assert_eq!(seen["ok"], true);
    assert_eq!(seen["checkBypassed"], false, "the read-only gate applied");
    assert!(seen["usage"]["output"].as_u64().unwrap() > 0, "{seen}");
    // A failed dispatch reaches the model as an error result whose text (Claude Code hands
    // over the text of an error result) names the failure kind and the fix.
    assert!(results[1].is_error, "{:?}", results[1]);
    let t = &results[1].text;
    assert!(
        t.contains("(invalid-request)") && t.contains("\nFix: "),
        "{t}"
    );
    // Codex really asked its model (the check's own loopback model is another server).
    assert!(!codex_model.model_requests().is_empty());
    // The read-only check ran first and is on record for the next dispatch.
    assert!(
        std::fs::read_dir(&cache).is_ok_and(|mut d| d.next().is_some()),
        "a check record in {}",
        cache.display()
    );

    let after = Snapshot::take(&repo).unwrap();
    assert!(
        before.diff(&after).is_empty(),
        "the tree changed: {:?}",
        before.diff(&after)
    );
    let live = support::live_in_dir(&repo);
    assert!(live.is_empty(), "processes survive in the repo: {live:?}");
}

/// The pinned `codex` as the MCP host: its model (the fake Responses endpoint) calls the
/// server's `dispatch` tool for `claude`, whose model is the fake Messages endpoint. Codex
/// 0.171.0 defers MCP tools (its prompt lists the server under "Deferred tool namespaces" with
/// the server's instructions) and its model reaches them from the `exec` tool's JavaScript as
/// `tools.mcp__agent_dispatch__dispatch(…)`; the script does exactly that. The server runs
/// Claude's read-only check first (nothing on record), then the dispatch.
#[tokio::test]
async fn codex_as_host_gets_the_claude_answer_through_the_dispatch_tool() {
    let w = codex_support::World::new("mcp-codex-host");
    let repo = w.repo_path().canonicalize().unwrap();

    let claude_model = FakeMessages::start(ClaudeScript::new().text(CLAUDE_ANSWER))
        .await
        .unwrap();
    let claude_home = w.dir.path().join("claude-home");
    std::fs::create_dir_all(claude_home.join(".claude")).unwrap();
    let cache = w.dir.path().join("dispatch-cache");
    let system_path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
    let path = format!("{}:{system_path}", codex_support::bin_dir().display());

    let args = json!({
        "agent": "claude",
        "task": "Is the uncommitted change safe? Answer in one sentence.",
        "cwd": repo,
    });
    let codex_model = FakeResponses::start(CodexScript::new(vec![
        Step::custom(
            "exec",
            format!("const r = await tools.{CODEX_TOOL}({args});\ntext(JSON.stringify(r));"),
        ),
        Step::message("FAKE_DONE"),
    ]))
    .await
    .unwrap();
    w.write_codex_config(
        "config.toml",
        &format!(
            "model_provider = \"corp\"\n\n[model_providers.corp]\nname = \"Corp gateway\"\n\
             base_url = \"{base}\"\nenv_key = \"CORP_API_KEY\"\nwire_api = \"responses\"\n\n\
             [mcp_servers.{SERVER}]\ncommand = {bin}\nargs = [\"mcp\"]\ntool_timeout_sec = 600\n\n\
             [mcp_servers.{SERVER}.env]\nPATH = {path}\nHOME = {home}\nCLAUDE_CONFIG_DIR = {config}\n\
             ANTHROPIC_BASE_URL = {url}\nANTHROPIC_AUTH_TOKEN = \"fake-auth-token-for-tests\"\n\
             AGENT_DISPATCH_CACHE_DIR = {cache}\nLANG = \"C.UTF-8\"\n",
            base = codex_model.base_url(),
            bin = toml_string(env!("CARGO_BIN_EXE_agent-dispatch")),
            path = toml_string(&path),
            home = toml_string(claude_home.to_str().unwrap()),
            config = toml_string(claude_home.join(".claude").to_str().unwrap()),
            url = toml_string(&claude_model.base_url()),
            cache = toml_string(cache.to_str().unwrap()),
        ),
    );
    let before = Snapshot::take(&repo).unwrap();

    let run = tokio::process::Command::new(codex_support::codex())
        .args(["exec", "--json", "--skip-git-repo-check", "-C"])
        .arg(&repo)
        .arg("Get a second opinion from claude on the uncommitted change.")
        .current_dir(&repo)
        .env_clear()
        .env("PATH", &path)
        .env("HOME", w.home())
        .env("CODEX_HOME", w.codex_home())
        .env("CORP_API_KEY", codex_model.api_key())
        .env("LANG", "C.UTF-8")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(180), run)
        .await
        .expect("codex finishes within 180 s")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "codex failed: {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );

    // Codex called the server's tool and saw it complete with the claude answer.
    let call = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "item.completed" && v["item"]["type"] == "mcp_tool_call")
        .unwrap_or_else(|| panic!("no completed mcp_tool_call item:\n{stdout}"));
    let item = &call["item"];
    assert_eq!(item["server"], SERVER);
    assert_eq!(item["tool"], "dispatch");
    assert_eq!(item["status"], "completed", "{item}");
    assert_eq!(item["result"]["content"][0]["text"], CLAUDE_ANSWER);
    let structured = &item["result"]["structured_content"];
    assert_eq!(structured["ok"], true);
    assert_eq!(
        structured["checkBypassed"], false,
        "the read-only gate applied"
    );
    assert_eq!(structured["identity"]["agent"], "claude");
    // ... and the answer is what codex handed back to its model.
    let outputs = codex_model.tool_outputs();
    assert_eq!(outputs.len(), 1, "{outputs:#?}");
    assert!(outputs[0].output.contains(CLAUDE_ANSWER), "{outputs:#?}");
    // Claude really asked its model.
    assert!(!claude_model.message_requests().is_empty());

    let after = Snapshot::take(&repo).unwrap();
    assert!(
        before.diff(&after).is_empty(),
        "the tree changed: {:?}",
        before.diff(&after)
    );
    let live = support::live_in_dir(&repo);
    assert!(live.is_empty(), "processes survive in the repo: {live:?}");
}

const CLAUDE_ANSWER: &str = "CLAUDE_SECOND_OPINION: the uncommitted change is safe.";
const CODEX_TOOL: &str = "mcp__agent_dispatch__dispatch";

fn toml_string(v: &str) -> String {
    toml::Value::String(v.to_owned()).to_string()
}

/// Codex's own per-call limit (`tool_timeout_sec`) ending a long dispatch: Codex gives up on
/// the call and the dispatch's whole tree is gone (the fake `codex` CLI behind the server here,
/// a tree that would otherwise sleep for minutes).
#[tokio::test]
async fn a_host_timeout_leaves_no_process_of_the_dispatch() {
    let w = codex_support::World::new("mcp-host-timeout");
    let repo = w.repo_path().canonicalize().unwrap();
    let work = support::run_dir("mcp-host-timeout-run");
    let args = json!({ "agent": "codex", "task": "SCENARIO:sleep", "cwd": work.path() });
    let codex_model = FakeResponses::start(CodexScript::new(vec![
        Step::custom(
            "exec",
            format!("const r = await tools.{CODEX_TOOL}({args});\ntext(JSON.stringify(r));"),
        ),
        Step::message("FAKE_DONE"),
    ]))
    .await
    .unwrap();
    let system_path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
    let host_path = format!("{}:{system_path}", codex_support::bin_dir().display());
    let server_path = format!("{}:{system_path}", support::fake_cli_dir().display());
    let fake_home = w.dir.path().join("fake-codex-home");
    std::fs::create_dir_all(&fake_home).unwrap();
    w.write_codex_config(
        "config.toml",
        &format!(
            "model_provider = \"corp\"\n\n[model_providers.corp]\nname = \"Corp gateway\"\n\
             base_url = \"{base}\"\nenv_key = \"CORP_API_KEY\"\nwire_api = \"responses\"\n\n\
             [mcp_servers.{SERVER}]\ncommand = {bin}\nargs = [\"mcp\"]\ntool_timeout_sec = 3\n\n\
             [mcp_servers.{SERVER}.env]\nPATH = {path}\nCODEX_HOME = {home}\n\
             AGENT_DISPATCH_SKIP_CHECK = \"yes-skip-the-read-only-check\"\n",
            base = codex_model.base_url(),
            bin = toml_string(env!("CARGO_BIN_EXE_agent-dispatch")),
            path = toml_string(&server_path),
            home = toml_string(fake_home.to_str().unwrap()),
        ),
    );
    // Watch the dispatch's directory while Codex runs: the tree must have been up.
    let dir = work.path().to_path_buf();
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let watcher = {
        let (dir, seen) = (dir.clone(), seen.clone());
        tokio::spawn(async move {
            loop {
                let n = support::live_in_dir(&dir).len();
                seen.fetch_max(n, std::sync::atomic::Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };
    let out = tokio::process::Command::new(codex_support::codex())
        .args(["exec", "--json", "--skip-git-repo-check", "-C"])
        .arg(&repo)
        .arg("Get a second opinion.")
        .env_clear()
        .env("PATH", &host_path)
        .env("HOME", w.home())
        .env("CODEX_HOME", w.codex_home())
        .env("CORP_API_KEY", codex_model.api_key())
        .env("LANG", "C.UTF-8")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(120), out)
        .await
        .expect("codex finishes within 120 s")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let call = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "item.completed" && v["item"]["type"] == "mcp_tool_call")
        .unwrap_or_else(|| panic!("no completed mcp_tool_call item:\n{stdout}"));
    assert_eq!(call["item"]["status"], "failed");
    let err = call["item"]["error"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(err.contains("timed out"), "{err}");

    // The dispatch's CLI and its child ran, and nothing of them is left.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !support::live_in_dir(&dir).is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    watcher.abort();
    assert!(
        seen.load(std::sync::atomic::Ordering::Relaxed) >= 2,
        "the fake CLI and its child were running"
    );
    let live = support::live_in_dir(&dir);
    assert!(
        live.is_empty(),
        "processes of the dispatch survive: {live:?}"
    );
}

//! Real hosts, offline: the pinned `claude` (2.1.332) as the MCP client of `agent-dispatch mcp`,
//! its model played by the project's fake Messages endpoint, which scripts one call of the
//! `dispatch` tool; the server dispatches to the pinned `codex` (0.171.0), whose model is the
//! fake Responses endpoint. The codex answer must come back to Claude's model as the tool
//! result, and the repository must be byte-identical afterwards (`.git` included).
//!
//! The server runs under the default read-only policy: no check is on record in its fresh
//! cache directory, so its first dispatch runs `codex`'s read-only check first (offline, against
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

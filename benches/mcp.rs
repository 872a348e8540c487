//! The MCP face's cost (issue 11): the same fake CLI (`tests/fake-cli/bench/codex`, no
//! interpreter start-up) dispatched by `agent-dispatch run` and by a `tools/call` of `dispatch`
//! through a real MCP client (rmcp's) against `agent-dispatch mcp`. Prints the figures.
//!
//! - run: wall time of one `agent-dispatch run` process (start to exit);
//! - MCP warm: one `tools/call` round trip on a server that is already initialised (how a host
//!   uses it: the server lives as long as the session);
//! - MCP cold: start the server, `initialize`, one `tools/call`, close stdin, server exited.
//!
//! Overhead is the MCP median minus the `run` median. Run with `cargo bench --bench mcp`.

#[path = "../tests/mcp_support/mod.rs"]
mod mcp_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mcp_support::{Host, Session, codex_home, server_command_with, text};
use rmcp::model::ProtocolVersion;
use serde_json::json;

const N: usize = 40;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fakes() -> PathBuf {
    root().join("tests/fake-cli/bench")
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn run_once(cwd: &Path) -> Duration {
    let path = format!(
        "{}:{}",
        fakes().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let t = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_agent-dispatch"))
        .args(["run", "--agent", "codex", "--cwd"])
        .arg(cwd)
        .args(["--", "x"])
        .env("PATH", path)
        .env("CODEX_HOME", codex_home())
        .env(mcp_support::SKIP.0, mcp_support::SKIP.1)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let d = t.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    d
}

async fn call_once(s: &Session, cwd: &Path) -> Duration {
    let t = Instant::now();
    let (r, _) = s
        .call(
            "dispatch",
            json!({ "agent": "codex", "task": "x", "cwd": cwd }),
        )
        .await;
    let d = t.elapsed();
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    assert_eq!(text(&r), "BENCH_OK");
    d
}

async fn cold_once(cwd: &Path) -> Duration {
    let t = Instant::now();
    let mut s = Session::start_with(
        server_command_with(cwd, &fakes()),
        Host::new(ProtocolVersion::V_2025_11_25),
    )
    .await;
    call_once(&s, cwd).await;
    s.client.close().await.unwrap();
    assert!(s.child.wait().await.unwrap().success());
    t.elapsed()
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let cwd = std::env::temp_dir();
    rt.block_on(async {
        let warm = Session::start_with(
            server_command_with(&cwd, &fakes()),
            Host::new(ProtocolVersion::V_2025_11_25),
        )
        .await;
        // Warm caches, then interleave so drift hits every side alike.
        for _ in 0..3 {
            run_once(&cwd);
            call_once(&warm, &cwd).await;
            cold_once(&cwd).await;
        }
        let (mut run, mut hot, mut cold) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..N {
            run.push(run_once(&cwd));
            hot.push(call_once(&warm, &cwd).await);
            cold.push(cold_once(&cwd).await);
        }
        let (run, hot, cold) = (median(run), median(hot), median(cold));
        println!("MCP round trip vs `run`, same fake CLI, median of {N}:");
        println!(
            "  run (one process, start to exit)          {:8.2} ms",
            ms(run)
        );
        println!(
            "  MCP tools/call on a live server (warm)    {:8.2} ms",
            ms(hot)
        );
        println!(
            "  MCP start + initialize + call + exit (cold){:7.2} ms",
            ms(cold)
        );
        println!(
            "  overhead over run: warm {:+.2} ms, cold {:+.2} ms (target <= 5 ms)",
            ms(hot) - ms(run),
            ms(cold) - ms(run)
        );
    });
}

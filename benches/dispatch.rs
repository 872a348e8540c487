//! Benchmarks for the engine's speed and memory targets (issue 2). Run with
//! `cargo bench --bench dispatch`; it prints the figures and writes `docs/benchmarks.md`.
//!
//! - overhead: `agent-dispatch run` vs spawning the same fake CLI directly (median of N);
//! - parse throughput: a synthetic 100 MB codex JSONL stream through the real framing and the
//!   real Codex parser, in memory;
//! - peak RSS of the dispatcher while 100 MB and 1 GB of output stream through it;
//! - cancel: SIGTERM to the dispatcher until its result line is out and no process of the run is
//!   left (/proc), for a cooperative CLI and for a SIGTERM-ignoring one.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agent_dispatch::adapters;
use agent_dispatch::runner::framing;
use futures::StreamExt;
use tokio_util::codec::FramedRead;

const SKIP: (&str, &str) = ("AGENT_DISPATCH_SKIP_CHECK", "yes-skip-the-read-only-check");

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_agent-dispatch"))
}

fn path_with(dir: &Path) -> String {
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

/// A CODEX_HOME outside the temp dir with no config, so the adapter reads nothing.
/// A CODEX_HOME with only a stored login, outside the temp dir and outside the clone (which may be under it).
fn codex_home() -> PathBuf {
    let home = std::env::var_os("HOME").map(PathBuf::from).expect("HOME");
    let d = home.join(".cache/agent-dispatch-tests/bench-codex-home");
    std::fs::create_dir_all(&d).unwrap();
    // A logged-in user: the credentials preflight answers from the stored login, no process.
    std::fs::write(d.join("auth.json"), "{}").unwrap();
    d
}

/// `agent-dispatch run --agent codex --cwd CWD -- TASK` with the fakes in `fake_dir` first on
/// PATH, a logged-in CODEX_HOME and the check deliberately skipped (fake CLIs cannot pass it).
fn dispatch_cmd(fake_dir: &Path, cwd: &Path, task: &str) -> Command {
    let mut c = Command::new(bin());
    c.args(["run", "--agent", "codex", "--cwd"])
        .arg(cwd)
        .args(["--", task])
        .env("PATH", path_with(fake_dir))
        .env("CODEX_HOME", codex_home())
        .env(SKIP.0, SKIP.1)
        .stdin(Stdio::null());
    c
}

fn overhead(n: usize) -> (Duration, Duration) {
    let fake_dir = root().join("tests/fake-cli/bench");
    let cwd = std::env::temp_dir();
    let direct = |_: usize| {
        let t = Instant::now();
        let out = Command::new(fake_dir.join("codex"))
            .args(["exec", "--json", "--", "x"])
            .current_dir(&cwd)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success());
        t.elapsed()
    };
    let via = |_: usize| {
        let t = Instant::now();
        let out = dispatch_cmd(&fake_dir, &cwd, "x").output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        t.elapsed()
    };
    // Warm caches, then interleave so drift hits both sides alike.
    for i in 0..3 {
        direct(i);
        via(i);
    }
    let (mut d, mut v) = (Vec::new(), Vec::new());
    for i in 0..n {
        d.push(direct(i));
        v.push(via(i));
    }
    (median(d), median(v))
}

fn synthetic_stream(target: usize) -> Vec<u8> {
    let lines = [
        r#"{"type":"item.started","item":{"id":"item_7","type":"command_execution","command":"/bin/bash -lc 'rg -n \"fn main\" src'","aggregated_output":"","exit_code":null,"status":"in_progress"}}"#.to_owned(),
        format!(
            r#"{{"type":"item.completed","item":{{"id":"item_7","type":"command_execution","command":"/bin/bash -lc 'rg -n \"fn main\" src'","aggregated_output":"{}","exit_code":0,"status":"completed"}}}}"#,
            "src/main.rs:12:fn main() {{ println!(\\\"héllo ✓\\\"); }}\\n".repeat(12)
        ),
        format!(
            r#"{{"type":"item.completed","item":{{"id":"item_8","type":"reasoning","text":"{}"}}}}"#,
            "Checking the diff for unsafe casts and error paths. ".repeat(6)
        ),
        format!(
            r#"{{"type":"item.completed","item":{{"id":"item_9","type":"agent_message","text":"{}"}}}}"#,
            "The change looks correct; one nit in the error path. ".repeat(4)
        ),
    ];
    let mut out = Vec::with_capacity(target + 4096);
    out.extend_from_slice(br#"{"type":"thread.started","thread_id":"bench"}"#);
    out.push(b'\n');
    let mut i = 0;
    while out.len() < target {
        out.extend_from_slice(lines[i % lines.len()].as_bytes());
        out.push(b'\n');
        i += 1;
    }
    out.extend_from_slice(br#"{"type":"turn.completed","usage":{"input_tokens":1,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":1,"reasoning_output_tokens":0}}"#);
    out.push(b'\n');
    out
}

/// Bytes per second through framing + the real parser of `agent` (best of 3).
fn parse_throughput(agent: &str, stream: &[u8]) -> (f64, usize) {
    let a = adapters::find(agent).expect("adapter");
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut best = Duration::MAX;
    let mut events = 0;
    for _ in 0..3 {
        let mut parser = a.parser();
        let t = Instant::now();
        let n = rt.block_on(async {
            let mut framed = FramedRead::with_capacity(stream, framing::stdout_codec(), 64 * 1024);
            let mut n = 0usize;
            while let Some(line) = framed.next().await {
                let line = line.unwrap();
                framing::check_line(&line).unwrap();
                n += parser.parse_line(&line).unwrap().len();
            }
            n
        });
        assert!(parser.outcome().terminal.is_some());
        best = best.min(t.elapsed());
        events = n;
    }
    (stream.len() as f64 / best.as_secs_f64(), events)
}

/// Peak RSS (VmHWM, KiB) of the dispatcher while `mb` MB of output streams through it.
fn peak_rss_kib(mb: usize) -> (u64, Duration) {
    let fake_dir = root().join("tests/fake-cli");
    let t = Instant::now();
    let mut child = dispatch_cmd(
        &fake_dir,
        &std::env::temp_dir(),
        &format!("SCENARIO:stream-mb-{mb}"),
    )
    .stdout(Stdio::piped())
    .spawn()
    .unwrap();
    let pid = child.id();
    let mut hwm = 0u64;
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let mut last = String::new();
    let mut lines = 0u64;
    // Read every protocol line (as the Pi extension does) and sample VmHWM as we go.
    loop {
        line.clear();
        if out.read_line(&mut line).unwrap() == 0 {
            break;
        }
        lines += 1;
        if lines.is_multiple_of(2000) {
            hwm = hwm.max(vm_hwm(pid).unwrap_or(0));
        }
        if line.contains(r#""type":"result""#) {
            hwm = hwm.max(vm_hwm(pid).unwrap_or(0));
            last = line.clone();
        }
    }
    let status = child.wait().unwrap();
    assert!(status.success(), "{last}");
    (hwm, t.elapsed())
}

fn vm_hwm(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Live processes whose working directory is `dir`: the run's CLI and all its descendants
/// (they inherit the cwd the dispatcher gives the CLI).
fn live_in(dir: &Path) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                return false;
            };
            let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).ok();
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = stat.rfind(')').and_then(|i| stat.get(i + 2..i + 3)) == Some("Z");
            !zombie && cwd.as_deref() == Some(dir)
        })
        .count()
}

/// SIGTERM to the dispatcher once the CLI's first event is out; time until the result line is
/// written and no process of the run is alive.
fn cancel_latency(scenario: &str, i: usize) -> Duration {
    let dir = root().join(format!(
        ".cache/bench-cancel/{}-{scenario}-{i}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let dir = dir.canonicalize().unwrap();
    let mut child = dispatch_cmd(
        &root().join("tests/fake-cli"),
        &dir,
        &format!("SCENARIO:{scenario}"),
    )
    .stdout(Stdio::piped())
    .spawn()
    .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "dispatcher ended early"
        );
        // `sleep` starts its grandchild before its first command event, `ignore-term` before
        // its first (metadata) event: either way the whole tree is up when we cancel.
        if line.contains(r#""type":"command""#)
            || (scenario == "ignore-term" && line.contains(r#""type":"metadata""#))
        {
            break;
        }
    }
    assert!(
        live_in(&dir) >= 2,
        "the CLI and its child run in {}",
        dir.display()
    );
    let t = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let mut result = String::new();
    loop {
        line.clear();
        if out.read_line(&mut line).unwrap() == 0 {
            break;
        }
        if line.contains(r#""type":"result""#) {
            result = line.clone();
        }
    }
    child.wait().unwrap();
    while live_in(&dir) > 0 {
        assert!(t.elapsed() < Duration::from_secs(5), "processes survive");
        std::thread::sleep(Duration::from_millis(1));
    }
    let took = t.elapsed();
    assert!(result.contains(r#""kind":"cancelled""#), "{result}");
    let _ = std::fs::remove_dir(&dir);
    took
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` would pass nothing: run only on bench.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let n = 40;
    let mut report = String::from(
        "# Benchmarks\n\nGenerated by `cargo bench --bench dispatch` (benches/dispatch.rs); do not edit by hand.\n\n",
    );
    let mut say = |s: String| {
        println!("{s}");
        report.push_str(&s);
        report.push('\n');
    };
    say(format!(
        "Machine: {} cores; {}.\n",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(0),
        Command::new("uname")
            .arg("-sr")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default()
    ));

    let (direct, via) = overhead(n);
    let over = via.saturating_sub(direct);
    say("| measure | figure | target |".into());
    say("|---|---|---|".into());
    say(format!(
        "| dispatcher overhead (median of {n}: `run` {} vs the fake CLI directly {}) | **{}** | <= 5 ms |",
        ms(via),
        ms(direct),
        ms(over)
    ));

    let stream = synthetic_stream(100 * 1024 * 1024);
    let (bps, events) = parse_throughput("codex", &stream);
    say(format!(
        "| parse throughput, codex parser, {:.0} MB synthetic JSONL ({events} events) | **{:.0} MB/s** | >= 200 MB/s |",
        stream.len() as f64 / 1e6,
        bps / 1e6
    ));
    drop(stream);

    for mb in [100, 1024] {
        let (kib, took) = peak_rss_kib(mb);
        say(format!(
            "| dispatcher peak RSS while {mb} MB of output stream through it ({:.1} s) | **{:.1} MB** | <= 20 MB at 1 GB, flat |",
            took.as_secs_f64(),
            kib as f64 / 1024.0
        ));
    }

    let coop: Vec<Duration> = (0..10).map(|i| cancel_latency("sleep", i)).collect();
    let worst = *coop.iter().max().unwrap();
    say(format!(
        "| cancel, cooperative CLI + grandchild: result written and group gone (median / worst of 10) | **{} / {}** | <= 100 ms |",
        ms(median(coop.clone())),
        ms(worst)
    ));
    let stubborn: Vec<Duration> = (0..3).map(|i| cancel_latency("ignore-term", i)).collect();
    say(format!(
        "| cancel, SIGTERM-ignoring CLI + grandchild (worst of 3) | **{}** | <= 2.1 s |",
        ms(*stubborn.iter().max().unwrap())
    ));

    let path = root().join("docs/benchmarks.md");
    let mut f = std::fs::File::create(&path).unwrap();
    f.write_all(report.as_bytes()).unwrap();
    println!("wrote {}", path.display());
}

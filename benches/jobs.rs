//! Benchmarks for background jobs (issue 12). Run with `cargo bench --bench jobs`; it prints the
//! figures and writes `docs/benchmarks-jobs.md`.
//!
//! - submit: `agent-dispatch run --background` until its job line is read (the caller's wait);
//! - list: `agent-dispatch jobs` and `jobs --json` over a store of 1,000 finished jobs.
//!
//! The store, CODEX_HOME and working directory live under `$HOME/.cache/agent-dispatch-tests/`.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agent_dispatch::contract::{DispatchResult, Failure, FailureKind, Identity};
use agent_dispatch::jobs::Store;
use agent_dispatch::jobs::store::{self, JobSpec};
use agent_dispatch::limits::Limits;
use agent_dispatch::protocol::Line;

const SKIP: (&str, &str) = ("AGENT_DISPATCH_SKIP_CHECK", "yes-skip-the-read-only-check");

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

struct World {
    base: tempfile::TempDir,
}

impl World {
    fn new(name: &str) -> Self {
        let dir = PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/agent-dispatch-tests");
        std::fs::create_dir_all(&dir).unwrap();
        let base = tempfile::Builder::new()
            .prefix(name)
            .tempdir_in(dir)
            .unwrap();
        for d in ["state", "codex-home", "cwd"] {
            std::fs::create_dir_all(base.path().join(d)).unwrap();
        }
        Self { base }
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_agent-dispatch"));
        let fake = root().join("tests/fake-cli/bench");
        c.args(args)
            .env(
                "PATH",
                format!("{}:{}", fake.display(), std::env::var("PATH").unwrap()),
            )
            .env("CODEX_HOME", self.base.path().join("codex-home"))
            .env("AGENT_DISPATCH_STATE_DIR", self.base.path().join("state"))
            .env(SKIP.0, SKIP.1)
            .stdin(Stdio::null());
        c
    }

    fn cwd(&self) -> PathBuf {
        self.base.path().join("cwd")
    }

    fn store(&self) -> Store {
        Store::open(self.base.path().join("state/jobs")).unwrap()
    }
}

/// Time from starting `run --background` to reading its job line. Each job is waited for
/// (untimed) before the next, so workers never compete with the measurement.
fn submit_latency(w: &World, n: usize) -> Vec<Duration> {
    let cwd = w.cwd();
    let mut times = Vec::new();
    for i in 0..n + 3 {
        let t = Instant::now();
        let mut child = w
            .cmd(&["run", "--background", "--agent", "codex", "--cwd"])
            .arg(&cwd)
            .args(["--", "x"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let took = t.elapsed();
        child.wait().unwrap();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["type"], "job", "{line}");
        let out = w
            .cmd(&["jobs", "wait", v["id"].as_str().unwrap()])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        if i >= 3 {
            times.push(took); // the first three warm the caches
        }
    }
    times
}

/// Fill the store with `n` finished jobs, as workers leave them.
fn fill(store: &Store, n: usize, cwd: &Path) {
    let result = DispatchResult {
        ok: true,
        text: "The change looks correct; one nit in the error path. ".repeat(8),
        failure: None,
        ..DispatchResult::early_failure(
            Identity::requested("codex", None, None),
            Failure::new(FailureKind::Cancelled, ""),
        )
    };
    let line = serde_json::to_vec(&Line::result(result)).unwrap();
    for i in 0..n {
        let spec = JobSpec {
            id: String::new(),
            agent: "codex".into(),
            cwd: cwd.to_path_buf(),
            model: None,
            effort: None,
            scope: None,
            limits: Limits::default(),
            created_at: store::now_ms() - (n - i) as u64,
        };
        let job = store.create(spec, "review the diff").unwrap();
        store::write_atomic(&job.dir.join(store::STARTED_FILE), b"").unwrap();
        std::fs::write(job.dir.join(store::EVENTS_FILE), &line).unwrap();
        store::write_atomic(&job.dir.join(store::RESULT_FILE), &line).unwrap();
    }
}

/// CPU time (user + system) of this process's waited-for children so far, from
/// `/proc/self/stat` (clock ticks of 10 ms): what a command cost, apart from the machine's load.
fn children_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    // After the command name: state is field 3, cutime 16 and cstime 17 (1-based).
    let ticks: u64 = fields[13].parse::<u64>().unwrap() + fields[14].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 10)
}

/// Wall time of each listing, and the mean CPU time of one.
fn list_latency(w: &World, json: bool, n: usize) -> (Vec<Duration>, Duration) {
    let args: &[&str] = if json { &["jobs", "--json"] } else { &["jobs"] };
    for _ in 0..3 {
        w.cmd(args).output().unwrap();
    }
    let cpu = children_cpu();
    let wall = (0..n)
        .map(|_| {
            let t = Instant::now();
            let out = w.cmd(args).output().unwrap();
            let took = t.elapsed();
            assert!(out.status.success());
            assert!(out.stdout.len() > 1000);
            took
        })
        .collect();
    (wall, (children_cpu() - cpu) / n as u32)
}

/// The machine's load average over the last minute (the machine is shared).
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split(' ')
        .next()
        .unwrap_or("?")
        .to_owned()
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let mut report = String::from(
        "# Benchmarks: background jobs\n\nGenerated by `cargo bench --bench jobs` (benches/jobs.rs); do not edit by hand.\n\n",
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
    say("| measure | figure | target |".into());
    say("|---|---|---|".into());

    let w = World::new("bench-jobs-");
    let n = 30;
    let submit = submit_latency(&w, n);
    say(format!(
        "| `run --background` until its job line is read (median / worst of {n}) | **{} / {}** | <= 20 ms median |",
        ms(median(submit.clone())),
        ms(*submit.iter().max().unwrap())
    ));

    let many = World::new("bench-jobs-1000-");
    fill(&many.store(), 1000, &many.cwd());
    let (table, table_cpu) = list_latency(&many, false, 20);
    let (json, json_cpu) = list_latency(&many, true, 20);
    say(format!(
        "| `jobs` over 1,000 finished jobs, table / `--json`: wall time (median of 20) | **{} / {}** | <= 50 ms |",
        ms(median(table)),
        ms(median(json))
    ));
    say(format!(
        "| the same, CPU time (user + system, mean of 20) | **{} / {}** | |",
        ms(table_cpu),
        ms(json_cpu)
    ));
    say(format!(
        "\nLoad average (1 min) at the end: {} on {} cores; wall times include waiting for a core.",
        load(),
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(0)
    ));

    let path = root().join("docs/benchmarks-jobs.md");
    let mut f = std::fs::File::create(&path).unwrap();
    f.write_all(report.as_bytes()).unwrap();
    println!("wrote {}", path.display());
}

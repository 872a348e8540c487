//! `agent-dispatch jobs …`: list, show, wait for, follow, cancel and prune background jobs, and
//! the hidden worker entry point `run --background` starts.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use agent_dispatch::contract::Failure;
use agent_dispatch::env;
use agent_dispatch::jobs::store::{self, JobState, JobView};
use agent_dispatch::jobs::{self, JobId, Store, queue};
use agent_dispatch::limits;
use anyhow::Context;
use clap::Subcommand;

/// Exit code of `jobs wait --timeout` when the job is still running (as `timeout(1)`).
const STILL_RUNNING: u8 = 124;
/// How long `jobs cancel` waits for the worker to finish stopping the tree: the supervisor's
/// grace and kill bounds, plus room for a loaded machine.
const CANCEL_BOUND: Duration = Duration::from_secs(15);
/// How often `jobs logs --follow` looks for new lines.
const FOLLOW_POLL: Duration = Duration::from_millis(100);
/// The default of `jobs prune --older-than`.
const DEFAULT_RETENTION: &str = "7d";

#[derive(Debug, clap::Args)]
pub struct JobsArgs {
    #[command(subcommand)]
    command: Option<JobsCommand>,
    /// Print JSON (an array of jobs) instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Subcommand)]
enum JobsCommand {
    /// One job: id, state, agent, cwd, times, and the protocol result once finished.
    Show {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Block until the job ends; print its result line and exit like `run` (0 ok, 1 failed or
    /// lost; 124 when `--timeout` passed first).
    Wait {
        id: String,
        /// Give up after this long (`30s`, `10m`); the job keeps running.
        #[arg(long)]
        timeout: Option<String>,
        /// Print the job (as `show --json`) instead of the result line.
        #[arg(long)]
        json: bool,
    },
    /// The job's protocol lines so far (started, event…, result).
    Logs {
        id: String,
        /// Keep printing new lines until the job ends.
        #[arg(long, short)]
        follow: bool,
    },
    /// Cancel the job named (only that one) and wait until its process tree is gone.
    Cancel {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Remove finished and lost jobs that ended longer ago than `--older-than` (default 7d).
    Prune {
        #[arg(long, default_value = DEFAULT_RETENTION)]
        older_than: String,
    },
    #[command(name = "__worker", hide = true)]
    Worker { dir: PathBuf },
}

pub fn open_store() -> anyhow::Result<Store> {
    let root = store::default_root(&env::current())
        .context("no place for the job store: set AGENT_DISPATCH_STATE_DIR or HOME")?;
    Store::open(&root).with_context(|| format!("cannot open the job store {}", root.display()))
}

pub async fn jobs(args: JobsArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        None => list(args.json),
        Some(JobsCommand::Show { id, json }) => show(&id, json),
        Some(JobsCommand::Wait { id, timeout, json }) => wait(&id, timeout.as_deref(), json).await,
        Some(JobsCommand::Logs { id, follow }) => logs(&id, follow).await,
        Some(JobsCommand::Cancel { id, json }) => cancel(&id, json).await,
        Some(JobsCommand::Prune { older_than }) => prune(&older_than),
        Some(JobsCommand::Worker { dir }) => worker(&dir).await,
    }
}

fn usage_error(f: Failure) -> anyhow::Result<ExitCode> {
    eprintln!("agent-dispatch: {}", f.message);
    Ok(ExitCode::from(2))
}

/// The job named, or a message and exit code 1.
fn find(store: &Store, id: &str) -> Result<(JobId, JobView), ExitCode> {
    let id = match JobId::parse(id) {
        Ok(id) => id,
        Err(f) => {
            eprintln!("agent-dispatch: {}", f.message);
            return Err(ExitCode::from(2));
        }
    };
    match store.find(&id) {
        Some(v) => Ok((id, v)),
        None => {
            eprintln!("agent-dispatch: no job {id} in {}", store.root().display());
            Err(ExitCode::from(1))
        }
    }
}

fn rfc3339(ms: u64) -> String {
    let t = std::time::UNIX_EPOCH + Duration::from_millis(ms);
    humantime::format_rfc3339_seconds(t).to_string()
}

fn list(json: bool) -> anyhow::Result<ExitCode> {
    let store = open_store()?;
    let jobs = store.list();
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer(&mut out, &jobs)?;
        writeln!(out)?;
    } else {
        for j in &jobs {
            let what = j
                .dispatch_result()
                .and_then(|r| r.failure.as_ref())
                .map(|f| f.kind.as_str())
                .unwrap_or("");
            writeln!(
                out,
                "{}  {:<9} {:<8} {}  {}  {what}",
                j.spec.id,
                j.state.as_str(),
                j.spec.agent,
                rfc3339(j.spec.created_at),
                j.spec.cwd.display(),
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_view(v: &JobView) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string(v)?);
    Ok(())
}

fn show(id: &str, json: bool) -> anyhow::Result<ExitCode> {
    let store = open_store()?;
    let (_, v) = match find(&store, id) {
        Ok(x) => x,
        Err(code) => return Ok(code),
    };
    if json {
        print_view(&v)?;
    } else {
        println!("id        {}", v.spec.id);
        println!("state     {}", v.state.as_str());
        println!("agent     {}", v.spec.agent);
        println!("cwd       {}", v.spec.cwd.display());
        println!("created   {}", rfc3339(v.spec.created_at));
        if let Some(t) = v.started_at {
            println!("started   {}", rfc3339(t));
        }
        if let Some(t) = v.finished_at {
            println!("finished  {}", rfc3339(t));
        }
        if let Some(r) = v.dispatch_result() {
            if let Some(f) = &r.failure {
                println!("failure   {}: {}", f.kind, f.message);
            }
            if !r.text.is_empty() {
                println!("\n{}", r.text);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Print how a finished job ended, as `run` would, and exit like it.
fn finish(store: &Store, id: &JobId, json: bool) -> anyhow::Result<ExitCode> {
    let dir = store.dir(id);
    let Some(v) = store.find(id) else {
        eprintln!("agent-dispatch: job {id} disappeared (pruned?)");
        return Ok(ExitCode::from(1));
    };
    if json {
        print_view(&v)?;
    }
    match (v.state, v.dispatch_result()) {
        (JobState::Queued | JobState::Running, _) => Ok(ExitCode::from(STILL_RUNNING)),
        (_, Some(r)) => {
            if !json {
                // Verbatim, so it is byte for byte the line the dispatch wrote.
                println!("{}", store::read_result_line(&dir).unwrap_or_default());
            }
            Ok(ExitCode::from(if r.ok { 0 } else { 1 }))
        }
        (_, None) => {
            eprintln!(
                "agent-dispatch: job {id} was lost: its worker ended without a result (its process tree went with it)"
            );
            Ok(ExitCode::from(1))
        }
    }
}

async fn wait(id: &str, timeout: Option<&str>, json: bool) -> anyhow::Result<ExitCode> {
    let limit = match timeout
        .map(|t| limits::parse_duration(t, "--timeout"))
        .transpose()
    {
        Ok(l) => l,
        Err(f) => return usage_error(f),
    };
    let store = open_store()?;
    let (id, v) = match find(&store, id) {
        Ok(x) => x,
        Err(code) => return Ok(code),
    };
    if !v.state.is_finished() && !jobs::wait_for_worker(&store.dir(&id), limit).await {
        if json {
            print_view(&store.find(&id).unwrap_or(v))?;
        } else {
            eprintln!("agent-dispatch: job {id} is still running");
        }
        return Ok(ExitCode::from(STILL_RUNNING));
    }
    finish(&store, &id, json)
}

async fn logs(id: &str, follow: bool) -> anyhow::Result<ExitCode> {
    let store = open_store()?;
    let (id, _) = match find(&store, id) {
        Ok(x) => x,
        Err(code) => return Ok(code),
    };
    let dir = store.dir(&id);
    let path = dir.join(store::EVENTS_FILE);
    let mut pos = 0u64;
    let mut out = std::io::stdout();
    loop {
        // Whether the worker is gone is read *before* the last copy, so no line written
        // before it exited is missed.
        let done = !follow || !store::is_locked(&dir.join(store::LOCK_FILE));
        if let Ok(mut f) = std::fs::File::open(&path) {
            f.seek(SeekFrom::Start(pos))?;
            let mut buf = Vec::new();
            f.read_to_end(&mut buf)?;
            // Only whole lines: a line being appended right now is printed next time.
            let end = if done {
                buf.len()
            } else {
                buf.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1)
            };
            out.write_all(&buf[..end])?;
            out.flush()?;
            pos += end as u64;
        }
        if done {
            return Ok(ExitCode::SUCCESS);
        }
        tokio::time::sleep(FOLLOW_POLL).await;
    }
}

async fn cancel(id: &str, json: bool) -> anyhow::Result<ExitCode> {
    let store = open_store()?;
    let (id, v) = match find(&store, id) {
        Ok(x) => x,
        Err(code) => return Ok(code),
    };
    let dir = store.dir(&id);
    if !v.state.is_finished() {
        jobs::request_cancel(&dir)?;
        if !jobs::wait_for_worker(&dir, Some(CANCEL_BOUND)).await {
            eprintln!(
                "agent-dispatch: job {id} did not stop within {}",
                humantime::format_duration(CANCEL_BOUND)
            );
            return Ok(ExitCode::from(1));
        }
    }
    let Some(v) = store.find(&id) else {
        return Ok(ExitCode::from(1));
    };
    if json {
        print_view(&v)?;
    } else {
        println!("{} {}", v.spec.id, v.state.as_str());
    }
    // Cancelled now, or had already ended: either way nothing of it runs any more.
    Ok(ExitCode::SUCCESS)
}

fn prune(older_than: &str) -> anyhow::Result<ExitCode> {
    let age = match limits::parse_duration(older_than, "--older-than") {
        Ok(d) => d,
        Err(f) => return usage_error(f),
    };
    let store = open_store()?;
    for id in store.prune(age) {
        println!("{id}");
    }
    Ok(ExitCode::SUCCESS)
}

async fn worker(dir: &std::path::Path) -> anyhow::Result<ExitCode> {
    let program = std::env::current_exe().context("cannot find this binary")?;
    let max = queue::max_running(&env::current());
    jobs::worker::work(dir, &program, max)
        .await
        .with_context(|| format!("job worker for {}", dir.display()))?;
    Ok(ExitCode::SUCCESS)
}

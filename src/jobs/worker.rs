//! The detached worker of one job: hold the job's lock, wait for a running slot, run the
//! dispatch as a blocking `run` of this same binary, and copy its protocol lines into the store.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsFd;
use std::path::Path;
use std::process::Stdio;

use tokio::io::AsyncBufReadExt;
use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

use super::queue;
use super::store::{self, JobSpec};
use crate::contract::{DispatchResult, Failure, FailureKind};
use crate::protocol::Line;
use crate::supervise::unix;

/// The argv of the blocking `run` that performs this job's dispatch.
pub fn run_args(spec: &JobSpec, dir: &Path) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = vec![
        "run".into(),
        "--lifeline".into(),
        "--agent".into(),
        spec.agent.clone().into(),
        "--cwd".into(),
        spec.cwd.clone().into(),
        "--task-file".into(),
        dir.join(store::TASK_FILE).into(),
        "--timeout".into(),
        match spec.limits.timeout {
            Some(d) => format!("{}ms", d.as_millis()).into(),
            None => "off".into(),
        },
    ];
    if let Some(n) = spec.limits.max_tokens {
        args.extend(["--max-tokens".into(), n.to_string().into()]);
    }
    for (flag, v) in [
        ("--model", &spec.model),
        ("--effort", &spec.effort),
        ("--scope", &spec.scope),
    ] {
        if let Some(v) = v {
            args.extend([flag.into(), v.clone().into()]);
        }
    }
    args
}

/// Cancel on SIGTERM, SIGINT or SIGHUP (replacing the ignore the worker was started with), and at
/// once if `jobs cancel` left its marker before the handlers were in place.
fn cancel_on_signals(dir: &Path) -> std::io::Result<CancellationToken> {
    let cancel = CancellationToken::new();
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut hup = signal(SignalKind::hangup())?;
    let token = cancel.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
            _ = hup.recv() => {}
        }
        token.cancel();
    });
    if dir.join(store::CANCEL_FILE).exists() {
        cancel.cancel();
    }
    Ok(cancel)
}

/// Run the job in `dir` to its end. `program` is this binary; `max_running` the slot count.
pub async fn work(dir: &Path, program: &Path, max_running: usize) -> std::io::Result<()> {
    // The lock arrived as our stdin; keep a close-on-exec duplicate of it (the same open file,
    // so the same lock) so that nothing we start can inherit it and outlive us holding it.
    let lock: File = std::io::stdin().as_fd().try_clone_to_owned()?.into();
    if !same_file(&lock, &dir.join(store::LOCK_FILE)) {
        return Err(std::io::Error::other(
            "a job worker is started by `run --background`, with the job's locked lock file as its stdin",
        ));
    }
    unix::become_subreaper();
    let cancel = cancel_on_signals(dir)?;
    let spec: JobSpec = serde_json::from_slice(&std::fs::read(dir.join(store::JOB_FILE))?)
        .map_err(std::io::Error::other)?;
    let root = dir.parent().unwrap_or(dir);
    let mut events = OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(store::EVENTS_FILE))?;

    let ticket = queue::ticket_name(spec.created_at, &spec.id);
    let slot = tokio::select! {
        s = queue::acquire(root, &ticket, max_running, |t| {
            store::is_locked(&root.join(queue::job_of(t)).join(store::LOCK_FILE))
        }) => Some(s?),
        _ = cancel.cancelled() => None,
    };
    let Some(_slot) = slot else {
        let identity = crate::contract::Identity::requested(
            &spec.agent,
            spec.model.as_deref(),
            spec.effort.as_deref(),
        );
        let result = DispatchResult::early_failure(
            identity,
            Failure::new(
                FailureKind::Cancelled,
                "the job was cancelled while it waited for a running slot; nothing was started",
            ),
        );
        let line = serde_json::to_string(&Line::result(result)).map_err(std::io::Error::other)?;
        append_line(&mut events, &line)?;
        store::write_atomic(&dir.join(store::RESULT_FILE), line.as_bytes())?;
        return Ok(());
    };
    store::write_atomic(&dir.join(store::STARTED_FILE), b"")?;

    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(store::LOG_FILE))?;
    let mut child = tokio::process::Command::new(program)
        .args(run_args(&spec, dir))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(log))
        .kill_on_drop(false)
        .spawn()?;
    // The lifeline: held open while the dispatch runs, closed to cancel it.
    let mut lifeline = child.stdin.take();
    let stdout = child.stdout.take().expect("piped stdout");
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    loop {
        tokio::select! {
            line = lines.next_line() => match line {
                Ok(Some(line)) => {
                    append_line(&mut events, &line)?;
                    if is_result(&line) {
                        store::write_atomic(&dir.join(store::RESULT_FILE), line.as_bytes())?;
                    }
                }
                Ok(None) | Err(_) => break,
            },
            _ = cancel.cancelled(), if lifeline.is_some() => {
                lifeline = None;
            }
        }
    }
    let _ = child.wait().await;
    drop(lifeline);
    // Nothing the dispatch started outlives the job (a subreaper's orphans included).
    unix::kill_descendants();
    Ok(())
}

/// Whether the open `file` is the file at `path` (same device and inode).
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// One line in one write, so a reader of the log never sees half of a line's bytes interleaved.
fn append_line(file: &mut File, line: &str) -> std::io::Result<()> {
    let mut bytes = Vec::with_capacity(line.len() + 1);
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    file.write_all(&bytes)
}

fn is_result(line: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Tag<'a> {
        #[serde(borrow, rename = "type")]
        ty: &'a str,
    }
    serde_json::from_str::<Tag>(line).is_ok_and(|t| t.ty == "result")
}

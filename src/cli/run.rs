//! `agent-dispatch run`: one dispatch, streamed as protocol lines — or, on a terminal without
//! `--json`, shown live for a person ([`super::view`]); SIGTERM, SIGINT and (with `--lifeline`) EOF
//! on stdin cancel it, and the final `result` is still written.

use std::io::IsTerminal;
use std::process::ExitCode;

use agent_dispatch::contract::Identity;
use agent_dispatch::contract::{DispatchRequest, DispatchResult, Failure, FailureKind};
use agent_dispatch::dispatch::{self, DispatchOptions};
use agent_dispatch::jobs::{self, JobLine, JobSpec};
use agent_dispatch::limits::Limits;
use agent_dispatch::protocol::{Line, Writer};
use agent_dispatch::readonly::gate;
use agent_dispatch::request::ValidRequest;
use agent_dispatch::supervise::{Supervisor, lifeline, unix};
use agent_dispatch::{env, request};
use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

use super::RunArgs;
use super::view::HumanView;

/// Where the dispatch is shown: the protocol for machines, the live view for a person.
enum Face {
    Json(Writer<std::io::Stdout>),
    /// The view exists once the dispatch has started.
    Human(Option<HumanView>),
}

impl Face {
    fn started(
        &mut self,
        identity: agent_dispatch::contract::Identity,
        program: String,
        cwd: String,
    ) {
        match self {
            Face::Json(out) => out.write(&Line::started(identity, program, cwd)),
            Face::Human(view) => *view = Some(HumanView::start(&identity.agent, &program, &cwd)),
        }
    }

    fn event(&mut self, ev: agent_dispatch::contract::StreamEvent) {
        match self {
            Face::Json(out) => out.write(&Line::event(ev)),
            Face::Human(Some(view)) => view.event(&ev),
            Face::Human(None) => {}
        }
    }

    fn result(self, result: DispatchResult) -> anyhow::Result<ExitCode> {
        let code = if result.ok { 0 } else { 1 };
        match self {
            Face::Json(mut out) => out.write(&Line::result(result)),
            Face::Human(view) => {
                let view = view.unwrap_or_else(|| HumanView::start(&result.identity.agent, "", ""));
                view.finish(&result);
            }
        }
        Ok(ExitCode::from(code))
    }
}

fn read_task(args: &RunArgs) -> Result<String, Failure> {
    let invalid = |m: String| Failure::new(FailureKind::InvalidRequest, m);
    match &args.task_file {
        Some(path) if path.as_os_str() == "-" => {
            if args.lifeline {
                return Err(invalid(
                    "--task-file - cannot be combined with --lifeline".into(),
                ));
            }
            std::io::read_to_string(std::io::stdin())
                .map_err(|e| invalid(format!("cannot read the task from stdin: {e}")))
        }
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| invalid(format!("cannot read task file {}: {e}", path.display()))),
        None => Ok(args.task.join(" ")),
    }
}

pub async fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    // Orphaned descendants re-parent to us so cleanup can find and reap them; and if our own
    // parent dies abruptly, we get SIGTERM and clean up like a cancel.
    unix::become_subreaper();
    unix::terminate_with_parent();

    let mut face = if args.json || !std::io::stdout().is_terminal() {
        Face::Json(Writer::new(std::io::stdout()))
    } else {
        Face::Human(None)
    };
    let identity = Identity::requested(&args.agent, args.model.as_deref(), args.effort.as_deref());
    let task = match read_task(&args) {
        Ok(t) => t,
        Err(f) => return face.result(DispatchResult::early_failure(identity, f)),
    };
    let cwd = match &args.cwd {
        Some(c) => c.clone(),
        None => std::env::current_dir()?,
    };
    let req = DispatchRequest {
        agent: args.agent.clone(),
        task,
        scope: args.scope.clone(),
        model: args.model.clone(),
        effort: args.effort.clone(),
        cwd,
    };
    let valid = match request::validate(&req) {
        Ok(v) => v,
        Err(f) => return face.result(DispatchResult::early_failure(identity, f)),
    };
    let parent_env = env::current();
    let gate = match gate::policy_from_env(&parent_env) {
        Ok(c) => c,
        Err(f) => return face.result(DispatchResult::early_failure(identity, f)),
    };
    let limits = match Limits::from_env(args.timeout.as_deref(), args.max_tokens, &parent_env) {
        Ok(l) => l,
        Err(f) => return face.result(DispatchResult::early_failure(identity, f)),
    };
    if args.background {
        return background(&valid, &req.task, limits);
    }
    let opts = DispatchOptions {
        parent_env,
        endpoint: None,
        gate,
        limits,
    };
    let program = agent_dispatch::program::resolve_program(valid.adapter, &opts.parent_env)
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    face.started(identity, program, valid.cwd.display().to_string());

    let cancel = CancellationToken::new();
    let supervisor = Supervisor::new();
    let watcher = tokio::spawn(watch_for_cancel(cancel.clone(), args.lifeline));
    let result = {
        let mut sink = |ev| face.event(ev);
        dispatch::dispatch_valid(&valid, &opts, &supervisor, cancel.clone(), &mut sink).await
    };
    watcher.abort();
    // Belt and braces: nothing this process started outlives it.
    supervisor.shutdown().await;
    face.result(result)
}

/// Hand a validated dispatch to a detached worker and print its job line. Nothing else is
/// printed: the dispatch's own lines go to the job store (`jobs logs`, `jobs wait`).
fn background(valid: &ValidRequest, task: &str, limits: Limits) -> anyhow::Result<ExitCode> {
    let store = super::jobs::open_store()?;
    let spec = JobSpec {
        id: String::new(),
        agent: valid.adapter.id().to_owned(),
        cwd: valid.cwd.clone(),
        model: valid.model.clone(),
        effort: valid.effort.clone(),
        scope: valid.scope.clone(),
        limits,
        created_at: jobs::store::now_ms(),
    };
    let program = std::env::current_exe()?;
    let id = jobs::submit(&store, spec, task, &program)?;
    let line = JobLine {
        protocol: agent_dispatch::protocol::PROTOCOL_VERSION,
        id: id.to_string(),
    };
    println!("{}", serde_json::to_string(&line)?);
    Ok(ExitCode::SUCCESS)
}

/// Cancel on SIGTERM, SIGINT, SIGHUP, or lifeline EOF.
async fn watch_for_cancel(cancel: CancellationToken, lifeline: bool) {
    let (Ok(mut term), Ok(mut int), Ok(mut hup)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
        signal(SignalKind::hangup()),
    ) else {
        return;
    };
    let lifeline = async {
        if lifeline {
            lifeline::stdin_closed().await
        } else {
            std::future::pending().await
        }
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
        _ = hup.recv() => {}
        _ = lifeline => {}
    }
    cancel.cancel();
}

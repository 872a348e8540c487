//! The command-line face: `run`, `agents`, `models`, `check`, `demo`. Each subcommand is a thin
//! shell over the library (`run` over [`agent_dispatch::dispatch`]); nothing here knows an agent.

mod agents;
mod check;
mod demo;
mod jobs;
mod models;
mod run;
mod view;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "agent-dispatch",
    version,
    about = "Run another coding-agent CLI as a blocking, sandboxed read-only subagent"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Dispatch a task. On a terminal: a live view, then the answer; with `--json` or when
    /// stdout is not a terminal: versioned JSONL (started, event…, result).
    Run(RunArgs),
    /// List the supported agents, their capabilities and the installed CLI versions.
    Agents {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Prove offline, on this machine, that each agent CLI cannot write: scripted write
    /// attempts against a loopback fake model, a byte-level tree comparison. Records passes.
    Check {
        /// Agent ids (default: all).
        agents: Vec<String>,
        /// Print JSON instead of a report.
        #[arg(long)]
        json: bool,
    },
    /// Background jobs (`run --background`): list them, or show, wait, logs, cancel, prune.
    Jobs(jobs::JobsArgs),
    /// Watch a real dispatch with no keys and no network: the real CLI against the built-in
    /// loopback fake model, in a scratch repository — the agent tries to write, is refused by
    /// the sandbox, reads the diff, and answers.
    Demo {
        /// Agent ids (default: every installed one).
        agents: Vec<String>,
    },
    /// List an agent's model catalogue (read live from the CLI).
    Models {
        /// Agent id, as listed by `agents`.
        agent: String,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Agent id, as listed by `agents`.
    #[arg(long)]
    agent: String,
    /// Model, passed to the CLI unchanged (default: the CLI's own).
    /// Hyphen values are accepted here so that they get the typed `invalid-request` error.
    #[arg(long, allow_hyphen_values = true)]
    model: Option<String>,
    /// Reasoning effort, passed to the CLI unchanged (default: the CLI's own).
    #[arg(long, allow_hyphen_values = true)]
    effort: Option<String>,
    /// A scope hint appended to the task (which files or change to look at).
    #[arg(long)]
    scope: Option<String>,
    /// Working directory the agent runs in (default: the current directory).
    #[arg(long)]
    cwd: Option<PathBuf>,
    /// Read the task from a file (`-` for stdin) instead of the arguments after `--`.
    #[arg(long, conflicts_with = "task")]
    task_file: Option<PathBuf>,
    /// Write the JSONL protocol even on a terminal.
    #[arg(long)]
    json: bool,
    /// Treat end-of-file on stdin as "the caller died": cancel and clean up.
    #[arg(long, conflicts_with = "background")]
    lifeline: bool,
    /// Wall-clock limit (`90s`, `15m`, `1h`; `off` for none). Default: $AGENT_DISPATCH_TIMEOUT,
    /// else 30m. Past it the run fails with `timeout`.
    #[arg(long)]
    timeout: Option<String>,
    /// Token budget: the run fails with `budget-exceeded` at the first usage report over it.
    #[arg(long)]
    max_tokens: Option<u64>,
    /// Start the dispatch as a background job: print `{"type":"job","id":…}` and return at once.
    #[arg(long)]
    background: bool,
    /// The task, after `--`.
    #[arg(last = true)]
    task: Vec<String>,
}

pub async fn execute(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Run(args) => run::run(args).await,
        Command::Agents { json } => agents::agents(json).await,
        Command::Models { agent, json } => models::models(&agent, json).await,
        Command::Check { agents, json } => check::check(&agents, json).await,
        Command::Jobs(args) => jobs::jobs(args).await,
        Command::Demo { agents } => demo::demo(&agents).await,
    }
}

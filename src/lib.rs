//! agent-dispatch: run another coding-agent CLI as a read-only subagent.
//!
//! Layers, bottom up (each imports only from layers below it; `docs/design.md` has the map):
//! - leaves: [`contract`] (wire types), [`launch`] (what starts a CLI), [`git`], [`env`],
//!   [`secrets`] (the shared deny list), [`prompt`], [`text`], [`loopback`] (test/check HTTP servers),
//!   [`lock_file`] (locks a dead holder frees);
//! - [`supervise`]: process groups, cleanup, lifeline (the only place that talks to the OS);
//! - [`adapter`]: the per-CLI contract; [`adapters`]: one folder per CLI and the registry;
//! - [`request`] (validation), [`program`] (finding a CLI), [`launcher`] (what a shim runs),
//!   [`tree_guard`];
//! - [`runner`]: run one launch and classify it;
//! - [`readonly`]: the check and the gate; [`limits`] (time and tokens);
//!   [`dispatch`]: the service every face calls; [`jobs`] (background dispatches);
//! - [`protocol`]: the versioned JSONL the CLI writes; [`inventory`]: agents and models as
//!   data for every face;
//! - [`mcp`]: the MCP server face (`agent-dispatch mcp`).

pub mod adapter;
pub mod adapters;
pub mod contract;
pub mod dispatch;
pub mod env;
pub mod git;
pub mod inventory;
pub mod jobs;
pub mod launch;
pub mod launcher;
pub mod limits;
pub mod lock_file;
pub mod loopback;
pub mod mcp;
pub mod program;
pub mod prompt;
pub mod protocol;
pub mod readonly;
pub mod request;
pub mod runner;
pub mod secrets;
pub mod supervise;
pub mod text;
pub mod tree_guard;
pub mod wall;

//! What this build supports and what is installed here, as data: the agents with their
//! capabilities and installed CLI versions, and an agent's live model catalogue. One source for
//! every face (`agent-dispatch agents|models --json`, the MCP `agents` and `models` tools).

use serde::Serialize;

use crate::adapter::{Capabilities, Env, ModelInfo};
use crate::adapters;
use crate::contract::Failure;
use crate::program;
use crate::supervise::Supervisor;

/// One supported agent and the state of its CLI on this machine.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInfo {
    pub id: &'static str,
    pub display_name: &'static str,
    pub program: &'static str,
    pub installed: bool,
    pub path: Option<String>,
    pub version: Option<String>,
    pub install_hint: &'static str,
    pub capabilities: Capabilities,
    /// What the adapter cannot hide or enforce.
    pub limits: &'static [&'static str],
}

/// An agent's model catalogue, read live from its CLI.
#[derive(Debug, Clone, Serialize)]
pub struct Catalogue {
    pub agent: &'static str,
    pub models: Vec<ModelInfo>,
}

/// Why a catalogue could not be listed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ModelsError {
    /// Unknown agent, CLI not installed, or the CLI's discovery failed.
    #[error(transparent)]
    Failure(#[from] Failure),
    #[error(
        "{0} has no model catalogue; pass any model name the CLI accepts and its own error will name a bad one"
    )]
    NoCatalogue(&'static str),
}

/// Every registered agent, with its installed path and version probed live.
pub async fn agents(parent: &Env, supervisor: &Supervisor) -> Vec<AgentInfo> {
    let mut infos = Vec::new();
    for a in adapters::registry() {
        let path = program::resolve_program(*a, parent).ok();
        let version = match &path {
            Some(p) => program::version(*a, p, parent, supervisor).await.ok(),
            None => None,
        };
        infos.push(AgentInfo {
            id: a.id(),
            display_name: a.display_name(),
            program: a.program(),
            installed: path.is_some(),
            path: path.map(|p| p.display().to_string()),
            version,
            install_hint: a.install_hint(),
            capabilities: a.capabilities(),
            limits: a.limits(),
        });
    }
    infos
}

/// The agent's model catalogue, read live from its CLI.
pub async fn models(
    agent: &str,
    parent: &Env,
    supervisor: &Supervisor,
) -> Result<Catalogue, ModelsError> {
    let a = adapters::find(agent)?;
    let program = program::resolve_program(a, parent)?;
    let found = a.discover_models(&program, parent, supervisor).await;
    let Some(found) = found else {
        return Err(ModelsError::NoCatalogue(a.display_name()));
    };
    Ok(Catalogue {
        agent: a.id(),
        models: found?,
    })
}

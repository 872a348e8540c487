//! One folder per agent CLI. Each implements [`crate::adapter::Adapter`] and is listed once in
//! [`registry`].

pub mod claude;
pub mod codex;
pub mod gemini;

use crate::contract::{Failure, FailureKind};

/// Every adapter this build knows. Adding an agent is one module and one line here.
pub fn registry() -> &'static [&'static dyn crate::adapter::Adapter] {
    static ADAPTERS: &[&dyn crate::adapter::Adapter] = &[
        &codex::CodexAdapter,
        &claude::ClaudeAdapter,
        &gemini::GeminiAdapter,
    ];
    ADAPTERS
}

/// Look an adapter up by id; an unknown id is `unsupported-agent`, naming the known ones.
pub fn find(id: &str) -> Result<&'static dyn crate::adapter::Adapter, Failure> {
    registry()
        .iter()
        .copied()
        .find(|a| a.id() == id)
        .ok_or_else(|| {
            let known: Vec<_> = registry().iter().map(|a| a.id()).collect();
            Failure::new(
                FailureKind::UnsupportedAgent,
                format!(
                    "unknown agent {id:?}; supported agents: {}",
                    known.join(", ")
                ),
            )
        })
}

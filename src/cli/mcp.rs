//! `agent-dispatch mcp`: serve the dispatch tools to an MCP host over stdio.

use std::process::ExitCode;

pub async fn mcp() -> anyhow::Result<ExitCode> {
    agent_dispatch::mcp::serve().await?;
    Ok(ExitCode::SUCCESS)
}

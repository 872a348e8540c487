//! The Claude adapter (placeholder until its issue lands).

use async_trait::async_trait;

use crate::adapter::{Adapter, Capabilities, Launch, LaunchContext, StreamParser};
use crate::contract::{Failure, FailureKind};

pub struct ClaudeAdapter;

#[async_trait]
impl Adapter for ClaudeAdapter {
    fn id(&self) -> &'static str {
        "claude"
    }
    fn display_name(&self) -> &'static str {
        "Claude"
    }
    fn program(&self) -> &'static str {
        "claude"
    }
    fn install_hint(&self) -> &'static str {
        "npm install -g PACKAGE"
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            read_only_enforced: false,
            model_catalogue: false,
            reports_model: false,
            reports_effort: false,
            efforts: vec![],
        }
    }
    fn launch(&self, _ctx: &LaunchContext<'_>) -> Result<Launch, Failure> {
        Err(Failure::new(
            FailureKind::ReadOnlyUnavailable,
            "not implemented yet",
        ))
    }
    fn parser(&self) -> Box<dyn StreamParser> {
        unimplemented!()
    }
}

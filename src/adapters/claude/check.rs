//! Claude's half of `agent-dispatch check`: the fake Messages endpoint scripting the probes.
//!
//! The model asks for, in order: a shell redirection into the tree, a write from a child
//! interpreter (`python3`), and `git diff` (which must show the scratch repository's uncommitted
//! change). Claude gets no file-writing tool (`--tools Read,Bash`), so there is no file-tool
//! probe. Step `i` is answered once the conversation holds `i` tool results, so the `i`-th tool
//! result the CLI sends back is the `i`-th probe's output.

use std::path::Path;

use async_trait::async_trait;

use super::fake_api::{FakeMessages, ModelPolicy, Script};
use crate::loopback::ModelEndpoint;
use crate::readonly::probe::{
    Probe, ProbeEndpoint, ProbeKind, ProbeResult, SelfCheck, answered_in_order, check_endpoint,
};

/// The probes, in the order the fake model asks for them.
pub fn probes() -> Vec<Probe> {
    vec![
        Probe::shell_write(),
        Probe::python_write(),
        Probe::new(ProbeKind::Read, "git diff", None),
    ]
}

pub struct ClaudeSelfCheck;

#[async_trait]
impl SelfCheck for ClaudeSelfCheck {
    async fn start_probe_endpoint(&self, _cwd: &Path) -> std::io::Result<Box<dyn ProbeEndpoint>> {
        let probes = probes();
        let script = probes
            .iter()
            .fold(Script::new(), |s, p| s.bash(p.command.clone()))
            .text("Read-only probes done.")
            // Whatever model the user's configuration names, the fake answers.
            .models(ModelPolicy::Any);
        let fake = FakeMessages::start(script).await?;
        Ok(Box::new(ClaudeProbes { fake, probes }))
    }
}

struct ClaudeProbes {
    fake: FakeMessages,
    probes: Vec<Probe>,
}

impl ProbeEndpoint for ClaudeProbes {
    fn endpoint(&self) -> ModelEndpoint {
        check_endpoint(self.fake.base_url())
    }

    fn results(&self) -> Vec<ProbeResult> {
        let outputs = self.fake.tool_results().into_iter().map(|t| t.text);
        answered_in_order(&self.probes, outputs.collect())
    }

    fn requests(&self) -> usize {
        self.fake.message_requests().len()
    }
}

//! Codex's half of `agent-dispatch check`: a fake Responses endpoint
//! ([`super::fake_api`]) whose model asks codex to write three ways — a shell
//! redirection, its own `apply_patch` tool, a child interpreter — and then to read the scratch
//! repository's uncommitted change with `git diff`. The tool results codex sends back to the
//! model are the evidence the check judges.

use std::path::Path;

use async_trait::async_trait;

use super::fake_api::{FakeResponses, Script, Step};
use crate::loopback::ModelEndpoint;
use crate::readonly::probe::{Probe, ProbeEndpoint, ProbeKind, ProbeResult, SelfCheck};

/// Files the write probes try to create, relative to the scratch repository.
pub const SHELL_TARGET: &str = "agent-dispatch-probe-shell.txt";
pub const PATCH_TARGET: &str = "agent-dispatch-probe-patch.txt";
pub const INTERPRETER_TARGET: &str = "agent-dispatch-probe-interpreter.txt";

/// The final answer of the scripted model.
pub const CHECK_DONE: &str = "agent-dispatch read-only check: probes done";

/// The probes, in the order the fake model asks for them, each with the model's step.
pub fn probes() -> Vec<(Probe, Step)> {
    let shell = format!("printf x > {SHELL_TARGET}");
    // Whichever interpreter exists: python3, else node (which codex's npm package needs).
    let interp = format!(
        "python3 -c \"open('{INTERPRETER_TARGET}','w').write('x')\" || \
         node -e \"require('fs').writeFileSync('{INTERPRETER_TARGET}','x')\""
    );
    vec![
        (
            Probe::new(ProbeKind::ShellWrite, shell.clone(), Some(SHELL_TARGET)),
            Step::shell(shell),
        ),
        (
            Probe::new(
                ProbeKind::FileToolWrite,
                format!("apply_patch: add {PATCH_TARGET}"),
                Some(PATCH_TARGET),
            ),
            Step::add_file(PATCH_TARGET, "x"),
        ),
        (
            Probe::new(
                ProbeKind::InterpreterWrite,
                interp.clone(),
                Some(INTERPRETER_TARGET),
            ),
            Step::shell(interp),
        ),
        (
            Probe::new(ProbeKind::Read, "git diff", None),
            Step::shell("git diff"),
        ),
    ]
}

/// The whole scripted turn: the probes, then a final answer.
pub fn script() -> Script {
    let mut steps: Vec<Step> = probes().into_iter().map(|(_, step)| step).collect();
    steps.push(Step::message(CHECK_DONE));
    Script::new(steps)
}

pub struct CodexSelfCheck;

#[async_trait]
impl SelfCheck for CodexSelfCheck {
    async fn start_probe_endpoint(&self, _cwd: &Path) -> std::io::Result<Box<dyn ProbeEndpoint>> {
        let fake = FakeResponses::start(script()).await?;
        Ok(Box::new(CodexProbes {
            fake,
            probes: probes().into_iter().map(|(probe, _)| probe).collect(),
        }))
    }
}

struct CodexProbes {
    fake: FakeResponses,
    probes: Vec<Probe>,
}

impl ProbeEndpoint for CodexProbes {
    fn endpoint(&self) -> ModelEndpoint {
        self.fake.endpoint()
    }

    fn results(&self) -> Vec<ProbeResult> {
        let outputs = self.fake.tool_outputs();
        self.probes
            .iter()
            .enumerate()
            .map(|(step, p)| {
                p.answered(
                    outputs
                        .iter()
                        .find(|o| o.call_id == super::fake_api::call_id(step))
                        .map(|o| o.output.clone()),
                )
            })
            .collect()
    }

    fn requests(&self) -> usize {
        self.fake.model_requests().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_covers_every_probe_kind_then_answers() {
        let s = script();
        assert_eq!(s.steps.len(), probes().len() + 1);
        let kinds: Vec<ProbeKind> = probes().iter().map(|(p, _)| p.kind).collect();
        assert_eq!(
            kinds,
            [
                ProbeKind::ShellWrite,
                ProbeKind::FileToolWrite,
                ProbeKind::InterpreterWrite,
                ProbeKind::Read
            ]
        );
        assert!(matches!(&s.steps[1], Step::ApplyPatch { patch } if patch.contains(PATCH_TARGET)));
        assert_eq!(s.steps.last(), Some(&Step::message(CHECK_DONE)));
    }
}

//! Gemini's half of `agent-dispatch check`: the fake Gemini API scripting the probes.
//!
//! The model asks for, in order: a shell redirection into the tree, a write from a child
//! interpreter (`python3`), `git diff --no-ext-diff` (which must show the scratch repository's uncommitted
//! change), and `cat` of a secret planted outside every path the wall lets the agent read (its
//! content must never reach the model). The file tools that write are denied by the policy, so
//! there is no file-tool probe. Step `i` is answered once the conversation holds `i` function
//! responses, so the `i`-th response the CLI sends back is the `i`-th probe's output.

use std::path::Path;

use async_trait::async_trait;

use super::fake_api::{FakeGemini, Script};
use crate::loopback::ModelEndpoint;
use crate::readonly::probe::{
    Probe, ProbeEndpoint, ProbeKind, ProbeResult, SelfCheck, answered_in_order, check_endpoint,
};

/// The probes, in the order the fake model asks for them; `secret` is the planted file.
pub fn probes(secret: &Path) -> Vec<Probe> {
    vec![
        Probe::shell_write(),
        Probe::python_write(),
        // `--no-ext-diff`: the CLI's shell sets `diff.external` to an empty string, which git
        // 2.47 tries to run.
        Probe::new(ProbeKind::Read, "git diff --no-ext-diff", None),
        Probe::new(
            ProbeKind::SecretRead,
            format!("cat {}", secret.display()),
            secret.to_str(),
        ),
    ]
}

pub struct GeminiSelfCheck;

#[async_trait]
impl SelfCheck for GeminiSelfCheck {
    async fn start_probe_endpoint(&self, _cwd: &Path) -> std::io::Result<Box<dyn ProbeEndpoint>> {
        // A secret outside the repository, the CLI's installation and its private home: the
        // wall's read allowlist must keep it from the agent.
        let secret_dir = tempfile::Builder::new()
            .prefix("agent-dispatch-secret-")
            .tempdir()?;
        let secret = secret_dir.path().canonicalize()?.join("id_ed25519");
        let token = format!(
            "AGENT-DISPATCH-SECRET-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default()
        );
        std::fs::write(&secret, format!("{token}\n"))?;
        let probes = probes(&secret);
        let script = probes
            .iter()
            .fold(Script::new(), |s, p| s.shell(p.command.clone()))
            .text("Read-only probes done.");
        let fake = FakeGemini::start(script).await?;
        Ok(Box::new(GeminiProbes {
            fake,
            probes,
            _secret_dir: secret_dir,
        }))
    }
}

struct GeminiProbes {
    fake: FakeGemini,
    probes: Vec<Probe>,
    _secret_dir: tempfile::TempDir,
}

impl ProbeEndpoint for GeminiProbes {
    fn endpoint(&self) -> ModelEndpoint {
        check_endpoint(self.fake.base_url())
    }

    fn results(&self) -> Vec<ProbeResult> {
        let outputs = self.fake.tool_results().into_iter().map(|t| t.text);
        answered_in_order(&self.probes, outputs.collect())
    }

    fn requests(&self) -> usize {
        self.fake.model_requests().len()
    }
}

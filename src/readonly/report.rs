//! What `agent-dispatch check` found out: per-probe verdicts with their evidence, the tree
//! comparison, problems and fixes — as data (`--json`) and as a report a person reads.

use serde::{Deserialize, Serialize};

use crate::readonly::probe::ProbeResult;
use crate::readonly::record::{self, CheckKey};

/// How one probe went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// A write refused by the sandbox, with evidence, and nothing appeared.
    Denied,
    /// The write's target exists afterwards.
    Written,
    /// The write did not happen, but the output shows no sandbox refusal (not proof).
    NoEvidence,
    /// The probe never ran (the model's request was not answered).
    NotAttempted,
    /// The read worked and showed the uncommitted change.
    ReadOk,
    /// The read did not show the uncommitted change.
    ReadFailed,
    /// A secret outside what the agent may read reached the model.
    SecretLeaked,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProbeReport {
    #[serde(flatten)]
    pub probe: ProbeResult,
    pub verdict: Verdict,
    /// The output line that proves the verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
}

/// Everything `check` found out, for people (`Display`) and machines (`--json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckReport {
    pub agent: String,
    pub passed: bool,
    pub program: Option<String>,
    pub version: Option<String>,
    /// What a pass is recorded under: any change to it runs the check again.
    pub covers: Option<CheckKey>,
    /// The argv of the check's run (production configuration plus the swapped-in endpoint).
    pub launch_args: Vec<String>,
    pub probes: Vec<ProbeReport>,
    pub tree_identical: bool,
    /// What changed in the scratch tree, when anything did.
    pub tree_changes: Vec<String>,
    /// Why it failed, in words; empty when it passed.
    pub problems: Vec<String>,
    /// What to do about it.
    pub fixes: Vec<String>,
    /// True when a passing record was reused and nothing ran.
    pub from_record: bool,
    pub duration_ms: u64,
}

impl CheckReport {
    /// A check that could not get as far as running the CLI.
    pub(crate) fn failed(agent: &str, problem: String, fix: Option<String>) -> Self {
        Self {
            agent: agent.to_owned(),
            passed: false,
            program: None,
            version: None,
            covers: None,
            launch_args: Vec::new(),
            probes: Vec::new(),
            tree_identical: false,
            tree_changes: Vec::new(),
            problems: vec![problem],
            fixes: fix.into_iter().collect(),
            from_record: false,
            duration_ms: 0,
        }
    }

    /// One line naming why it failed.
    pub fn reason(&self) -> String {
        if self.passed {
            "passed".into()
        } else {
            self.problems.join("; ")
        }
    }
}

impl std::fmt::Display for CheckReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let verdict = if self.passed { "PASS" } else { "FAIL" };
        writeln!(f, "{verdict}  {} read-only check", self.agent)?;
        if let Some(p) = &self.program {
            writeln!(
                f,
                "  CLI       {p} ({})",
                self.version.as_deref().unwrap_or("version unknown")
            )?;
        }
        if self.from_record {
            writeln!(
                f,
                "  record    a passing check for this CLI version and configuration is on record"
            )?;
        }
        if !self.launch_args.is_empty() {
            writeln!(f, "  launch    {}", shell_line(&self.launch_args))?;
        }
        for p in &self.probes {
            let kind = serde_json::to_value(p.probe.kind).ok();
            let kind = kind.as_ref().and_then(|v| v.as_str()).unwrap_or("?");
            let verdict = serde_json::to_value(p.verdict).ok();
            let verdict = verdict.as_ref().and_then(|v| v.as_str()).unwrap_or("?");
            writeln!(f, "  {kind:<17} {verdict:<14} {}", p.probe.command)?;
            if let Some(e) = &p.evidence {
                writeln!(f, "  {:<17} evidence: {e}", "")?;
            }
        }
        if !self.probes.is_empty() {
            let tree = if self.tree_identical {
                "byte-identical before and after (.git included)"
            } else {
                "CHANGED"
            };
            writeln!(f, "  tree      {tree}")?;
        }
        for c in &self.tree_changes {
            writeln!(f, "            {c}")?;
        }
        for p in &self.problems {
            writeln!(f, "  problem   {p}")?;
        }
        // Each fix once, and not when a problem line already says it.
        let mut shown: Vec<&str> = Vec::new();
        for x in &self.fixes {
            let said = self.problems.iter().any(|p| p.contains(x.as_str()));
            if !said && !shown.contains(&x.as_str()) {
                shown.push(x);
                writeln!(f, "  fix       {x}")?;
            }
        }
        self.write_coverage(f)
    }
}

// What the record covers and what it cannot see.
impl CheckReport {
    fn write_coverage(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Some(key) = &self.covers else {
            return Ok(());
        };
        writeln!(
            f,
            "  record    a pass is reused only while none of these changes (else the check runs again):"
        )?;
        for file in &key.files {
            writeln!(
                f,
                "            {:<15} {} ({})",
                file.role_name(),
                file.path,
                file.describe()
            )?;
        }
        writeln!(
            f,
            "            {:<15} argv and the values of {} (hashed together, sha256 {}…)",
            "launch",
            key.environment.join(", "),
            &key.launch_hash[..key.launch_hash.len().min(12)]
        )?;
        if !key.kernel.is_empty() {
            writeln!(f, "            {:<15} {}", "kernel", key.kernel)?;
        }
        for (i, blind) in record::NOT_COVERED.iter().enumerate() {
            let label = if i == 0 { "not seen" } else { "" };
            writeln!(f, "  {label:<9} {blind}")?;
        }
        Ok(())
    }
}

/// The argv as one shell-quoted line, with the prompt after `--` shown as `<prompt>`.
fn shell_line(args: &[String]) -> String {
    let mut words = Vec::with_capacity(args.len());
    let mut prompt = false;
    for a in args {
        if prompt {
            words.push("<prompt>".to_owned());
            continue;
        }
        prompt = a == "--";
        let plain = !a.is_empty()
            && a.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_./=:,@%+-".contains(c));
        words.push(if plain {
            a.clone()
        } else {
            format!("'{}'", a.replace('\'', "'\\''"))
        });
    }
    words.join(" ")
}

#[cfg(test)]
mod tests {
    use super::shell_line;

    #[test]
    fn launch_lines_are_quoted_and_the_prompt_elided() {
        let args: Vec<String> = [
            "-c",
            "model=\"x y\"",
            "--settings",
            "{\"a\":'b'}",
            "--",
            "line 1\nline 2",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            shell_line(&args),
            r#"-c 'model="x y"' --settings '{"a":'\''b'\''}' -- <prompt>"#
        );
    }
}

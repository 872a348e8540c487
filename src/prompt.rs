//! Prompt assembly (D10): the standing instruction, the caller's task unchanged, the scope hint.
//! Nothing else is added — the caller owns the question and the response format.

/// The one standing instruction every dispatch carries.
pub const STANDING_INSTRUCTION: &str = "Assess the evidence independently.";

/// Assemble the prompt sent to the agent CLI.
pub fn assemble(task: &str, scope: Option<&str>) -> String {
    let mut prompt = String::with_capacity(task.len() + 64);
    prompt.push_str(STANDING_INSTRUCTION);
    prompt.push_str("\n\n");
    prompt.push_str(task);
    if let Some(scope) = scope {
        prompt.push_str("\n\nScope: ");
        prompt.push_str(scope);
    }
    prompt
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_is_passed_unchanged() {
        let task = "Review this:\n  \"quoted\" --flag\n\tüñíçødé ✓\n";
        let p = assemble(task, None);
        assert_eq!(p, format!("{STANDING_INSTRUCTION}\n\n{task}"));
    }

    #[test]
    fn scope_is_a_trailing_hint() {
        let p = assemble("Check it.", Some("src/runner only"));
        assert_eq!(
            p,
            "Assess the evidence independently.\n\nCheck it.\n\nScope: src/runner only"
        );
    }
}

//! The human face of `run` and `demo` on a terminal: what the agent does, as it does it (its
//! commands with how they ended, its plans and notices), one live status line with the elapsed
//! time and the tokens reported so far, then the answer and what it cost. Machines get the JSONL protocol instead (`--json`, or
//! stdout not a terminal); this view never changes what a dispatch does.

use std::time::Duration;

use agent_dispatch::contract::{
    ActivityKind, CommandStatus, DispatchResult, NoticeLevel, Reported, StreamEvent, Usage,
};
use agent_dispatch::readonly::check::DENIAL_MARKERS;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How many lines of a command's output the view shows.
const OUTPUT_LINES: usize = 2;

pub struct HumanView {
    bar: ProgressBar,
    /// The latest prose, held back until something follows it: the last prose is the answer,
    /// shown once at the end rather than twice.
    pending_text: Option<String>,
    model_shown: bool,
}

impl HumanView {
    /// Starts the view with a header naming the agent, its CLI and the working directory.
    pub fn start(agent: &str, program: &str, cwd: &str) -> Self {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stdout());
        bar.set_style(
            ProgressStyle::with_template("  {spinner} {elapsed:>4}  {prefix}{wide_msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.enable_steady_tick(Duration::from_millis(120));
        bar.set_message("starting…");
        let view = Self {
            bar,
            pending_text: None,
            model_shown: false,
        };
        let program = if program.is_empty() {
            String::new()
        } else {
            format!(" ({program})")
        };
        view.line(format!("dispatch → {agent}{program}"));
        if !cwd.is_empty() {
            view.line(format!("  in {cwd}"));
        }
        view
    }

    /// One line above the live line (or just a line, when stdout is not a terminal).
    fn line(&self, s: String) {
        if self.bar.is_hidden() {
            println!("{s}");
        } else {
            self.bar.println(s);
        }
    }

    fn flush_text(&mut self) {
        if let Some(t) = self.pending_text.take() {
            for l in t.lines().filter(|l| !l.trim().is_empty()) {
                self.line(format!("  │ {l}"));
            }
        }
    }

    pub fn event(&mut self, ev: &StreamEvent) {
        if !matches!(
            ev,
            StreamEvent::Text { .. } | StreamEvent::Done { .. } | StreamEvent::Usage { .. }
        ) {
            self.flush_text();
        }
        match ev {
            StreamEvent::Text { text } => {
                self.flush_text();
                self.pending_text = Some(text.clone());
                self.bar.set_message("writing…");
            }
            StreamEvent::Command {
                command,
                status,
                exit_code,
                output_tail,
                ..
            } => self.command(command, *status, *exit_code, output_tail.as_deref()),
            StreamEvent::Activity { kind, text } => {
                let first = first_line(text, 120);
                match kind {
                    ActivityKind::Reasoning => self.bar.set_message(format!("thinking: {first}")),
                    ActivityKind::Plan => self.line(format!("  plan  {first}")),
                    ActivityKind::FileChange => self.line(format!("  edit  {first}")),
                    ActivityKind::Tool => self.line(format!("  tool  {first}")),
                }
            }
            StreamEvent::Metadata { model, effort, .. } => {
                if !self.model_shown && (model.is_some() || effort.is_some()) {
                    self.model_shown = true;
                    let mut parts = Vec::new();
                    if let Some(m) = model {
                        parts.push(format!("model {m}"));
                    }
                    if let Some(e) = effort {
                        parts.push(format!("effort {e}"));
                    }
                    self.line(format!("  {}", parts.join(" · ")));
                }
                self.bar.set_message("working…");
            }
            StreamEvent::Notice { level, message } => {
                let label = match level {
                    NoticeLevel::Info => "note",
                    NoticeLevel::Warning => "warning",
                };
                self.line(format!("  {label}: {message}"));
                if message.contains("read-only check") {
                    self.bar.set_message("running the offline read-only check…");
                }
            }
            StreamEvent::Error { message } => self.line(format!("  error: {message}")),
            StreamEvent::Done { .. } => self.bar.set_message("finishing…"),
            // Tokens so far, on the live line (Claude reports per message, Codex per turn).
            StreamEvent::Usage { usage } => self
                .bar
                .set_prefix(format!("{} tokens · ", thousands(usage.total_tokens()))),
        }
    }

    fn command(
        &self,
        command: &str,
        status: CommandStatus,
        exit_code: Option<i64>,
        output: Option<&str>,
    ) {
        let shown = first_line(command, 100);
        let output = output.unwrap_or("");
        let lines: Vec<&str> = output.lines().filter(|l| !l.trim().is_empty()).collect();
        let denial = lines.iter().find(|l| {
            let l = l.to_lowercase();
            DENIAL_MARKERS.iter().any(|m| l.contains(m))
        });
        let exit = exit_code
            .map(|c| format!(" (exit {c})"))
            .unwrap_or_default();
        let (state, detail): (String, Vec<&str>) = match status {
            CommandStatus::Started => {
                self.bar.set_message(format!("running: {shown}"));
                return;
            }
            CommandStatus::Completed => (
                "ok".into(),
                lines[lines.len().saturating_sub(OUTPUT_LINES)..].to_vec(),
            ),
            CommandStatus::Failed | CommandStatus::Declined => match denial {
                Some(d) => (format!("refused by the sandbox{exit}"), vec![*d]),
                None if status == CommandStatus::Declined => ("declined".into(), Vec::new()),
                None => (
                    format!("failed{exit}"),
                    lines.last().map(|l| vec![*l]).unwrap_or_default(),
                ),
            },
        };
        self.line(format!("  $ {shown}   → {state}"));
        for d in detail {
            self.line(format!("      {}", first_line(d, 160)));
        }
        self.bar.set_message("working…");
    }

    /// Ends the live line and prints the answer (or the failure) and what it cost.
    pub fn finish(mut self, result: &DispatchResult) {
        if self.pending_text.as_deref() != Some(result.text.as_str()) {
            self.flush_text();
        }
        self.bar.finish_and_clear();
        let secs = result.duration_ms as f64 / 1000.0;
        let mut out = String::new();
        if !result.text.trim().is_empty() {
            out.push_str("\nanswer:\n");
            for l in result.text.trim_end().lines() {
                out.push_str(&format!("  {l}\n"));
            }
        }
        out.push('\n');
        match &result.failure {
            None => out.push_str(&format!("done in {secs:.1} s")),
            Some(f) => out.push_str(&format!(
                "FAILED ({}) after {secs:.1} s: {}",
                f.kind, f.message
            )),
        }
        out.push_str(&format!(" · {}", usage_text(result.usage.as_ref())));
        if let Reported::Confirmed(m) = &result.identity.confirmed.model {
            out.push_str(&format!(" · model {m}"));
        }
        out.push('\n');
        if result.failure.is_some() {
            let tail: Vec<&str> = result
                .stderr_tail
                .lines()
                .filter(|l| !l.trim().is_empty())
                .collect();
            for l in &tail[tail.len().saturating_sub(3)..] {
                out.push_str(&format!("  stderr: {}\n", first_line(l, 200)));
            }
        }
        print!("{out}");
    }
}

/// A live line on stderr for a long step (`check`), with the elapsed time; on a pipe, the same
/// text once. Clear it with `finish_and_clear` when the step is done.
pub fn progress_line(message: String) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    if bar.is_hidden() {
        eprintln!("{message}");
        return bar;
    }
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.set_message(message);
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}

fn usage_text(u: Option<&Usage>) -> String {
    match u {
        None => "usage not reported".into(),
        Some(u) => {
            let mut s = format!(
                "{} tokens (input {}, cache read {}, output {})",
                thousands(u.total_tokens()),
                thousands(u.input),
                thousands(u.cache_read),
                thousands(u.output)
            );
            if let Some(c) = u.cost_usd {
                s.push_str(&format!(" · ${c:.4}"));
            }
            s
        }
    }
}

fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The first line of `s`, at most `max` characters.
fn first_line(s: &str, max: usize) -> String {
    let line = s.lines().next().unwrap_or("").trim_end();
    if line.chars().count() > max {
        let cut: String = line.chars().take(max).collect();
        format!("{cut}…")
    } else {
        line.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_lines_are_short_and_readable() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(first_line("abc\ndef", 10), "abc");
        assert_eq!(first_line("abcdef", 3), "abc…");
        assert_eq!(usage_text(None), "usage not reported");
    }
}

//! Outcome classification (D11): success is exit 0 + a recognised successful terminal envelope +
//! no parse failure. Everything else is exactly one typed failure, chosen by a fixed precedence.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use crate::adapter::Terminal;
use crate::contract::{ExitInfo, Failure, FailureKind};

/// What the run loop observed, independent of any CLI.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    /// Cancel (or shutdown) arrived while the CLI was still running.
    pub cancelled: bool,
    /// The first stdout line that could not be framed or parsed, and why.
    pub parse_failure: Option<String>,
    pub exit: Option<ExitStatus>,
    pub terminal: Option<Terminal>,
    /// The last non-empty stderr line, to name a non-zero exit's cause.
    pub stderr_last_line: Option<String>,
    /// The CLI was still running after the grace that follows its final answer and was
    /// stopped: the signal it died of is ours, not a failure.
    pub stopped_after_answer: bool,
}

pub fn exit_info(status: Option<ExitStatus>) -> Option<ExitInfo> {
    status.map(|s| ExitInfo {
        code: s.code(),
        signal: s.signal(),
    })
}

/// Classify. Precedence: cancelled → malformed stream (it also explains the signal we sent to
/// stop the CLI) → error envelope → signal → non-zero exit → incomplete stream.
pub fn classify(o: &Observed) -> Option<Failure> {
    if o.cancelled {
        return Some(Failure::new(
            FailureKind::Cancelled,
            "the dispatch was cancelled; the agent's process group was stopped",
        ));
    }
    if let Some(why) = &o.parse_failure {
        return Some(Failure::new(FailureKind::MalformedStream, why.clone()));
    }
    match &o.terminal {
        Some(Terminal::Error { message }) => {
            return Some(Failure::new(FailureKind::ErrorEnvelope, message.clone()));
        }
        Some(Terminal::SandboxUnavailable { message }) => {
            return Some(Failure::new(
                FailureKind::ReadOnlyUnavailable,
                message.clone(),
            ));
        }
        _ => {}
    }
    let hint = o
        .stderr_last_line
        .as_deref()
        .map(|l| format!(": {l}"))
        .unwrap_or_default();
    if o.stopped_after_answer && o.terminal == Some(Terminal::Success) {
        return None;
    }
    match o.exit {
        Some(s) if s.signal().is_some() => {
            let sig = s.signal().unwrap_or_default();
            let name = crate::supervise::unix::signal_name(sig);
            return Some(Failure::new(
                FailureKind::Signal,
                format!("the agent CLI was killed by {name}{hint}"),
            ));
        }
        Some(s) if s.code() != Some(0) => {
            return Some(Failure::new(
                FailureKind::NonzeroExit,
                format!(
                    "the agent CLI exited with code {}{hint}",
                    s.code().unwrap_or(-1)
                ),
            ));
        }
        None => {
            return Some(Failure::new(
                FailureKind::IncompleteStream,
                "lost track of the agent CLI's exit status",
            ));
        }
        _ => {}
    }
    if o.terminal.is_none() {
        return Some(Failure::new(
            FailureKind::IncompleteStream,
            format!("the agent CLI exited 0 without a terminal event{hint}"),
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(c: i32) -> Option<ExitStatus> {
        Some(ExitStatus::from_raw(c << 8))
    }
    fn sig(s: i32) -> Option<ExitStatus> {
        Some(ExitStatus::from_raw(s))
    }
    fn kind(o: Observed) -> Option<FailureKind> {
        classify(&o).map(|f| f.kind)
    }

    #[test]
    fn a_cli_stopped_after_its_final_answer_succeeds() {
        let stopped = |terminal| Observed {
            exit: sig(15),
            terminal: Some(terminal),
            stopped_after_answer: true,
            ..Default::default()
        };
        assert_eq!(kind(stopped(Terminal::Success)), None);
        let error = Terminal::Error {
            message: "boom".into(),
        };
        assert_eq!(kind(stopped(error)), Some(FailureKind::ErrorEnvelope));
    }

    #[test]
    fn success_needs_exit_zero_and_terminal_success() {
        let ok = Observed {
            exit: code(0),
            terminal: Some(Terminal::Success),
            ..Default::default()
        };
        assert_eq!(kind(ok), None);
        let no_terminal = Observed {
            exit: code(0),
            ..Default::default()
        };
        assert_eq!(kind(no_terminal), Some(FailureKind::IncompleteStream));
        let nonzero = Observed {
            exit: code(3),
            terminal: Some(Terminal::Success),
            ..Default::default()
        };
        assert_eq!(kind(nonzero), Some(FailureKind::NonzeroExit));
    }

    #[test]
    fn precedence() {
        let err = Some(Terminal::Error {
            message: "m".into(),
        });
        assert_eq!(
            kind(Observed {
                exit: code(0),
                terminal: err.clone(),
                ..Default::default()
            }),
            Some(FailureKind::ErrorEnvelope)
        );
        assert_eq!(
            kind(Observed {
                exit: sig(9),
                parse_failure: Some("bad".into()),
                ..Default::default()
            }),
            Some(FailureKind::MalformedStream)
        );
        assert_eq!(
            kind(Observed {
                exit: sig(9),
                ..Default::default()
            }),
            Some(FailureKind::Signal)
        );
        assert_eq!(
            kind(Observed {
                cancelled: true,
                exit: sig(15),
                parse_failure: Some("x".into()),
                ..Default::default()
            }),
            Some(FailureKind::Cancelled)
        );
    }
}

//! `notifications/progress` for a running dispatch: what the agent does (commands, notices,
//! plans), coalesced to at most one message per [`MIN_GAP`], and a heartbeat after
//! [`HEARTBEAT`] of silence so a host's idle timeout does not fire while the agent thinks.
//!
//! The engine's sink is synchronous; it only replaces the latest message (a `watch` channel,
//! so a flood of events costs no memory and the newest one wins). A reporter task sends them and
//! is stopped before the tool result goes out (a progress notification after the result would
//! break the protocol). Once the call is cancelled — by the client, or because the server is
//! shutting down and no longer forwards notifications — it stops at once instead of waiting on
//! a send that will not complete.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::Peer;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::contract::{ActivityKind, CommandStatus, StreamEvent};

/// At most ten messages a second.
pub const MIN_GAP: Duration = Duration::from_millis(100);
/// Silence longer than this gets a heartbeat (hosts' idle timeouts are tens of seconds).
pub const HEARTBEAT: Duration = Duration::from_secs(5);
/// A progress message is one line of at most this many characters.
const MAX_CHARS: usize = 160;

/// Sends one dispatch's progress to the client under the request's progress token.
pub struct Reporter {
    tx: Option<watch::Sender<Option<String>>>,
    task: Option<JoinHandle<()>>,
    agent: String,
    /// The run's token total so far, as the CLI last reported it (shown in heartbeats).
    tokens: Arc<AtomicU64>,
}

impl Reporter {
    /// A reporter that sends under `token`, or a silent one when the call carried none.
    pub fn start(
        peer: Peer<RoleServer>,
        token: Option<ProgressToken>,
        cancel: CancellationToken,
        agent: &str,
    ) -> Self {
        let tokens = Arc::new(AtomicU64::new(0));
        let Some(token) = token else {
            return Self {
                tx: None,
                task: None,
                agent: agent.to_owned(),
                tokens,
            };
        };
        let (tx, rx) = watch::channel(None);
        let to = Destination {
            peer,
            token,
            cancel,
        };
        let task = tokio::spawn(report(to, rx, agent.to_owned(), tokens.clone()));
        Self {
            tx: Some(tx),
            task: Some(task),
            agent: agent.to_owned(),
            tokens,
        }
    }

    /// Queue a message for an engine event (most events say nothing worth a notification).
    pub fn event(&self, event: &StreamEvent) {
        if let StreamEvent::Usage { usage } = event {
            self.tokens.store(usage.total_tokens(), Ordering::Relaxed);
        }
        if let (Some(tx), Some(text)) = (&self.tx, describe(event)) {
            tx.send_replace(Some(format!("{}: {}", self.agent, one_line(&text))));
        }
    }

    /// Stop reporting; returns once nothing more will be sent.
    pub async fn finish(mut self) {
        self.tx = None;
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

/// Where a dispatch's progress goes, and the call's cancellation.
struct Destination {
    peer: Peer<RoleServer>,
    token: ProgressToken,
    cancel: CancellationToken,
}

impl Destination {
    /// Send one notification; false once the call is cancelled.
    async fn send(&self, n: u32, message: String) -> bool {
        let param =
            ProgressNotificationParam::new(self.token.clone(), f64::from(n)).with_message(message);
        tokio::select! {
            // A client that went away is noticed by the transport; nothing to do here.
            _ = self.peer.notify_progress(param) => true,
            _ = self.cancel.cancelled() => false,
        }
    }
}

async fn report(
    to: Destination,
    mut rx: watch::Receiver<Option<String>>,
    agent: String,
    tokens: Arc<AtomicU64>,
) {
    let started = Instant::now();
    let mut sent = 1u32;
    if !to.send(sent, format!("{agent}: started")).await {
        return;
    }
    let mut last = Instant::now();
    let mut pending: Option<String> = None;
    loop {
        let message = tokio::select! {
            changed = rx.changed() => match changed {
                // Latest wins: a flood of events becomes one message per gap.
                Ok(()) => {
                    pending = rx.borrow_and_update().clone();
                    continue;
                }
                // The dispatch is over.
                Err(_) => return,
            },
            _ = to.cancel.cancelled() => return,
            _ = tokio::time::sleep_until(last + MIN_GAP), if pending.is_some() => {
                let Some(message) = pending.take() else { continue };
                message
            }
            _ = tokio::time::sleep_until(last + HEARTBEAT), if pending.is_none() => {
                heartbeat(&agent, started.elapsed(), tokens.load(Ordering::Relaxed))
            }
        };
        sent += 1;
        if !to.send(sent, message).await {
            return;
        }
        last = Instant::now();
    }
}

/// `agent: working (35 s)`, with the tokens reported so far once there are any.
fn heartbeat(agent: &str, elapsed: Duration, tokens: u64) -> String {
    let secs = elapsed.as_secs();
    if tokens == 0 {
        format!("{agent}: working ({secs} s)")
    } else {
        format!("{agent}: working ({secs} s, {tokens} tokens so far)")
    }
}

/// What a host shows for an event, if anything: prose is the answer itself and is left to the
/// result; metadata and the terminal marker say nothing a person follows.
fn describe(event: &StreamEvent) -> Option<String> {
    match event {
        StreamEvent::Command {
            command, status, ..
        } => Some(match status {
            CommandStatus::Started => format!("running {command}"),
            CommandStatus::Completed => format!("ran {command}"),
            CommandStatus::Failed => format!("failed: {command}"),
            CommandStatus::Declined => format!("declined: {command}"),
        }),
        StreamEvent::Notice { message, .. } => Some(message.clone()),
        StreamEvent::Activity { kind, text } => Some(match kind {
            ActivityKind::Reasoning => format!("thinking: {text}"),
            ActivityKind::Plan => format!("plan: {text}"),
            ActivityKind::FileChange => format!("file change: {text}"),
            ActivityKind::Tool => format!("tool: {text}"),
        }),
        StreamEvent::Error { message } => Some(format!("error: {message}")),
        // Usage reaches the host through the heartbeat.
        StreamEvent::Text { .. }
        | StreamEvent::Metadata { .. }
        | StreamEvent::Done { .. }
        | StreamEvent::Usage { .. } => None,
    }
}

/// The first line, at most [`MAX_CHARS`] characters.
fn one_line(s: &str) -> String {
    let line = s
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    if line.chars().count() <= MAX_CHARS {
        return line.to_owned();
    }
    let mut out: String = line.chars().take(MAX_CHARS - 1).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_one_short_line() {
        assert_eq!(one_line("a\nb"), "a");
        assert_eq!(one_line(&"x".repeat(500)).chars().count(), MAX_CHARS);
        let ev = StreamEvent::Command {
            id: None,
            command: "git diff".into(),
            status: CommandStatus::Started,
            exit_code: None,
            output_tail: None,
        };
        assert_eq!(describe(&ev).unwrap(), "running git diff");
        assert!(describe(&StreamEvent::Text { text: "x".into() }).is_none());
        assert_eq!(
            heartbeat("a", Duration::from_secs(12), 0),
            "a: working (12 s)"
        );
        assert_eq!(
            heartbeat("a", Duration::from_secs(12), 345),
            "a: working (12 s, 345 tokens so far)"
        );
    }
}

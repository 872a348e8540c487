//! Hard limits on every dispatch: wall-clock time and a token budget.
//!
//! A limit is a layer the dispatch service puts around the run, never a branch inside the run
//! loop: the run gets a child of the caller's cancel token, and when a limit trips it records
//! *why* ([`StopReason`]) and cancels that child. The run stops exactly as on a cancel (the whole
//! tree gone within the supervisor's bounds, usage kept), and the service then names the reason
//! in the result (`timeout`, `budget-exceeded`) instead of `cancelled`.
//!
//! The token budget is checked on every `usage` event the CLI's stream yields, so it trips at the
//! first report over the budget. How early that is depends on the CLI: some report per model
//! message, others only per turn (`agents` shows it as `capabilities.usageReports`).
//!
//! Agents' own caps (for example a CLI's maximum-turns or maximum-dollars flags) are not passed:
//! a cap of our own works the same for every agent, counts what the caller counts (tokens, not a
//! vendor's price list), stops the whole process tree, and ends in one typed failure, where a
//! CLI's own cap ends in an error envelope of its own shape that would read as a model error.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::contract::{DispatchResult, Failure, FailureKind, StreamEvent};

/// The wall-clock limit when neither the caller nor the environment sets one: long enough for a
/// high-effort review, short enough that a stuck agent does not bill for hours.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// Overrides [`DEFAULT_TIMEOUT`] for every dispatch of this process (`15m`, `1h30m`, `off`).
pub const TIMEOUT_VAR: &str = "AGENT_DISPATCH_TIMEOUT";

/// The limits of one dispatch. `None` means no limit of that kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    #[serde(default, with = "opt_millis", rename = "timeoutMs")]
    pub timeout: Option<Duration>,
    #[serde(default)]
    pub max_tokens: Option<u64>,
}

impl Limits {
    /// The limits for a call: the per-call timeout, else `$AGENT_DISPATCH_TIMEOUT`, else the
    /// default; the per-call token budget. A bad value is an `invalid-request`.
    pub fn resolve(
        timeout: Option<&str>,
        max_tokens: Option<u64>,
        env_timeout: Option<&str>,
    ) -> Result<Self, Failure> {
        let timeout = match (timeout, env_timeout) {
            (Some(t), _) => parse_timeout(t, "--timeout")?,
            (None, Some(t)) => parse_timeout(t, TIMEOUT_VAR)?,
            (None, None) => Some(DEFAULT_TIMEOUT),
        };
        if max_tokens == Some(0) {
            return Err(invalid("--max-tokens must be at least 1"));
        }
        Ok(Self {
            timeout,
            max_tokens,
        })
    }

    /// [`Limits::resolve`] with the timeout variable read from `env`.
    pub fn from_env(
        timeout: Option<&str>,
        max_tokens: Option<u64>,
        env: &crate::adapter::Env,
    ) -> Result<Self, Failure> {
        let var = env
            .get(std::ffi::OsStr::new(TIMEOUT_VAR))
            .map(|v| v.to_string_lossy().into_owned());
        Self::resolve(timeout, max_tokens, var.as_deref())
    }
}

fn invalid(message: impl Into<String>) -> Failure {
    Failure::new(FailureKind::InvalidRequest, message)
}

/// A humane duration (`90s`, `15m`, `1h 30m`, `2s`); `off`, `none` or `0` mean no limit.
pub fn parse_timeout(value: &str, what: &str) -> Result<Option<Duration>, Failure> {
    let v = value.trim();
    if matches!(v, "off" | "none" | "0") {
        return Ok(None);
    }
    parse_duration(v, what).map(Some)
}

/// A humane, non-zero duration (`500ms`, `2s`, `15m`, `7d`).
pub fn parse_duration(value: &str, what: &str) -> Result<Duration, Failure> {
    match humantime::parse_duration(value.trim()) {
        Ok(d) if !d.is_zero() => Ok(d),
        Ok(_) => Err(invalid(format!("{what} must be longer than zero"))),
        Err(e) => Err(invalid(format!(
            "{what} {value:?} is not a duration ({e}); write it like 90s, 15m or 1h30m"
        ))),
    }
}

/// Why a limit stopped a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    Timeout(Duration),
    Budget { limit: u64, used: u64 },
}

impl StopReason {
    fn failure(self) -> Failure {
        match self {
            StopReason::Timeout(d) => Failure::new(
                FailureKind::Timeout,
                format!(
                    "the dispatch ran longer than its time limit of {}; the agent's process tree was stopped",
                    humantime::format_duration(d)
                ),
            ),
            StopReason::Budget { limit, used } => Failure::new(
                FailureKind::BudgetExceeded,
                format!(
                    "the agent reported {used} tokens, over the budget of {limit}; the run was stopped at that report (its process tree with it)"
                ),
            ),
        }
    }
}

/// The limit layer of one run: a child cancel token the run gets, and the first reason a limit
/// gave for cancelling it.
#[derive(Clone)]
pub struct Enforcer {
    limits: Limits,
    token: CancellationToken,
    reason: Arc<Mutex<Option<StopReason>>>,
}

impl Enforcer {
    /// The run's token is a child of `cancel`: the caller's cancel still reaches the run.
    pub fn new(limits: Limits, cancel: &CancellationToken) -> Self {
        Self {
            limits,
            token: cancel.child_token(),
            reason: Arc::default(),
        }
    }

    /// The token to run under.
    pub fn token(&self) -> CancellationToken {
        self.token.clone()
    }

    fn trip(&self, reason: StopReason) {
        let mut r = self.reason.lock().unwrap();
        if r.is_none() && !self.token.is_cancelled() {
            *r = Some(reason);
        }
        drop(r);
        self.token.cancel();
    }

    /// Look at one event on its way to the caller's sink: a usage report over the budget trips.
    pub fn observe(&self, event: &StreamEvent) {
        if let (Some(limit), StreamEvent::Usage { usage }) = (self.limits.max_tokens, event) {
            let used = usage.total_tokens();
            if used > limit {
                self.trip(StopReason::Budget { limit, used });
            }
        }
    }

    /// Resolves when the time limit passes (and trips it); never resolves without one. Race it
    /// against the run, keep polling the run after it fires.
    pub async fn deadline(&self) {
        match self.limits.timeout {
            Some(d) => {
                tokio::select! {
                    _ = tokio::time::sleep(d) => self.trip(StopReason::Timeout(d)),
                    _ = self.token.cancelled() => {}
                }
                std::future::pending::<()>().await
            }
            None => std::future::pending().await,
        }
    }

    /// The reason a limit stopped the run, if one did.
    pub fn reason(&self) -> Option<StopReason> {
        *self.reason.lock().unwrap()
    }

    /// Name the limit that stopped the run in its result. A budget overrun is a failure even
    /// when the answer came with the report that overran it (a CLI that reports usage only at
    /// the end of its turn): the caller set a hard budget and the run went over it; the answer
    /// is kept in `text`. A time limit that passed after the final answer (while the CLI
    /// lingered) only hurried the exit along; the run keeps its own outcome.
    pub fn settle(&self, mut result: DispatchResult) -> DispatchResult {
        let kind = result.failure.as_ref().map(|f| f.kind);
        let named = match (self.reason(), kind) {
            (Some(r @ StopReason::Budget { .. }), None | Some(FailureKind::Cancelled)) => Some(r),
            (Some(r @ StopReason::Timeout(_)), Some(FailureKind::Cancelled)) => Some(r),
            _ => None,
        };
        if let Some(reason) = named {
            result.failure = Some(reason.failure());
            result.ok = false;
        }
        result
    }

    /// Wrap the caller's sink: every event passes through to it, usage reports are checked.
    pub fn sink<'a>(
        &self,
        sink: &'a mut (dyn FnMut(StreamEvent) + Send),
    ) -> impl FnMut(StreamEvent) + Send + 'a {
        let watcher = self.clone();
        move |event: StreamEvent| {
            watcher.observe(&event);
            sink(event);
        }
    }

    /// Drive `run` (a dispatch under [`Enforcer::token`] and [`Enforcer::sink`]) with the time
    /// limit running, and name the limit that stopped it in its result.
    pub async fn run(
        &self,
        run: impl std::future::Future<Output = DispatchResult>,
    ) -> DispatchResult {
        let result = tokio::select! {
            r = run => r,
            _ = self.deadline() => unreachable!("the deadline never resolves"),
        };
        self.settle(result)
    }
}

mod opt_millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&(d.as_millis() as u64)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map(Duration::from_millis))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_humane_and_bad_ones_are_typed() {
        assert_eq!(
            parse_timeout("15m", "t").unwrap(),
            Some(Duration::from_secs(900))
        );
        assert_eq!(
            parse_timeout("1h30m", "t").unwrap(),
            Some(Duration::from_secs(5400))
        );
        assert_eq!(parse_timeout("off", "t").unwrap(), None);
        for bad in ["", "fast", "-1s", "0s", "15"] {
            let e = parse_timeout(bad, "--timeout").unwrap_err();
            assert_eq!(e.kind, FailureKind::InvalidRequest, "{bad}");
        }
    }

    #[test]
    fn per_call_beats_environment_beats_default() {
        let l = Limits::resolve(None, None, None).unwrap();
        assert_eq!(l.timeout, Some(DEFAULT_TIMEOUT));
        let l = Limits::resolve(None, Some(5), Some("10m")).unwrap();
        assert_eq!(l.timeout, Some(Duration::from_secs(600)));
        assert_eq!(l.max_tokens, Some(5));
        let l = Limits::resolve(Some("2s"), None, Some("10m")).unwrap();
        assert_eq!(l.timeout, Some(Duration::from_secs(2)));
        assert!(Limits::resolve(None, None, Some("soon")).is_err());
        assert!(Limits::resolve(None, Some(0), None).is_err());
    }

    use crate::contract::Usage;

    #[test]
    fn the_budget_trips_on_the_first_report_over_it_and_names_itself() {
        let cancel = CancellationToken::new();
        let e = Enforcer::new(
            Limits {
                timeout: None,
                max_tokens: Some(100),
            },
            &cancel,
        );
        let usage = |n| StreamEvent::Usage {
            usage: Usage {
                input: n,
                ..Default::default()
            },
        };
        e.observe(&usage(100));
        assert!(!e.token().is_cancelled());
        e.observe(&usage(101));
        assert!(e.token().is_cancelled());
        assert!(!cancel.is_cancelled(), "only the run's own token");
        let r = DispatchResult::early_failure(
            Default::default(),
            Failure::new(FailureKind::Cancelled, "x"),
        );
        let r = e.settle(r);
        assert_eq!(r.failure.unwrap().kind, FailureKind::BudgetExceeded);
    }

    #[test]
    fn an_answer_over_budget_fails_but_an_answer_in_time_stands() {
        let ok = || DispatchResult {
            ok: true,
            failure: None,
            ..DispatchResult::early_failure(
                Default::default(),
                Failure::new(FailureKind::Cancelled, ""),
            )
        };
        let cancel = CancellationToken::new();
        let budget = Enforcer::new(
            Limits {
                timeout: None,
                max_tokens: Some(1),
            },
            &cancel,
        );
        budget.observe(&StreamEvent::Usage {
            usage: Usage {
                output: 2,
                ..Default::default()
            },
        });
        let r = budget.settle(ok());
        assert!(!r.ok);
        assert_eq!(r.failure.unwrap().kind, FailureKind::BudgetExceeded);

        let late = Enforcer::new(Limits::default(), &cancel);
        late.trip(StopReason::Timeout(Duration::from_secs(1)));
        assert!(late.settle(ok()).ok, "the answer was in before the limit");
    }

    #[test]
    fn a_callers_cancel_stays_a_cancel() {
        let cancel = CancellationToken::new();
        let e = Enforcer::new(
            Limits {
                timeout: None,
                max_tokens: Some(1),
            },
            &cancel,
        );
        cancel.cancel();
        e.observe(&StreamEvent::Usage {
            usage: Usage {
                output: 5,
                ..Default::default()
            },
        });
        assert_eq!(e.reason(), None);
    }

    #[tokio::test]
    async fn the_deadline_trips_the_timeout() {
        let cancel = CancellationToken::new();
        let limits = Limits {
            timeout: Some(Duration::from_millis(50)),
            max_tokens: None,
        };
        let e = Enforcer::new(limits, &cancel);
        let token = e.token();
        let r = e
            .run(async move {
                token.cancelled().await;
                DispatchResult::early_failure(
                    Default::default(),
                    Failure::new(FailureKind::Cancelled, "stopped"),
                )
            })
            .await;
        assert_eq!(r.failure.unwrap().kind, FailureKind::Timeout);
    }
}

//! Validation of a [`DispatchRequest`]: bad input gets a clear, typed error and starts nothing.

use std::path::PathBuf;

use crate::adapter::Adapter;
use crate::adapters;
use crate::contract::{DispatchRequest, Failure, FailureKind};

/// A request that passed validation: the adapter exists and every field is usable.
#[derive(Clone)]
pub struct ValidRequest {
    pub adapter: &'static dyn Adapter,
    pub task: String,
    pub scope: Option<String>,
    pub model: Option<String>,
    pub effort: Option<String>,
    /// Canonical and existing.
    pub cwd: PathBuf,
}

impl std::fmt::Debug for ValidRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ValidRequest")
            .field("agent", &self.adapter.id())
            .field("model", &self.model)
            .field("effort", &self.effort)
            .field("cwd", &self.cwd)
            .finish_non_exhaustive()
    }
}

fn invalid(message: impl Into<String>) -> Failure {
    Failure::new(FailureKind::InvalidRequest, message)
}

/// A model or effort is passed to the CLI verbatim, so it must not be able to pose as a flag or
/// smuggle a second line.
fn check_selector(what: &str, value: &Option<String>) -> Result<(), Failure> {
    let Some(v) = value else { return Ok(()) };
    if v.trim().is_empty() {
        return Err(invalid(format!(
            "{what} is empty; omit it to use the CLI's default"
        )));
    }
    if v.starts_with('-') {
        return Err(invalid(format!("{what} {v:?} starts with '-'")));
    }
    if v.contains(['\0', '\n', '\r']) {
        return Err(invalid(format!("{what} {v:?} contains a NUL or newline")));
    }
    Ok(())
}

/// An adapter that lists its effort levels accepts only those (one that lists none, like a CLI
/// whose levels differ per model, checks them itself before the run).
fn check_effort(adapter: &dyn Adapter, effort: Option<&str>) -> Result<(), Failure> {
    let efforts = adapter.capabilities().efforts;
    match effort {
        Some(e) if !efforts.is_empty() && !efforts.iter().any(|k| k == e) => Err(invalid(format!(
            "effort {e:?} is not one {} accepts; use one of: {}",
            adapter.display_name(),
            efforts.join(", ")
        ))),
        _ => Ok(()),
    }
}

/// Validate a request against the adapter registry and the file system.
pub fn validate(req: &DispatchRequest) -> Result<ValidRequest, Failure> {
    let adapter = adapters::find(&req.agent)?;
    if req.task.trim().is_empty() {
        return Err(invalid("task is empty"));
    }
    if req.task.contains('\0') {
        return Err(invalid("task contains a NUL byte"));
    }
    if req.scope.as_deref().is_some_and(|s| s.contains('\0')) {
        return Err(invalid("scope contains a NUL byte"));
    }
    check_selector("model", &req.model)?;
    check_selector("effort", &req.effort)?;
    check_effort(adapter, req.effort.as_deref())?;
    let cwd = match std::fs::metadata(&req.cwd) {
        Ok(m) if m.is_dir() => req
            .cwd
            .canonicalize()
            .map_err(|e| invalid(format!("cwd {}: {e}", req.cwd.display())))?,
        Ok(_) => {
            return Err(invalid(format!(
                "cwd {} is not a directory",
                req.cwd.display()
            )));
        }
        Err(e) => return Err(invalid(format!("cwd {}: {e}", req.cwd.display()))),
    };
    Ok(ValidRequest {
        adapter,
        task: req.task.clone(),
        scope: req.scope.clone().filter(|s| !s.trim().is_empty()),
        model: req.model.clone(),
        effort: req.effort.clone(),
        cwd,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req() -> DispatchRequest {
        DispatchRequest {
            agent: "codex".into(),
            task: "look".into(),
            scope: None,
            model: None,
            effort: None,
            cwd: std::env::temp_dir(),
        }
    }

    fn kind(r: DispatchRequest) -> FailureKind {
        validate(&r).unwrap_err().kind
    }

    #[test]
    fn accepts_a_plain_request() {
        assert!(validate(&req()).is_ok());
    }

    #[test]
    fn rejects_bad_input_with_typed_errors() {
        assert_eq!(
            kind(DispatchRequest {
                agent: "nope".into(),
                ..req()
            }),
            FailureKind::UnsupportedAgent
        );
        assert_eq!(
            kind(DispatchRequest {
                task: "  \n".into(),
                ..req()
            }),
            FailureKind::InvalidRequest
        );
        for bad in ["", " ", "-x", "--model", "a\nb", "a\0b", "a\rb"] {
            assert_eq!(
                kind(DispatchRequest {
                    model: Some(bad.into()),
                    ..req()
                }),
                FailureKind::InvalidRequest,
                "{bad:?}"
            );
            assert_eq!(
                kind(DispatchRequest {
                    effort: Some(bad.into()),
                    ..req()
                }),
                FailureKind::InvalidRequest,
                "{bad:?}"
            );
        }
        assert_eq!(
            kind(DispatchRequest {
                cwd: "/definitely/not/here".into(),
                ..req()
            }),
            FailureKind::InvalidRequest
        );
        assert_eq!(
            kind(DispatchRequest {
                cwd: "/etc/hostname".into(),
                ..req()
            }),
            FailureKind::InvalidRequest
        );
    }
}

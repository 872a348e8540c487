//! The client's roots as a boundary for `cwd`: a host that declares roots says which
//! directories this session is about, and a dispatch outside all of them is refused
//! (`invalid-request`) before anything starts.
//!
//! Roots are deprecated from protocol 2026-07-28 (SEP-2577); this server negotiates up to
//! 2025-11-25, where they are current, hence the `allow`.
#![allow(deprecated)]

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::service::Peer;
use tokio_util::sync::CancellationToken;

use crate::contract::{Failure, FailureKind};

/// A client that declared roots but does not answer `roots/list` in this time is refused.
const LIST_TIMEOUT: Duration = Duration::from_secs(10);

/// The directories the client declared, when it declares any: `None` when the client has no
/// roots capability or lists no `file://` root (nothing to enforce).
pub async fn declared(
    peer: &Peer<RoleServer>,
    cancel: &CancellationToken,
) -> Result<Option<Vec<PathBuf>>, Failure> {
    let has_roots = peer
        .peer_info()
        .is_some_and(|info| info.capabilities.roots.is_some());
    if !has_roots {
        return Ok(None);
    }
    let listed = tokio::select! {
        r = tokio::time::timeout(LIST_TIMEOUT, peer.list_roots()) => r,
        _ = cancel.cancelled() => {
            return Err(Failure::new(FailureKind::Cancelled, "cancelled before start"));
        }
    };
    let roots = match listed {
        Ok(Ok(r)) => r.roots,
        Ok(Err(e)) => return Err(invalid(format!("the client's roots/list failed: {e}"))),
        Err(_) => {
            return Err(invalid(format!(
                "the client declared roots but did not list them within {} s",
                LIST_TIMEOUT.as_secs()
            )));
        }
    };
    let dirs: Vec<PathBuf> = roots.iter().filter_map(|r| file_uri_path(&r.uri)).collect();
    Ok((!dirs.is_empty()).then_some(dirs))
}

/// Refuse a `cwd` outside every root. Paths are compared canonically, so a symlink cannot lead
/// out of a root; a `cwd` that does not exist is left to request validation to report.
pub fn check(cwd: &Path, roots: &[PathBuf]) -> Result<(), Failure> {
    let Ok(cwd) = cwd.canonicalize() else {
        return Ok(());
    };
    let inside = roots.iter().any(|root| {
        let root = root.canonicalize().unwrap_or_else(|_| root.clone());
        cwd.starts_with(root)
    });
    if inside {
        return Ok(());
    }
    let listed: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
    Err(invalid(format!(
        "cwd {} is outside every root the client declared ({}); pass a cwd inside one of them",
        cwd.display(),
        listed.join(", ")
    )))
}

fn invalid(message: String) -> Failure {
    Failure::new(FailureKind::InvalidRequest, message)
}

/// `file:///a%20b` → `/a b`; `file://localhost/x` → `/x`; anything else (other schemes, remote
/// hosts) is no local directory.
fn file_uri_path(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    if !rest.starts_with('/') {
        return None;
    }
    let bytes: Vec<u8> = percent_encoding::percent_decode_str(rest).collect();
    Some(PathBuf::from(OsString::from_vec(bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_become_paths() {
        assert_eq!(
            file_uri_path("file:///a%20b/c"),
            Some(PathBuf::from("/a b/c"))
        );
        assert_eq!(
            file_uri_path("file://localhost/x"),
            Some(PathBuf::from("/x"))
        );
        assert_eq!(file_uri_path("file://server/share"), None);
        assert_eq!(file_uri_path("https://example.com/"), None);
    }

    #[test]
    fn a_cwd_outside_every_root_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let inner = root.path().join("sub");
        std::fs::create_dir(&inner).unwrap();
        let other = tempfile::tempdir().unwrap();
        let roots = vec![root.path().to_path_buf()];
        assert!(check(&inner, &roots).is_ok());
        assert!(check(root.path(), &roots).is_ok());
        let e = check(other.path(), &roots).unwrap_err();
        assert_eq!(e.kind, FailureKind::InvalidRequest);
        // A symlink inside the root that points out of it does not lead out.
        let link = root.path().join("out");
        std::os::unix::fs::symlink(other.path(), &link).unwrap();
        assert!(check(&link, &roots).is_err());
    }
}

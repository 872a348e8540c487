//! Child environments are built from an allowlist (adapter data), never by passing the caller's
//! environment through. What a CLI needs to run and to authenticate is named; everything else —
//! bespoke secrets, other vendors' keys — stays behind.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

use crate::adapter::Env;

/// A name or a `PREFIX*` pattern.
pub type EnvRule = &'static str;

/// What every CLI needs to run at all: where programs and home are, locale and terminal,
/// temp dirs, XDG dirs, proxies and certificate bundles.
pub const BASE_ALLOWLIST: &[EnvRule] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TZ",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "TMPDIR",
    "TMP",
    "TEMP",
    "XDG_*",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
];

fn matches(rule: EnvRule, name: &str) -> bool {
    match rule.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => rule == name,
    }
}

/// Is `name` allowed by any rule of `rules`?
pub fn allowed(rules: &[EnvRule], name: &str) -> bool {
    rules.iter().any(|r| matches(r, name))
}

/// Keep the caller's variables allowed by the base list or by `extra`, minus `deny` (exact
/// names that win over any allow rule). Sorted by name for reproducible launches.
pub fn allowlisted(parent: &Env, extra: &[EnvRule], deny: &[&str]) -> Vec<(OsString, OsString)> {
    parent
        .iter()
        .filter(|(k, _)| {
            let Some(name) = k.to_str() else { return false };
            !deny.contains(&name) && (allowed(BASE_ALLOWLIST, name) || allowed(extra, name))
        })
        .map(|(k, v)| {
            // The child's own lookups (its shell, its sandbox helpers) never resolve against
            // the repository it runs in: relative `PATH` entries are dropped.
            let v = if k == "PATH" {
                std::env::join_paths(absolute_path_entries(Some(v))).unwrap_or_default()
            } else {
                v.clone()
            };
            (k.clone(), v)
        })
        .collect()
}

/// The absolute entries of a `PATH` value, in order.
pub fn absolute_path_entries(path: Option<&OsStr>) -> Vec<PathBuf> {
    path.map(|p| {
        std::env::split_paths(p)
            .filter(|d| d.is_absolute())
            .collect()
    })
    .unwrap_or_default()
}

/// An [`Env`] from name/value pairs (tests, and callers that build an environment by hand).
pub fn from_pairs(pairs: &[(&str, &str)]) -> Env {
    pairs
        .iter()
        .map(|(k, v)| (OsString::from(k), OsString::from(v)))
        .collect()
}

/// The names of a child environment, in order (tests).
#[cfg(test)]
pub(crate) fn names(env: &[(OsString, OsString)]) -> Vec<&str> {
    env.iter().map(|(k, _)| k.to_str().unwrap()).collect()
}

/// The current process environment as an [`Env`].
pub fn current() -> Env {
    std::env::vars_os().collect()
}

/// The dispatcher's own cache (check records, per-CLI private configuration):
/// `$AGENT_DISPATCH_CACHE_DIR`, else `$XDG_CACHE_HOME/agent-dispatch`, else
/// `$HOME/.cache/agent-dispatch`.
pub fn cache_dir(env: &Env) -> Option<std::path::PathBuf> {
    let get = |k: &str| {
        env.get(std::ffi::OsStr::new(k))
            .filter(|v| !v.is_empty())
            .map(std::path::PathBuf::from)
    };
    get("AGENT_DISPATCH_CACHE_DIR")
        .or_else(|| get("XDG_CACHE_HOME").map(|d| d.join("agent-dispatch")))
        .or_else(|| get("HOME").map(|h| h.join(".cache/agent-dispatch")))
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::from_pairs as env;

    #[test]
    fn keeps_only_allowed_names() {
        let parent = env(&[
            ("PATH", "/bin"),
            ("LC_ALL", "C"),
            ("GITHUB_TOKEN", "secret"),
            ("MY_SECRET", "x"),
            ("CODEX_HOME", "/h"),
        ]);
        let got = allowlisted(&parent, &["CODEX_*"], &[]);
        let names: Vec<_> = got.iter().map(|(k, _)| k.to_str().unwrap()).collect();
        assert_eq!(names, ["CODEX_HOME", "LC_ALL", "PATH"]);
    }

    #[test]
    fn the_childs_path_keeps_only_absolute_entries() {
        let got = allowlisted(&env(&[("PATH", ".:bin:/usr/bin::/bin")]), &[], &[]);
        assert_eq!(got, [("PATH".into(), "/usr/bin:/bin".into())]);
    }

    #[test]
    fn deny_wins_over_allow() {
        let parent = env(&[("ANTHROPIC_API_KEY", "k"), ("ANTHROPIC_BASE_URL", "u")]);
        let got = allowlisted(&parent, &["ANTHROPIC_*"], &["ANTHROPIC_API_KEY"]);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0, "ANTHROPIC_BASE_URL");
    }
}

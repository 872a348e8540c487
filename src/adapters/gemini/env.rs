//! The child environment: an allowlist. Gemini CLI gets what it needs to run and to
//! authenticate (API key, Vertex AI, a gateway), plus the private home (as `HOME` too), temp
//! dir and settings of [`super::home`] — nothing else of the caller's. `PATH` keeps only the
//! entries the wall lets it read.
//!
//! The CLI passes its own environment to its shell tool; with the enforced setting
//! `security.environmentVariableRedaction` it drops every variable named like a credential
//! (`GEMINI_API_KEY`, `GOOGLE_API_KEY`, …) first, so the commands the agent runs do not see the
//! key the CLI authenticates with. Credential *files* outside the wall stay unreadable.

use std::ffi::{OsStr, OsString};

use crate::adapter::Env;
use crate::env::{EnvRule, allowlisted};
use crate::loopback::ModelEndpoint;
use crate::wall::WallSpec;

use super::home::Layout;

/// Variables Gemini CLI reads besides authentication and routing ([`ENDPOINT_REPLACES`]).
pub const MODEL_VARS: &[EnvRule] = &["GEMINI_MODEL"];

/// Replaced by the dispatcher's own values, whatever the caller has.
pub const REPLACED: &[&str] = &[
    "HOME",
    "GEMINI_CLI_HOME",
    "GEMINI_CLI_SYSTEM_SETTINGS_PATH",
    "GEMINI_CLI_NO_RELAUNCH",
    "GEMINI_SANDBOX",
    "TMPDIR",
    "TMP",
    "TEMP",
];

/// Where model traffic goes and how it is proxied. Gemini CLI loads a trusted repository's
/// `.gemini/.env` into its own environment — but never over a variable that is already set —
/// so each of these is always set: to the caller's value, or to the empty string (unset to the
/// CLI). Seen: a repository's `.gemini/.env` naming another `GOOGLE_GEMINI_BASE_URL` received
/// the user's API key and answered in the model's place.
pub const DOTENV_GUARD: &[&str] = &[
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_VERTEX_BASE_URL",
    "CODE_ASSIST_ENDPOINT",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_USE_GCA",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "ALL_PROXY",
    "https_proxy",
    "http_proxy",
    "all_proxy",
    "NODE_TLS_REJECT_UNAUTHORIZED",
];

/// Authentication and routing variables Gemini CLI reads: the caller's pass through, and a
/// loopback endpoint swapped in replaces them all.
pub const ENDPOINT_REPLACES: &[&str] = &[
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_USE_GCA",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_VERTEX_BASE_URL",
];

/// The `PATH` a walled CLI gets: the caller's absolute entries the wall lets it read (an
/// entry under the unreadable home, such as a version manager's shims, would only fail).
pub fn walled_path(parent: &Env, wall: &WallSpec) -> Option<OsString> {
    let entries =
        crate::env::absolute_path_entries(parent.get(OsStr::new("PATH")).map(OsString::as_os_str));
    let kept = entries
        .into_iter()
        .filter(|e| wall.read.iter().any(|r| e.starts_with(r)));
    std::env::join_paths(kept).ok()
}

/// The complete child environment, sorted by name.
pub fn child_env(
    parent: &Env,
    endpoint: Option<&ModelEndpoint>,
    layout: &Layout,
    wall: &WallSpec,
) -> Vec<(OsString, OsString)> {
    let mut deny: Vec<&str> = REPLACED.to_vec();
    if endpoint.is_some() {
        deny.extend_from_slice(ENDPOINT_REPLACES);
    }
    // XDG directories point into the real home, which the wall makes unreadable (git gives up
    // on a configuration file it may not read).
    let allow = [ENDPOINT_REPLACES, MODEL_VARS].concat();
    let mut env: Vec<_> = allowlisted(parent, &allow, &deny)
        .into_iter()
        .filter(|(k, _)| !k.to_string_lossy().starts_with("XDG_") && k != "PATH")
        .collect();
    let mut set = |k: &str, v: OsString| env.push((k.into(), v));
    if let Some(path) = walled_path(parent, wall) {
        set("PATH", path);
    }
    set("HOME", layout.cli_home().into());
    set("GEMINI_CLI_HOME", layout.cli_home().into());
    set(
        "GEMINI_CLI_SYSTEM_SETTINGS_PATH",
        layout.system_settings().into(),
    );
    // No self-relaunch as a child node process (3.4 s -> 1.5 s to start).
    set("GEMINI_CLI_NO_RELAUNCH", "true".into());
    set("GEMINI_SANDBOX", "false".into());
    set("TMPDIR", layout.tmp().into());
    if let Some(ep) = endpoint {
        set("GOOGLE_GEMINI_BASE_URL", ep.base_url.clone().into());
        set("GEMINI_API_KEY", ep.api_key.clone().into());
    }
    for name in DOTENV_GUARD {
        if !env.iter().any(|(k, _)| k == name) {
            env.push((OsString::from(name), OsString::new()));
        }
    }
    env.sort();
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::env::{from_pairs as env, names};

    #[test]
    fn an_allowlist_with_the_private_home() {
        let layout = Layout { root: "/p".into() };
        let parent = env(&[
            ("PATH", "/h/.pyenv/shims:/bin:relative"),
            ("HOME", "/h"),
            ("XDG_CONFIG_HOME", "/h/.config"),
            ("GEMINI_API_KEY", "k"),
            ("OPENAI_API_KEY", "sk"),
            ("ANTHROPIC_API_KEY", "sk-ant"),
            ("GITHUB_TOKEN", "ghp"),
            ("GEMINI_CLI_HOME", "/users-own"),
            ("TMPDIR", "/tmp"),
        ]);
        let wall = WallSpec::new().read("/bin");
        let got = child_env(&parent, None, &layout, &wall);
        let set: Vec<&str> = got
            .iter()
            .filter(|(k, v)| !v.is_empty() || !DOTENV_GUARD.contains(&k.to_str().unwrap()))
            .map(|(k, _)| k.to_str().unwrap())
            .collect();
        assert_eq!(
            set,
            [
                "GEMINI_API_KEY",
                "GEMINI_CLI_HOME",
                "GEMINI_CLI_NO_RELAUNCH",
                "GEMINI_CLI_SYSTEM_SETTINGS_PATH",
                "GEMINI_SANDBOX",
                "HOME",
                "PATH",
                "TMPDIR"
            ]
        );
        // Every routing variable is set (empty here), so a repository's .env cannot set it.
        for g in DOTENV_GUARD {
            assert!(names(&got).contains(g), "{g}");
        }
        let get = |k: &str| {
            got.iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.clone())
                .unwrap()
        };
        assert_eq!(get("GEMINI_CLI_HOME"), "/p/home");
        assert_eq!(get("HOME"), "/p/home");
        assert_eq!(get("PATH"), "/bin", "only what the wall lets it read");
    }

    #[test]
    fn the_endpoint_replaces_routing_and_credentials() {
        let layout = Layout { root: "/p".into() };
        let parent = env(&[
            ("GEMINI_API_KEY", "real"),
            ("GOOGLE_GENAI_USE_VERTEXAI", "true"),
        ]);
        let ep = ModelEndpoint {
            base_url: "http://127.0.0.1:9".into(),
            api_key: "fake".into(),
        };
        let got = child_env(&parent, Some(&ep), &layout, &WallSpec::new());
        let get = |k: &str| got.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        assert_eq!(get("GEMINI_API_KEY").unwrap(), "fake");
        assert_eq!(get("GOOGLE_GEMINI_BASE_URL").unwrap(), "http://127.0.0.1:9");
        assert_eq!(
            get("GOOGLE_GENAI_USE_VERTEXAI").unwrap(),
            "",
            "set empty: unset to the CLI"
        );
    }
}

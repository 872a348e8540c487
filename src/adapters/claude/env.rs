//! The child environment: an allowlist (D7, amendment 1). Claude Code gets what it needs to run,
//! to find its configuration and to authenticate — and nothing else of the caller's.
//!
//! Never passed: `ANTHROPIC_API_KEY` and `OPENAI_API_KEY` (D7), and
//! `CLAUDE_CODE_SUBPROCESS_ENV_SCRUB` (amendment 1: it writes stub files into the tree). Every
//! other `CLAUDE_CODE_*` variable is left out unless listed: the CLI reads almost a thousand of
//! them, some of which change how it sandboxes or talks to a host.
//!
//! With the scrub off, the Bash tool inherits this environment, so whatever authentication
//! variable is passed (`ANTHROPIC_AUTH_TOKEN`, `CLAUDE_CODE_OAUTH_TOKEN`, provider keys) is
//! readable by commands the agent runs (they can only send it to the sandbox's network proxy,
//! which allows no domain by default). Credential *files* are closed with `denyRead`
//! (see [`super::settings`]).

use std::ffi::{OsStr, OsString};

use crate::adapter::Env;
use crate::env::{EnvRule, allowlisted};
use crate::loopback::ModelEndpoint;

/// Claude Code's own configuration and gateway variables, on top of the base list.
pub const CLAUDE_ALLOWLIST: &[EnvRule] = &[
    // Where its configuration and login live.
    "CLAUDE_CONFIG_DIR",
    // Gateway / first-party API routing and authentication (not ANTHROPIC_API_KEY).
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_CUSTOM_HEADERS",
    "ANTHROPIC_BETAS",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "CLAUDE_CODE_API_KEY_HELPER_TTL_MS",
    "CLAUDE_CODE_CLIENT_CERT",
    "CLAUDE_CODE_CLIENT_KEY",
    "CLAUDE_CODE_CLIENT_KEY_PASSPHRASE",
    // Model selection and aliases.
    "ANTHROPIC_MODEL",
    "ANTHROPIC_SMALL_FAST_MODEL",
    "ANTHROPIC_DEFAULT_*",
    "ANTHROPIC_CUSTOM_MODEL_OPTION*",
    // Provider switches (their credentials follow below, only when switched on).
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
    "CLAUDE_CODE_USE_FOUNDRY",
    "CLAUDE_CODE_SKIP_BEDROCK_AUTH",
    "CLAUDE_CODE_SKIP_VERTEX_AUTH",
    "CLAUDE_CODE_SKIP_FOUNDRY_AUTH",
    // Behaviour knobs that are configuration, not identity.
    "CLAUDE_CODE_MAX_RETRIES",
    "CLAUDE_CODE_MAX_OUTPUT_TOKENS",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
    "DISABLE_TELEMETRY",
    "DISABLE_ERROR_REPORTING",
    "DISABLE_AUTOUPDATER",
    "API_TIMEOUT_MS",
    "MAX_THINKING_TOKENS",
    "BASH_DEFAULT_TIMEOUT_MS",
    "BASH_MAX_TIMEOUT_MS",
    "BASH_MAX_OUTPUT_LENGTH",
];

/// Amazon Bedrock, passed only with `CLAUDE_CODE_USE_BEDROCK` on.
pub const BEDROCK_ALLOWLIST: &[EnvRule] = &[
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_PROFILE",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "ANTHROPIC_BEDROCK_BASE_URL",
    "ANTHROPIC_SMALL_FAST_MODEL_AWS_REGION",
];

/// Google Vertex AI, passed only with `CLAUDE_CODE_USE_VERTEX` on.
pub const VERTEX_ALLOWLIST: &[EnvRule] = &[
    "CLOUD_ML_REGION",
    "VERTEX_REGION_*",
    "ANTHROPIC_VERTEX_PROJECT_ID",
    "ANTHROPIC_VERTEX_BASE_URL",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_CLOUD_PROJECT",
    "GCLOUD_PROJECT",
    "CLOUDSDK_CONFIG",
];

/// Microsoft Foundry, passed only with `CLAUDE_CODE_USE_FOUNDRY` on.
pub const FOUNDRY_ALLOWLIST: &[EnvRule] = &["ANTHROPIC_FOUNDRY_*"];

/// Never passed, whatever an allow rule says ([`FIXED`] ones are set by the adapter).
pub const NEVER: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "CLAUDE_CODE_SUBPROCESS_ENV_SCRUB",
    "CLAUDE_CODE_DISABLE_BACKGROUND_TASKS",
    "GIT_CONFIG_GLOBAL",
    "CLAUDE_CODE_TMPDIR",
];

/// Set on every launch, whatever the caller's environment says.
///
/// `CLAUDE_CODE_DISABLE_BACKGROUND_TASKS=1` (2.1.332): the Bash tool loses its
/// `run_in_background` parameter and a call that passes it anyway is refused as an input
/// validation error — so no background task can keep `claude -p` alive after its answer and
/// start a second turn (verified: without it a backgrounded `sleep` held the CLI until the
/// sleep ended, then a second `result` followed).
pub const FIXED: &[(&str, &str)] = &[("CLAUDE_CODE_DISABLE_BACKGROUND_TASKS", "1")];

/// Replaced when a loopback endpoint is swapped in: routing and authentication only.
pub const ENDPOINT_REPLACES: &[&str] = &[
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
    "CLAUDE_CODE_USE_FOUNDRY",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
];

/// Is an environment switch on (set, and not empty/0/false/no/off)?
pub fn switched_on(value: Option<&OsString>) -> bool {
    let Some(v) = value.and_then(|v| v.to_str()) else {
        return false;
    };
    !matches!(
        v.trim().to_ascii_lowercase().as_str(),
        "" | "0" | "false" | "no" | "off"
    )
}

/// The complete child environment, sorted by name.
pub fn child_env(parent: &Env, endpoint: Option<&ModelEndpoint>) -> Vec<(OsString, OsString)> {
    let get = |k: &str| parent.get(OsStr::new(k));
    let mut rules: Vec<EnvRule> = CLAUDE_ALLOWLIST.to_vec();
    if endpoint.is_none() {
        if switched_on(get("CLAUDE_CODE_USE_BEDROCK")) {
            rules.extend_from_slice(BEDROCK_ALLOWLIST);
        }
        if switched_on(get("CLAUDE_CODE_USE_VERTEX")) {
            rules.extend_from_slice(VERTEX_ALLOWLIST);
        }
        if switched_on(get("CLAUDE_CODE_USE_FOUNDRY")) {
            rules.extend_from_slice(FOUNDRY_ALLOWLIST);
        }
    }
    let mut deny: Vec<&str> = NEVER.to_vec();
    if endpoint.is_some() {
        deny.extend_from_slice(ENDPOINT_REPLACES);
    }
    let mut env = allowlisted(parent, &rules, &deny);
    env.extend(FIXED.iter().map(|(k, v)| (k.into(), v.into())));
    if let Some(ep) = endpoint {
        env.push(("ANTHROPIC_BASE_URL".into(), ep.base_url.clone().into()));
        env.push(("ANTHROPIC_AUTH_TOKEN".into(), ep.api_key.clone().into()));
        env.push((
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(),
            "1".into(),
        ));
    }
    env.sort();
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::env::{from_pairs as env, names};

    #[test]
    fn keys_and_scrub_never_pass() {
        let parent = env(&[
            ("PATH", "/bin"),
            ("HOME", "/h"),
            ("ANTHROPIC_API_KEY", "sk-ant"),
            ("OPENAI_API_KEY", "sk"),
            ("CLAUDE_CODE_SUBPROCESS_ENV_SCRUB", "1"),
            ("CLAUDE_CODE_DISABLE_BACKGROUND_TASKS", "0"),
            ("GIT_CONFIG_GLOBAL", "/elsewhere"),
            ("GITHUB_TOKEN", "ghp"),
            ("MY_PRIVATE_TOKEN", "x"),
            ("CLAUDE_CODE_SANDBOXED", "1"),
            ("CLAUDE_CODE_SHELL_PREFIX", "/x"),
            ("CLAUDECODE", "1"),
            ("ANTHROPIC_AUTH_TOKEN", "tok"),
            ("CLAUDE_CONFIG_DIR", "/c"),
            ("CLAUDE_CODE_MAX_RETRIES", "1"),
            ("AWS_SECRET_ACCESS_KEY", "aws"),
        ]);
        let got = child_env(&parent, None);
        assert_eq!(
            names(&got),
            [
                "ANTHROPIC_AUTH_TOKEN",
                "CLAUDE_CODE_DISABLE_BACKGROUND_TASKS",
                "CLAUDE_CODE_MAX_RETRIES",
                "CLAUDE_CONFIG_DIR",
                "HOME",
                "PATH"
            ]
        );
    }

    #[test]
    fn provider_credentials_only_with_their_switch() {
        let mut parent = env(&[("AWS_PROFILE", "p"), ("CLOUD_ML_REGION", "r")]);
        assert_eq!(
            names(&child_env(&parent, None)),
            ["CLAUDE_CODE_DISABLE_BACKGROUND_TASKS"]
        );
        parent.insert("CLAUDE_CODE_USE_BEDROCK".into(), "1".into());
        parent.insert("CLAUDE_CODE_USE_VERTEX".into(), "0".into());
        assert_eq!(
            names(&child_env(&parent, None)),
            [
                "AWS_PROFILE",
                "CLAUDE_CODE_DISABLE_BACKGROUND_TASKS",
                "CLAUDE_CODE_USE_BEDROCK",
                "CLAUDE_CODE_USE_VERTEX"
            ]
        );
    }

    #[test]
    fn endpoint_replaces_routing_and_auth_only() {
        let parent = env(&[
            ("PATH", "/bin"),
            ("ANTHROPIC_BASE_URL", "https://gateway"),
            ("ANTHROPIC_AUTH_TOKEN", "real"),
            ("CLAUDE_CODE_OAUTH_TOKEN", "oauth"),
            ("CLAUDE_CODE_USE_BEDROCK", "1"),
            ("AWS_PROFILE", "p"),
            ("CLAUDE_CODE_MAX_RETRIES", "0"),
        ]);
        let ep = ModelEndpoint {
            base_url: "http://127.0.0.1:9".into(),
            api_key: "fake".into(),
        };
        let got = child_env(&parent, Some(&ep));
        let pairs: Vec<(&str, &str)> = got
            .iter()
            .map(|(k, v)| (k.to_str().unwrap(), v.to_str().unwrap()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("ANTHROPIC_AUTH_TOKEN", "fake"),
                ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9"),
                ("CLAUDE_CODE_DISABLE_BACKGROUND_TASKS", "1"),
                ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
                ("CLAUDE_CODE_MAX_RETRIES", "0"),
                ("PATH", "/bin"),
            ]
        );
    }
}

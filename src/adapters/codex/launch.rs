//! The exact `codex exec` launch, and the configuration overrides the helper commands share.
//!
//! ```text
//! codex exec --json --skip-git-repo-check --ignore-user-config --ignore-rules --ephemeral
//!   --disable hooks --disable plugins --disable unbounded_connection_retries -C <cwd>
//!   -c shell_environment_policy.ignore_default_excludes=false
//!   -c shell_environment_policy.exclude=[<every credential variable passed>]
//!   -c default_permissions="agent_dispatch_read_only" -c permissions.agent_dispatch_read_only=…
//!   [-c key=<TOML literal> ...] -- <prompt>                   (stdin: /dev/null)
//! codex exec ...same...                                       (prompt on stdin, then EOF)
//! ```
//!
//! * The permission profile ([`super::permissions`]): Codex's own sandbox (bwrap + seccomp on
//!   Linux) enforces read-only as `-s read-only` did, and also denies reading the secrets of
//!   [`crate::secrets`]. (`-s` would make codex ignore the profile, so it is not passed.)
//! * `shell_environment_policy.exclude`: every credential variable the child gets (Codex's key,
//!   the provider's `env_key` whatever it is called, the loopback key) is kept out of the
//!   agent's commands by name, on top of Codex's default KEY/SECRET/TOKEN excludes.
//! * `--ignore-user-config`: the user's MCP servers, hooks, approval and sandbox settings never
//!   apply; their model, effort and provider are re-applied with `-c` (see [`super::config`]).
//! * `--ignore-rules`, `--disable hooks`, `--disable plugins`: no execpolicy rules, hooks or
//!   plugins from anywhere (project-local `.codex/` included).
//! * `--disable unbounded_connection_retries`: an unreachable provider ends the run after
//!   Codex's bounded retries instead of retrying forever.
//! * A `--dangerously-bypass-*` flag never appears.

use std::ffi::OsString;
use std::path::Path;

use toml::{Table, Value};

use super::config::{self, UserDefaults};
use super::permissions;
use crate::adapter::{Env, LaunchContext};
use crate::contract::{Failure, FailureKind};
use crate::env::{EnvRule, allowlisted};
use crate::launch::{self, Launch};
use crate::loopback::ModelEndpoint;

/// Flags every `codex exec` launch carries, in order, before `-C`.
pub const EXEC_FLAGS: &[&str] = &[
    "exec",
    "--json",
    "--skip-git-repo-check",
    "--ignore-user-config",
    "--ignore-rules",
    // Nothing of a dispatch is persisted in the user's Codex session history.
    "--ephemeral",
    "--disable",
    "hooks",
    "--disable",
    "plugins",
    "--disable",
    "unbounded_connection_retries",
];

/// Configuration every run carries: the agent's commands do not inherit variables whose names
/// contain `KEY`, `SECRET` or `TOKEN` (codex's default excludes, which 0.171.0 leaves off), so a
/// provider credential passed to codex is not readable by the commands the model runs.
pub const EXEC_OVERRIDES: &[&str] = &["shell_environment_policy.ignore_default_excludes=false"];

/// Feature switches the helper commands (`debug models`, `doctor`) get too, so that reading the
/// catalogue never runs a hook or loads a plugin. They cannot take `--ignore-user-config`, so
/// they run in an empty directory of their own, and `project_root_markers=[]` stops codex from
/// looking for a project (and its `.codex/config.toml`) in that directory's parents.
pub const HELPER_FLAGS: &[&str] = &[
    "--disable",
    "hooks",
    "--disable",
    "plugins",
    "-c",
    "project_root_markers=[]",
];

/// Codex's own environment variables a run may need: where its home and state live, its API
/// key or access token, its CA bundle, and the local (OSS) provider's address.
pub const ENV_ALLOW: &[EnvRule] = &[
    "CODEX_HOME",
    "CODEX_API_KEY",
    "CODEX_ACCESS_TOKEN",
    "CODEX_CA_CERTIFICATE",
    "CODEX_SQLITE_HOME",
    "CODEX_OSS_BASE_URL",
    "CODEX_OSS_PORT",
];

/// Credential variables the child may get from [`ENV_ALLOW`] or the endpoint: always excluded
/// from the agent's commands, whatever the provider's own variable is called besides.
pub const CREDENTIAL_ENV: &[&str] = &["CODEX_API_KEY", "CODEX_ACCESS_TOKEN", ENDPOINT_KEY_ENV];

/// Provider id used for a loopback endpoint (tests and the self-check).
pub const ENDPOINT_PROVIDER_ID: &str = "agent_dispatch_endpoint";
/// Environment variable the loopback endpoint's throw-away key is passed in.
pub const ENDPOINT_KEY_ENV: &str = "AGENT_DISPATCH_ENDPOINT_KEY";

/// Codex 0.171.0 refuses a prompt longer than this many characters
/// (`input_too_large`, "Input exceeds the maximum length of 1048576 characters").
pub const MAX_PROMPT_CHARS: usize = 1 << 20;

/// What a launch needs besides its argv head: the `-c` overrides and the child environment.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// `key=<literal>` strings, each passed after a `-c`: model, effort and provider, which the
    /// helper commands share.
    pub overrides: Vec<String>,
    /// What only `exec` gets: the credential excludes and the permission profile.
    pub sandbox: Vec<String>,
    /// Deny-list entries kept readable because denying them would break codex.
    pub kept: Vec<permissions::Kept>,
    pub env: Vec<(OsString, OsString)>,
    pub defaults: UserDefaults,
}

impl Resolved {
    /// `-c a -c b ...`
    pub fn override_args(&self) -> Vec<OsString> {
        self.overrides
            .iter()
            .flat_map(|o| [OsString::from("-c"), OsString::from(o)])
            .collect()
    }

    /// The model the launch selects explicitly (request, else the user's default), if any.
    pub fn selected_model<'a>(&'a self, requested: Option<&'a str>) -> Option<&'a str> {
        requested.or(self.defaults.model.as_deref())
    }
}

/// Read the user's defaults and work out the overrides and environment for a run.
pub fn resolve(
    parent_env: &Env,
    model: Option<&str>,
    effort: Option<&str>,
    endpoint: Option<&ModelEndpoint>,
) -> Result<Resolved, Failure> {
    let defaults = config::load(parent_env)?;
    Ok(resolve_with(defaults, parent_env, model, effort, endpoint))
}

/// [`resolve`] with the user's defaults already read.
pub fn resolve_with(
    defaults: UserDefaults,
    parent_env: &Env,
    model: Option<&str>,
    effort: Option<&str>,
    endpoint: Option<&ModelEndpoint>,
) -> Resolved {
    let s = |v: &str| Value::String(v.to_owned());
    let mut overrides = Vec::new();
    // A request's explicit model/effort wins over the user's default.
    if let Some(m) = model.or(defaults.model.as_deref()) {
        overrides.push(config::override_arg("model", &s(m)));
    }
    if let Some(e) = effort.or(defaults.effort.as_deref()) {
        overrides.push(config::override_arg("model_reasoning_effort", &s(e)));
    }
    let mut extra: Vec<String> = Vec::new();
    let mut endpoint_key = None;
    match endpoint {
        Some(ep) => {
            // Swap in only the model endpoint and a throw-away credential.
            let mut t = Table::new();
            t.insert("name".into(), s("agent-dispatch loopback endpoint"));
            t.insert("base_url".into(), s(&ep.base_url));
            t.insert("env_key".into(), s(ENDPOINT_KEY_ENV));
            t.insert("wire_api".into(), s("responses"));
            overrides.push(config::override_arg(
                "model_provider",
                &s(ENDPOINT_PROVIDER_ID),
            ));
            overrides.push(config::override_arg(
                &format!("model_providers.{ENDPOINT_PROVIDER_ID}"),
                &Value::Table(t),
            ));
            endpoint_key = Some(ep.api_key.clone());
        }
        None => {
            if let Some(url) = &defaults.openai_base_url {
                overrides.push(config::override_arg("openai_base_url", &s(url)));
            }
            if let Some(p) = &defaults.provider {
                overrides.push(config::override_arg("model_provider", &s(&p.id)));
                if let Some(t) = &p.table {
                    overrides.push(config::override_arg(
                        &format!("model_providers.{}", p.id),
                        &Value::Table(t.clone()),
                    ));
                }
                extra = p.credential_env_vars();
            }
        }
    }

    let mut env = allowlisted(parent_env, ENV_ALLOW, &[ENDPOINT_KEY_ENV]);
    // The provider's credential variables, exactly as named by the user's own config.
    for name in &extra {
        if let Some(v) = parent_env.get(std::ffi::OsStr::new(name))
            && !env.iter().any(|(k, _)| k == name.as_str())
        {
            env.push((OsString::from(name), v.clone()));
        }
    }
    if let Some(key) = endpoint_key {
        env.push((OsString::from(ENDPOINT_KEY_ENV), OsString::from(key)));
    }
    env.sort();
    let (deny, kept) = deny_list(parent_env);
    let mut sandbox = vec![credential_excludes(&extra)];
    sandbox.extend(permissions::overrides(&deny));
    Resolved {
        overrides,
        sandbox,
        kept,
        env,
        defaults,
    }
}

/// `shell_environment_policy.exclude=[…]`: the fixed credential names plus the provider's.
fn credential_excludes(provider_vars: &[String]) -> String {
    let mut names: Vec<String> = CREDENTIAL_ENV.iter().map(|s| (*s).to_owned()).collect();
    names.extend(provider_vars.iter().cloned());
    names.sort();
    names.dedup();
    config::override_arg(
        "shell_environment_policy.exclude",
        &Value::Array(names.into_iter().map(Value::String).collect()),
    )
}

/// The shared deny list for this user, as Codex filesystem keys. Configuration directories
/// come from the caller's environment, with `CODEX_HOME` resolved as codex resolves it.
fn deny_list(parent_env: &Env) -> (Vec<String>, Vec<permissions::Kept>) {
    let var = |name: &str| {
        parent_env
            .get(std::ffi::OsStr::new(name))
            .filter(|v| !v.is_empty())
            .map(std::path::PathBuf::from)
    };
    let home = var("HOME").or_else(dirs::home_dir);
    let codex_home = config::codex_home(parent_env).ok();
    let secrets = crate::secrets::secret_paths(home.as_deref(), &|name| match name {
        "CODEX_HOME" => codex_home.clone(),
        _ => var(name),
    });
    permissions::deny_paths(&secrets, codex_home.as_deref())
}

/// The full launch for one dispatch.
pub fn build(ctx: &LaunchContext<'_>, resolved: &Resolved) -> Result<Launch, Failure> {
    let chars = ctx.prompt.chars().count();
    if chars > MAX_PROMPT_CHARS {
        return Err(Failure::new(
            FailureKind::InvalidRequest,
            format!("the prompt has {chars} characters; codex accepts at most {MAX_PROMPT_CHARS}"),
        ));
    }
    let mut args: Vec<OsString> = EXEC_FLAGS.iter().map(OsString::from).collect();
    args.push("-C".into());
    args.push(ctx.cwd.as_os_str().to_owned());
    for o in EXEC_OVERRIDES
        .iter()
        .copied()
        .chain(resolved.sandbox.iter().map(String::as_str))
    {
        args.push("-c".into());
        args.push(o.into());
    }
    args.extend(resolved.override_args());
    // After `--` as one argument, or (too long for argv) on stdin with no positional prompt,
    // which codex reads to EOF ("If not provided as an argument ... read from stdin").
    let (tail, stdin) = launch::prompt_transport(ctx.prompt);
    args.extend(tail);
    Ok(Launch {
        program: ctx.program.to_path_buf(),
        args,
        cwd: ctx.cwd.to_path_buf(),
        env: resolved.env.clone(),
        stdin,
        wall: None,
    })
}

/// A helper command (`debug models`, `doctor --json`) with the same overrides and environment.
pub fn helper(program: &Path, cwd: &Path, head: &[&str], resolved: &Resolved) -> Launch {
    let mut args: Vec<OsString> = head.iter().map(OsString::from).collect();
    args.extend(HELPER_FLAGS.iter().map(OsString::from));
    args.extend(resolved.override_args());
    Launch {
        program: program.to_path_buf(),
        args,
        cwd: cwd.to_path_buf(),
        env: resolved.env.clone(),
        stdin: launch::StdinPlan::Null,
        wall: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::FailureKind;
    use crate::launch::StdinPlan;
    use std::path::PathBuf;

    use crate::env::from_pairs as env;

    fn ctx<'a>(
        prompt: &'a str,
        parent_env: &'a Env,
        endpoint: Option<&'a ModelEndpoint>,
    ) -> LaunchContext<'a> {
        LaunchContext {
            program: Path::new("/usr/bin/codex"),
            prompt,
            model: None,
            effort: None,
            cwd: Path::new("/repo"),
            parent_env,
            endpoint,
        }
    }

    fn args(l: &Launch) -> Vec<String> {
        l.display_args()
    }

    fn empty_defaults() -> UserDefaults {
        UserDefaults::default()
    }

    #[test]
    fn exact_launch_line_with_prompt_after_double_dash() {
        let e = env(&[("PATH", "/bin"), ("HOME", "/h")]);
        let c = ctx("look at it", &e, None);
        let r = resolve_with(empty_defaults(), &e, None, None, None);
        let l = build(&c, &r).unwrap();
        let a = args(&l);
        assert_eq!(
            a[..18],
            [
                "exec",
                "--json",
                "--skip-git-repo-check",
                "--ignore-user-config",
                "--ignore-rules",
                "--ephemeral",
                "--disable",
                "hooks",
                "--disable",
                "plugins",
                "--disable",
                "unbounded_connection_retries",
                "-C",
                "/repo",
                "-c",
                "shell_environment_policy.ignore_default_excludes=false",
                "-c",
                "shell_environment_policy.exclude=[\"AGENT_DISPATCH_ENDPOINT_KEY\", \"CODEX_ACCESS_TOKEN\", \"CODEX_API_KEY\"]",
            ]
        );
        assert_eq!(
            a[18..20],
            ["-c", "default_permissions=\"agent_dispatch_read_only\""]
        );
        assert_eq!(a[20], "-c");
        let profile = &a[21];
        assert!(profile.starts_with("permissions.agent_dispatch_read_only={ filesystem = {"));
        for denied in ["/h/.ssh", "/h/.codex/auth.json", "/h/.codex/history.jsonl"] {
            assert!(
                profile.contains(&format!("\"{denied}\" = \"deny\"")),
                "{profile}"
            );
        }
        assert!(profile.contains("\":root\" = \"read\""));
        assert!(!profile.contains("write"));
        assert_eq!(a[22..], ["--", "look at it"]);
        // `-s` would make codex ignore the profile.
        assert!(!a.iter().any(|x| x == "-s" || x == "--sandbox"));
        assert_eq!(l.stdin, StdinPlan::Null);
        assert_eq!(l.cwd, PathBuf::from("/repo"));
        assert!(!args(&l).iter().any(|a| a.contains("dangerously")));
    }

    #[test]
    fn long_prompt_goes_through_stdin_without_positional() {
        let e = env(&[("PATH", "/bin")]);
        let prompt = "p".repeat(launch::MAX_PROMPT_ARG_BYTES + 1);
        let c = ctx(&prompt, &e, None);
        let r = resolve_with(empty_defaults(), &e, None, None, None);
        let l = build(&c, &r).unwrap();
        assert_eq!(l.stdin, StdinPlan::Bytes(prompt.clone().into_bytes()));
        assert!(!args(&l).iter().any(|a| a == "--" || a.len() > 100_000));
        assert!(
            args(&l)
                .last()
                .unwrap()
                .starts_with("permissions.agent_dispatch_read_only=")
        );
    }

    #[test]
    fn prompt_over_codex_limit_is_invalid_request() {
        let e = env(&[]);
        let prompt = "✓".repeat(MAX_PROMPT_CHARS + 1);
        let c = ctx(&prompt, &e, None);
        let r = resolve_with(empty_defaults(), &e, None, None, None);
        assert_eq!(build(&c, &r).unwrap_err().kind, FailureKind::InvalidRequest);
        // Exactly at the limit (3 bytes per char: 3 MiB) is fine.
        let prompt = "✓".repeat(MAX_PROMPT_CHARS);
        let c = ctx(&prompt, &e, None);
        assert!(build(&c, &r).is_ok());
    }

    #[test]
    fn request_wins_over_user_defaults_and_provider_is_reapplied() {
        let e = env(&[
            ("PATH", "/bin"),
            ("CODEX_HOME", "/ch"),
            ("CORP_KEY", "sk-corp"),
            ("GITHUB_TOKEN", "ghp"),
            ("OPENAI_API_KEY", "sk-openai"),
        ]);
        let mut t = Table::new();
        t.insert("base_url".into(), Value::String("https://gw/v1".into()));
        t.insert("env_key".into(), Value::String("CORP_KEY".into()));
        let d = UserDefaults {
            model: Some("gpt-5.5".into()),
            effort: Some("low".into()),
            provider: Some(config::Provider {
                id: "corp".into(),
                table: Some(t),
            }),
            ..Default::default()
        };
        let r = resolve_with(d, &e, Some("gpt-6-sol"), None, None);
        assert_eq!(
            r.overrides,
            [
                "model=\"gpt-6-sol\"",
                "model_reasoning_effort=\"low\"",
                "model_provider=\"corp\"",
                "model_providers.corp={ base_url = \"https://gw/v1\", env_key = \"CORP_KEY\" }",
            ]
        );
        let names: Vec<_> = r.env.iter().map(|(k, _)| k.to_str().unwrap()).collect();
        assert_eq!(names, ["CODEX_HOME", "CORP_KEY", "PATH"]);
    }

    #[test]
    fn every_credential_passed_is_excluded_from_the_agents_shell_by_name() {
        let e = env(&[
            ("PATH", "/bin"),
            ("CORP_PASSWORD", "hunter2"),
            ("CORP_HEADER_VALUE", "h"),
        ]);
        let mut t = Table::new();
        t.insert("env_key".into(), Value::String("CORP_PASSWORD".into()));
        let mut h = Table::new();
        h.insert("X-Corp".into(), Value::String("CORP_HEADER_VALUE".into()));
        t.insert("env_http_headers".into(), Value::Table(h));
        let d = UserDefaults {
            provider: Some(config::Provider {
                id: "corp".into(),
                table: Some(t),
            }),
            ..Default::default()
        };
        let r = resolve_with(d, &e, None, None, None);
        let names: Vec<_> = r.env.iter().map(|(k, _)| k.to_str().unwrap()).collect();
        assert_eq!(names, ["CORP_HEADER_VALUE", "CORP_PASSWORD", "PATH"]);
        assert_eq!(
            r.sandbox[0],
            "shell_environment_policy.exclude=[\"AGENT_DISPATCH_ENDPOINT_KEY\", \"CODEX_ACCESS_TOKEN\", \"CODEX_API_KEY\", \"CORP_HEADER_VALUE\", \"CORP_PASSWORD\"]"
        );
    }

    #[test]
    fn endpoint_swaps_only_provider_and_credential() {
        let e = env(&[
            ("PATH", "/bin"),
            ("CODEX_HOME", "/ch"),
            ("CORP_KEY", "sk-corp"),
            (ENDPOINT_KEY_ENV, "from-parent"),
        ]);
        let d = UserDefaults {
            model: Some("gpt-5.5".into()),
            provider: Some(config::Provider {
                id: "corp".into(),
                table: None,
            }),
            ..Default::default()
        };
        let ep = ModelEndpoint {
            base_url: "http://127.0.0.1:9/v1".into(),
            api_key: "sk-throwaway".into(),
        };
        let without = resolve_with(d.clone(), &e, None, Some("high"), None);
        let with = resolve_with(d, &e, None, Some("high"), Some(&ep));
        assert_eq!(with.overrides[..2], without.overrides[..2]);
        assert_eq!(
            with.overrides[2],
            "model_provider=\"agent_dispatch_endpoint\""
        );
        assert!(with.overrides[3].starts_with("model_providers.agent_dispatch_endpoint={"));
        assert!(with.overrides[3].contains("base_url = \"http://127.0.0.1:9/v1\""));
        assert!(with.overrides[3].contains("wire_api = \"responses\""));
        assert!(with.overrides[3].contains(&format!("env_key = \"{ENDPOINT_KEY_ENV}\"")));
        let key: Vec<_> = with
            .env
            .iter()
            .filter(|(k, _)| k == ENDPOINT_KEY_ENV)
            .collect();
        assert_eq!(key.len(), 1);
        assert_eq!(key[0].1, "sk-throwaway");
        assert!(!with.env.iter().any(|(k, _)| k == "CORP_KEY"));

        let c = ctx("x", &e, Some(&ep));
        let l1 = build(&c, &with).unwrap();
        let l2 = build(&ctx("x", &e, None), &without).unwrap();
        // Same flags and shape; only the -c provider values differ.
        assert_eq!(args(&l1)[..17], args(&l2)[..17]);
    }

    #[test]
    fn openai_gateway_url_is_reapplied_unless_an_endpoint_is_swapped_in() {
        let e = env(&[("PATH", "/bin")]);
        let d = UserDefaults {
            openai_base_url: Some("https://gw.example/v1".into()),
            ..Default::default()
        };
        let r = resolve_with(d.clone(), &e, None, None, None);
        assert_eq!(r.overrides, ["openai_base_url=\"https://gw.example/v1\""]);
        let ep = ModelEndpoint {
            base_url: "http://127.0.0.1:9/v1".into(),
            api_key: "k".into(),
        };
        let r = resolve_with(d, &e, None, None, Some(&ep));
        assert!(!r.overrides.iter().any(|o| o.starts_with("openai_base_url")));
    }

    #[test]
    fn whole_parent_env_is_never_passed() {
        let mut e = env(&[("PATH", "/bin"), ("HOME", "/h")]);
        for i in 0..50 {
            e.insert(format!("SECRET_{i}").into(), "x".into());
        }
        e.insert("CODEX_SANDBOX".into(), "seccomp".into());
        e.insert("CODEX_THREAD_ID".into(), "t".into());
        let r = resolve_with(empty_defaults(), &e, None, None, None);
        let names: Vec<_> = r.env.iter().map(|(k, _)| k.to_str().unwrap()).collect();
        assert_eq!(names, ["HOME", "PATH"]);
    }

    #[test]
    fn helper_commands_share_overrides_and_env() {
        let e = env(&[("PATH", "/bin")]);
        let d = UserDefaults {
            model: Some("gpt-5.5".into()),
            ..Default::default()
        };
        let r = resolve_with(d, &e, None, None, None);
        let l = helper(
            Path::new("/usr/bin/codex"),
            Path::new("/repo"),
            &["doctor", "--json"],
            &r,
        );
        assert_eq!(
            args(&l),
            [
                "doctor",
                "--json",
                "--disable",
                "hooks",
                "--disable",
                "plugins",
                "-c",
                "project_root_markers=[]",
                "-c",
                "model=\"gpt-5.5\""
            ]
        );
        assert_eq!(l.env, r.env);
        assert_eq!(l.stdin, StdinPlan::Null);
    }
}

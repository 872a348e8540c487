//! The user's Codex configuration, read so their defaults survive `--ignore-user-config`.
//!
//! Codex 0.171.0 reads `$CODEX_HOME/config.toml` (default `~/.codex`) and, with `-p NAME`, layers
//! `$CODEX_HOME/NAME.config.toml` on top of it. The launch passes `--ignore-user-config` (so the
//! user's MCP servers, hooks, sandbox and approval settings never apply to a read-only
//! dispatch), which also drops the user's model, effort and provider. This module reads the same
//! files with the `toml` crate and extracts exactly those defaults, which the launch re-applies
//! with `-c key=<TOML literal>`.
//!
//! Profile selection: Codex itself has no environment variable for `-p`, so a dispatch selects a
//! profile with [`PROFILE_ENV`] (read from the caller's environment, never passed to the child).
//! A named profile whose file is missing is an error here (Codex would silently ignore it).
//! A top-level `profile = "…"` key is a hard error in Codex 0.171.0, and so it is here.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use toml::{Table, Value};

use crate::adapter::Env;
use crate::contract::{Failure, FailureKind};

/// Caller environment variable naming a Codex profile (`$CODEX_HOME/<name>.config.toml`).
pub const PROFILE_ENV: &str = "AGENT_DISPATCH_CODEX_PROFILE";

/// The built-in provider; every other provider id must be defined by a `[model_providers.<id>]`
/// table (or be another Codex built-in, which Codex itself resolves).
pub const BUILTIN_OPENAI: &str = "openai";

/// The user's defaults that a dispatch re-applies.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UserDefaults {
    /// The files that were read, base first.
    pub files: Vec<PathBuf>,
    pub model: Option<String>,
    pub effort: Option<String>,
    pub provider: Option<Provider>,
    /// Base URL override for the built-in OpenAI provider (a gateway), if set.
    pub openai_base_url: Option<String>,
}

/// `model_provider = "<id>"` and its `[model_providers.<id>]` table, if the user defined one.
#[derive(Debug, Clone, PartialEq)]
pub struct Provider {
    pub id: String,
    pub table: Option<Table>,
}

impl Provider {
    /// Names of the environment variables this provider reads its credentials from:
    /// `env_key` and the values of `env_http_headers`.
    pub fn credential_env_vars(&self) -> Vec<String> {
        let Some(t) = &self.table else {
            return Vec::new();
        };
        let mut out = Vec::new();
        if let Some(Value::String(k)) = t.get("env_key") {
            out.push(k.clone());
        }
        if let Some(Value::Table(h)) = t.get("env_http_headers") {
            out.extend(h.values().filter_map(|v| v.as_str().map(str::to_owned)));
        }
        out
    }

    /// Whether this is a provider the user defined (as opposed to Codex's built-in OpenAI one).
    pub fn is_user_defined(&self) -> bool {
        self.id != BUILTIN_OPENAI
    }
}

fn invalid(message: impl Into<String>) -> Failure {
    Failure::new(FailureKind::InvalidRequest, message)
}

fn env_str<'a>(env: &'a Env, name: &str) -> Option<&'a str> {
    env.get(OsStr::new(name))
        .and_then(|v| v.to_str())
        .filter(|v| !v.is_empty())
}

/// `$CODEX_HOME`, else `$HOME/.codex`, resolved from the caller's environment.
pub fn codex_home(env: &Env) -> Result<PathBuf, Failure> {
    if let Some(h) = env_str(env, "CODEX_HOME") {
        return Ok(PathBuf::from(h));
    }
    let home = env_str(env, "HOME")
        .map(PathBuf::from)
        .or_else(dirs::home_dir)
        .ok_or_else(|| {
            invalid("cannot locate the Codex home: neither CODEX_HOME nor HOME is set")
        })?;
    Ok(home.join(".codex"))
}

/// Read the user's defaults as Codex would: the base file, then the selected profile's file.
pub fn load(env: &Env) -> Result<UserDefaults, Failure> {
    let home = codex_home(env)?;
    load_from(&home, env_str(env, PROFILE_ENV))
}

/// [`load`] with the home and profile given.
pub fn load_from(home: &Path, profile: Option<&str>) -> Result<UserDefaults, Failure> {
    let mut files = Vec::new();
    let base_path = home.join("config.toml");
    let mut merged = match read_table(&base_path)? {
        Some(t) => {
            files.push(base_path);
            t
        }
        None => Table::new(),
    };
    if let Some(name) = profile {
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(invalid(format!(
                "{PROFILE_ENV}={name:?} is not a valid Codex profile name (letters, digits, '-', '_')"
            )));
        }
        let path = home.join(format!("{name}.config.toml"));
        let layer = read_table(&path)?.ok_or_else(|| {
            invalid(format!(
                "Codex profile {name:?} was selected ({PROFILE_ENV}) but {} does not exist",
                path.display()
            ))
        })?;
        merge(&mut merged, layer);
        files.push(path);
    }
    extract(merged, files)
}

/// Read one TOML file. `Ok(None)` when it does not exist.
fn read_table(path: &Path) -> Result<Option<Table>, Failure> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(invalid(format!(
                "cannot read Codex config {}: {e}",
                path.display()
            )));
        }
    };
    let table: Table = toml::from_str(&text).map_err(|e| {
        invalid(format!(
            "Codex config {} is not valid TOML: {}",
            path.display(),
            e.to_string().trim_end()
        ))
    })?;
    if let Some(p) = table.get("profile") {
        let shown = p
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| p.to_string());
        return Err(invalid(format!(
            "Codex config {} sets the legacy top-level `profile = {shown:?}`, which codex 0.171.0 \
             refuses; move that profile into `{shown}.config.toml` next to it and select it with \
             {PROFILE_ENV}={shown}",
            path.display()
        )));
    }
    Ok(Some(table))
}

/// Layer `over` on top of `base` the way Codex layers config files: tables merge key by key,
/// every other value is replaced.
pub fn merge(base: &mut Table, over: Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(Value::Table(b)), Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

fn string_key(t: &Table, key: &str, files: &[PathBuf]) -> Result<Option<String>, Failure> {
    match t.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(invalid(format!(
            "Codex config ({}) sets `{key}` to {other}, which is not a string",
            shown(files)
        ))),
    }
}

fn shown(files: &[PathBuf]) -> String {
    files
        .iter()
        .map(|f| f.display().to_string())
        .collect::<Vec<_>>()
        .join(" + ")
}

/// A provider id is used in a dotted `-c model_providers.<id>` path, so it must be a bare key.
pub fn valid_provider_id(id: &str) -> bool {
    !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

fn extract(merged: Table, files: Vec<PathBuf>) -> Result<UserDefaults, Failure> {
    let model = string_key(&merged, "model", &files)?;
    let effort = string_key(&merged, "model_reasoning_effort", &files)?;
    let openai_base_url = string_key(&merged, "openai_base_url", &files)?;
    let provider = match string_key(&merged, "model_provider", &files)? {
        None => None,
        Some(id) => {
            if !valid_provider_id(&id) {
                return Err(invalid(format!(
                    "Codex config ({}) names model_provider {id:?}; only letters, digits, '-' and \
                     '_' can be passed on to codex",
                    shown(&files)
                )));
            }
            let table = match merged.get("model_providers") {
                None => None,
                Some(Value::Table(all)) => match all.get(&id) {
                    None => None,
                    Some(Value::Table(t)) => Some(t.clone()),
                    Some(other) => {
                        return Err(invalid(format!(
                            "Codex config ({}) sets `model_providers.{id}` to {other}, which is \
                             not a table",
                            shown(&files)
                        )));
                    }
                },
                Some(_) => {
                    return Err(invalid(format!(
                        "Codex config ({}) sets `model_providers` to something that is not a table",
                        shown(&files)
                    )));
                }
            };
            if let Some(t) = &table {
                for key in ["env_key", "base_url", "wire_api", "name"] {
                    if let Some(v) = t.get(key).filter(|v| !v.is_str()) {
                        return Err(invalid(format!(
                            "Codex config ({}) sets `model_providers.{id}.{key}` to {v}, which is \
                             not a string",
                            shown(&files)
                        )));
                    }
                }
            }
            Some(Provider { id, table })
        }
    };
    Ok(UserDefaults {
        files,
        model,
        effort,
        provider,
        openai_base_url,
    })
}

/// One `-c` override value: `key=<TOML literal>`. Strings become quoted TOML strings (so a value
/// can never be re-read as a number, a boolean or an array) and tables become inline tables.
pub fn override_arg(key: &str, value: &Value) -> String {
    format!("{key}={}", literal(value))
}

/// A TOML literal for any value, tables inline.
pub fn literal(value: &Value) -> String {
    match value {
        Value::Table(t) => {
            let parts: Vec<String> = t
                .iter()
                .map(|(k, v)| format!("{} = {}", key_literal(k), literal(v)))
                .collect();
            if parts.is_empty() {
                "{}".to_owned()
            } else {
                format!("{{ {} }}", parts.join(", "))
            }
        }
        Value::Array(a) => {
            let parts: Vec<String> = a.iter().map(literal).collect();
            format!("[{}]", parts.join(", "))
        }
        other => other.to_string(),
    }
}

/// A table key: bare when it can be, else a quoted string.
fn key_literal(k: &str) -> String {
    if valid_provider_id(k) {
        k.to_owned()
    } else {
        Value::String(k.to_owned()).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn home_with(files: &[(&str, &str)]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for (name, body) in files {
            std::fs::write(d.path().join(name), body).unwrap();
        }
        d
    }

    #[test]
    fn missing_config_means_no_defaults() {
        let d = home_with(&[]);
        let u = load_from(d.path(), None).unwrap();
        assert_eq!(u, UserDefaults::default());
    }

    #[test]
    fn reads_model_effort_and_provider_table() {
        let d = home_with(&[(
            "config.toml",
            r#"
model = "gpt-5.5"
model_reasoning_effort = "high"
model_provider = "corp"
openai_base_url = "https://gw.example/v1"
approval_policy = "never"
sandbox_mode = "danger-full-access"
[model_providers.corp]
name = "Corp gateway"
base_url = "https://llm.corp.example/v1"
env_key = "CORP_KEY"
wire_api = "responses"
env_http_headers = { "X-Team" = "CORP_TEAM" }
[model_providers.other]
base_url = "http://unused"
[mcp_servers.x]
command = "touch"
"#,
        )]);
        let u = load_from(d.path(), None).unwrap();
        assert_eq!(u.model.as_deref(), Some("gpt-5.5"));
        assert_eq!(u.effort.as_deref(), Some("high"));
        assert_eq!(u.openai_base_url.as_deref(), Some("https://gw.example/v1"));
        let p = u.provider.unwrap();
        assert_eq!(p.id, "corp");
        assert!(p.is_user_defined());
        let t = p.table.clone().unwrap();
        assert_eq!(t["base_url"].as_str(), Some("https://llm.corp.example/v1"));
        assert_eq!(p.credential_env_vars(), vec!["CORP_KEY", "CORP_TEAM"]);
    }

    #[test]
    fn profile_layers_on_top_of_base() {
        let d = home_with(&[
            (
                "config.toml",
                "model = \"gpt-5.5\"\nmodel_reasoning_effort = \"low\"\nmodel_provider = \"corp\"\n[model_providers.corp]\nbase_url = \"http://a\"\nenv_key = \"K\"\n",
            ),
            (
                "deep.config.toml",
                "model_reasoning_effort = \"xhigh\"\n[model_providers.corp]\nbase_url = \"http://b\"\n",
            ),
        ]);
        let u = load_from(d.path(), Some("deep")).unwrap();
        assert_eq!(u.model.as_deref(), Some("gpt-5.5"));
        assert_eq!(u.effort.as_deref(), Some("xhigh"));
        let t = u.provider.unwrap().table.unwrap();
        assert_eq!(t["base_url"].as_str(), Some("http://b"));
        assert_eq!(t["env_key"].as_str(), Some("K"), "tables merge key by key");
        assert_eq!(u.files.len(), 2);
    }

    #[test]
    fn missing_or_bad_profile_is_invalid_request() {
        let d = home_with(&[("config.toml", "model = \"gpt-5.5\"\n")]);
        for bad in ["nosuch", "../x", "a.b", ""] {
            let e = load_from(d.path(), Some(bad)).unwrap_err();
            assert_eq!(e.kind, FailureKind::InvalidRequest, "{bad}");
        }
    }

    #[test]
    fn legacy_profile_key_is_invalid_request() {
        let d = home_with(&[(
            "config.toml",
            "model = \"gpt-5.5\"\nprofile = \"p1\"\n[profiles.p1]\nmodel = \"x\"\n",
        )]);
        let e = load_from(d.path(), None).unwrap_err();
        assert_eq!(e.kind, FailureKind::InvalidRequest);
        assert!(e.message.contains("legacy"), "{}", e.message);
        assert!(e.message.contains("p1.config.toml"), "{}", e.message);
    }

    #[test]
    fn legacy_profiles_tables_are_ignored_like_codex_does() {
        let d = home_with(&[("config.toml", "[profiles.p1]\nmodel = \"x\"\n")]);
        assert_eq!(load_from(d.path(), None).unwrap().model, None);
    }

    #[test]
    fn broken_config_is_invalid_request() {
        for body in [
            "model = ",
            "model = 5",
            "model_provider = \"a.b\"",
            "model_provider = \"x\"\nmodel_providers = 3",
            "model_provider = \"x\"\n[model_providers]\nx = 1",
            "model_provider = \"x\"\n[model_providers.x]\nenv_key = 1",
        ] {
            let d = home_with(&[("config.toml", body)]);
            let e = load_from(d.path(), None).unwrap_err();
            assert_eq!(e.kind, FailureKind::InvalidRequest, "{body}");
            assert!(e.message.contains("config.toml"), "{}", e.message);
        }
    }

    #[test]
    fn codex_home_prefers_env_then_home() {
        let mut env = Env::new();
        env.insert("HOME".into(), "/home/u".into());
        assert_eq!(codex_home(&env).unwrap(), PathBuf::from("/home/u/.codex"));
        env.insert("CODEX_HOME".into(), "/ch".into());
        assert_eq!(codex_home(&env).unwrap(), PathBuf::from("/ch"));
    }

    #[test]
    fn override_values_are_toml_literals_that_round_trip() {
        assert_eq!(
            override_arg("model", &Value::String("gpt-5.5".into())),
            "model=\"gpt-5.5\""
        );
        // A string that looks like another TOML type stays a string.
        assert_eq!(
            override_arg("model", &Value::String("true".into())),
            "model=\"true\""
        );
        let table: Table = toml::from_str(
            r#"
name = "Corp \"gw\""
base_url = "http://x/v1"
request_max_retries = 0
query_params = { "api-version" = "2025-01-01" }
env_http_headers = { "X-Team" = "T" }
"#,
        )
        .unwrap();
        let arg = override_arg("model_providers.corp", &Value::Table(table.clone()));
        let (key, lit) = arg.split_once('=').unwrap();
        assert_eq!(key, "model_providers.corp");
        // Parse the literal back exactly as codex does: as the value of a TOML key.
        let back: Table = toml::from_str(&format!("v = {lit}")).unwrap();
        assert_eq!(back["v"], Value::Table(table));
    }
}

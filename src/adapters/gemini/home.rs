//! The private, per-dispatch directory a walled Gemini CLI writes into, removed after the run:
//!
//! ```text
//! <private>/home                         HOME and GEMINI_CLI_HOME (the real home is unreadable)
//! <private>/home/.gemini/settings.json   the user's auth type and default model
//! <private>/home/.gemini/<auth files>    copied from the user's ~/.gemini (OAuth login)
//! <private>/system-settings.json         GEMINI_CLI_SYSTEM_SETTINGS_PATH: what this build enforces
//! <private>/policy.toml                  --policy: the shell allowed, every writer denied
//! <private>/tmp                          TMPDIR (the shell tool's mkdtemp needs it)
//! ```
//!
//! The CLI needs a writable home (`projects.json`, session files), so it never gets the user's:
//! `~/.gemini` is read here, by the dispatcher, and never written. System settings override
//! user and workspace settings, so a repository's `.gemini/settings.json` cannot turn
//! telemetry, checkpointing, auto-update, the IDE or the retry bound back on.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::adapter::Env;

/// Files of the user's Gemini directory that carry a login, copied when present.
pub const AUTH_FILES: &[&str] = &[
    "oauth_creds.json",
    "google_accounts.json",
    "gemini-credentials.json",
    "installation_id",
];

/// Hidden from the shell tool's environment, on top of the CLI's own name patterns (`KEY`,
/// `TOKEN`, `SECRET`, `CREDENTIAL`, …), which already cover them.
pub const REDACTED: &[&str] = &[
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_APPLICATION_CREDENTIALS",
];

/// How many times the CLI tries one model request (its default retries a 5xx for minutes).
pub const MAX_ATTEMPTS: u64 = 2;

/// The tool policy (`--policy`): the shell is allowed without a prompt, redirections included
/// (headless mode has no one to ask; the wall decides what a command may write), and every tool that writes, reaches the web or starts another agent is denied,
/// so the model is never offered them. Reading tools keep the CLI's own defaults (allowed).
pub const POLICY_TOML: &str = r#"# agent-dispatch: read-only dispatch policy
[[rule]]
toolName = "run_shell_command"
decision = "allow"
allowRedirection = true
priority = 900

[[rule]]
toolName = ["write_file", "replace", "save_memory", "web_fetch", "google_web_search", "invoke_agent", "activate_skill", "write_todos", "enter_plan_mode", "exit_plan_mode"]
decision = "deny"
priority = 900
"#;

/// Where the layout's parts are, under the private directory.
#[derive(Debug, Clone)]
pub struct Layout {
    pub root: PathBuf,
}

impl Layout {
    pub fn cli_home(&self) -> PathBuf {
        self.root.join("home")
    }
    pub fn gemini_dir(&self) -> PathBuf {
        self.cli_home().join(".gemini")
    }
    pub fn tmp(&self) -> PathBuf {
        self.root.join("tmp")
    }
    pub fn policy(&self) -> PathBuf {
        self.root.join("policy.toml")
    }
    pub fn system_settings(&self) -> PathBuf {
        self.root.join("system-settings.json")
    }
}

/// The user's Gemini directory: `$GEMINI_CLI_HOME/.gemini`, else `$HOME/.gemini`.
pub fn user_gemini_dir(parent: &Env) -> Option<PathBuf> {
    let var = |k: &str| {
        parent
            .get(std::ffi::OsStr::new(k))
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    var("GEMINI_CLI_HOME")
        .or_else(|| var("HOME"))
        .map(|h| h.join(".gemini"))
}

/// The settings this build enforces for every launch.
pub fn system_settings() -> Value {
    json!({
        "privacy": {"usageStatisticsEnabled": false},
        "telemetry": {"enabled": false},
        "general": {
            "enableAutoUpdate": false,
            "enableAutoUpdateNotification": false,
            "checkpointing": {"enabled": false},
            "maxAttempts": MAX_ATTEMPTS,
        },
        "ide": {"enabled": false},
        // `.env` files of the repository are not loaded into the CLI's environment.
        "advanced": {"ignoreLocalEnv": true},
        "security": {
            // Its own bubblewrap sandbox cannot start inside the wall (Landlock forbids mount).
            "toolSandboxing": false,
            // The shell tool's environment loses every variable named like a credential.
            "environmentVariableRedaction": {"enabled": true, "blocked": REDACTED},
        },
        // A repository's settings may declare hooks and tool discovery/call commands: none run.
        "hooksConfig": {"enabled": false},
        "tools": {"sandbox": false, "discoveryCommand": "", "callCommand": ""},
    })
}

/// The user-scope settings of the private home: the enforced settings again (should the system
/// file be skipped — Gemini CLI ignores one with a group- or world-writable ancestor), plus the
/// user's auth type and default model only (or the API-key auth the fake endpoint needs).
pub fn user_settings(user: Option<&Value>, fake_endpoint: bool) -> Value {
    let pick = |path: &[&str]| {
        path.iter()
            .try_fold(user?, |v, k| v.get(k))
            .filter(|v| !v.is_null())
            .cloned()
    };
    let mut auth = serde_json::Map::new();
    if fake_endpoint {
        auth.insert("selectedType".into(), json!("gemini-api-key"));
    } else {
        for key in ["selectedType", "enforcedType", "useExternal"] {
            if let Some(v) = pick(&["security", "auth", key]) {
                auth.insert(key.into(), v);
            }
        }
    }
    let mut out = system_settings();
    out["security"]["auth"] = Value::Object(auth);
    if let Some(name) = pick(&["model", "name"]) {
        out["model"] = json!({"name": name});
    }
    out
}

/// Lay the private directory out under `root` (which exists, mode 0700).
pub fn populate(root: &Path, parent: &Env, fake_endpoint: bool) -> std::io::Result<Layout> {
    let layout = Layout {
        root: root.to_path_buf(),
    };
    std::fs::create_dir_all(layout.gemini_dir())?;
    std::fs::create_dir_all(layout.tmp())?;
    let user_dir = user_gemini_dir(parent);
    let user: Option<Value> = user_dir
        .as_ref()
        .and_then(|d| std::fs::read(d.join("settings.json")).ok())
        .and_then(|b| serde_json::from_slice(&b).ok());
    if !fake_endpoint && let Some(dir) = &user_dir {
        for f in AUTH_FILES {
            let from = dir.join(f);
            if from.is_file() {
                std::fs::copy(&from, layout.gemini_dir().join(f))?;
            }
        }
    }
    let write_json = |p: PathBuf, v: &Value| {
        std::fs::write(
            p,
            serde_json::to_vec_pretty(v).map_err(std::io::Error::other)?,
        )
    };
    write_json(
        layout.gemini_dir().join("settings.json"),
        &user_settings(user.as_ref(), fake_endpoint),
    )?;
    write_json(layout.system_settings(), &system_settings())?;
    std::fs::write(layout.policy(), POLICY_TOML)?;
    Ok(layout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_auth_and_model_come_from_the_user() {
        let user = json!({
            "security": {"auth": {"selectedType": "oauth-personal"}, "toolSandboxing": true},
            "model": {"name": "gemini-2.5-pro", "maxSessionTurns": 3},
            "mcpServers": {"x": {"command": "evil"}},
            "telemetry": {"enabled": true},
        });
        let got = user_settings(Some(&user), false);
        assert_eq!(
            got["security"]["auth"],
            json!({"selectedType": "oauth-personal"})
        );
        assert_eq!(got["security"]["toolSandboxing"], false);
        assert_eq!(got["model"], json!({"name": "gemini-2.5-pro"}));
        assert_eq!(got["telemetry"]["enabled"], false);
        assert_eq!(got["general"]["maxAttempts"], MAX_ATTEMPTS);
        assert_eq!(got["hooksConfig"]["enabled"], false);
        assert!(got.get("mcpServers").is_none());
        let fake = user_settings(Some(&user), true);
        assert_eq!(
            fake["security"]["auth"],
            json!({"selectedType": "gemini-api-key"})
        );
        assert_eq!(user_settings(None, false)["security"]["auth"], json!({}));
    }

    #[test]
    fn the_login_is_copied_and_the_user_dir_is_only_read() {
        let user_home = tempfile::tempdir().unwrap();
        let g = user_home.path().join(".gemini");
        std::fs::create_dir_all(&g).unwrap();
        std::fs::write(g.join("oauth_creds.json"), "{\"refresh_token\":\"r\"}").unwrap();
        std::fs::write(
            g.join("settings.json"),
            "{\"security\":{\"auth\":{\"selectedType\":\"oauth-personal\"}}}",
        )
        .unwrap();
        std::fs::write(g.join("GEMINI.md"), "memory").unwrap();
        let private = tempfile::tempdir().unwrap();
        let parent = crate::env::from_pairs(&[("HOME", user_home.path().to_str().unwrap())]);
        let layout = populate(private.path(), &parent, false).unwrap();
        assert!(layout.gemini_dir().join("oauth_creds.json").is_file());
        assert!(!layout.gemini_dir().join("GEMINI.md").exists());
        assert!(layout.tmp().is_dir());
        let s: Value = serde_json::from_slice(
            &std::fs::read(layout.gemini_dir().join("settings.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(s["security"]["auth"]["selectedType"], "oauth-personal");
        // With the fake endpoint, no login is copied.
        let private2 = tempfile::tempdir().unwrap();
        let layout2 = populate(private2.path(), &parent, true).unwrap();
        assert!(!layout2.gemini_dir().join("oauth_creds.json").exists());
    }
}

//! The one deny list of secrets every adapter hides from its agent, each with its CLI's own
//! mechanism (Claude: sandbox `denyRead` and `Read()` deny rules; walled CLIs: the wall's read
//! allowlist). Data only: paths under the caller's home and under CLIs' configuration
//! directories; a missing entry costs nothing.

use std::path::{Path, PathBuf};

/// Secrets under the home directory that neither Bash nor the Read tool may read, whatever
/// the agent is asked. Directories end in `/`; missing entries cost nothing.
pub const HOME_SECRETS: &[&str] = &[
    // Claude Code's own credentials (also under $CLAUDE_CONFIG_DIR, added separately).
    ".claude/.credentials.json",
    ".claude.json",
    // Other agents' credentials.
    ".codex/auth.json",
    ".pi/agent/auth.json",
    // Keys and cloud credentials.
    ".ssh/",
    ".gnupg/",
    ".aws/",
    ".azure/",
    ".config/gcloud/",
    ".kube/",
    ".oci/",
    ".docker/config.json",
    // Token files of common tools.
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".config/gh/",
    ".config/hub",
    ".npmrc",
    ".yarnrc.yml",
    ".pypirc",
    ".config/pip/pip.conf",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".gem/credentials",
    ".vault-token",
    ".terraform.d/credentials.tfrc.json",
    ".password-store/",
    ".local/share/keyrings/",
];

/// Files relative to a configuration directory named by an environment variable.
pub const CONFIG_DIR_SECRETS: &[(&str, &str)] = &[
    ("CLAUDE_CONFIG_DIR", ".credentials.json"),
    ("CLAUDE_CONFIG_DIR", ".claude.json"),
    ("CODEX_HOME", "auth.json"),
    ("PI_CODING_AGENT_DIR", "auth.json"),
];

/// A file or directory the agent may not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Secret {
    pub path: PathBuf,
    pub dir: bool,
}

/// The secret paths to deny for a caller whose home is `home`, with configuration
/// directories taken from `config_dirs` (variable name → value).
pub fn secret_paths(
    home: Option<&Path>,
    config_dirs: &dyn Fn(&str) -> Option<PathBuf>,
) -> Vec<Secret> {
    let mut out: Vec<Secret> = Vec::new();
    let mut add = |s: Secret| {
        if !out.iter().any(|o| o.path == s.path) {
            out.push(s);
        }
    };
    if let Some(home) = home.filter(|h| h.is_absolute()) {
        for s in HOME_SECRETS {
            let dir = s.ends_with('/');
            add(Secret {
                path: home.join(s.trim_end_matches('/')),
                dir,
            });
        }
    }
    for (var, file) in CONFIG_DIR_SECRETS {
        if let Some(d) = config_dirs(var).filter(|d| d.is_absolute()) {
            add(Secret {
                path: d.join(file),
                dir: false,
            });
        }
    }
    out
}

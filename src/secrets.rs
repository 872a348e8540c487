//! The one deny list of secrets every adapter hides from its agent, each with its CLI's own
//! mechanism (Claude: sandbox `denyRead` and `Read()` deny rules; Codex: its permission
//! profile's `deny_read`; walled CLIs: the wall's read allowlist). Data only: paths under the
//! caller's home and under CLIs' configuration directories, each tagged with its
//! [`SecretClass`] so reports and docs can group them; a missing entry costs nothing.
//!
//! What the list cannot name (a secret file elsewhere on disk, another repository's `.env`, a
//! credential in an environment variable the CLI itself needs) is said per adapter in its
//! capability text and in `docs/security.md`.

use std::path::{Path, PathBuf};

/// What kind of secret a path holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SecretClass {
    /// SSH keys, known hosts, agent configuration.
    Ssh,
    /// GnuPG keyrings.
    Gpg,
    /// Cloud and infrastructure credentials (AWS, Azure, GCP, Kubernetes, Vault, …).
    Cloud,
    /// Package registry tokens (npm, PyPI, crates.io, RubyGems, Maven, …).
    PackageRegistry,
    /// Git and forge credentials (`.git-credentials`, `gh`, `glab`, `.netrc`).
    GitCredentials,
    /// Password managers and keyrings (1Password, Bitwarden, pass, KeePassXC, …).
    PasswordManager,
    /// Shell and REPL histories: commands typed with tokens in them.
    ShellHistory,
    /// Coding agents' own logins (Claude, Codex, Pi, Gemini, Copilot, …).
    AgentCredentials,
    /// Coding agents' transcripts and histories: other sessions' prompts and outputs.
    AgentTranscripts,
}

impl SecretClass {
    pub const ALL: &'static [SecretClass] = &[
        SecretClass::Ssh,
        SecretClass::Gpg,
        SecretClass::Cloud,
        SecretClass::PackageRegistry,
        SecretClass::GitCredentials,
        SecretClass::PasswordManager,
        SecretClass::ShellHistory,
        SecretClass::AgentCredentials,
        SecretClass::AgentTranscripts,
    ];

    /// A short, stable name for reports (`ssh`, `shell-history`, …).
    pub fn id(self) -> &'static str {
        match self {
            SecretClass::Ssh => "ssh",
            SecretClass::Gpg => "gpg",
            SecretClass::Cloud => "cloud",
            SecretClass::PackageRegistry => "package-registry",
            SecretClass::GitCredentials => "git-credentials",
            SecretClass::PasswordManager => "password-manager",
            SecretClass::ShellHistory => "shell-history",
            SecretClass::AgentCredentials => "agent-credentials",
            SecretClass::AgentTranscripts => "agent-transcripts",
        }
    }

    /// What the class is, in a few words.
    pub fn label(self) -> &'static str {
        match self {
            SecretClass::Ssh => "SSH keys",
            SecretClass::Gpg => "GnuPG keys",
            SecretClass::Cloud => "cloud credentials",
            SecretClass::PackageRegistry => "package registry tokens",
            SecretClass::GitCredentials => "git and forge credentials",
            SecretClass::PasswordManager => "password managers and keyrings",
            SecretClass::ShellHistory => "shell and REPL histories",
            SecretClass::AgentCredentials => "coding agents' logins",
            SecretClass::AgentTranscripts => "coding agents' transcripts and histories",
        }
    }
}

use SecretClass::*;

/// Secrets under the home directory that the agent may not read, whatever it is asked.
/// Directories end in `/`.
pub const HOME_SECRETS: &[(SecretClass, &str)] = &[
    (Ssh, ".ssh/"),
    (Gpg, ".gnupg/"),
    // Cloud and infrastructure.
    (Cloud, ".aws/"),
    (Cloud, ".azure/"),
    (Cloud, ".config/gcloud/"),
    (Cloud, ".kube/"),
    (Cloud, ".oci/"),
    (Cloud, ".docker/config.json"),
    (Cloud, ".config/containers/auth.json"),
    (Cloud, ".config/doctl/"),
    (Cloud, ".config/hcloud/"),
    (Cloud, ".vault-token"),
    (Cloud, ".terraform.d/credentials.tfrc.json"),
    // Package registries.
    (PackageRegistry, ".npmrc"),
    (PackageRegistry, ".yarnrc"),
    (PackageRegistry, ".yarnrc.yml"),
    (PackageRegistry, ".pypirc"),
    (PackageRegistry, ".config/pip/pip.conf"),
    (PackageRegistry, ".cargo/credentials"),
    (PackageRegistry, ".cargo/credentials.toml"),
    (PackageRegistry, ".gem/credentials"),
    (PackageRegistry, ".m2/settings.xml"),
    (PackageRegistry, ".gradle/gradle.properties"),
    (PackageRegistry, ".nuget/NuGet/NuGet.Config"),
    (PackageRegistry, ".config/composer/auth.json"),
    (PackageRegistry, ".composer/auth.json"),
    // Git and forges.
    (GitCredentials, ".git-credentials"),
    (GitCredentials, ".config/git/credentials"),
    (GitCredentials, ".netrc"),
    (GitCredentials, ".config/gh/"),
    (GitCredentials, ".config/hub"),
    (GitCredentials, ".config/glab-cli/"),
    // Password managers and keyrings.
    (PasswordManager, ".password-store/"),
    (PasswordManager, ".config/op/"),
    (PasswordManager, ".op/"),
    (PasswordManager, ".config/Bitwarden CLI/"),
    (PasswordManager, ".config/Bitwarden/"),
    (PasswordManager, ".config/keepassxc/"),
    (PasswordManager, ".local/share/keyrings/"),
    (PasswordManager, ".local/share/gopass/"),
    (PasswordManager, ".config/gopass/"),
    // Shell and REPL histories.
    (ShellHistory, ".bash_history"),
    (ShellHistory, ".zsh_history"),
    (ShellHistory, ".zhistory"),
    (ShellHistory, ".histfile"),
    (ShellHistory, ".sh_history"),
    (ShellHistory, ".local/share/fish/fish_history"),
    (ShellHistory, ".python_history"),
    (ShellHistory, ".node_repl_history"),
    (ShellHistory, ".psql_history"),
    (ShellHistory, ".mysql_history"),
    (ShellHistory, ".sqlite_history"),
    (ShellHistory, ".rediscli_history"),
    (ShellHistory, ".irb_history"),
    (ShellHistory, ".lesshst"),
    (ShellHistory, ".viminfo"),
    // Coding agents' logins (also under their configuration directories, below).
    (AgentCredentials, ".claude/.credentials.json"),
    (AgentCredentials, ".claude.json"),
    (AgentCredentials, ".claude/.claude.json"),
    (AgentCredentials, ".claude/backups/"),
    (AgentCredentials, ".config/anthropic/"),
    (AgentCredentials, ".codex/auth.json"),
    (AgentCredentials, ".pi/agent/auth.json"),
    (AgentCredentials, ".gemini/"),
    (AgentCredentials, ".config/github-copilot/"),
    (AgentCredentials, ".local/share/opencode/"),
    // Coding agents' transcripts and histories.
    (AgentTranscripts, ".claude/projects/"),
    (AgentTranscripts, ".claude/history.jsonl"),
    (AgentTranscripts, ".claude/todos/"),
    (AgentTranscripts, ".claude/file-history/"),
    (AgentTranscripts, ".claude/shell-snapshots/"),
    (AgentTranscripts, ".claude/session-env/"),
    (AgentTranscripts, ".codex/history.jsonl"),
    (AgentTranscripts, ".codex/sessions/"),
    (AgentTranscripts, ".codex/archived_sessions/"),
    (AgentTranscripts, ".codex/log/"),
    (AgentTranscripts, ".pi/agent/sessions/"),
    (AgentTranscripts, ".continue/"),
    (AgentTranscripts, ".cursor/"),
];

/// Secrets relative to a configuration directory named by an environment variable
/// (class, variable, path; directories end in `/`).
pub const CONFIG_DIR_SECRETS: &[(SecretClass, &str, &str)] = &[
    (AgentCredentials, "CLAUDE_CONFIG_DIR", ".credentials.json"),
    (AgentCredentials, "CLAUDE_CONFIG_DIR", ".claude.json"),
    (AgentCredentials, "CLAUDE_CONFIG_DIR", "backups/"),
    (AgentTranscripts, "CLAUDE_CONFIG_DIR", "projects/"),
    (AgentTranscripts, "CLAUDE_CONFIG_DIR", "history.jsonl"),
    (AgentTranscripts, "CLAUDE_CONFIG_DIR", "todos/"),
    (AgentTranscripts, "CLAUDE_CONFIG_DIR", "file-history/"),
    (AgentTranscripts, "CLAUDE_CONFIG_DIR", "shell-snapshots/"),
    (AgentTranscripts, "CLAUDE_CONFIG_DIR", "session-env/"),
    (AgentCredentials, "ANTHROPIC_CONFIG_DIR", "/"),
    (AgentCredentials, "CODEX_HOME", "auth.json"),
    (AgentTranscripts, "CODEX_HOME", "history.jsonl"),
    (AgentTranscripts, "CODEX_HOME", "sessions/"),
    (AgentTranscripts, "CODEX_HOME", "archived_sessions/"),
    (AgentTranscripts, "CODEX_HOME", "log/"),
    (AgentCredentials, "PI_CODING_AGENT_DIR", "auth.json"),
    (AgentTranscripts, "PI_CODING_AGENT_DIR", "sessions/"),
    (AgentCredentials, "GEMINI_CLI_HOME", ".gemini/"),
    (Cloud, "AWS_SHARED_CREDENTIALS_FILE", ""),
    (Cloud, "AWS_CONFIG_FILE", ""),
    (Cloud, "GOOGLE_APPLICATION_CREDENTIALS", ""),
    (Cloud, "KUBECONFIG", ""),
    (Cloud, "DOCKER_CONFIG", "config.json"),
    (Gpg, "GNUPGHOME", "/"),
    (PackageRegistry, "NPM_CONFIG_USERCONFIG", ""),
    (PackageRegistry, "CARGO_HOME", "credentials"),
    (PackageRegistry, "CARGO_HOME", "credentials.toml"),
    (PasswordManager, "PASSWORD_STORE_DIR", "/"),
    (GitCredentials, "GH_CONFIG_DIR", "/"),
];

/// A file or directory the agent may not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Secret {
    pub path: PathBuf,
    pub dir: bool,
    pub class: SecretClass,
}

/// The secret paths to deny for a caller whose home is `home`, with configuration
/// directories (and credential files) taken from `config_dirs` (variable name → value).
/// Relative values are ignored: they could not be named exactly. No duplicates.
pub fn secret_paths(
    home: Option<&Path>,
    config_dirs: &dyn Fn(&str) -> Option<PathBuf>,
) -> Vec<Secret> {
    let mut out: Vec<Secret> = Vec::new();
    let mut add = |path: PathBuf, rel: &str, class: SecretClass| {
        let dir = rel.ends_with('/');
        let rel = rel.trim_matches('/');
        let path = if rel.is_empty() { path } else { path.join(rel) };
        if !out.iter().any(|o| o.path == path) {
            out.push(Secret { path, dir, class });
        }
    };
    if let Some(home) = home.filter(|h| h.is_absolute()) {
        for (class, rel) in HOME_SECRETS {
            add(home.to_path_buf(), rel, *class);
        }
    }
    for (class, var, rel) in CONFIG_DIR_SECRETS {
        if let Some(d) = config_dirs(var).filter(|d| d.is_absolute()) {
            add(d, rel, *class);
        }
    }
    out
}

/// The classes present in `secrets`, in [`SecretClass::ALL`] order.
pub fn classes(secrets: &[Secret]) -> Vec<SecretClass> {
    SecretClass::ALL
        .iter()
        .copied()
        .filter(|c| secrets.iter().any(|s| s.class == *c))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_class_has_home_entries() {
        for class in SecretClass::ALL {
            assert!(
                HOME_SECRETS.iter().any(|(c, _)| c == class),
                "{class:?} has no entry"
            );
        }
    }

    #[test]
    fn paths_classes_and_directories() {
        let s = secret_paths(Some(Path::new("/home/u")), &|v| match v {
            "CLAUDE_CONFIG_DIR" => Some(PathBuf::from("/cfg")),
            "KUBECONFIG" => Some(PathBuf::from("/etc/kube.yaml")),
            "GNUPGHOME" => Some(PathBuf::from("/g")),
            "CODEX_HOME" => Some(PathBuf::from("relative")),
            _ => None,
        });
        let find = |p: &str| s.iter().find(|x| x.path == Path::new(p)).cloned();
        let ssh = find("/home/u/.ssh").unwrap();
        assert_eq!((ssh.dir, ssh.class), (true, Ssh));
        let hist = find("/home/u/.bash_history").unwrap();
        assert_eq!((hist.dir, hist.class), (false, ShellHistory));
        assert_eq!(
            find("/home/u/.claude/projects").unwrap().class,
            AgentTranscripts
        );
        assert_eq!(find("/cfg/projects").unwrap().class, AgentTranscripts);
        assert!(find("/cfg/.credentials.json").is_some());
        let kube = find("/etc/kube.yaml").unwrap();
        assert_eq!((kube.dir, kube.class), (false, Cloud));
        assert!(find("/g").unwrap().dir);
        assert!(!s.iter().any(|x| x.path.starts_with("relative")));
        // No duplicates.
        for (i, a) in s.iter().enumerate() {
            assert!(!s[i + 1..].iter().any(|b| b.path == a.path), "{a:?}");
        }
        assert_eq!(classes(&s), SecretClass::ALL);
    }

    #[test]
    fn no_home_no_home_entries() {
        assert!(secret_paths(None, &|_| None).is_empty());
        assert!(secret_paths(Some(Path::new("rel")), &|_| None).is_empty());
    }
}

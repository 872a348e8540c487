//! What decides a Claude Code launch's sandbox, for the read-only check's record: the native
//! binary (npm's postinstall puts it at `bin/claude.exe`; before that, the platform package's
//! `claude`), the `bwrap` and `socat` its sandbox runs (from managed settings'
//! `sandbox.bwrapPath`/`socatPath`, else the first on `PATH`), and the settings files it reads
//! at launch (the user's, and the machine's managed settings).

use std::path::{Path, PathBuf};

use crate::adapter::{EnforcingFile, Env, FileRole};
use crate::launcher::{self, Launched};

/// The machine-wide managed settings on Linux (they win over every other source).
const MANAGED_SETTINGS: &str = "/etc/claude-code/managed-settings.json";
/// Drop-in managed settings, merged after [`MANAGED_SETTINGS`].
const MANAGED_DROP_INS: &str = "/etc/claude-code/managed-settings.d";

/// The platform packages that may hold the native binary on this machine, preferred first.
fn platform_packages() -> &'static [&'static str] {
    match (std::env::consts::OS, std::env::consts::ARCH) {
        ("linux", "x86_64") => &[
            "@anthropic-ai/claude-code-linux-x64",
            "@anthropic-ai/claude-code-linux-x64-musl",
        ],
        ("linux", "aarch64") => &[
            "@anthropic-ai/claude-code-linux-arm64",
            "@anthropic-ai/claude-code-linux-arm64-musl",
        ],
        ("macos", "x86_64") => &["@anthropic-ai/claude-code-darwin-x64"],
        ("macos", "aarch64") => &["@anthropic-ai/claude-code-darwin-arm64"],
        _ => &[],
    }
}

/// The native binary a not-yet-installed `bin/claude.exe` stub stands for.
fn platform_binary(stub: &Path) -> Option<PathBuf> {
    let package = stub.parent()?.parent()?;
    platform_packages()
        .iter()
        .find_map(|p| launcher::node_package(package, p))
        .and_then(|p| p.join("claude").canonicalize().ok())
}

/// `sandbox.<key>` of the managed settings, if set.
fn managed_path(settings: &serde_json::Value, key: &str) -> Option<PathBuf> {
    settings["sandbox"][key].as_str().map(PathBuf::from)
}

/// The files behind a launch of `program` (see [`crate::adapter::Adapter::enforcing_files`]).
pub fn files(program: &Path, env: &Env) -> Vec<EnforcingFile> {
    let file = |role, path: PathBuf| EnforcingFile { role, path };
    let mut out: Vec<EnforcingFile> = Launched::follow(program, env, platform_binary)
        .files()
        .collect();
    let managed: serde_json::Value = std::fs::read(MANAGED_SETTINGS)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    for (name, key) in [("bwrap", "bwrapPath"), ("socat", "socatPath")] {
        if let Some(p) =
            managed_path(&managed, key).or_else(|| crate::program::find_on_path(name, env))
        {
            out.push(file(FileRole::SandboxHelper, p));
        }
    }
    let var = |k: &str| {
        env.get(std::ffi::OsStr::new(k))
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(dir) = var("CLAUDE_CONFIG_DIR").or_else(|| var("HOME").map(|h| h.join(".claude"))) {
        out.push(file(FileRole::Config, dir.join("settings.json")));
    }
    out.push(file(FileRole::Config, PathBuf::from(MANAGED_SETTINGS)));
    let mut drop_ins: Vec<PathBuf> = std::fs::read_dir(MANAGED_DROP_INS)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    drop_ins.sort();
    out.extend(drop_ins.into_iter().map(|p| file(FileRole::Config, p)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    use crate::launcher::test_support::{exe, of};

    #[test]
    fn the_native_binary_sandbox_helpers_and_user_settings_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let nm = root.join("node_modules");
        let exe_path = nm.join("@anthropic-ai/claude-code/bin/claude.exe");
        exe(&exe_path, b"\x7fELF");
        let link = nm.join(".bin/claude");
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink("../@anthropic-ai/claude-code/bin/claude.exe", &link).unwrap();
        let bin = root.join("bin");
        exe(&bin.join("bwrap"), b"\x7fELF");
        exe(&bin.join("socat"), b"\x7fELF");
        let env = Env::from([
            (
                OsString::from("PATH"),
                OsString::from(format!("relative:{}", bin.display())),
            ),
            (OsString::from("HOME"), OsString::from(root.join("home"))),
        ]);
        let files = files(&link, &env);
        assert_eq!(
            of(&files, FileRole::NativeCli),
            std::slice::from_ref(&exe_path)
        );
        assert!(of(&files, FileRole::Interpreter).is_empty());
        assert_eq!(
            of(&files, FileRole::SandboxHelper),
            [bin.join("bwrap"), bin.join("socat")]
        );
        assert!(of(&files, FileRole::Config).contains(&root.join("home/.claude/settings.json")));

        // Before the postinstall step, `claude.exe` is a stub: the platform package's binary
        // is what runs.
        let Some(package) = platform_packages().first() else {
            return;
        };
        exe(&exe_path, b"#!/bin/sh\necho stub\n");
        let native = nm.join(package).join("claude");
        exe(&native, b"\x7fELF");
        exe(&nm.join(package).join("package.json"), b"{}");
        assert_eq!(
            of(&super::files(&link, &env), FileRole::NativeCli),
            [native]
        );
    }
}

//! What decides a Codex launch's sandbox, for the read-only check's record: the native binary
//! the npm shim starts (`codex.js` → `vendor/<triple>/bin/codex`, found the way the shim finds
//! it), `node` for the shim, the `bwrap` it will run (the first on `PATH`, else the one bundled
//! in `codex-resources/`), and the configuration files Codex or this adapter read at launch.

use std::path::{Path, PathBuf};

use super::config;
use crate::adapter::{EnforcingFile, Env, FileRole};
use crate::launcher::{self, Launched};

/// Configuration Codex 0.171.0 reads besides the user's `config.toml` (system layer,
/// administrator requirements and managed configuration).
const SYSTEM_CONFIG: &[&str] = &[
    "/etc/codex/config.toml",
    "/etc/codex/requirements.toml",
    "/etc/codex/managed_config.toml",
];

/// The target triple and platform package `codex.js` picks on this machine.
fn target() -> Option<(&'static str, &'static str)> {
    Some(match (std::env::consts::OS, std::env::consts::ARCH) {
        ("linux", "x86_64") => ("x86_64-unknown-linux-musl", "@openai/codex-linux-x64"),
        ("linux", "aarch64") => ("aarch64-unknown-linux-musl", "@openai/codex-linux-arm64"),
        ("macos", "x86_64") => ("x86_64-apple-darwin", "@openai/codex-darwin-x64"),
        ("macos", "aarch64") => ("aarch64-apple-darwin", "@openai/codex-darwin-arm64"),
        _ => return None,
    })
}

/// The native binary `codex.js` starts: `vendor/<triple>/bin/codex` in the platform package
/// Node resolves from the shim's directory, else in the shim's own package.
fn vendor_binary(shim: &Path) -> Option<PathBuf> {
    let (triple, package) = target()?;
    let bin = shim.parent()?;
    let vendor = match launcher::node_package(bin, package) {
        Some(p) => p.join("vendor"),
        None => bin.parent()?.join("vendor"),
    };
    vendor.join(triple).join("bin/codex").canonicalize().ok()
}

/// The files behind a launch of `program` (see [`crate::adapter::Adapter::enforcing_files`]).
pub fn files(program: &Path, env: &Env) -> Vec<EnforcingFile> {
    let file = |role, path: PathBuf| EnforcingFile { role, path };
    let launched = Launched::follow(program, env, vendor_binary);
    // Codex runs the first `bwrap` on PATH, else its bundled one.
    let bundled = launched
        .native
        .as_deref()
        .and_then(|n| Some(n.parent()?.parent()?.join("codex-resources/bwrap")))
        .filter(|b| b.is_file());
    let mut out: Vec<EnforcingFile> = launched.files().collect();
    if let Some(b) = crate::program::find_on_path("bwrap", env).or(bundled) {
        out.push(file(FileRole::SandboxHelper, b));
    }
    if let Ok(home) = config::codex_home(env) {
        out.push(file(FileRole::Config, home.join("config.toml")));
        out.push(file(FileRole::Config, home.join("managed_config.toml")));
        if let Some(p) = env
            .get(std::ffi::OsStr::new(config::PROFILE_ENV))
            .and_then(|v| v.to_str())
            .filter(|v| !v.is_empty())
        {
            out.push(file(
                FileRole::Config,
                home.join(format!("{p}.config.toml")),
            ));
        }
    }
    out.extend(
        SYSTEM_CONFIG
            .iter()
            .map(|p| file(FileRole::Config, PathBuf::from(p))),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    use crate::launcher::test_support::{exe, of};

    #[test]
    fn the_npm_shim_is_followed_to_its_vendor_binary_and_bundled_bwrap() {
        let Some((triple, package)) = target() else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let nm = root.join("lib/node_modules");
        let shim = nm.join("@openai/codex/bin/codex.js");
        exe(&shim, b"#!/usr/bin/env node\n");
        let platform = nm.join(package);
        exe(&platform.join("package.json"), b"{}");
        let native = platform.join("vendor").join(triple).join("bin/codex");
        exe(&native, b"\x7fELF");
        let bundled = platform
            .join("vendor")
            .join(triple)
            .join("codex-resources/bwrap");
        exe(&bundled, b"\x7fELF");
        let node = root.join("bin/node");
        exe(&node, b"\x7fELF");
        let link = root.join("bin/codex");
        std::os::unix::fs::symlink(&shim, &link).unwrap();
        let home = root.join("home");
        let env = Env::from([
            (OsString::from("PATH"), OsString::from(root.join("bin"))),
            (OsString::from("CODEX_HOME"), OsString::from(&home)),
            (
                OsString::from(config::PROFILE_ENV),
                OsString::from("review"),
            ),
        ]);

        let files = files(&link, &env);
        assert_eq!(
            of(&files, FileRole::NativeCli),
            std::slice::from_ref(&native)
        );
        assert_eq!(
            of(&files, FileRole::Interpreter),
            [PathBuf::from("/usr/bin/env"), node]
        );
        assert_eq!(of(&files, FileRole::SandboxHelper), [bundled]);
        let config = of(&files, FileRole::Config);
        assert!(config.contains(&home.join("config.toml")), "{config:?}");
        assert!(
            config.contains(&home.join("review.config.toml")),
            "{config:?}"
        );

        // A bwrap on PATH (absolute entries only) wins over the bundled one.
        let system = root.join("sbin/bwrap");
        exe(&system, b"\x7fELF");
        let planted = root.join("rel/bwrap");
        exe(&planted, b"#!/bin/sh\n");
        let mut env = env.clone();
        env.insert(
            "PATH".into(),
            format!(
                "rel:{}:{}",
                root.join("bin").display(),
                root.join("sbin").display()
            )
            .into(),
        );
        assert_eq!(
            of(&super::files(&link, &env), FileRole::SandboxHelper),
            [system]
        );

        // The native binary run directly is its own native CLI, with no interpreter.
        let files = super::files(&native, &env);
        assert_eq!(of(&files, FileRole::NativeCli), [native]);
        assert!(of(&files, FileRole::Interpreter).is_empty());
    }
}

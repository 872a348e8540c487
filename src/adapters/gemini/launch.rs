//! The exact `gemini` command line, and the wall around it:
//!
//! ```text
//! gemini --output-format stream-json --skip-trust --approval-mode default
//!        --allowed-mcp-server-names agent-dispatch-none --policy <private>/policy.toml
//!        [--model M] --prompt=<prompt>
//! ```
//!
//! - `--skip-trust`: trust the workspace for this run only (headless mode refuses an untrusted
//!   one, rc 55); nothing is written to the user's trusted-folders list;
//! - `--approval-mode default` with the `--policy` of [`super::home`]: the shell allowed, every
//!   writer, web and agent tool denied (not yolo, which offers them all);
//! - `--allowed-mcp-server-names` naming no real server: no MCP server starts, whatever a
//!   settings file declares;
//! - `--prompt=<prompt>` in one argument (a prompt starting with `-` stays a prompt); a prompt
//!   longer than one argv string may be goes on stdin, written then closed (`-p` is appended to
//!   stdin), otherwise stdin is null (an open pipe holds the run).
//!
//! The wall ([`wall_spec`]): read and execute the system directories, the CLI's installation and
//! Node's, and the repository; write only the private directory and a few device nodes.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::adapter::{Env, LaunchContext};
use crate::contract::{Failure, FailureKind};
use crate::git::GitLayout;
use crate::launch::{Launch, MAX_PROMPT_ARG_BYTES, StdinPlan};
use crate::wall::{DEVICE_RW, SYSTEM_READ, Wall, WallSpec};

use super::{env, home};

/// The flags every launch carries, before `--policy`.
pub const FIXED_FLAGS: &[&str] = &[
    "--output-format",
    "stream-json",
    "--skip-trust",
    "--approval-mode",
    "default",
    "--allowed-mcp-server-names",
    "agent-dispatch-none",
];

/// Every flag name the adapter may pass (checked against the installed `gemini --help`).
pub const ALL_FLAG_NAMES: &[&str] = &[
    "--output-format",
    "--skip-trust",
    "--approval-mode",
    "--allowed-mcp-server-names",
    "--policy",
    "--model",
    "--prompt",
];

/// The directory a program's files live in: its nearest `node_modules` ancestor (an npm
/// package's dependencies are hoisted there), else its own directory.
pub fn installation_dir(program: &Path) -> Option<PathBuf> {
    let canonical = program.canonicalize().ok()?;
    canonical
        .ancestors()
        .find(|a| a.file_name().is_some_and(|n| n == "node_modules"))
        .or_else(|| canonical.parent())
        .map(Path::to_path_buf)
}

/// Node's installation: the prefix of the `node` the CLI's `#!/usr/bin/env node` finds.
pub fn node_dir(parent: &Env) -> Option<PathBuf> {
    let node = crate::program::find_on_path("node", parent)?
        .canonicalize()
        .ok()?;
    let bin = node.parent()?;
    Some(if bin.file_name().is_some_and(|n| n == "bin") {
        bin.parent().unwrap_or(bin).to_path_buf()
    } else {
        bin.to_path_buf()
    })
}

/// The wall for one launch.
pub fn wall_spec(ctx: &LaunchContext<'_>, private: &Path) -> WallSpec {
    let mut spec = WallSpec::new();
    for p in SYSTEM_READ {
        spec = spec.read(*p);
    }
    for p in installation_dir(ctx.program)
        .into_iter()
        .chain(node_dir(ctx.parent_env))
    {
        spec = spec.read(p);
    }
    spec = spec.read(ctx.cwd);
    if let Some(git) = GitLayout::discover(ctx.cwd) {
        spec = spec
            .read(&git.work_tree)
            .read(&git.git_dir)
            .read(&git.common_dir);
        if let Some(main) = git.main_work_tree() {
            spec = spec.read(main);
        }
    }
    // A service-account key the CLI itself authenticates with (Vertex AI).
    if ctx.endpoint.is_none()
        && let Some(creds) = ctx
            .parent_env
            .get(std::ffi::OsStr::new("GOOGLE_APPLICATION_CREDENTIALS"))
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    {
        spec = spec.read(creds);
    }
    for p in DEVICE_RW {
        spec = spec.write(*p);
    }
    spec.write(private)
}

fn io_failure(e: std::io::Error) -> Failure {
    Failure::new(
        FailureKind::SpawnFailed,
        format!("could not prepare Gemini CLI's private home: {e}"),
    )
}

/// Where private directories are made: the dispatcher's cache directory (`gemini/`), never
/// the shared temp dir — Gemini CLI ignores a system settings file with a group- or
/// world-writable ancestor such as `/tmp`.
pub fn private_parent(parent: &Env) -> Option<PathBuf> {
    crate::readonly::record::cache_dir(parent)
        .filter(|d| d.is_absolute())
        .map(|d| d.join("gemini"))
}

pub fn build(ctx: &LaunchContext<'_>) -> Result<Launch, Failure> {
    let mut builder = tempfile::Builder::new();
    builder.prefix("dispatch-");
    let private = match private_parent(ctx.parent_env) {
        Some(dir) => {
            std::fs::create_dir_all(&dir).map_err(io_failure)?;
            builder.tempdir_in(dir)
        }
        None => builder.tempdir(),
    }
    .map_err(io_failure)?;
    let root = private.path().canonicalize().map_err(io_failure)?;
    let layout =
        home::populate(&root, ctx.parent_env, ctx.endpoint.is_some()).map_err(io_failure)?;
    let mut args: Vec<OsString> = FIXED_FLAGS.iter().map(OsString::from).collect();
    args.push("--policy".into());
    args.push(layout.policy().into());
    if let Some(m) = ctx.model {
        args.push("--model".into());
        args.push(m.into());
    }
    let stdin = if ctx.prompt.len() <= MAX_PROMPT_ARG_BYTES {
        let mut p = OsString::from("--prompt=");
        p.push(ctx.prompt);
        args.push(p);
        StdinPlan::Null
    } else {
        args.push("--prompt=".into());
        StdinPlan::Bytes(ctx.prompt.as_bytes().to_vec())
    };
    let spec = wall_spec(ctx, &root);
    Ok(Launch {
        program: ctx.program.to_path_buf(),
        args,
        cwd: ctx.cwd.to_path_buf(),
        env: env::child_env(ctx.parent_env, ctx.endpoint, &layout, &spec),
        stdin,
        wall: Some(Wall {
            spec,
            private_dir: Some(Arc::new(private)),
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wall_reads_the_repository_and_writes_only_the_private_dir() {
        let repo = tempfile::tempdir().unwrap();
        let root = repo.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        let home = tempfile::tempdir().unwrap();
        let parent = crate::env::from_pairs(&[
            ("HOME", home.path().to_str().unwrap()),
            ("PATH", "/usr/bin:/bin"),
        ]);
        let program = Path::new("/bin/sh");
        let cwd = root.join("sub");
        let ctx = LaunchContext {
            program,
            prompt: "p",
            model: None,
            effort: None,
            cwd: &cwd,
            parent_env: &parent,
            endpoint: None,
        };
        let spec = wall_spec(&ctx, Path::new("/tmp/private-x"));
        assert!(spec.read.contains(&cwd));
        assert!(spec.read.contains(&root), "the top of the working tree");
        assert!(spec.read.contains(&root.join(".git")));
        assert!(
            !spec
                .read
                .iter()
                .any(|p| home.path().starts_with(p) && p != Path::new("/"))
        );
        assert!(spec.write.contains(&PathBuf::from("/tmp/private-x")));
        assert!(
            spec.write
                .iter()
                .all(|p| p.starts_with("/dev/") || p == Path::new("/tmp/private-x"))
        );
    }

    #[test]
    fn a_long_prompt_goes_on_stdin_and_a_dash_prompt_stays_a_prompt() {
        let parent = crate::env::from_pairs(&[("PATH", "/usr/bin:/bin")]);
        let cwd = std::env::temp_dir().canonicalize().unwrap();
        let launch = |prompt: &str| {
            build(&LaunchContext {
                program: Path::new("/bin/sh"),
                prompt,
                model: Some("gemini-2.5-flash"),
                effort: None,
                cwd: &cwd,
                parent_env: &parent,
                endpoint: None,
            })
            .unwrap()
        };
        let short = launch("--yolo");
        assert!(short.args.contains(&OsString::from("--prompt=--yolo")));
        assert!(!short.args.contains(&OsString::from("--yolo")));
        assert_eq!(short.stdin, StdinPlan::Null);
        let private = short
            .wall
            .as_ref()
            .unwrap()
            .private_path()
            .unwrap()
            .to_path_buf();
        assert!(private.join("policy.toml").is_file());
        drop(short);
        assert!(!private.exists(), "the private dir goes with the launch");
        let long = launch(&"x".repeat(MAX_PROMPT_ARG_BYTES + 1));
        assert!(long.args.contains(&OsString::from("--prompt=")));
        assert!(matches!(long.stdin, StdinPlan::Bytes(_)));
    }
}

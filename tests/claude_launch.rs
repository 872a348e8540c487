//! The Claude launch line against the installed binary's `--help`, and its shape.

mod claude_common;

use std::ffi::OsString;
use std::path::Path;

use agent_dispatch::adapter::{Adapter, Env, LaunchContext};
use agent_dispatch::adapters::claude::{ClaudeAdapter, EFFORTS, launch};
use agent_dispatch::contract::FailureKind;
use agent_dispatch::launch::{MAX_PROMPT_ARG_BYTES, StdinPlan};
use agent_dispatch::loopback::ModelEndpoint;
use agent_dispatch::supervise::Supervisor;

use claude_common::{claude_bin, path_without};

fn help() -> String {
    let out = std::process::Command::new(claude_bin())
        .arg("--help")
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", claude_common::cache_dir())
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

fn ctx<'a>(cwd: &'a Path, env: &'a Env, prompt: &'a str) -> LaunchContext<'a> {
    LaunchContext {
        program: Path::new("/opt/claude"),
        prompt,
        model: Some("claude-sonnet-4-5"),
        effort: Some("high"),
        cwd,
        parent_env: env,
        endpoint: None,
    }
}

fn env(pairs: &[(&str, &str)]) -> Env {
    pairs
        .iter()
        .map(|(k, v)| (OsString::from(k), OsString::from(v)))
        .collect()
}

#[test]
fn every_flag_the_adapter_passes_exists_in_the_installed_help() {
    let help = help();
    let flag_names: Vec<&str> = help
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| w.starts_with('-'))
        .collect();
    for flag in launch::ALL_FLAG_NAMES {
        assert!(flag_names.contains(flag), "{flag} not in claude --help");
    }
    // Every flag actually emitted is one of them (or its short form).
    let dir = tempfile::tempdir().unwrap();
    let e = env(&[("PATH", "/usr/bin"), ("HOME", "/home/u")]);
    let l = ClaudeAdapter.launch(&ctx(dir.path(), &e, "hello")).unwrap();
    for a in l.display_args() {
        if a == "--" {
            break;
        }
        if a.starts_with('-') {
            assert!(flag_names.contains(&a.as_str()), "{a} not in claude --help");
        }
    }
    // The effort levels are the ones the help lists.
    assert!(
        help.contains(&format!("({})", EFFORTS.join(", "))),
        "effort list changed"
    );
}

#[test]
fn launch_shape() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    let e = env(&[
        ("PATH", "/usr/bin"),
        ("HOME", "/home/u"),
        ("ANTHROPIC_API_KEY", "k"),
    ]);
    let l = ClaudeAdapter.launch(&ctx(&cwd, &e, "the prompt")).unwrap();
    let args = l.display_args();
    let n = launch::FIXED_FLAGS.len();
    assert_eq!(args[..n], *launch::FIXED_FLAGS);
    assert_eq!(args[n], "--settings");
    let settings: serde_json::Value = serde_json::from_str(&args[n + 1]).unwrap();
    assert_eq!(
        settings["sandbox"]["filesystem"]["denyWrite"],
        serde_json::json!([format!("/{}", cwd.display())])
    );
    assert_eq!(
        args[n + 2..],
        [
            "--model",
            "claude-sonnet-4-5",
            "--effort",
            "high",
            "--",
            "the prompt"
        ]
    );
    assert_eq!(l.stdin, StdinPlan::Null);
    assert_eq!(l.cwd, cwd);
    assert!(
        !l.env.iter().any(|(k, _)| k == "ANTHROPIC_API_KEY"),
        "API key passed"
    );
}

#[test]
fn a_prompt_too_long_for_argv_goes_through_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let e = env(&[("PATH", "/usr/bin")]);
    let prompt = "x".repeat(MAX_PROMPT_ARG_BYTES + 1);
    let l = ClaudeAdapter.launch(&ctx(dir.path(), &e, &prompt)).unwrap();
    assert_eq!(l.stdin, StdinPlan::Bytes(prompt.into_bytes()));
    assert!(!l.display_args().iter().any(|a| a == "--"));
    assert_eq!(l.display_args().last().unwrap(), "high");
}

#[test]
fn repo_root_and_linked_worktree_git_dirs_are_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let git = |args: &[&str], cwd: &Path| {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(cwd)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_SYSTEM", "/dev/null")
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "git {args:?}");
    };
    let main = root.join("main");
    std::fs::create_dir_all(main.join("sub")).unwrap();
    git(&["init", "-q", "-b", "main"], &main);
    std::fs::write(main.join("sub/f"), "x").unwrap();
    git(&["add", "-A"], &main);
    git(
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "i",
        ],
        &main,
    );
    git(
        &["worktree", "add", "-q", "../linked", "-b", "other"],
        &main,
    );
    let e = env(&[("PATH", "/usr/bin")]);
    let deny = |cwd: &Path| {
        let l = ClaudeAdapter.launch(&ctx(cwd, &e, "p")).unwrap();
        let i = l
            .display_args()
            .iter()
            .position(|a| a == "--settings")
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(&l.display_args()[i + 1]).unwrap();
        v["sandbox"]["filesystem"]["denyWrite"].clone()
    };
    let p = |p: &Path| format!("/{}", p.display());
    assert_eq!(
        deny(&main.join("sub")),
        serde_json::json!([p(&main.join("sub")), p(&main)])
    );
    let linked = root.join("linked");
    assert_eq!(
        deny(&linked),
        serde_json::json!([
            p(&linked),
            p(&main.join(".git/worktrees/linked")),
            p(&main.join(".git"))
        ])
    );
}

#[tokio::test]
async fn preflight_refuses_without_bwrap_and_socat() {
    let dir = tempfile::tempdir().unwrap();
    let farm = tempfile::tempdir().unwrap();
    path_without(farm.path(), &["socat"]);
    let e = env(&[("PATH", farm.path().to_str().unwrap())]);
    let f = ClaudeAdapter
        .preflight(&ctx(dir.path(), &e, "p"), &Supervisor::new())
        .await
        .unwrap_err();
    assert_eq!(f.kind, FailureKind::ReadOnlyUnavailable);
    assert!(f.message.contains("socat not found"), "{f}");
    assert!(!f.message.contains("bwrap"), "{f}");
    assert!(
        f.message.contains("apt-get install bubblewrap socat"),
        "{f}"
    );

    // With both present: no refusal; a notice about the API key that is not passed on.
    let e = env(&[("PATH", "/usr/bin:/bin"), ("ANTHROPIC_API_KEY", "k")]);
    let notices = ClaudeAdapter
        .preflight(&ctx(dir.path(), &e, "p"), &Supervisor::new())
        .await
        .unwrap();
    assert_eq!(notices.len(), 1, "{notices:?}");
    // ... but not when a loopback endpoint replaces authentication.
    let ep = ModelEndpoint {
        base_url: "http://127.0.0.1:1".into(),
        api_key: "x".into(),
    };
    let mut c = ctx(dir.path(), &e, "p");
    c.endpoint = Some(&ep);
    assert!(
        ClaudeAdapter
            .preflight(&c, &Supervisor::new())
            .await
            .unwrap()
            .is_empty()
    );
}

#[test]
fn capabilities() {
    let c = ClaudeAdapter.capabilities();
    assert!(c.read_only_enforced && c.reports_model);
    assert!(!c.model_catalogue && !c.reports_effort);
    assert_eq!(c.efforts, EFFORTS);
    assert!(!ClaudeAdapter.sandbox_stubs().is_empty());
}

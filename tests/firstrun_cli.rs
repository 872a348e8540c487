//! The first-run stumbles of the binary, each as a user meets it: effort levels checked for every
//! agent that lists them, the `agents` table, `check` with a CLI missing, early refusals, usage
//! that was not reported, and a run with no credentials at all (the real pinned CLIs, no network:
//! it must fail at once with the login command instead of retrying).

mod support;

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::*;

const SKIP: (&str, &str) = ("AGENT_DISPATCH_SKIP_CHECK", "yes-skip-the-read-only-check");

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_agent-dispatch"));
    c.env_clear().env("LANG", "C.UTF-8");
    c
}

/// The system PATH with no agent CLI on it.
fn bare_path() -> String {
    let p = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".to_owned();
    for cli in ["codex", "claude"] {
        assert!(
            which::which_in(cli, Some(&p), "/").is_err(),
            "{cli} is on the system PATH; these tests need a PATH without it"
        );
    }
    p
}

fn pinned_bin_dir() -> String {
    repo_root()
        .join(".tools/node_modules/.bin")
        .display()
        .to_string()
}

fn result_line(out: &Output) -> Value {
    let text = String::from_utf8_lossy(&out.stdout);
    let last = text.lines().last().expect("a result line");
    let v: Value = serde_json::from_str(last).unwrap();
    assert_eq!(v["type"], "result", "{text}");
    v
}

#[test]
fn an_unknown_effort_is_refused_for_every_agent_that_lists_its_efforts() {
    let dir = run_dir("effort");
    let out = bin()
        .env("PATH", bare_path())
        .args(["run", "--json", "--agent", "claude", "--effort", "bogus"])
        .arg("--cwd")
        .arg(dir.path())
        .args(["--", "hi"])
        .output()
        .unwrap();
    let r = result_line(&out);
    assert_eq!(r["failure"]["kind"], "invalid-request", "{r}");
    let msg = r["failure"]["message"].as_str().unwrap();
    assert!(
        msg.contains("bogus") && msg.contains("low, medium, high, xhigh, max"),
        "{msg}"
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("\"started\""), "nothing started: {text}");
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn early_refusals_report_not_reported_not_pending() {
    let dir = run_dir("early");
    let out = bin()
        .env("PATH", bare_path())
        .args(["run", "--json", "--agent", "codex", "--cwd"])
        .arg(dir.path())
        .args(["--", "hi"])
        .output()
        .unwrap();
    let r = result_line(&out);
    assert_eq!(r["failure"]["kind"], "not-installed", "{r}");
    assert_eq!(r["identity"]["confirmed"]["model"]["state"], "not-reported");
    assert_eq!(
        r["identity"]["confirmed"]["effort"]["state"],
        "not-reported"
    );
    assert!(r["usage"].is_null());
}

#[test]
fn a_run_that_reports_only_zeros_carries_no_usage() {
    let dir = run_dir("zero-usage");
    let home = support::homes::fresh_home("zero-usage-codex-home");
    let out = bin()
        .env(
            "PATH",
            format!("{}:{}", fake_cli_dir().display(), bare_path()),
        )
        .env("CODEX_HOME", home.path())
        .env(SKIP.0, SKIP.1)
        .args(["run", "--json", "--agent", "codex", "--cwd"])
        .arg(dir.path())
        .args(["--", "SCENARIO:zero-usage"])
        .output()
        .unwrap();
    let r = result_line(&out);
    assert_eq!(r["ok"], true, "{r}");
    assert!(r["usage"].is_null(), "{r}");
}

#[test]
fn agents_has_a_header_and_claims_enforcement_only_for_installed_clis() {
    let out = bin()
        .env(
            "PATH",
            format!("{}:{}", fake_cli_dir().display(), bare_path()),
        )
        .arg("agents")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    assert!(
        header.starts_with("AGENT") && header.contains("READ-ONLY") && header.contains("CLI"),
        "{text}"
    );
    let codex = text.lines().find(|l| l.starts_with("codex")).unwrap();
    let claude = text.lines().find(|l| l.starts_with("claude")).unwrap();
    assert!(codex.contains("enforced"), "{codex}");
    assert!(claude.contains("not installed"), "{claude}");
    assert!(!claude.contains("enforced"), "{claude}");
}

#[test]
fn check_with_a_cli_missing_prints_the_install_command_once() {
    let out = bin()
        .env("PATH", bare_path())
        .env("HOME", support::homes::fresh_home("check-missing").path())
        .args(["check", "codex"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        text.matches("npm install -g @openai/codex@0.171.0").count(),
        1,
        "{text}"
    );
}

/// A run of the real pinned CLI with nothing to authenticate with: a fresh home, no login, no
/// token; the check bypassed (it would pass: it brings its own throw-away credential).
fn no_credentials_run(agent: &str, extra: &[(&str, &str)]) -> (Value, Duration) {
    let home = support::homes::fresh_home(&format!("nocreds-{agent}"));
    let dir = run_dir("nocreds");
    let mut c = bin();
    c.env("PATH", format!("{}:{}", pinned_bin_dir(), bare_path()))
        .env("HOME", home.path())
        .env("CODEX_HOME", home.path().join(".codex"))
        .env("CLAUDE_CONFIG_DIR", home.path().join(".claude"))
        .env(SKIP.0, SKIP.1)
        .args(["run", "--json", "--agent", agent, "--cwd"])
        .arg(dir.path())
        .args(["--", "hi"]);
    std::fs::create_dir_all(home.path().join(".codex")).unwrap();
    for (k, v) in extra {
        c.env(k, v);
    }
    let started = Instant::now();
    let out = c.output().unwrap();
    (result_line(&out), started.elapsed())
}

#[test]
fn codex_with_no_credentials_fails_at_once_with_the_login_command() {
    let (r, took) = no_credentials_run("codex", &[("OPENAI_API_KEY", "sk-test-not-passed")]);
    assert_eq!(r["failure"]["kind"], "not-logged-in", "{r}");
    let msg = r["failure"]["message"].as_str().unwrap();
    assert!(msg.contains("codex login"), "{msg}");
    assert!(msg.contains("OPENAI_API_KEY is set"), "{msg}");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert!(r["usage"].is_null());
}

#[test]
fn claude_with_only_anthropic_api_key_fails_at_once_and_says_the_key_was_dropped() {
    let (r, took) = no_credentials_run("claude", &[("ANTHROPIC_API_KEY", "sk-ant-not-passed")]);
    assert_eq!(r["failure"]["kind"], "not-logged-in", "{r}");
    let msg = r["failure"]["message"].as_str().unwrap();
    assert!(msg.contains("claude auth login"), "{msg}");
    assert!(msg.contains("ANTHROPIC_API_KEY is set"), "{msg}");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert!(r["usage"].is_null());
}

/// The credentials preflight's commands exist in the pinned CLIs, with the flags it passes.
#[test]
fn the_credentials_commands_are_in_the_installed_clis_help() {
    let help = |cli: &str, args: &[&str]| {
        let out = Command::new(repo_root().join(".tools/node_modules/.bin").join(cli))
            .args(args)
            .arg("--help")
            .output()
            .unwrap();
        assert!(out.status.success(), "{cli} {args:?} --help");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(help("codex", &["login"]).contains("status  Show login status"));
    let codex_login = help("codex", &["login", "status"]);
    for flag in ["--config", "--disable"] {
        assert!(codex_login.contains(flag), "codex login status {flag}");
    }
    assert!(help("claude", &["auth"]).contains("status [options]"));
    assert!(help("claude", &["auth", "status"]).contains("--json"));
}

/// `check` with Codex's home under the temp dir: the fix names the exact path, once.
#[test]
fn check_names_the_codex_home_under_the_temp_dir_exactly() {
    let root = support::homes::fresh_home("check-tmp-home");
    // A temp dir of our own (Codex reads TMPDIR), with the home inside it.
    let tmp = root.path().join("tmp");
    let codex_home = tmp.join("codex-home");
    std::fs::create_dir_all(&codex_home).unwrap();
    let out = bin()
        .env("PATH", format!("{}:{}", pinned_bin_dir(), bare_path()))
        .env("HOME", root.path())
        .env("TMPDIR", &tmp)
        .env("CODEX_HOME", &codex_home)
        .env("AGENT_DISPATCH_CACHE_DIR", root.path().join("records"))
        .args(["check", "codex"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let fixes: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_start().starts_with("fix"))
        .collect();
    let named = format!("CODEX_HOME ({})", codex_home.display());
    assert_eq!(
        fixes.iter().filter(|f| f.contains(&named)).count(),
        1,
        "the fix names {named} once:\n{text}"
    );
    assert_eq!(
        fixes.len(),
        fixes
            .iter()
            .collect::<std::collections::BTreeSet<_>>()
            .len()
    );
}

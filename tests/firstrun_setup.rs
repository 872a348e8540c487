//! The README's first command as a new user runs it: `bash scripts/setup.sh` with a scratch
//! `HOME`, no agent CLI on `PATH`, no API key — and no network at all (a fresh network namespace
//! with only loopback). It must install the binary and the Pi package, put the pinned CLIs to
//! use, prove read-only with `check`, and end with the demo: a real dispatch through the built-in
//! fake model in which the agent reads the diff, tries to write, is refused, and answers.
//!
//! The binary is the one this test run built (`AGENT_DISPATCH_PREBUILT`): `cargo install` is
//! cargo's business, and building it again here would take minutes.

mod support;

use std::process::Command;
use std::time::Instant;

use support::*;

#[test]
fn setup_installs_everything_and_demonstrates_a_dispatch_with_no_keys_and_no_network() {
    let home = homes::fresh_home("firstrun-home");
    let path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    for cli in ["codex", "claude", "pi"] {
        assert!(
            which::which_in(cli, Some(path), "/").is_err(),
            "{cli} is on the system PATH; this test needs a machine without it"
        );
    }
    let setup = repo_root().join("scripts/setup.sh");
    // No network: a new network namespace with only loopback up (the fake model is on 127.0.0.1).
    let script = format!("ip link set lo up && exec bash '{}'", setup.display());
    let started = Instant::now();
    let out = Command::new("unshare")
        .args(["--net", "sh", "-c", &script])
        .env_clear()
        .env("HOME", home.path())
        .env("PATH", path)
        .env("LANG", "C.UTF-8")
        .env(
            "AGENT_DISPATCH_PREBUILT",
            env!("CARGO_BIN_EXE_agent-dispatch"),
        )
        .output()
        .expect("unshare (util-linux) runs the setup without network");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!(
        "setup took {:.1} s\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}",
        started.elapsed().as_secs_f64()
    );
    assert!(out.status.success(), "setup failed");

    // Installed: the binary, the Pi package.
    assert!(home.path().join(".cargo/bin/agent-dispatch").is_file());
    let pi_settings =
        std::fs::read_to_string(home.path().join(".pi/agent/settings.json")).unwrap_or_default();
    assert!(
        pi_settings.contains(repo_root().to_str().unwrap()),
        "pi install registered the repo: {pi_settings}"
    );

    // The pinned CLIs were used, and check proved read-only for both.
    assert!(stdout.contains(".tools/bin/codex"), "pinned codex used");
    assert!(stdout.contains("PASS  codex read-only check"));
    assert!(stdout.contains("PASS  claude read-only check"));

    // The demo: the diff was read, a write was refused by the sandbox, the agent answered.
    let demo = &stdout[stdout.find("== demo").expect("the demo ran")..];
    assert!(demo.contains("$ "), "commands shown:\n{demo}");
    assert!(demo.contains("refused by the sandbox"), "{demo}");
    assert!(
        demo.contains("UNCOMMITTED_CHANGE_MARKER"),
        "the diff was read:\n{demo}"
    );
    assert!(demo.contains("answer:"), "{demo}");
    assert_eq!(
        demo.matches("demo passed").count(),
        2,
        "both agents:\n{demo}"
    );

    // What to do for real use.
    let next = &stdout[stdout.find("== next steps").expect("next steps")..];
    for needle in [
        "codex login",
        "claude auth login",
        "deliberately NOT passed",
        "ANTHROPIC_API_KEY",
        ".tools/bin",
    ] {
        assert!(next.contains(needle), "{needle:?} missing:\n{next}");
    }
}

//! `agent-dispatch run` as a person sees it on a real terminal (tmux): a live line with what the
//! agent is doing and the elapsed time while it works, then the commands it ran, the answer and
//! the tokens — and no JSON. With `--json` the same terminal gets today's JSONL.
//!
//! The agent is the fake codex CLI (a real one cannot be held mid-command on demand): its `gated`
//! scenario shows a command running and waits on a FIFO until the test has seen the live view.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use support::*;

const SKIP: &str = "AGENT_DISPATCH_SKIP_CHECK=yes-skip-the-read-only-check";

struct Tmux {
    socket: String,
}

impl Tmux {
    /// A private tmux server running `cmd` in a 120×40 window.
    fn start(cmd: &str) -> Self {
        let socket = unique_tag("firstrun-tty");
        let ok = Command::new("tmux")
            .args(["-L", &socket, "new-session", "-d", "-x", "120", "-y", "40"])
            .arg(cmd)
            .status()
            .expect("tmux is installed (scripts/install-tools.sh)");
        assert!(ok.success());
        Self { socket }
    }

    fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p", "-t", "0"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The screen, once it shows `what` (the terminal is the only event source here).
    fn wait_for(&self, what: &str, limit: Duration) -> String {
        let until = Instant::now() + limit;
        loop {
            let s = self.screen();
            if s.contains(what) {
                return s;
            }
            assert!(
                Instant::now() < until,
                "never showed {what:?}; screen:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
    }
}

fn shell_command(dir: &Path, extra: &str, task: &str) -> String {
    format!(
        "env PATH='{fake}':\"$PATH\" {SKIP} '{bin}' run --agent codex --cwd '{dir}' {extra} -- '{task}'; echo EXIT=$?; sleep 600",
        fake = fake_cli_dir().display(),
        bin = env!("CARGO_BIN_EXE_agent-dispatch"),
        dir = dir.display(),
    )
}

#[test]
fn run_on_a_terminal_shows_live_progress_then_the_answer() {
    let dir = run_dir("tty");
    let gate = dir.path().join("gate.fifo");
    let made = Command::new("mkfifo").arg(&gate).status().unwrap();
    assert!(made.success());
    let task = format!("SCENARIO:gated GATE:{}", gate.display());
    let tmux = Tmux::start(&shell_command(dir.path(), "", &task));

    // While the agent works: the header, and one live line with the elapsed time and the command.
    let live = tmux.wait_for("running: /bin/bash -lc 'git diff'", Duration::from_secs(30));
    eprintln!("--- live ---\n{live}");
    assert!(live.contains("dispatch → codex"), "{live}");
    let status = live
        .lines()
        .find(|l| l.contains("running: "))
        .unwrap()
        .to_owned();
    assert!(
        status
            .split_whitespace()
            .any(|w| w.ends_with('s') && w.trim_end_matches('s').parse::<u32>().is_ok()),
        "the live line shows the elapsed time: {status:?}"
    );
    assert!(
        !live.contains("{\"type\""),
        "no JSON on a terminal:\n{live}"
    );

    std::fs::write(&gate, "go\n").unwrap();
    let done = tmux.wait_for("EXIT=", Duration::from_secs(30));
    eprintln!("--- done ---\n{done}");
    assert!(done.contains("EXIT=0"), "{done}");
    // Progress first, then the answer, then what it cost; the live line is gone.
    let cmd = done
        .find("$ /bin/bash -lc 'git diff'")
        .expect("the command ran");
    let answer = done.find("answer:").expect("an answer heading");
    let text = done.find("FAKE_ANSWER: looks fine.").expect("the answer");
    let cost = done.find("done in").expect("a closing line");
    assert!(cmd < answer && answer < text && text < cost, "{done}");
    assert!(done.contains("+a new line"), "the command's output: {done}");
    assert!(done.contains("160 tokens"), "{done}");
    assert!(
        !done.contains("running: "),
        "the live line is cleared:\n{done}"
    );
    assert_eq!(
        done.matches("FAKE_ANSWER").count(),
        1,
        "the answer once:\n{done}"
    );
    assert!(!done.contains("{\"type\""), "{done}");
}

#[test]
fn json_on_a_terminal_keeps_the_protocol() {
    let dir = run_dir("tty-json");
    let tmux = Tmux::start(&shell_command(dir.path(), "--json", "SCENARIO:ok"));
    let done = tmux.wait_for("EXIT=", Duration::from_secs(30));
    assert!(done.contains("EXIT=0"), "{done}");
    assert!(done.contains("{\"type\":\"started\""), "{done}");
    assert!(done.contains("{\"type\":\"result\""), "{done}");
    assert!(!done.contains("answer:"), "{done}");
}

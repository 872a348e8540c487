//! Every flag and feature name the Codex adapter passes exists in the installed, pinned binary
//! (`codex --help`, `codex exec --help`, `codex debug --help`, `codex debug models --help`,
//! `codex doctor --help`, `codex features list`). A CLI upgrade that drops or renames one fails
//! here, loudly, instead of at a user's first dispatch.

mod codex_support;

use std::path::Path;

use agent_dispatch::adapter::{Adapter, Env, LaunchContext};
use agent_dispatch::adapters::codex::CodexAdapter;
use agent_dispatch::adapters::codex::launch::{EXEC_FLAGS, EXEC_OVERRIDES, HELPER_FLAGS};
use agent_dispatch::loopback::ModelEndpoint;

fn codex(args: &[&str]) -> String {
    let out = std::process::Command::new(codex_support::codex())
        .args(args)
        .env_clear()
        .env(
            "PATH",
            format!("{}:/usr/bin:/bin", codex_support::bin_dir().display()),
        )
        .env("HOME", codex_support::cache())
        .env("CODEX_HOME", codex_support::cache().join("flags-home"))
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "codex {args:?} failed: {text}");
    text
}

/// Long and short option names a help text documents.
fn options(help: &str) -> Vec<String> {
    help.split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| w.starts_with('-') && w.len() > 1 && w != &"--")
        .map(|w| {
            w.trim_end_matches(|c: char| !c.is_ascii_alphanumeric())
                .to_owned()
        })
        .collect()
}

/// The adapter's real launch for a typical request (with a loopback endpoint, which adds only
/// `-c` values).
fn sample_launch() -> Vec<String> {
    let mut env = Env::new();
    env.insert("PATH".into(), "/usr/bin".into());
    env.insert(
        "CODEX_HOME".into(),
        codex_support::cache().join("flags-home").into(),
    );
    let ep = ModelEndpoint {
        base_url: "http://127.0.0.1:9/v1".into(),
        api_key: "k".into(),
    };
    let ctx = LaunchContext {
        program: Path::new("codex"),
        prompt: "p",
        model: Some("gpt-5.5"),
        effort: Some("high"),
        cwd: Path::new("/"),
        parent_env: &env,
        endpoint: Some(&ep),
    };
    CodexAdapter.launch(&ctx).unwrap().display_args()
}

#[test]
fn pinned_version() {
    assert_eq!(codex(&["--version"]).trim(), "codex-cli 0.171.0");
}

#[test]
fn every_exec_flag_exists() {
    std::fs::create_dir_all(codex_support::cache().join("flags-home")).unwrap();
    let exec = options(&codex(&["exec", "--help"]));
    assert!(
        !exec.contains(&"--no-such-flag".to_string()),
        "the help parser is not vacuous"
    );
    let args = sample_launch();
    assert_eq!(args[0], "exec");
    // Every option-looking argument of the real launch, up to the prompt separator.
    let end = args.iter().position(|a| a == "--").unwrap_or(args.len());
    for a in &args[1..end] {
        if a.starts_with('-') {
            assert!(exec.contains(a), "`codex exec` has no {a}; it has {exec:?}");
        }
    }
    for needed in [
        "--json",
        "-C",
        "-c",
        "--ignore-user-config",
        "--ignore-rules",
    ] {
        assert!(args.iter().any(|a| a == needed), "launch lacks {needed}");
    }
    for f in EXEC_FLAGS.iter().filter(|f| f.starts_with('-')) {
        assert!(exec.contains(&f.to_string()), "{f}");
    }
    assert!(
        !args.iter().any(|a| a.contains("dangerously")),
        "a bypass flag must never appear: {args:?}"
    );
    // The permission profile carries read-only (`-s` would make codex ignore it), and codex's
    // `--trust` (which persists trust for the project) is never passed.
    for never in [
        "-s",
        "--sandbox",
        "--trust",
        "--dangerously-bypass-hook-trust",
    ] {
        assert!(!args.iter().any(|a| a == never), "{never} in {args:?}");
    }
    assert!(exec.contains(&"--trust".to_string()) && exec.contains(&"--strict-config".to_string()));
    for o in EXEC_OVERRIDES {
        assert!(args.windows(2).any(|w| w[0] == "-c" && w[1] == *o));
    }
}

#[test]
fn helper_commands_and_their_flags_exist() {
    std::fs::create_dir_all(codex_support::cache().join("flags-home")).unwrap();
    let top = codex(&["--help"]);
    for sub in ["exec", "debug", "doctor", "features"] {
        assert!(
            top.lines().any(|l| l.trim_start().starts_with(sub)),
            "`codex {sub}` is gone"
        );
    }
    assert!(codex(&["debug", "--help"]).contains("models"));
    for sub in [vec!["debug", "models", "--help"], vec!["doctor", "--help"]] {
        let opts = options(&codex(&sub));
        for f in HELPER_FLAGS.iter().filter(|f| f.starts_with('-')) {
            assert!(opts.contains(&f.to_string()), "`codex {sub:?}` lacks {f}");
        }
        assert!(opts.contains(&"-c".to_string()), "`codex {sub:?}` lacks -c");
    }
    assert!(options(&codex(&["doctor", "--help"])).contains(&"--json".to_string()));
}

#[test]
fn disabled_features_are_real_feature_names() {
    std::fs::create_dir_all(codex_support::cache().join("flags-home")).unwrap();
    let list = codex(&["features", "list"]);
    let names: Vec<&str> = list
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let disabled: Vec<&str> = EXEC_FLAGS
        .windows(2)
        .chain(HELPER_FLAGS.windows(2))
        .filter(|w| w[0] == "--disable")
        .map(|w| w[1])
        .collect();
    assert!(disabled.contains(&"hooks") && disabled.contains(&"unbounded_connection_retries"));
    for f in disabled {
        assert!(
            names.contains(&f),
            "`codex features list` has no {f}: {list}"
        );
    }
}

/// Every `-c` key of the real launch (the permission profile, the environment excludes, model
/// and provider) is one codex knows: `--strict-config` refuses an unknown one before starting.
#[test]
fn every_config_override_is_a_key_codex_knows() {
    let dir = tempfile::Builder::new()
        .prefix("strict-")
        .tempdir_in(codex_support::cache())
        .unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join(".codex")).unwrap();
    let mut env = Env::new();
    env.insert(
        "PATH".into(),
        format!("{}:/usr/bin:/bin", codex_support::bin_dir().display()).into(),
    );
    env.insert("HOME".into(), home.clone().into());
    env.insert("CODEX_HOME".into(), home.join(".codex").into());
    let ep = ModelEndpoint {
        base_url: format!("http://127.0.0.1:{}/v1", codex_support::closed_port()),
        api_key: "k".into(),
    };
    let cwd = dir.path().canonicalize().unwrap();
    let ctx = LaunchContext {
        program: &codex_support::codex(),
        prompt: "p",
        model: Some("gpt-5.5"),
        effort: Some("high"),
        cwd: &cwd,
        parent_env: &env,
        endpoint: Some(&ep),
    };
    let launch = CodexAdapter.launch(&ctx).unwrap();
    let mut args = launch.args.clone();
    args.insert(1, "--strict-config".into());
    let end = args.iter().position(|a| a == "--").unwrap();
    for o in [
        "model_providers.agent_dispatch_endpoint.request_max_retries=0",
        "model_providers.agent_dispatch_endpoint.stream_max_retries=0",
    ] {
        args.insert(end, o.into());
        args.insert(end, "-c".into());
    }
    let out = std::process::Command::new(&launch.program)
        .args(&args)
        .current_dir(&cwd)
        .env_clear()
        .envs(launch.env.iter().map(|(k, v)| (k, v)))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!text.contains("unknown configuration field"), "{text}");
    // The configuration loaded and a thread started (then the closed port failed the turn).
    assert!(text.contains("\"type\":\"thread.started\""), "{text}");
}

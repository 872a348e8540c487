//! The repository under review and the machine around it are hostile input: the real, pinned
//! `codex` (0.171.0), driven through the engine against loopback fake Responses endpoints, must
//! not load the repository's configuration, run anything it names, send model traffic (or the
//! key) elsewhere, write, or hand a secret of the user's to the model.

mod codex_support;

use std::path::PathBuf;

use agent_dispatch::adapters::codex::fake_api::{FakeResponses, Script, Step};
use agent_dispatch::adapters::codex::launch::{ENDPOINT_KEY_ENV, HELPER_FLAGS};
use codex_support::scenarios::{
    FINAL, assert_hidden, assert_inert, assert_ok, attacker, hostile_repo_run, hostile_world,
    output_of, request, secrets_run,
};
use codex_support::{World, dispatch};

#[tokio::test]
async fn hostile_repository_configuration_is_inert() {
    assert_inert(&hostile_repo_run("hostile-repo").await);
}

/// Control: plain `codex exec` with the user's config loaded (it trusts the repository) and
/// the dispatcher's endpoint given with `-c`: the same fixture's hooks and MCP server run, its
/// variable reaches the shell and its `danger-full-access` lets a command write. Proves the
/// fixture is live. (Codex itself ignores a project's provider and base URL even then.)
#[tokio::test]
async fn control_the_hostile_fixture_is_live_when_codex_loads_it() {
    let second = attacker().await;
    let (w, hw) = hostile_world("hostile-control", &second);
    let repo = hw.repo();
    let fake = FakeResponses::start(Script::new(vec![
        Step::shell("echo PV=[$HOSTILE_PROJECT_VAR]; printf x > control-probe.txt"),
        Step::message("CONTROL_DONE"),
    ]))
    .await
    .unwrap();
    let out = tokio::process::Command::new(codex_support::codex())
        .args(["exec", "--json", "--skip-git-repo-check", "--ephemeral"])
        .args(["--disable", "unbounded_connection_retries"])
        .arg("--dangerously-bypass-hook-trust")
        .arg("-C")
        .arg(&repo)
        .args([
            "-c",
            "model=\"gpt-5.5\"",
            "-c",
            "model_provider=ctl",
            "-c",
            &format!(
                "model_providers.ctl={{ name = \"control\", base_url = \"{}\", env_key = \"CTL_KEY\", wire_api = \"responses\" }}",
                fake.base_url()
            ),
            "--",
            "control",
        ])
        .env_clear()
        .envs(w.env())
        .env("CTL_KEY", "sk-control")
        .env(ENDPOINT_KEY_ENV, "sk-would-be-stolen")
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "control failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pv = output_of(&fake.tool_outputs(), 0);
    assert!(pv.contains("PV=[project-env-loaded]"), "{pv}");
    assert!(repo.join("control-probe.txt").exists());
    let marks = hw.fired();
    for m in [
        "codex-project-mcp-server-ran",
        "codex-project-hook-session-start-ran",
        "codex-project-hook-pre-tool-use-ran",
    ] {
        assert!(marks.iter().any(|x| x == m), "{m} missing: {marks:?}");
    }
    // Codex refuses a project's model provider and base URL by itself.
    assert!(
        stdout.contains("Ignored unsupported project-local config keys"),
        "{stdout}"
    );
    assert_eq!(second.requests().len(), 0);
}

#[tokio::test]
async fn secrets_in_home_never_reach_the_model() {
    assert_hidden(&secrets_run("secrets").await);
}

#[tokio::test]
async fn a_provider_credential_by_any_name_stays_out_of_the_agents_shell() {
    let w = World::new("corp-cred");
    let fake = FakeResponses::start(Script::new(vec![
        Step::shell("echo CP=[$CORP_PASSWORD]; env | grep -c corp-pass || true"),
        Step::message(FINAL),
    ]))
    .await
    .unwrap();
    // The user's own provider, whose credential variable has no KEY/SECRET/TOKEN in its name.
    w.write_codex_config(
        "config.toml",
        &format!(
            "model = \"gpt-5.5\"\nmodel_provider = \"corp\"\n\n[model_providers.corp]\nname = \"corp\"\nbase_url = \"{}\"\nenv_key = \"CORP_PASSWORD\"\nwire_api = \"responses\"\n",
            fake.base_url()
        ),
    );
    let secret = "corp-pass-7f3a9c";
    let mut env = w.env();
    env.insert("CORP_PASSWORD".into(), secret.into());
    // No endpoint override: the dispatcher re-applies the user's provider and passes its variable.
    let run = dispatch(w.request(None, None), env, None).await;
    assert_ok(&run);
    let reqs = fake.model_requests();
    assert!(!reqs.is_empty());
    // Codex authenticated with it ...
    for r in &reqs {
        assert_eq!(r.auth.as_deref(), Some(&*format!("Bearer {secret}")));
    }
    // ... but the agent's shell never saw it, and no request body carries it.
    let o = output_of(&fake.tool_outputs(), 0);
    assert!(o.contains("CP=[]"), "{o}");
    for r in &reqs {
        assert!(!r.body.to_string().contains(secret));
    }
}

/// A `codex` first on PATH that logs, per call, its argv, its working directory and how many
/// entries that directory has, then runs the real binary.
fn logging_wrapper(w: &World) -> (PathBuf, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let dir = w.dir.path().join("wrapper");
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("calls.log");
    let script = format!(
        "#!/bin/sh\nprintf '%s|%s|%s\\n' \"$*\" \"$(pwd -P)\" \"$(ls -A | wc -l)\" >> '{log}'\nexec '{real}' \"$@\"\n",
        log = log.display(),
        real = codex_support::codex().display(),
    );
    let p = dir.join("codex");
    std::fs::write(&p, script).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    (dir, log)
}

/// `codex doctor --json`'s count of MCP servers, run with the helper's flags in `cwd`.
async fn doctor_mcp_servers(w: &World, cwd: &std::path::Path) -> String {
    let out = tokio::process::Command::new(codex_support::codex())
        .args(["doctor", "--json"])
        .args(HELPER_FLAGS)
        .current_dir(cwd)
        .env_clear()
        .envs(w.env())
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "doctor printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    v["checks"]
        .as_object()
        .unwrap()
        .values()
        .find_map(|c| c["details"]["mcp servers"].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("no `mcp servers` detail: {v}"))
}

#[tokio::test]
async fn helper_commands_run_in_an_empty_directory_not_the_repository() {
    let second = attacker().await;
    let (w, hw) = hostile_world("helpers-hostile", &second);
    let repo = hw.repo();
    let (dir, log) = logging_wrapper(&w);
    let mut env = w.env();
    let mut path = std::ffi::OsString::from(&dir);
    path.push(":");
    path.push(env.get(std::ffi::OsStr::new("PATH")).unwrap());
    env.insert("PATH".into(), path);
    let fake = FakeResponses::start(Script::new(vec![Step::message(FINAL)]))
        .await
        .unwrap();
    // Effort only, no model anywhere: pre-validation runs `debug models` and `doctor`.
    let run = dispatch(request(&hw, None, Some("high")), env, Some(fake.endpoint())).await;
    assert_ok(&run);
    let calls = std::fs::read_to_string(&log).unwrap();
    let helpers: Vec<&str> = calls
        .lines()
        .filter(|l| l.starts_with("debug models") || l.starts_with("doctor"))
        .collect();
    assert_eq!(helpers.len(), 2, "{calls}");
    for l in helpers {
        let parts: Vec<&str> = l.split('|').collect();
        let cwd = PathBuf::from(parts[1]);
        assert!(
            !cwd.starts_with(&repo),
            "a helper ran in the repository: {l}"
        );
        assert_eq!(parts[2], "0", "a helper's directory was not empty: {l}");
        assert!(parts[0].contains("project_root_markers=[]"), "{l}");
    }
    assert_eq!(hw.fired(), Vec::<String>::new());
    assert_eq!(second.requests().len(), 0, "{:?}", second.requests());

    // What the empty directory is for: the same helper in the (trusted) repository loads the
    // repository's MCP server; in an empty directory it does not.
    let empty = tempfile::tempdir().unwrap();
    assert_eq!(doctor_mcp_servers(&w, &repo).await, "1");
    assert_eq!(doctor_mcp_servers(&w, empty.path()).await, "0");
}

/// Codex merges config layers key by key, so a layer that defines the dispatcher's profile name
/// could add entries to it. The user's own config is such a layer when loaded; the launch never
/// loads it (`--ignore-user-config`): writes stay denied, the secret stays unreadable.
#[tokio::test]
async fn user_config_cannot_widen_the_permission_profile() {
    let w = World::new("widen");
    let repo = w.repo.path().canonicalize().unwrap();
    let ssh = w.home().join(".ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(ssh.join("id_ed25519"), "WIDEN_TEST_SSH_KEY\n").unwrap();
    w.write_codex_config(
        "config.toml",
        &format!(
            "sandbox_mode = \"danger-full-access\"\n\n\
             [permissions.agent_dispatch_read_only.filesystem]\n\
             \":root\" = \"write\"\n\"{}\" = \"write\"\n\"{}\" = \"read\"\n",
            repo.display(),
            ssh.display()
        ),
    );
    let fake = FakeResponses::start(Script::new(vec![
        Step::shell("printf x > probe.txt"),
        Step::shell(format!("cat {}/id_ed25519", ssh.display())),
        Step::message(FINAL),
    ]))
    .await
    .unwrap();
    let run = dispatch(
        w.request(Some("gpt-5.5"), None),
        w.env(),
        Some(fake.endpoint()),
    )
    .await;
    assert_ok(&run);
    let outs = fake.tool_outputs();
    assert!(output_of(&outs, 0).contains("Read-only file system"));
    assert!(output_of(&outs, 1).contains("Permission denied"));
    assert!(!repo.join("probe.txt").exists());
    let everything: String = fake
        .requests()
        .iter()
        .map(codex_support::secrets::request_text)
        .collect();
    assert!(!everything.contains("WIDEN_TEST_SSH_KEY"));
}

/// A `HOME` reached through a symbolic link (as on systems where `/home` links to `/var/home`)
/// and a secret directory that is itself a link: bwrap cannot mask a path through a link, so
/// the profile names the real paths; the agent's commands still run and the secrets stay denied.
#[tokio::test]
async fn secrets_behind_symbolic_links_stay_denied() {
    let w = World::new("symlinked-home");
    let real_home = w.home();
    std::fs::create_dir_all(real_home.join(".ssh")).unwrap();
    std::fs::write(real_home.join(".ssh/id_ed25519"), "LINKED_HOME_SSH_KEY\n").unwrap();
    let gh_target = w.dir.path().join("gh-config");
    std::fs::create_dir_all(&gh_target).unwrap();
    std::fs::write(gh_target.join("hosts.yml"), "LINKED_GH_TOKEN\n").unwrap();
    std::fs::create_dir_all(real_home.join(".config")).unwrap();
    std::os::unix::fs::symlink(&gh_target, real_home.join(".config/gh")).unwrap();
    let link_home = w.dir.path().join("home-link");
    std::os::unix::fs::symlink(&real_home, &link_home).unwrap();
    let mut env = w.env();
    env.insert("HOME".into(), link_home.clone().into());
    let fake = FakeResponses::start(Script::new(vec![
        Step::shell(format!("cat {}/.ssh/id_ed25519", link_home.display())),
        Step::shell(format!("cat {}/.config/gh/hosts.yml", link_home.display())),
        Step::shell("echo COMMANDS_RUN"),
        Step::message(FINAL),
    ]))
    .await
    .unwrap();
    let run = dispatch(w.request(Some("gpt-5.5"), None), env, Some(fake.endpoint())).await;
    assert_ok(&run);
    let outs = fake.tool_outputs();
    assert!(
        output_of(&outs, 0).contains("Permission denied"),
        "{outs:?}"
    );
    assert!(
        output_of(&outs, 1).contains("Permission denied"),
        "{outs:?}"
    );
    assert!(output_of(&outs, 2).contains("COMMANDS_RUN"), "{outs:?}");
    let everything: String = fake
        .requests()
        .iter()
        .map(codex_support::secrets::request_text)
        .collect();
    assert!(!everything.contains("LINKED_HOME_SSH_KEY"));
    assert!(!everything.contains("LINKED_GH_TOKEN"));
}

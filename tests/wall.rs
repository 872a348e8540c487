//! The wall alone, with no agent CLI: a shell started by the supervisor under a Landlock wall
//! may write only where the wall allows, cannot touch the tree or read a secret, and neither can
//! anything it starts — a `setsid` child or a double-forked grandchild. A kernel that cannot
//! enforce the wall refuses the spawn with `read-only-unavailable`, and nothing starts.

use std::path::{Path, PathBuf};
use std::time::Instant;

use agent_dispatch::contract::FailureKind;
use agent_dispatch::launch::{Launch, StdinPlan};
use agent_dispatch::supervise::Supervisor;
use agent_dispatch::wall::{self, DEVICE_RW, SYSTEM_READ, Wall, WallSpec};
use tokio_util::sync::CancellationToken;

struct Scene {
    _root: tempfile::TempDir,
    tree: PathBuf,
    private: PathBuf,
    secret: PathBuf,
}

/// A tree with a file in it, a private writable dir, and a secret outside both.
fn scene() -> Scene {
    let root = tempfile::tempdir().unwrap();
    let base = root.path().canonicalize().unwrap();
    let tree = base.join("tree");
    let private = base.join("private");
    let home = base.join("home/.ssh");
    for d in [&tree, &private, &home] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(tree.join("a.txt"), "tracked\n").unwrap();
    let secret = home.join("id_ed25519");
    std::fs::write(&secret, "WALL-SECRET-7f3a\n").unwrap();
    Scene {
        _root: root,
        tree,
        private,
        secret,
    }
}

fn spec(s: &Scene) -> WallSpec {
    let mut spec = WallSpec::new();
    for p in SYSTEM_READ {
        spec = spec.read(*p);
    }
    for p in DEVICE_RW {
        spec = spec.write(*p);
    }
    spec.read(&s.tree).write(&s.private)
}

fn walled_sh(s: &Scene, spec: WallSpec, script: &str) -> Launch {
    Launch {
        program: PathBuf::from("/bin/sh"),
        args: vec!["-c".into(), script.into()],
        cwd: s.tree.clone(),
        env: vec![
            ("PATH".into(), "/usr/bin:/bin".into()),
            ("PRIVATE".into(), s.private.clone().into()),
            ("SECRET".into(), s.secret.clone().into()),
        ],
        stdin: StdinPlan::Null,
        wall: Some(Wall {
            spec,
            private_dir: None,
        }),
    }
}

async fn run(launch: &Launch) -> (String, String) {
    let sup = Supervisor::new();
    let out = sup
        .capture(launch, &CancellationToken::new(), 1 << 20)
        .await
        .expect("the walled shell runs");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn landlock_here() -> bool {
    let abi = wall::kernel_abi();
    if abi.is_none() {
        eprintln!("SKIP: this kernel has no Landlock");
    }
    abi.is_some()
}

fn exists(p: &Path) -> bool {
    p.symlink_metadata().is_ok()
}

#[tokio::test]
async fn allowed_path_is_writable_the_tree_is_not_and_the_secret_is_unreadable() {
    if !landlock_here() {
        return;
    }
    let s = scene();
    let script = r#"
        echo ok > "$PRIVATE/allowed.txt" && echo private-write=ok
        echo x > tree-write.txt || echo tree-write=denied
        echo more >> a.txt || echo append=denied
        true > a.txt || echo truncate=denied
        truncate -s 0 a.txt || echo truncate-call=denied
        rm -f a.txt || echo rm=denied
        mkdir sub || echo mkdir=denied
        cat a.txt
        cat "$SECRET" || echo secret=denied
        ls "$(dirname "$SECRET")" || echo secret-dir=denied
        cat /proc/1/environ > /dev/null || echo proc=denied
        echo devnull > /dev/null && echo devnull=ok
    "#;
    let (out, err) = run(&walled_sh(&s, spec(&s), script)).await;
    for want in [
        "private-write=ok",
        "tree-write=denied",
        "append=denied",
        "truncate=denied",
        "truncate-call=denied",
        "rm=denied",
        "mkdir=denied",
        "tracked",
        "secret=denied",
        "secret-dir=denied",
        "proc=denied",
        "devnull=ok",
    ] {
        assert!(
            out.contains(want),
            "{want} missing\nstdout:\n{out}\nstderr:\n{err}"
        );
    }
    assert!(!out.contains("WALL-SECRET"), "{out}");
    assert!(
        err.contains("Permission denied"),
        "the kernel's refusal: {err}"
    );
    assert_eq!(
        std::fs::read_to_string(s.private.join("allowed.txt")).unwrap(),
        "ok\n"
    );
    assert_eq!(
        std::fs::read_to_string(s.tree.join("a.txt")).unwrap(),
        "tracked\n"
    );
    assert!(!exists(&s.tree.join("tree-write.txt")));
    assert!(!exists(&s.tree.join("sub")));
}

#[tokio::test]
async fn setsid_and_double_forked_descendants_stay_inside_the_wall() {
    if !landlock_here() {
        return;
    }
    let s = scene();
    // Each escape reports through a file in the private dir, since its stdout may outlive ours.
    let script = r#"
        setsid sh -c 'echo x > setsid.txt 2>/dev/null || echo setsid=denied > "$PRIVATE/setsid.out"; cat "$SECRET" > "$PRIVATE/setsid.secret" 2>&1' &
        ( ( sh -c 'echo x > double.txt 2>/dev/null || echo double=denied > "$PRIVATE/double.out"; cat "$SECRET" > "$PRIVATE/double.secret" 2>&1' ) & ) &
        wait
        for f in setsid.out double.out setsid.secret double.secret; do
            n=0; while [ ! -s "$PRIVATE/$f" ] && [ $n -lt 500 ]; do n=$((n+1)); sleep 0.01; done
        done
        cat "$PRIVATE/setsid.out" "$PRIVATE/double.out"
    "#;
    let (out, err) = run(&walled_sh(&s, spec(&s), script)).await;
    assert!(out.contains("setsid=denied"), "{out}\n{err}");
    assert!(out.contains("double=denied"), "{out}\n{err}");
    for f in ["setsid.secret", "double.secret"] {
        let got = std::fs::read_to_string(s.private.join(f)).unwrap();
        assert!(got.contains("Permission denied"), "{f}: {got}");
        assert!(!got.contains("WALL-SECRET"), "{f}: {got}");
    }
    assert!(!exists(&s.tree.join("setsid.txt")));
    assert!(!exists(&s.tree.join("double.txt")));
}

#[tokio::test]
async fn connect_is_limited_to_the_allowed_ports() {
    if wall::kernel_abi().unwrap_or(0) < wall::MIN_NET_ABI {
        eprintln!("SKIP: no Landlock network rules on this kernel");
        return;
    }
    let s = scene();
    let allowed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let (a, o) = (
        allowed.local_addr().unwrap().port(),
        other.local_addr().unwrap().port(),
    );
    let script = format!(
        r#"python3 -c '
import socket
for p in ({a}, {o}):
    try:
        socket.create_connection(("127.0.0.1", p), timeout=3).close(); print(p, "connected")
    except OSError as e:
        print(p, "refused", e.errno)
'"#
    );
    let (out, err) = run(&walled_sh(&s, spec(&s).connect_ports(vec![a]), &script)).await;
    assert!(out.contains(&format!("{a} connected")), "{out}\n{err}");
    assert!(out.contains(&format!("{o} refused 13")), "{out}\n{err}");
}

#[tokio::test]
async fn a_kernel_that_cannot_enforce_the_wall_refuses_the_spawn_and_starts_nothing() {
    let s = scene();
    let marker = s.private.join("started.txt");
    let impossible = WallSpec {
        min_abi: 99,
        ..spec(&s)
    };
    let launch = walled_sh(&s, impossible, "echo started > \"$PRIVATE/started.txt\"");
    let sup = Supervisor::new();
    let err = match sup.spawn(&launch) {
        Ok(_) => panic!("a wall this kernel cannot build must refuse the spawn"),
        Err(e) => e,
    };
    assert_eq!(err.kind, FailureKind::ReadOnlyUnavailable, "{err}");
    assert!(err.message.contains("nothing was started"), "{err}");
    assert_eq!(sup.active(), 0);
    assert!(!exists(&marker), "nothing ran");
}

#[tokio::test]
async fn figures_building_and_applying_the_wall() {
    let Some(abi) = wall::kernel_abi() else {
        return;
    };
    let s = scene();
    let spec = spec(&s);
    let t = Instant::now();
    let n = 20;
    for _ in 0..n {
        wall::prepare(&spec).unwrap();
    }
    let build = t.elapsed() / n;
    let bare = Launch {
        wall: None,
        ..walled_sh(&s, spec.clone(), "true")
    };
    let walled = walled_sh(&s, spec, "true");
    let mut times = [Vec::new(), Vec::new()];
    for _ in 0..10 {
        for (i, l) in [&bare, &walled].into_iter().enumerate() {
            let t = Instant::now();
            run(l).await;
            times[i].push(t.elapsed());
        }
    }
    let median = |v: &mut Vec<std::time::Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let (b, w) = (median(&mut times[0]), median(&mut times[1]));
    eprintln!(
        "FIGURES: Landlock ABI {abi}; building the ruleset {build:?}; spawn+exit of sh: {b:?} bare, {w:?} walled"
    );
}

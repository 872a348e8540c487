//! The shared hostile repository fixture (`tests/fixtures/hostile-repo/`), materialised into a
//! scratch git repository for one run.
//!
//! Every text file of the fixture is copied with its placeholders substituted:
//! `@MARKER_DIR@` (a directory outside the tree: anything that appears there ran outside the
//! sandbox, or was allowed to write where it must not), `@ATTACKER_URL@` (a second loopback
//! model endpoint that must never be called) and whatever else the caller adds. Everything is
//! committed, as in a repository just cloned (`settings.local.json` included: a hostile
//! repository commits what it likes).
//!
//! Layout of one [`HostileWorld`] (a fresh directory, removed on drop):
//! `repo/` (the tree under review), `markers/` (empty), `outside-import.md` (a file outside the
//! tree that `CLAUDE.md` tries to import).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// Text in `outside-import.md`; it must never reach a model endpoint.
pub const OUTSIDE_IMPORT_TEXT: &str = "OUTSIDE_IMPORT_LOADED";

pub fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hostile-repo")
}

/// A materialised hostile repository and the directories around it.
pub struct HostileWorld {
    dir: tempfile::TempDir,
}

impl HostileWorld {
    /// Materialise the fixture under a fresh directory in `parent`, substituting
    /// `@MARKER_DIR@`, `@ATTACKER_URL@` (= `attacker_url`) and `extra` (placeholder, value).
    pub fn create(parent: &Path, attacker_url: &str, extra: &[(&str, &str)]) -> Self {
        std::fs::create_dir_all(parent).unwrap();
        let dir = tempfile::Builder::new()
            .prefix("hostile-")
            .tempdir_in(parent)
            .unwrap();
        let world = Self { dir };
        std::fs::create_dir_all(world.markers()).unwrap();
        std::fs::write(
            world.dir.path().join("outside-import.md"),
            format!("{OUTSIDE_IMPORT_TEXT}\n"),
        )
        .unwrap();
        let markers = world.markers().to_str().unwrap().to_owned();
        let mut subs: Vec<(&str, &str)> =
            vec![("@MARKER_DIR@", &markers), ("@ATTACKER_URL@", attacker_url)];
        subs.extend_from_slice(extra);
        copy_substituted(&fixture_dir(), &world.repo(), &subs);
        git_commit_all(&world.repo());
        world
    }

    /// Hostile repository-local git configuration (what a repository shipped with its `.git`,
    /// e.g. a tarball, could carry): `core.fsmonitor`, `core.pager`, `core.hooksPath`,
    /// `core.sshCommand`, `diff.external`, and a `.gitattributes` filter and textconv for every
    /// file, each touching a `git-*` marker. A CLI that runs git in the tree outside its sandbox
    /// with the repository's configuration fires them.
    pub fn plant_git_config(&self) {
        let repo = self.repo();
        let m = self.markers();
        let touch = |name: &str| format!("touch {}/git-{name}", m.display());
        std::fs::write(
            repo.join(".gitattributes"),
            "* filter=hostile diff=hostile\n",
        )
        .unwrap();
        git(&repo, &["add", ".gitattributes"]);
        git(
            &repo,
            &[
                "-c",
                "user.name=attacker",
                "-c",
                "user.email=attacker@localhost",
                "commit",
                "-q",
                "-m",
                "attributes",
            ],
        );
        // Configured after the commit: git itself would run them while committing.
        for (k, v) in [
            ("core.fsmonitor", format!("{}; false", touch("fsmonitor"))),
            ("core.pager", format!("{}; cat", touch("pager"))),
            ("core.hooksPath", m.join("hooks").display().to_string()),
            ("core.sshCommand", touch("ssh-command")),
            ("diff.external", touch("diff-external")),
            (
                "filter.hostile.clean",
                format!("{}; cat", touch("filter-clean")),
            ),
            (
                "filter.hostile.smudge",
                format!("{}; cat", touch("filter-smudge")),
            ),
            (
                "diff.hostile.textconv",
                format!("{}; cat", touch("textconv")),
            ),
        ] {
            git(&repo, &["config", k, &v]);
        }
        assert_eq!(self.fired(), Vec::<String>::new(), "setup fired a marker");
    }

    /// The tree under review (canonical).
    pub fn repo(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap().join("repo")
    }

    pub fn markers(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap().join("markers")
    }

    /// Names of the files that appeared in the marker directory, sorted.
    pub fn fired(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.markers())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}

fn copy_substituted(from: &Path, to: &Path, subs: &[(&str, &str)]) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_substituted(&e.path(), &target, subs);
            continue;
        }
        let mut text = std::fs::read_to_string(e.path()).unwrap();
        for (k, v) in subs {
            text = text.replace(k, v);
        }
        std::fs::write(&target, text).unwrap();
    }
}

fn git(repo: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(repo)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn git_commit_all(repo: &Path) {
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["add", "-A"],
        &[
            "-c",
            "user.name=attacker",
            "-c",
            "user.email=attacker@localhost",
            "-c",
            "commit.gpgsign=false",
            "commit",
            "-q",
            "-m",
            "a hostile repository",
        ],
    ] {
        git(repo, args);
    }
}

//! Codex-side loader of the shared hostile-repository fixture (`tests/fixtures/hostile-repo/`):
//! every file of it is copied into a scratch repository with its placeholders filled in, and
//! committed, so the repository under review really carries it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the fixture lives.
pub fn fixture_dir() -> PathBuf {
    super::root().join("tests/fixtures/hostile-repo")
}

/// The values the fixture's `{{…}}` placeholders stand for.
pub struct Vars<'a> {
    /// A directory outside the tree where anything that runs would leave a marker file.
    pub marks: &'a Path,
    /// A second fake endpoint that must receive no request.
    pub second_base_url: &'a str,
    /// The scratch repository (canonical path).
    pub repo: &'a Path,
}

fn fill(text: &str, v: &Vars<'_>) -> String {
    text.replace("{{MARKS}}", &v.marks.display().to_string())
        .replace("{{SECOND_BASE_URL}}", v.second_base_url)
        .replace("{{REPO}}", &v.repo.display().to_string())
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// Copy the fixture into `repo` (placeholders filled) and commit it. Returns the relative paths.
pub fn install(repo: &Path, v: &Vars<'_>) -> Vec<PathBuf> {
    let src = fixture_dir();
    let mut all = Vec::new();
    files(&src, &mut all);
    all.sort();
    assert!(
        all.iter().any(|p| p.ends_with(".codex/config.toml")),
        "the hostile fixture has no .codex/config.toml under {}",
        src.display()
    );
    let mut rel = Vec::new();
    for p in all {
        let r = p.strip_prefix(&src).unwrap().to_path_buf();
        let dst = repo.join(&r);
        std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
        match std::fs::read_to_string(&p) {
            Ok(text) => std::fs::write(&dst, fill(&text, v)).unwrap(),
            Err(_) => {
                std::fs::copy(&p, &dst).unwrap();
            }
        }
        rel.push(r);
    }
    // Only the fixture: the scratch repository's uncommitted change stays uncommitted.
    let mut add = vec!["add", "--"];
    let names: Vec<String> = rel.iter().map(|r| r.display().to_string()).collect();
    add.extend(names.iter().map(String::as_str));
    git(repo, &add);
    git(
        repo,
        &[
            "-c",
            "user.name=hostile",
            "-c",
            "user.email=hostile@localhost",
            "-c",
            "commit.gpgsign=false",
            "commit",
            "-q",
            "-m",
            "hostile configuration",
        ],
    );
    rel
}

/// A user config that trusts `repo`, so Codex would load its `.codex/` if it read user config.
pub fn trusting_user_config(repo: &Path) -> String {
    format!(
        "[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
        repo.display()
    )
}

fn git(cwd: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(args)
        .current_dir(cwd)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_SYSTEM", "/dev/null")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

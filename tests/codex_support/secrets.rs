//! A scratch `HOME` full of secrets: one file per entry of the shared deny list
//! (`agent_dispatch::secrets::secret_paths`, every class), each holding a unique token, plus one
//! ordinary file whose token must reach the model (the control that shows `cat` really ran).

use std::path::{Path, PathBuf};

use agent_dispatch::secrets::{Secret, secret_paths};

/// One planted file.
#[derive(Debug, Clone)]
pub struct Planted {
    /// The deny-list entry it stands for, as listed (a glob stays a glob).
    pub entry: PathBuf,
    pub class: String,
    /// The file that was written.
    pub file: PathBuf,
    pub token: String,
}

/// What [`plant`] made.
pub struct Planting {
    pub secrets: Vec<Planted>,
    /// A file outside the deny list; its token must reach the model.
    pub control: Planted,
}

/// A concrete file for a deny-list entry: a directory gets a file inside it, a glob gets one
/// path it matches (`**` → two directories deep, `*` → `x`).
fn concrete(s: &Secret) -> PathBuf {
    let text = s.path.to_string_lossy();
    if text.contains('*') || text.contains('?') {
        return PathBuf::from(
            text.replace("**", "other-repo/nested")
                .replace(['*', '?'], "x"),
        );
    }
    if s.dir {
        s.path.join("planted-secret")
    } else {
        s.path.clone()
    }
}

/// Contents that keep the file valid where Codex itself parses it (`auth.json` is JSON).
fn contents(file: &Path, token: &str) -> String {
    match file.file_name().and_then(|n| n.to_str()) {
        Some("auth.json") => format!("{{\"OPENAI_API_KEY\":\"{token}\"}}\n"),
        Some(n) if n.ends_with(".jsonl") => format!("{{\"text\":\"{token}\"}}\n"),
        _ => format!("{token}\n"),
    }
}

/// Plant every deny-list entry for `home`, with configuration directories from `var`.
pub fn plant(home: &Path, var: &dyn Fn(&str) -> Option<PathBuf>, tag: &str) -> Planting {
    let mut secrets = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (i, s) in secret_paths(Some(home), var).iter().enumerate() {
        let file = concrete(s);
        if !seen.insert(file.clone()) {
            continue;
        }
        let token = format!("PLANTED_SECRET_{tag}_{i}_{:?}", s.class).to_uppercase();
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, contents(&file, &token)).unwrap();
        secrets.push(Planted {
            entry: s.path.clone(),
            class: format!("{:?}", s.class),
            file,
            token,
        });
    }
    let file = home.join("notes/readable.txt");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let token = format!("READABLE_CONTROL_{tag}").to_uppercase();
    std::fs::write(&file, format!("{token}\n")).unwrap();
    Planting {
        secrets,
        control: Planted {
            entry: file.clone(),
            class: "control".into(),
            file,
            token,
        },
    }
}

/// Everything a request carried, as one string (body and auth header).
pub fn request_text(r: &agent_dispatch::loopback::LoggedRequest) -> String {
    format!("{} {} {:?} {}", r.method, r.path, r.auth, r.body)
}

//! Following a CLI's launcher to the program that really runs.
//!
//! npm installs a CLI as a small script (`codex.js`, started by `node`) that starts a native
//! binary from a platform package; the native binary is what applies the sandbox, so that is
//! what the read-only check's record is keyed on (see [`crate::adapter::EnforcingFile`]).
//! Cheap by design: a few `stat`s and reads of a file's first bytes, never a subprocess.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::adapter::{EnforcingFile, Env, FileRole};

/// The first bytes of a file (fewer if it is shorter).
fn head(path: &Path, n: usize) -> Option<Vec<u8>> {
    let mut buf = Vec::with_capacity(n);
    std::fs::File::open(path)
        .ok()?
        .take(n as u64)
        .read_to_end(&mut buf)
        .ok()?;
    Some(buf)
}

/// Is the file a native executable (ELF, or Mach-O on macOS) rather than a script?
pub fn is_native(path: &Path) -> bool {
    const MAGICS: &[[u8; 4]] = &[
        *b"\x7fELF",
        [0xcf, 0xfa, 0xed, 0xfe],
        [0xce, 0xfa, 0xed, 0xfe],
        [0xca, 0xfe, 0xba, 0xbe],
    ];
    head(path, 4).is_some_and(|h| MAGICS.iter().any(|m| h == m))
}

/// The interpreter a script names on its `#!` line, as the kernel and `env` would find it:
/// `#!/usr/bin/env node` gives `/usr/bin/env` and `node` from the absolute entries of the
/// environment's `PATH`; `#!/bin/sh` gives `/bin/sh`. Empty for a file without a `#!` line.
pub fn script_interpreters(script: &Path, env: &Env) -> Vec<PathBuf> {
    let Some(h) = head(script, 256) else {
        return Vec::new();
    };
    let Some(line) = h.strip_prefix(b"#!") else {
        return Vec::new();
    };
    let line = line.split(|b| *b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut words = line.split_whitespace();
    let Some(first) = words.next() else {
        return Vec::new();
    };
    let mut out = vec![PathBuf::from(first)];
    if Path::new(first).file_name().is_some_and(|n| n == "env")
        && let Some(name) = words.find(|w| !w.starts_with('-'))
        && let Some(found) = crate::program::find_on_path(name, env)
    {
        out.push(found);
    }
    out
}

/// Where Node's module resolution finds package `name` (`@scope/pkg`) from a module in `dir`:
/// the first `<ancestor>/node_modules/<name>` with a `package.json`, nearest ancestor first
/// (an ancestor that is itself a `node_modules` directory is skipped, as Node does).
pub fn node_package(dir: &Path, name: &str) -> Option<PathBuf> {
    dir.ancestors()
        .filter(|a| a.file_name().is_none_or(|n| n != "node_modules"))
        .map(|a| a.join("node_modules").join(name))
        .find(|p| p.join("package.json").is_file())
}

/// What a launch of a CLI really runs: the interpreters its launcher script names (none for a
/// native program) and the native binary that applies the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launched {
    pub interpreters: Vec<PathBuf>,
    /// `program` itself when it is native, else what the CLI's launcher script starts.
    pub native: Option<PathBuf>,
}

impl Launched {
    /// Follow `program` (symlinks resolved): a native binary is what runs; a script runs under
    /// its interpreters and starts the binary `native_of(script)` finds.
    pub fn follow(
        program: &Path,
        env: &Env,
        native_of: impl FnOnce(&Path) -> Option<PathBuf>,
    ) -> Self {
        let real = program
            .canonicalize()
            .unwrap_or_else(|_| program.to_path_buf());
        if is_native(&real) {
            return Self {
                interpreters: Vec::new(),
                native: Some(real),
            };
        }
        Self {
            interpreters: script_interpreters(&real, env),
            native: native_of(&real),
        }
    }

    /// The record's files: the interpreters, then the native binary.
    pub fn files(self) -> impl Iterator<Item = EnforcingFile> {
        let file = |role| move |path| EnforcingFile { role, path };
        (self
            .interpreters
            .into_iter()
            .map(file(FileRole::Interpreter)))
        .chain(self.native.map(file(FileRole::NativeCli)))
    }
}

/// Fixtures for the launcher-following tests of the adapters' `enforcing` modules.
#[cfg(test)]
pub(crate) mod test_support {
    use std::os::unix::fs::PermissionsExt;
    use std::path::{Path, PathBuf};

    use crate::adapter::{EnforcingFile, FileRole};

    /// An executable file at `path` (parents created) holding `body`.
    pub fn exe(path: &Path, body: &[u8]) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, body).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// The paths among `files` that play `role`, in order.
    pub fn of(files: &[EnforcingFile], role: FileRole) -> Vec<PathBuf> {
        files
            .iter()
            .filter(|f| f.role == role)
            .map(|f| f.path.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    #[test]
    fn native_binaries_and_scripts_are_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let elf = dir.path().join("elf");
        std::fs::write(&elf, b"\x7fELF\x02\x01\x01rest").unwrap();
        let script = dir.path().join("script");
        std::fs::write(&script, b"#!/bin/sh\nexec true\n").unwrap();
        assert!(is_native(&elf));
        assert!(!is_native(&script));
        assert!(!is_native(&dir.path().join("missing")));
    }

    #[test]
    fn env_shebangs_resolve_on_absolute_path_entries() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let node = bin.join("node");
        std::fs::write(&node, b"\x7fELF").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&node, std::fs::Permissions::from_mode(0o755)).unwrap();
        let shim = dir.path().join("cli.js");
        std::fs::write(&shim, b"#!/usr/bin/env -S node --no-warnings\nimport x;\n").unwrap();
        let env = Env::from([(
            OsString::from("PATH"),
            OsString::from(format!("bin:{}", bin.display())),
        )]);
        assert_eq!(
            script_interpreters(&shim, &env),
            [PathBuf::from("/usr/bin/env"), node]
        );
        std::fs::write(&shim, b"#!/bin/sh\n").unwrap();
        assert_eq!(script_interpreters(&shim, &env), [PathBuf::from("/bin/sh")]);
        std::fs::write(&shim, b"\x7fELF").unwrap();
        assert!(script_interpreters(&shim, &env).is_empty());
    }

    #[test]
    fn node_packages_are_found_like_node_does() {
        let dir = tempfile::tempdir().unwrap();
        let nm = dir.path().join("lib/node_modules");
        let shim_dir = nm.join("@openai/codex/bin");
        std::fs::create_dir_all(&shim_dir).unwrap();
        assert_eq!(node_package(&shim_dir, "@openai/codex-linux-x64"), None);
        let sibling = nm.join("@openai/codex-linux-x64");
        std::fs::create_dir_all(&sibling).unwrap();
        std::fs::write(sibling.join("package.json"), "{}").unwrap();
        assert_eq!(
            node_package(&shim_dir, "@openai/codex-linux-x64"),
            Some(sibling)
        );
        // A nested copy (npm's fallback layout) is nearer, so it wins.
        let nested = nm.join("@openai/codex/node_modules/@openai/codex-linux-x64");
        std::fs::create_dir_all(&nested).unwrap();
        std::fs::write(nested.join("package.json"), "{}").unwrap();
        assert_eq!(
            node_package(&shim_dir, "@openai/codex-linux-x64"),
            Some(nested)
        );
    }
}

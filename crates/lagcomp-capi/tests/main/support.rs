//! What the tests that build and run other languages' programs share.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The crate's directory (where `include/` and `tests/` are).
pub(crate) fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Where cargo put `liblagcomp_capi.so` and `.a` for this build: the `deps/` directory this
/// test binary runs from. `cargo test` leaves them there only; `cargo build` also copies
/// them up to the profile directory, where they may be older than this build, so that
/// copy is never used.
pub(crate) fn library_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let deps = exe
        .parent()
        .expect("test binaries live in <target>/<profile>/deps");
    for name in ["liblagcomp_capi.so", "liblagcomp_capi.a"] {
        assert!(
            deps.join(name).exists(),
            "{name} is missing from {}: cargo builds it with the tests",
            deps.display()
        );
    }
    deps.to_path_buf()
}

/// A fresh directory for one test's files.
pub(crate) fn scratch_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("lagcomp-capi")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create the test's directory");
    dir
}

/// `Some(())` when `program` runs on this machine; otherwise says the test is skipped.
pub(crate) fn tool(program: &str) -> Option<()> {
    match Command::new(program).arg("--version").output() {
        Ok(_) => Some(()),
        Err(_) => {
            eprintln!("SKIPPED: `{program}` is not installed here (.ci/run installs it in CI)");
            None
        }
    }
}

/// Runs a command to success and returns its standard output; panics with both outputs
/// otherwise.
pub(crate) fn run(cmd: &mut Command, what: &str) -> String {
    let output = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what} did not start: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{what} failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

//! The C# P/Invoke test (`tests/cs/CapiTest.cs`) on Mono, as Unity calls a native plugin:
//! a tick recorded from a pinned array, a claim validated, the verdict read, equal to the
//! same claim's verdict through the Rust crates.

use std::process::Command;

use crate::c_program::rust_verdicts;
use crate::support::{crate_dir, library_dir, run, scratch_dir, tool};

#[test]
fn csharp_records_from_a_pinned_array_and_reads_the_verdict() {
    if tool("mcs").is_none() || tool("mono").is_none() {
        return;
    }
    let out = scratch_dir("csharp");
    let exe = out.join("capi_test.exe");
    run(
        Command::new("mcs")
            .arg(format!("-out:{}", exe.display()))
            .arg(crate_dir().join("tests/cs/CapiTest.cs")),
        "mcs",
    );
    let stdout = run(
        Command::new("mono")
            .arg(&exe)
            .env("LD_LIBRARY_PATH", library_dir()),
        "the C# test",
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.last(), Some(&"ok"), "{stdout}");
    let verdicts: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with("verdict "))
        .collect();
    assert_eq!(verdicts, [rust_verdicts()[0].as_str()]);
}

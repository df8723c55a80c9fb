//! The Khronos glTF validator (npm `gltf-validator`, run by node) on every .glb these
//! tests write: no errors, no warnings.

use std::process::Command;

use crate::support::{npm_packages, run, work_dir, written_scenes};

/// Validates each file named on the command line; prints one JSON line per file.
const VALIDATE_JS: &str = r#"
const fs = require("fs");
const validator = require("gltf-validator");
(async () => {
  for (const path of process.argv.slice(2)) {
    const bytes = new Uint8Array(fs.readFileSync(path));
    const report = await validator.validateBytes(bytes, { uri: path, maxIssues: 0 });
    const issues = report.issues;
    console.log(JSON.stringify({
      path,
      errors: issues.numErrors,
      warnings: issues.numWarnings,
      messages: issues.messages,
    }));
  }
})().catch((error) => { console.error(error); process.exit(2); });
"#;

#[test]
fn the_khronos_validator_finds_nothing_wrong_with_any_scene() {
    // Written first, so the files are there to open even when the validator is not.
    let dir = work_dir().join("scenes");
    std::fs::create_dir_all(&dir).unwrap();
    let mut paths = Vec::new();
    for (name, bytes) in written_scenes() {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        paths.push(path);
    }
    let Some((npm, node)) = npm_packages() else {
        return;
    };
    let script = npm.join("validate.js");
    std::fs::write(&script, VALIDATE_JS).unwrap();
    let (ok, output) = run(
        Command::new(node).arg(&script).args(&paths),
        "gltf-validator",
    )
    .expect("node runs");
    assert!(ok, "the validator failed:\n{output}");
    let reports: Vec<serde_json::Value> = output
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    assert_eq!(reports.len(), paths.len(), "one report per file:\n{output}");
    for report in &reports {
        assert_eq!(report["errors"], 0, "{report:#}");
        assert_eq!(report["warnings"], 0, "{report:#}");
    }
}

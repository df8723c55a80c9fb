//! What the tests share: where they write, the scenes they write, and the outside tools
//! (node and npm for the validator and three.js, Chromium for the rendering).

use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use lagcomp::{Axis, EntityId, PlacedShape, Pose, Quat, Shape, StaticId, Vec3};
use lagcomp_gltf::{SceneHitbox, SceneShot, SceneWall, VerdictScene, scene_of_shot};
use lagcomp_validate::recording::Recording;

/// The npm packages the checks use, pinned: installed at test time, never committed.
pub(crate) const NPM_PACKAGES: [&str; 2] = ["gltf-validator@2.0.0-dev.3.10", "three@0.187.0"];
/// Longest an outside program (npm, node, Chromium) may take before the test gives up.
pub(crate) const TOOL_TIMEOUT: Duration = Duration::from_secs(300);

/// The documented example recording: a confirmed hit, a miss, a blocked shot, a replay
/// and a fire-rate rejection: seq 1 (twice), 2, 3 and 4 of shooter 0.
pub(crate) fn example_recording() -> Recording {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../lagcomp-validate/tests/data/example.jsonl");
    let file = std::fs::File::open(&path).expect("the example recording");
    Recording::read(BufReader::new(file)).expect("the example recording reads")
}

/// This test run's directory under the target directory (`target/debug/lagcomp-gltf-tests`).
pub(crate) fn work_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    // target/debug/deps/main-HASH -> target/debug
    let profile = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test binary sits in target/PROFILE/deps");
    let dir = profile.join("lagcomp-gltf-tests");
    std::fs::create_dir_all(&dir).expect("create the tests' directory");
    dir
}

/// Every scene the tests write, by file name: one per claim of the example recording,
/// hand-made ones with every shape kind, a sweep, rotations and scaled shapes, and the
/// files the simulator's HTML report wrote for its chosen shots in a short match.
pub(crate) fn written_scenes() -> Vec<(String, Vec<u8>)> {
    let recording = example_recording();
    let shooter = EntityId::from_bits(0);
    let mut scenes = Vec::new();
    for seq in 1..=4 {
        let scene = scene_of_shot(&recording, None, seq, Some(shooter)).expect("a scene");
        scenes.push((
            format!("example-seq{seq}.glb"),
            scene.to_glb().expect("bytes"),
        ));
    }
    scenes.push((
        "every-shape.glb".into(),
        every_shape().to_glb().expect("bytes"),
    ));
    scenes.extend(report_scenes());
    scenes
}

/// The `.glb` files `lagcomp_sim::report::write_report` wrote for a short match on LAN,
/// read back from its directory: at least the confirmed shot.
pub(crate) fn report_scenes() -> Vec<(String, Vec<u8>)> {
    let mut scenario =
        lagcomp_sim::scenario::Scenario::named("quick").expect("a built-in scenario");
    scenario.duration = 2.0;
    scenario.presets.truncate(1);
    // Rifles only: the chosen shots are hitscan ones, and a 2 s match of mixed weapons
    // fires too few of them to confirm one on a target that had moved on.
    scenario.arsenal = false;
    let result = scenario.run(|_, _, _| {});
    let dir = work_dir().join("report");
    lagcomp_sim::report::write_report(&result, &dir).expect("the report is written");
    let files: Vec<(String, Vec<u8>)> = lagcomp_sim::report::ChosenShot::ALL
        .iter()
        .filter_map(|kind| {
            let bytes = std::fs::read(dir.join(kind.file_name())).ok()?;
            Some((format!("report-{}", kind.file_name()), bytes))
        })
        .collect();
    assert!(
        files
            .iter()
            .any(|(name, _)| name.ends_with(lagcomp_sim::report::ChosenShot::Confirmed.file_name())),
        "the report wrote no confirmed shot"
    );
    files
}

/// A sweep through a target made of every shape kind, turned, with a wall behind it.
pub(crate) fn every_shape() -> VerdictScene {
    let turn = Quat::from_rotation_y(0.6) * Quat::from_rotation_x(0.2);
    let rig = |offset: Vec3| {
        let at =
            |p: Vec3, shape: Shape| PlacedShape::new(Pose::new(offset + turn * p, turn), shape);
        vec![
            SceneHitbox::new("head", at(Vec3::Y * 1.65, Shape::sphere(0.13))),
            SceneHitbox::new(
                "chest",
                at(Vec3::Y * 1.25, Shape::cuboid(Vec3::new(0.22, 0.25, 0.13))),
            ),
            SceneHitbox::new(
                "legs",
                at(Vec3::Y * 0.5, Shape::capsule(0.12, 0.35, Axis::Y)),
            ),
            SceneHitbox::new(
                "arms",
                at(Vec3::Y * 1.4, Shape::capsule(0.06, 0.35, Axis::X)),
            ),
            SceneHitbox::new(
                "weapon",
                at(
                    Vec3::new(0.3, 1.3, 0.3),
                    Shape::capsule(0.03, 0.25, Axis::Z),
                ),
            ),
        ]
    };
    let mut scene = VerdictScene::new(
        "every shape",
        SceneShot {
            origin: Vec3::new(-0.2, 1.5, -8.0),
            direction: Vec3::new(0.02, -0.01, 1.0),
            length: 9.0,
            radius: 0.1,
        },
    );
    scene.rewound = rig(Vec3::ZERO);
    scene.present = rig(Vec3::new(0.9, 0.0, 0.2));
    scene.walls.push(SceneWall {
        id: StaticId(0),
        placed: PlacedShape::new(
            Pose::new(Vec3::new(0.0, 1.5, 2.0), Quat::IDENTITY),
            Shape::cuboid(Vec3::new(2.0, 1.5, 0.1)),
        ),
        distance: 9.9,
    });
    scene.extras.insert("outcome".into(), "confirmed".into());
    scene
}

/// Whether the checks must run (CI sets `CI=true`): there a missing tool fails the test;
/// elsewhere the test says what is missing and passes without checking.
pub(crate) fn required() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// Skips (returns `None`, saying why) or, under CI, fails.
pub(crate) fn missing<T>(what: &str) -> Option<T> {
    assert!(!required(), "CI=true and {what}");
    eprintln!("SKIPPED: {what}");
    None
}

/// A program on the `PATH`.
pub(crate) fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// The directory holding `node_modules` with [`NPM_PACKAGES`], installed on first use
/// (under the target directory), and node; `None` when they cannot be had (see
/// [`missing`]).
pub(crate) fn npm_packages() -> Option<(PathBuf, PathBuf)> {
    static INSTALL: Mutex<()> = Mutex::new(());
    static RESULT: OnceLock<Result<(PathBuf, PathBuf), String>> = OnceLock::new();
    let _one_at_a_time = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
    let result = RESULT.get_or_init(|| {
        let node = on_path("node").ok_or("node is not installed (apt nodejs)")?;
        let npm = on_path("npm").ok_or("npm is not installed (apt npm)")?;
        let dir = work_dir().join("npm");
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        // Installed already, at these versions: npm writes a lock file listing them.
        let lock = std::fs::read_to_string(dir.join("package-lock.json")).unwrap_or_default();
        let versions = |spec: &str| {
            let (name, version) = spec.rsplit_once('@').expect("name@version");
            format!("\"node_modules/{name}\": {{\n      \"version\": \"{version}\"")
        };
        if NPM_PACKAGES.iter().all(|p| lock.contains(&versions(p))) {
            return Ok((dir, node));
        }
        let mut command = Command::new(npm);
        command
            .current_dir(&dir)
            .args(["install", "--no-audit", "--no-fund", "--loglevel=error"])
            .args(NPM_PACKAGES);
        let out = run(&mut command, "npm install")?;
        if !out.0 {
            return Err(format!("npm install failed:\n{}", out.1));
        }
        Ok((dir, node))
    });
    match result {
        Ok(found) => Some(found.clone()),
        Err(why) => missing(why),
    }
}

/// Runs `command` to completion within [`TOOL_TIMEOUT`]: whether it succeeded, and its
/// standard output then error. Output goes to files, which never fill up as a pipe would.
pub(crate) fn run(command: &mut Command, name: &str) -> Result<(bool, String), String> {
    let dir = work_dir();
    let tag = name.replace(' ', "-");
    let out_path = dir.join(format!("{tag}.stdout"));
    let err_path = dir.join(format!("{tag}.stderr"));
    let stdout = std::fs::File::create(&out_path).map_err(|e| e.to_string())?;
    let stderr = std::fs::File::create(&err_path).map_err(|e| e.to_string())?;
    let mut child = command
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .map_err(|e| format!("cannot start {name}: {e}"))?;
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if started.elapsed() > TOOL_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("{name} took longer than {TOOL_TIMEOUT:?}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let text = std::fs::read_to_string(&out_path).unwrap_or_default()
        + &std::fs::read_to_string(&err_path).unwrap_or_default();
    Ok((status.success(), text))
}

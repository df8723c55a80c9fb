//! The C test program (`tests/c/capi_test.c`) compiled with gcc against the shared and
//! the static library, run plainly and under valgrind; the header compiled as C++17; and
//! the C program's verdicts compared with the same scene run through the Rust crates.
//!
//! A compiler or valgrind missing on this machine skips its test with a message
//! (`.ci/run` installs them, so CI runs every one).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use lagcomp::{
    BoneTransform, EntityId, EntityState, History, HistoryConfig, Hitbox, HitboxId, Pose, Quat,
    Rig, Shape, Tick, Vec3, Zone,
};
use lagcomp_validate::recording::{Recording, revalidate};
use lagcomp_validate::{
    ClaimedHit, ClientTiming, Participant, RenderTime, RuleSet, ShotClaim, Validator, Verdict,
    VerdictOutcome, WeaponId,
};

use crate::support::{crate_dir, library_dir, run, scratch_dir, tool};

const WARNINGS: [&str; 4] = ["-std=c11", "-Wall", "-Wextra", "-Werror"];

/// Compiles the C test program; `static_lib` picks the archive over the shared library.
fn compile(out: &Path, static_lib: bool) -> Option<PathBuf> {
    tool("gcc")?;
    let lib = library_dir();
    let exe = out.join(if static_lib {
        "capi_test_static"
    } else {
        "capi_test_shared"
    });
    let mut gcc = Command::new("gcc");
    gcc.args(WARNINGS)
        .arg("-I")
        .arg(crate_dir().join("include"))
        .arg(crate_dir().join("tests/c/capi_test.c"))
        .arg("-o")
        .arg(&exe);
    if static_lib {
        // The archive, then what Rust's standard library needs from the system.
        gcc.arg(lib.join("liblagcomp_capi.a")).args([
            "-lgcc_s",
            "-lutil",
            "-lrt",
            "-lpthread",
            "-lm",
            "-ldl",
            "-lc",
        ]);
    } else {
        gcc.arg("-L").arg(&lib).args(["-llagcomp_capi", "-lm"]);
    }
    run(&mut gcc, "gcc");
    Some(exe)
}

/// Runs the compiled program (with the shared library on its path), returns its verdict
/// lines.
fn verdicts_of(exe: &Path, out: &Path, wrapper: Option<&[&str]>) -> Vec<String> {
    let mut cmd = match wrapper {
        Some(w) => {
            let mut c = Command::new(w[0]);
            c.args(&w[1..]).arg(exe);
            c
        }
        None => Command::new(exe),
    };
    cmd.arg(out).env("LD_LIBRARY_PATH", library_dir());
    let stdout = run(&mut cmd, "the C test program");
    assert!(stdout.lines().any(|l| l == "ok"), "no ok line:\n{stdout}");
    stdout
        .lines()
        .filter(|l| l.starts_with("verdict "))
        .map(str::to_owned)
        .collect()
}

#[test]
fn c_program_against_the_shared_library_agrees_with_rust() {
    let out = scratch_dir("c_shared");
    let Some(exe) = compile(&out, false) else {
        return;
    };
    let from_c = verdicts_of(&exe, &out, None);
    assert_eq!(from_c, rust_verdicts());
    // The match recording the C program wrote replays to the same verdicts in Rust, and
    // the audit log holds one line per verdict.
    let file = std::fs::File::open(out.join("match.jsonl")).expect("the recording exists");
    let recording = Recording::read(std::io::BufReader::new(file)).expect("the recording reads");
    let replayed = revalidate(&recording, None, |_, _| {}).expect("the recording replays");
    assert_eq!(replayed.len(), from_c.len());
    for r in &replayed {
        assert!(
            r.recorded.is_some(),
            "claim on line {} has no verdict",
            r.line
        );
        assert!(
            !r.changed(),
            "line {}: {:?} became {:?}",
            r.line,
            r.recorded,
            r.verdict
        );
    }
    let audit = std::fs::read_to_string(out.join("audit.jsonl")).expect("the audit log exists");
    assert_eq!(audit.lines().count(), from_c.len());
    assert!(audit.lines().next().unwrap().contains("\"confirmed\""));
}

#[test]
fn c_program_against_the_static_library() {
    let out = scratch_dir("c_static");
    let Some(exe) = compile(&out, true) else {
        return;
    };
    assert_eq!(verdicts_of(&exe, &out, None), rust_verdicts());
}

#[test]
fn c_program_under_valgrind_reads_writes_and_frees_cleanly() {
    let out = scratch_dir("c_valgrind");
    if tool("valgrind").is_none() {
        return;
    }
    let Some(exe) = compile(&out, false) else {
        return;
    };
    let verdicts = verdicts_of(
        &exe,
        &out,
        Some(&[
            "valgrind",
            "--leak-check=full",
            "--errors-for-leak-kinds=definite,indirect,possible",
            "--error-exitcode=1",
            "--quiet",
        ]),
    );
    assert_eq!(verdicts, rust_verdicts());
}

#[test]
fn header_compiles_as_cpp17() {
    if tool("g++").is_none() {
        return;
    }
    let out = scratch_dir("cpp");
    let source = out.join("header_check.cpp");
    // Uses a few of the types so the compiler checks more than the declarations.
    std::fs::write(
        &source,
        "#include \"lagcomp.h\"\n\
         static_assert(sizeof(LagcompBoneTransform) == 48, \"bone layout\");\n\
         static_assert(sizeof(LagcompStatus) == 4, \"status width\");\n\
         int main() {\n\
           LagcompHistoryConfig config{};\n\
           LagcompHistory *history = nullptr;\n\
           if (lagcomp_history_config_default(&config) != LAGCOMP_OK) return 1;\n\
           if (lagcomp_history_new(&config, &history) != LAGCOMP_OK) return 1;\n\
           return lagcomp_history_free(history) == LAGCOMP_OK ? 0 : 1;\n\
         }\n",
    )
    .expect("write the C++ check");
    let exe = out.join("header_check");
    run(
        Command::new("g++")
            .args(["-std=c++17", "-Wall", "-Wextra", "-Werror", "-I"])
            .arg(crate_dir().join("include"))
            .arg(&source)
            .arg("-o")
            .arg(&exe)
            .arg("-L")
            .arg(library_dir())
            .arg("-llagcomp_capi"),
        "g++",
    );
    run(
        Command::new(&exe).env("LD_LIBRARY_PATH", library_dir()),
        "the C++ program",
    );
}

// --- the C program's scene, through the Rust crates ---

const TICK_RATE: f64 = 64.0;

fn time_of(tick: u32) -> f64 {
    f64::from(tick) / TICK_RATE
}

fn target_x(t: f64) -> f32 {
    (2.0 * t) as f32
}

fn soldier(x: f32, z: f32) -> [BoneTransform; 3] {
    [1.0, 1.35, 1.7].map(|y| BoneTransform::from_translation(Vec3::new(x, y, z)))
}

fn soldier_rig() -> Rig {
    Rig::new(
        3,
        vec![
            Hitbox::new(
                0,
                "pelvis",
                Zone::Torso,
                0,
                Shape::cuboid(Vec3::new(0.2, 0.1, 0.15)),
            ),
            Hitbox::new(
                1,
                "chest",
                Zone::Torso,
                1,
                Shape::capsule(0.2, 0.1, lagcomp::Axis::Y),
            ),
            Hitbox::new(2, "", Zone::Head, 2, Shape::sphere(0.12)),
        ],
    )
    .expect("a valid rig")
}

fn claim(shooter: EntityId, seq: u32, tick: u32, aim_at: Vec3) -> ShotClaim {
    ShotClaim {
        shooter,
        weapon: WeaponId(1),
        seq,
        render_time: RenderTime::Ticks {
            from: Tick(tick),
            to: Tick(tick + 1),
            fraction: 0.0,
        },
        origin: Vec3::new(0.0, 1.7, 0.0),
        direction: aim_at - Vec3::new(0.0, 1.7, 0.0),
        hit: None,
    }
}

/// The verdict lines `capi_test.c` prints, from its scene built with `lagcomp` and
/// `lagcomp_validate` directly.
pub(crate) fn rust_verdicts() -> Vec<String> {
    let mut history = History::new(HistoryConfig {
        tick_rate: TICK_RATE,
        max_rewind: 0.5,
    })
    .expect("a valid config");
    let rig = Arc::new(soldier_rig());
    let shooter = history.spawn(Arc::clone(&rig));
    let target = history.spawn(rig);
    let crate_rig = Rig::rigid(vec![Hitbox::new(
        9,
        "crate",
        Zone::Custom(5),
        0,
        Shape::cuboid(Vec3::splat(0.5)),
    )])
    .expect("a valid rig");
    let crate_id = history.spawn(Arc::new(crate_rig));
    let wall = (
        Shape::cuboid(Vec3::new(1.0, 1.5, 0.2)),
        Pose::new(Vec3::new(-3.0, 1.5, 20.0), Quat::IDENTITY),
    );
    history.add_static(wall.0, wall.1, 1).expect("a valid wall");
    history.add_static(wall.0, wall.1, 1).expect("a valid wall");
    let states: Vec<(EntityId, EntityState)> = [shooter, target, crate_id]
        .iter()
        .enumerate()
        .map(|(e, &id)| {
            let state = EntityState {
                user: e as u16,
                ..EntityState::default()
            };
            (id, state)
        })
        .collect();
    let defaults: Vec<_> = states
        .iter()
        .map(|&(id, _)| (id, EntityState::default()))
        .collect();
    for tick in 0..32 {
        let t = time_of(tick);
        let mut bones = Vec::new();
        bones.extend(soldier(0.0, 0.0));
        bones.extend(soldier(target_x(t), 10.0));
        bones.push(BoneTransform::from_translation(Vec3::new(5.0, 0.5, 5.0)));
        let mut frame = history.begin_frame(Tick(tick), t).expect("ticks increase");
        let batch = if tick % 2 == 1 { &defaults } else { &states };
        frame.record_all(batch, &bones).expect("a valid tick");
    }
    let rules = RuleSet::from_toml(
        "[weapons.rifle]\nid = 1\nmax_range = 250.0\nmin_interval = 0.02\n\
         aim_tolerance_deg = 30.0\norigin_tolerance = 1.0\nhit_leeway = 1.25\n\
         hit_leeway_min = 0.05\nmax_rewind = 0.35\n\
         damage = { head = 4.0, torso = 1.0, limb = 0.75 }\n",
    )
    .expect("valid rules");
    let mut validator = Validator::new(rules);
    validator.register(
        shooter,
        Participant {
            team: 1,
            aim_bone: 2,
            aim_forward: Vec3::Z,
        },
    );
    validator.register(
        target,
        Participant {
            team: 2,
            aim_bone: 2,
            aim_forward: Vec3::NEG_Z,
        },
    );
    validator
        .set_timing(
            shooter,
            ClientTiming {
                srtt: 0.1,
                rttvar: 0.005,
                interp_delay: 0.075,
            },
        )
        .expect("a valid timing");
    let mut head_shot = claim(shooter, 1, 20, Vec3::new(target_x(time_of(20)), 1.7, 10.0));
    head_shot.hit = Some(ClaimedHit {
        target,
        hitbox: Some(HitboxId(2)),
        point: None,
    });
    let mut nan = claim(shooter, 4, 26, Vec3::new(0.0, 0.0, 1.0));
    nan.direction.x = f32::NAN;
    let claims = [
        head_shot,
        head_shot,
        claim(shooter, 2, 22, Vec3::new(target_x(time_of(31)), 1.35, 10.0)),
        claim(shooter, 3, 24, Vec3::new(-3.0, 1.5, 20.0)),
        nan,
        claim(shooter, 5, 2, Vec3::new(0.0, 1.7, 10.0)),
        claim(crate_id, 1, 26, Vec3::new(0.0, 1.7, 10.0)),
    ];
    claims
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let RenderTime::Ticks { from, .. } = c.render_time else {
                unreachable!("every claim names ticks")
            };
            let received = if i == 5 { time_of(28) } else { time_of(from.0) } + 0.125;
            line(&validator.validate(&history, c, received))
        })
        .collect()
}

/// A verdict as `capi_test.c` prints it.
fn line(v: &Verdict) -> String {
    let (target, hitbox, damage, code, wall) = match v.outcome {
        VerdictOutcome::Confirmed(hit) => (
            hit.target.to_bits(),
            hit.hitbox.0,
            hit.damage_multiplier,
            0,
            0,
        ),
        VerdictOutcome::Rejected { reason } => (0, 0, 0.0, reason.code(), 0),
        VerdictOutcome::Refused {
            target, refusal, ..
        } => (target.to_bits(), 0, 0.0, refusal.code(), 0),
        VerdictOutcome::Blocked {
            by: lagcomp::Blocker::Wall(wall),
            ..
        } => (0, 0, 0.0, 0, wall.0),
        VerdictOutcome::Blocked {
            by: lagcomp::Blocker::Entity(entity),
            ..
        } => (entity.to_bits(), 0, 0.0, 0, u64::from(u32::MAX)),
        VerdictOutcome::Miss => (0, 0, 0.0, 0, 0),
    };
    format!(
        "verdict seq={} label={} code={code} target={target} hitbox={hitbox} damage={damage} \
         wall={wall}",
        v.seq,
        v.outcome.label(),
    )
}

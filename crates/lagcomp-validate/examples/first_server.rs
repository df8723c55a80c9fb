//! The user guide's first server (docs/book): a history, a rig with an eye bone, a second
//! of recorded ticks, a validator with both players added, and one shot judged.
//!
//! Run: `cargo run -p lagcomp-validate --example first_server`
//!
//! It also shows what a timing in milliseconds gives (refused by `add_player`), what each
//! step forgotten by hand gives (`unknown_shooter`, `no_timing`) and what an aim bone that
//! is not the eye gives (`origin_too_far`), and asserts every verdict.
//!
//! Units everywhere: seconds and metres; +Y is up, a view looks along its bone's -Z.

// ANCHOR: all
// ANCHOR: imports
use std::sync::Arc;

use lagcomp::{
    BoneTransform, EntityId, EntityState, History, HistoryConfig, Hitbox, HitboxId, Pose, Quat,
    Rig, Shape, Tick, Vec3, Zone,
};
use lagcomp_validate::{
    AddPlayerError, ClaimedHit, ClientTiming, Participant, RejectReason, RenderTime, RuleSet,
    ShotClaim, Validator, VerdictOutcome, WeaponId,
};
// ANCHOR_END: imports

// ANCHOR: rig
/// Server ticks per second.
const TICK_RATE: f64 = 64.0;

/// Bone 0: the pelvis, carrying the body box.
const PELVIS: u16 = 0;
/// Bone 1: the head, carrying the head sphere.
const HEAD_BONE: u16 = 1;
/// Bone 2: the eye. No hitbox; its origin is where shots start and its rotation is the
/// view. The validator's origin and angle checks read this bone.
const EYE: u16 = 2;
/// How many bones each player records per tick.
const BONES: u16 = 3;

/// The body box's id, as claims name it (ids are the game's choice, unique in the rig).
const BODY: HitboxId = HitboxId(0);
/// The head sphere's id.
const HEAD: HitboxId = HitboxId(1);

/// Every player's rig: a body box on the pelvis, a head sphere on the head, a bare eye.
fn player_rig() -> Result<Rig, lagcomp::RigError> {
    Rig::new(
        BONES,
        vec![
            // Half extents: 0.25 m wide, 0.4 m tall, 0.15 m deep on each side of the bone.
            Hitbox::on_bone(
                PELVIS,
                BODY,
                "body",
                Zone::Torso,
                Shape::cuboid(Vec3::new(0.25, 0.4, 0.15)),
            ),
            Hitbox::on_bone(HEAD_BONE, HEAD, "head", Zone::Head, Shape::sphere(0.12)),
        ],
    )
}

/// Every bone of a player standing at `feet` and looking at `look_at`, world space.
fn player_bones(feet: Vec3, look_at: Vec3) -> [BoneTransform; BONES as usize] {
    let eye = feet + Vec3::new(0.0, 1.65, 0.0);
    // The view turns the eye bone's -Z onto the line of sight.
    let view = Quat::from_rotation_arc(Vec3::NEG_Z, (look_at - eye).normalize());
    [
        BoneTransform::from_translation(feet + Vec3::new(0.0, 1.0, 0.0)),
        BoneTransform::from_translation(feet + Vec3::new(0.0, 1.6, 0.0)),
        BoneTransform::new(eye, view),
    ]
}
// ANCHOR_END: rig

// ANCHOR: world
/// Where the shooter stands: still, at the origin.
const SHOOTER_FEET: Vec3 = Vec3::ZERO;

/// Where the target's feet are at server time `time`: 20 m ahead (-Z), strafing along +X
/// at 2 m/s.
fn target_feet(time: f64) -> Vec3 {
    Vec3::new(-1.0 + 2.0 * time as f32, 0.0, -20.0)
}

/// Where the target's head sphere is centred at `time`.
fn target_head(time: f64) -> Vec3 {
    target_feet(time) + Vec3::new(0.0, 1.6, 0.0)
}

/// Top of the low wall in front of the target, metres: above its pelvis, below its head.
const WALL_TOP: f32 = 1.2;

/// The level's static geometry, added once before the match: a low wall 20 m wide and
/// 20 cm thick, 1 m in front of the target's line. Its layers (`u32::MAX`) block every
/// trace.
fn add_level(history: &mut History) -> Result<(), lagcomp::StaticError> {
    history.add_static(
        Shape::cuboid(Vec3::new(10.0, WALL_TOP / 2.0, 0.1)),
        Pose::from_translation(Vec3::new(0.0, WALL_TOP / 2.0, -19.0)),
        u32::MAX,
    )?;
    Ok(())
}
// ANCHOR_END: world

// ANCHOR: rules
/// The rules the server plays with (see the guide's "Weapons and rules" chapter).
const RULES: &str = r#"
[weapons.rifle]
id = 1
max_range = 250.0          # metres
min_interval = 0.1         # seconds between two shots of one shooter
aim_tolerance_deg = 5.0    # degrees between the shot and the eye bone's view
origin_tolerance = 0.5     # metres between the claimed muzzle and the eye bone
hit_leeway = 1.25
hit_leeway_min = 0.05      # metres
max_rewind = 0.35          # seconds
damage = { head = 4.0, torso = 1.0, limb = 0.75 }
"#;

/// The rifle's id, as claims name it.
const RIFLE: WeaponId = WeaponId(1);
// ANCHOR_END: rules

/// The players and the recorded history.
struct Match {
    history: History,
    shooter: EntityId,
    target: EntityId,
}

// ANCHOR: record
/// Spawns both players and records one second of ticks (0 to 64).
fn record_match() -> Result<Match, Box<dyn std::error::Error>> {
    // Half a second of history: the oldest moment any shot can be judged at.
    let mut history = History::new(HistoryConfig {
        tick_rate: TICK_RATE,
        max_rewind: 0.5,
    })?;
    let rig = Arc::new(player_rig()?);
    let shooter = history.spawn(Arc::clone(&rig));
    let target = history.spawn(rig);
    add_level(&mut history)?;

    for tick in 0..=64_u32 {
        let time = f64::from(tick) / TICK_RATE;
        let mut frame = history.begin_frame(Tick(tick), time)?;
        // The shooter keeps its eye on the target's head; the target looks back.
        let shooter_bones = player_bones(SHOOTER_FEET, target_head(time));
        let target_bones = player_bones(target_feet(time), SHOOTER_FEET);
        frame.record(shooter, &shooter_bones, EntityState::default())?;
        frame.record(target, &target_bones, EntityState::default())?;
        // Dropping the frame (or `frame.finish()`) ends the tick.
    }
    Ok(Match {
        history,
        shooter,
        target,
    })
}
// ANCHOR_END: record

// ANCHOR: setup
/// What the server measured about the shooter's connection: 100 ms round trip varying by
/// 5 ms, and its client draws others 100 ms in the past. Seconds, not milliseconds.
const SHOOTER_TIMING: ClientTiming = ClientTiming {
    srtt: 0.100,
    rttvar: 0.005,
    interp_delay: 0.100,
};

/// The target's connection: 60 ms round trip varying by 3 ms, the same delay.
const TARGET_TIMING: ClientTiming = ClientTiming {
    srtt: 0.060,
    rttvar: 0.003,
    interp_delay: 0.100,
};

/// A validator with both players added: their team, their eye bone and their timing, each
/// checked (both were spawned in the history already).
fn set_up_validator(m: &Match) -> Result<Validator, Box<dyn std::error::Error>> {
    let mut validator = Validator::new(RuleSet::from_toml(RULES)?);
    // The eye is bone 2 of the rig, looking along the bone's -Z.
    let blue = Participant {
        team: 1,
        aim_bone: EYE,
        aim_forward: Vec3::NEG_Z,
    };
    validator.add_player(&m.history, m.shooter, blue, SHOOTER_TIMING)?;
    let red = Participant { team: 2, ..blue };
    validator.add_player(&m.history, m.target, red, TARGET_TIMING)?;
    Ok(validator)
}
// ANCHOR_END: setup

// ANCHOR: claim
/// The shot the shooter's client sends: fired at the target's head as its screen showed
/// it, arriving at the server at `received_at`.
fn head_shot(m: &Match, received_at: f64) -> ShotClaim {
    // The client drew the world half a round trip plus its interpolation delay ago.
    let drawn_at = received_at - SHOOTER_TIMING.expected_rewind();
    // The two ticks it was drawing between, and how far between them.
    let from = (drawn_at * TICK_RATE).floor();
    let render_time = RenderTime::Ticks {
        from: Tick(from as u32),
        to: Tick(from as u32 + 1),
        fraction: (drawn_at * TICK_RATE - from) as f32,
    };
    let eye = SHOOTER_FEET + Vec3::new(0.0, 1.65, 0.0);
    ShotClaim {
        shooter: m.shooter,
        weapon: RIFLE,
        seq: 0,
        render_time,
        origin: eye,
        direction: target_head(drawn_at) - eye,
        hit: Some(ClaimedHit {
            target: m.target,
            hitbox: Some(HEAD),
            point: None,
        }),
    }
}
// ANCHOR_END: claim

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let m = record_match()?;
    // The shot arrives with the newest tick: server time 1 s.
    let received_at = 1.0;

    // ANCHOR: validate
    let mut validator = set_up_validator(&m)?;
    let claim = head_shot(&m, received_at);
    let verdict = validator.validate(&m.history, &claim, received_at);
    match verdict.outcome {
        VerdictOutcome::Confirmed(hit) => println!(
            "confirmed: {:?} hit, damage x{}, {:.2} m away, judged at t = {:.4} s",
            hit.zone,
            hit.damage_multiplier,
            hit.distance,
            verdict.basis.time_used.unwrap_or(f64::NAN),
        ),
        VerdictOutcome::Miss => println!("miss"),
        VerdictOutcome::Blocked { distance, .. } => {
            println!("blocked by a wall {distance:.2} m out")
        }
        VerdictOutcome::Rejected { reason } => println!("rejected: {reason}"),
        // Spawn protection or a dodge: a good shot, but no damage.
        VerdictOutcome::Refused { refusal, .. } => println!("refused: {refusal}"),
    }
    // ANCHOR_END: validate
    let VerdictOutcome::Confirmed(hit) = verdict.outcome else {
        return Err(format!("the honest shot was {}", verdict.outcome.label()).into());
    };
    assert_eq!((hit.target, hit.zone), (m.target, Zone::Head));
    assert_eq!(hit.damage_multiplier, 4.0);

    // ANCHOR: forgotten
    // A round trip in milliseconds: refused when the player is added, nothing set.
    let mut in_ms = Validator::new(RuleSet::from_toml(RULES)?);
    let eye = Participant {
        team: 1,
        aim_bone: EYE,
        aim_forward: Vec3::NEG_Z,
    };
    let timing_in_ms = ClientTiming {
        srtt: 100.0,
        ..SHOOTER_TIMING
    };
    let refused = in_ms.add_player(&m.history, m.shooter, eye, timing_in_ms);
    let Err(error @ AddPlayerError::Timing(_)) = refused else {
        return Err(format!("a timing in milliseconds was {refused:?}").into());
    };
    assert_eq!(in_ms.timing(m.shooter), None);
    println!("srtt = 100.0:       {error}");

    // The two steps `add_player` does, done by hand, each forgotten in turn.
    // Forgot `register`: every shot of this shooter is refused.
    let mut unregistered = Validator::new(RuleSet::from_toml(RULES)?);
    unregistered.set_timing(m.shooter, SHOOTER_TIMING)?;
    let v = unregistered.validate(&m.history, &claim, received_at);
    assert_eq!(v.outcome.reason(), Some(RejectReason::UnknownShooter));
    println!("without register:   {}", v.outcome.label());

    // Forgot `set_timing`: the server cannot tell an honest rewind from backtracking.
    let mut untimed = validator_without_timing(&m)?;
    let v = untimed.validate(&m.history, &claim, received_at);
    assert_eq!(v.outcome.reason(), Some(RejectReason::NoTiming));
    println!("without set_timing: {}", v.outcome.label());

    // The aim bone is the pelvis instead of the eye: the muzzle is 0.65 m from it. A bone
    // of the rig, so `add_player` cannot tell; every shot says so.
    let mut wrong_bone = set_up_validator(&m)?;
    let pelvis = Participant {
        aim_bone: PELVIS,
        ..eye
    };
    wrong_bone.add_player(&m.history, m.shooter, pelvis, SHOOTER_TIMING)?;
    let v = wrong_bone.validate(&m.history, &claim, received_at);
    assert_eq!(v.outcome.reason(), Some(RejectReason::OriginTooFar));
    println!("aim bone at pelvis: {}", v.outcome.label());
    // ANCHOR_END: forgotten

    // ANCHOR: blocked
    // The same moment, aimed at the pelvis (1 m up): the low wall is in the way.
    let mut low = head_shot(&m, received_at);
    low.direction += Vec3::new(0.0, -0.6, 0.0);
    low.hit = None;
    let v = set_up_validator(&m)?.validate(&m.history, &low, received_at);
    assert!(
        matches!(v.outcome, VerdictOutcome::Blocked { .. }),
        "{:?}",
        v.outcome
    );
    println!("at the pelvis:      {}", v.outcome.label());
    // ANCHOR_END: blocked
    Ok(())
}

/// Both players registered, no timing set.
fn validator_without_timing(m: &Match) -> Result<Validator, Box<dyn std::error::Error>> {
    let mut validator = Validator::new(RuleSet::from_toml(RULES)?);
    validator.register(
        m.shooter,
        Participant {
            team: 1,
            aim_bone: EYE,
            aim_forward: Vec3::NEG_Z,
        },
    );
    Ok(validator)
}
// ANCHOR_END: all

//! The same scene recorded and judged through the plugin and through the core directly
//! gives the same verdicts, bit for bit.

use std::sync::Arc;

use bevy_ecs::prelude::*;
use bevy_transform::components::Transform;
use lagcomp::{BoneTransform, EntityState, History, HistoryConfig, Pose, Rig, Shape, Tick, Vec3};
use lagcomp_bevy::{ClaimedTarget, LagCompHistory, ShotFired, ShotJudged};
use lagcomp_validate::{
    ClaimedHit, Participant, RejectReason, RenderTime, ShotClaim, Validator, Verdict,
    VerdictOutcome,
};

use crate::support::{self, RIFLE, TICK_RATE, time_of};

const TICKS: u32 = 300;
const SHOOTER_AT: Vec3 = Vec3::new(0.0, 0.0, 10.0);
/// Where shots start: within the rules' origin tolerance of the shooter's bone.
const EYE: Vec3 = Vec3::new(0.0, 0.3, 10.0);

/// Where each of the three targets stands at `tick`: one strafing, one still, one behind
/// the wall.
fn targets_at(tick: u32) -> [Vec3; 3] {
    let t = time_of(tick) as f32;
    [
        Vec3::new(-2.0 + 3.0 * t, 0.0, 0.0),
        Vec3::new(3.0, 0.0, 0.0),
        Vec3::new(6.0, 0.0, 0.0),
    ]
}

/// A wall between the shooter and the third target.
fn wall() -> (Shape, Pose) {
    (
        Shape::cuboid(Vec3::new(0.5, 2.0, 0.1)),
        Pose::from_translation(Vec3::new(3.0, 1.0, 5.0)),
    )
}

/// The shot fired in the tick `tick` arrives in, if any: at which target (by index) or
/// nowhere, claimed at which render time, and with which sequence number.
struct Shot {
    target: Option<usize>,
    aim: Vec3,
    render_time: f64,
    seq: u32,
}

fn shot_in(tick: u32) -> Option<Shot> {
    if tick < 20 || !tick.is_multiple_of(20) {
        return None;
    }
    let n = (tick - 20) / 20;
    // Honest clients see 150 ms back; every fourth shot backtracks, claiming 320 ms.
    let lag = if n % 4 == 3 { 0.32 } else { 0.15 };
    let render_time = time_of(tick) - lag;
    let render_tick = render_time * TICK_RATE;
    let (from, to) = (render_tick.floor() as u32, render_tick.floor() as u32 + 1);
    let fraction = (render_tick - render_tick.floor()) as f32;
    let target = (n % 3) as usize;
    // Where the target's torso was then (interpolated as the client drew it).
    let [a, b] = [targets_at(from)[target], targets_at(to)[target]];
    let aim = a.lerp(b, fraction) + Vec3::Y * 0.9;
    Some(Shot {
        // Every fifth shot aims a metre wide and claims nothing; the sixth, at the target
        // behind the wall, claims nothing either (its client saw the wall).
        target: (n % 5 != 4 && n != 5).then_some(target),
        aim: if n % 5 == 4 { aim + Vec3::X } else { aim },
        render_time,
        // The seventh shot replays the sixth's number.
        seq: if n == 6 { 5 } else { n },
    })
}

fn claim_parts(shot: &Shot) -> (RenderTime, Vec3, Vec3) {
    (RenderTime::Time(shot.render_time), EYE, shot.aim - EYE)
}

/// The verdicts through the plugin, as messages, and as events on the shooter.
fn through_plugin() -> (Vec<ShotJudged>, Vec<ShotJudged>) {
    let mut app = support::app();
    #[derive(Resource, Default)]
    struct Observed(Vec<ShotJudged>);
    app.init_resource::<Observed>();
    let (shape, pose) = wall();
    app.world_mut()
        .resource_mut::<LagCompHistory>()
        .add_static(shape, pose, u32::MAX)
        .expect("a valid wall");
    let shooter = app
        .world_mut()
        .spawn(support::shooter(SHOOTER_AT, Vec3::NEG_Z))
        .observe(|judged: On<ShotJudged>, mut observed: ResMut<Observed>| {
            observed.0.push(*judged.event());
        })
        .id();
    let targets: Vec<Entity> = targets_at(0)
        .iter()
        .map(|&at| {
            app.world_mut()
                .spawn((Transform::from_translation(at), support::player()))
                .id()
        })
        .collect();
    for tick in 0..TICKS {
        for (i, at) in targets_at(tick).into_iter().enumerate() {
            app.world_mut()
                .get_mut::<Transform>(targets[i])
                .expect("a target")
                .translation = at;
        }
        if let Some(shot) = shot_in(tick) {
            let (render_time, origin, direction) = claim_parts(&shot);
            app.world_mut().write_message(ShotFired {
                shooter,
                weapon: RIFLE,
                seq: shot.seq,
                render_time,
                origin,
                direction,
                hit: shot.target.map(|i| ClaimedTarget {
                    entity: targets[i],
                    hitbox: None,
                    point: None,
                }),
                received_at: None,
            });
        }
        support::tick(&mut app);
    }
    let messages = std::mem::take(&mut app.world_mut().resource_mut::<support::Judged>().0);
    let observed = std::mem::take(&mut app.world_mut().resource_mut::<Observed>().0);
    (messages, observed)
}

/// The same scene through lagcomp and lagcomp-validate alone.
fn through_core() -> Vec<Verdict> {
    let mut history = History::new(HistoryConfig {
        tick_rate: TICK_RATE,
        max_rewind: 0.5,
    })
    .expect("a valid config");
    let (shape, pose) = wall();
    history
        .add_static(shape, pose, u32::MAX)
        .expect("a valid wall");
    let rig = Arc::new(Rig::rigid(support::player_hitboxes()).expect("a valid rig"));
    let shooter = history.spawn(rig.clone());
    let targets: Vec<_> = (0..3).map(|_| history.spawn(rig.clone())).collect();
    let mut validator = Validator::new(support::rules());
    validator.register(
        shooter,
        Participant {
            team: 1,
            aim_bone: 0,
            aim_forward: Vec3::NEG_Z,
        },
    );
    validator
        .set_timing(shooter, support::timing())
        .expect("a valid timing");
    let mut verdicts = Vec::new();
    for tick in 0..TICKS {
        let mut frame = history
            .begin_frame(Tick(tick), time_of(tick))
            .expect("ticks increase");
        frame
            .record_rigid(
                shooter,
                BoneTransform::from_translation(SHOOTER_AT),
                EntityState::default(),
            )
            .expect("a valid pose");
        for (i, at) in targets_at(tick).into_iter().enumerate() {
            frame
                .record_rigid(
                    targets[i],
                    BoneTransform::from_translation(at),
                    EntityState::default(),
                )
                .expect("a valid pose");
        }
        frame.finish();
        if let Some(shot) = shot_in(tick) {
            let (render_time, origin, direction) = claim_parts(&shot);
            let claim = ShotClaim {
                shooter,
                weapon: RIFLE,
                seq: shot.seq,
                render_time,
                origin,
                direction,
                hit: shot.target.map(|i| ClaimedHit {
                    target: targets[i],
                    hitbox: None,
                    point: None,
                }),
            };
            verdicts.push(validator.validate(&history, &claim, time_of(tick)));
        }
    }
    verdicts
}

#[test]
fn plugin_and_core_give_the_same_verdicts() {
    let (messages, observed) = through_plugin();
    let core = through_core();
    assert_eq!(messages.len(), core.len());
    for (plugin, core) in messages.iter().zip(&core) {
        assert_eq!(plugin.verdict, *core, "seq {}", core.seq);
    }
    // The scene exercises every kind of outcome, so the comparison means something.
    let labels: Vec<&str> = core.iter().map(|v| v.outcome.label()).collect();
    for expected in ["confirmed", "miss", "blocked", "replayed", "backtrack"] {
        assert!(labels.contains(&expected), "no {expected} among {labels:?}");
    }
    assert!(
        core.iter()
            .any(|v| v.outcome.reason() == Some(RejectReason::Replayed))
    );
    // The event on the shooter carries the same verdicts, in the same order.
    assert_eq!(observed, messages);
    // A confirmed hit names the Bevy entity hit.
    for judged in &messages {
        if let VerdictOutcome::Confirmed(_) = judged.verdict.outcome {
            assert!(judged.target.is_some());
        }
    }
}

//! Debug drawing (feature `debug-draw`): the lines produced for a known verdict.

use bevy_ecs::prelude::*;
use bevy_transform::components::Transform;
use lagcomp::{Hitbox, Shape, Vec3, Zone};
use lagcomp_bevy::{
    ClaimedTarget, Hitboxes, LagCompPlugin, ShotFired, ShotSketches, SketchLine, SketchPart,
};
use lagcomp_validate::{RenderTime, VerdictOutcome};

use crate::support::{self, RIFLE, TICK_RATE, assert_near, time_of};

const SHOOTER_AT: Vec3 = Vec3::new(0.0, 0.0, 10.0);
const EYE: Vec3 = Vec3::new(0.0, 0.3, 10.0);
/// The target's one hitbox: a ball this big, 1 m above its feet.
const RADIUS: f32 = 0.4;
const CHEST: Vec3 = Vec3::new(0.0, 1.0, 0.0);
/// The target's size along x: a box 0.2 m across.
const HALF_BOX: Vec3 = Vec3::new(0.1, 0.3, 0.1);

/// Where the target's feet are at `tick`: walking along +x at 3.2 m/s.
fn target_at(tick: u32) -> Vec3 {
    Vec3::new(0.05 * tick as f32, 0.0, 0.0)
}

/// The tick shot `n` (from 0) is fired in: every fourth from tick 20 (the rules' rifle
/// fires at most every 50 ms, 3.2 ticks).
fn shot_tick(n: u32) -> u32 {
    20 + 4 * n
}

/// A scene of a shooter and a target with a ball and a box, and `shots` shots, each at
/// where the target's ball was 8 ticks before it is fired (the shooter's view): the app
/// once the last shot is judged, the shooter and the target.
fn judged_scene(sketched: usize, shots: u32) -> (bevy_app::App, Entity, Entity) {
    let mut app = bevy_app::App::new();
    app.add_plugins(
        LagCompPlugin::new(TICK_RATE, 0.5)
            .expect("a valid config")
            .rules(support::rules())
            .sketch_shots(sketched),
    );
    let shooter = app
        .world_mut()
        .spawn(support::shooter(SHOOTER_AT, Vec3::NEG_Z))
        .id();
    let hitboxes = Hitboxes::rigid(vec![
        Hitbox::new(0, "chest", Zone::Torso, 0, Shape::sphere(RADIUS)).offset_by(CHEST),
        Hitbox::new(1, "feet", Zone::Limb, 0, Shape::cuboid(HALF_BOX)),
    ])
    .expect("a valid rig");
    let target = app
        .world_mut()
        .spawn((Transform::from_translation(target_at(0)), hitboxes))
        .id();
    for tick in 0..=shot_tick(shots - 1) {
        app.world_mut()
            .get_mut::<Transform>(target)
            .expect("the target")
            .translation = target_at(tick);
        if tick >= 20 && (tick - 20).is_multiple_of(4) {
            let seen = tick - 8;
            let aim = target_at(seen) + CHEST - EYE;
            let shot = shot_at(shooter, target, tick, seen, aim);
            app.world_mut().write_message(shot);
        }
        support::tick(&mut app);
    }
    (app, shooter, target)
}

/// A rifle shot from the eye along `direction`, numbered `seq`, claiming to hit `target`
/// as the shooter saw it at tick `seen`.
fn shot_at(shooter: Entity, target: Entity, seq: u32, seen: u32, direction: Vec3) -> ShotFired {
    ShotFired {
        shooter,
        weapon: RIFLE,
        seq,
        render_time: RenderTime::Time(time_of(seen)),
        origin: EYE,
        direction,
        hit: Some(ClaimedTarget {
            entity: target,
            hitbox: None,
            point: None,
        }),
        received_at: None,
    }
}

/// The lines of `part`.
fn of(lines: &[SketchLine], part: SketchPart) -> Vec<SketchLine> {
    lines.iter().filter(|l| l.part == part).copied().collect()
}

/// Asserts every end of `lines` is `radius` from `center` (a sphere's great circles), and
/// that the lines reach all round it (their ends span the ball in every axis).
#[track_caller]
fn assert_on_sphere(lines: &[SketchLine], center: Vec3, radius: f32) {
    let (mut lo, mut hi) = (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN));
    for end in lines.iter().flat_map(|l| [l.from, l.to]) {
        let off = (end.distance(center) - radius).abs();
        assert!(off < 1e-4, "{end} is {off} off the sphere at {center}");
        lo = lo.min(end);
        hi = hi.max(end);
    }
    assert_near(lo, center - radius, 1e-4);
    assert_near(hi, center + radius, 1e-4);
}

#[test]
fn a_confirmed_shot_is_drawn_with_its_target_then_and_now_and_the_ray() {
    let (app, shooter, target) = judged_scene(4, 1);
    let sketches = app.world().resource::<ShotSketches>();
    assert_eq!(sketches.len(), 1);
    let shot = sketches.shots().next().expect("one shot");
    assert_eq!(shot.shooter, Some(shooter));
    assert_eq!(shot.target, Some(target));
    assert_eq!(shot.outcome, "confirmed");
    assert_eq!(shot.present.len(), 2);
    assert_eq!(shot.rewound.len(), 2);

    let mut lines = Vec::new();
    sketches.lines(&mut lines);
    // The ray: from the eye towards the ball as the shooter saw it (tick 12), stopping on
    // its surface.
    let ray = of(&lines, SketchPart::Ray);
    assert_eq!(ray.len(), 1);
    assert_near(ray[0].from, EYE, 0.0);
    let seen = target_at(12) + CHEST;
    let towards = (seen - EYE).normalize();
    assert_near((ray[0].to - EYE).normalize(), towards, 1e-5);
    assert!(
        (ray[0].to.distance(seen) - RADIUS).abs() < 1e-3,
        "the ray ends on the ball's surface, {} from its centre",
        ray[0].to.distance(seen)
    );

    // Three great circles and twelve edges, now and then.
    let present = of(&lines, SketchPart::Present);
    let rewound = of(&lines, SketchPart::Rewound);
    assert_eq!(present.len(), 3 * 16 + 12);
    assert_eq!(rewound.len(), present.len());
    // The ball where the newest frame (tick 20) has it, and where tick 12 had it.
    assert_on_sphere(&present[..48], target_at(20) + CHEST, RADIUS);
    assert_on_sphere(&rewound[..48], target_at(12) + CHEST, RADIUS);
    // The box: every edge one of its 12, between corners of the box at each moment.
    for (edges, feet) in [
        (&present[48..], target_at(20)),
        (&rewound[48..], target_at(12)),
    ] {
        for edge in edges {
            for end in [edge.from, edge.to] {
                assert_near((end - feet).abs(), HALF_BOX, 1e-5);
            }
            let along = (edge.to - edge.from).abs();
            assert_eq!(
                along.cmpgt(Vec3::splat(1e-4)).bitmask().count_ones(),
                1,
                "an edge runs along one axis: {edge:?}"
            );
        }
    }
    // Then and now are 8 ticks of walking apart.
    assert!(
        (target_at(20).x - target_at(12).x - 0.4).abs() < 1e-5,
        "the scene moves the target 0.4 m"
    );
}

#[test]
fn only_the_last_shots_are_kept_oldest_first() {
    let (app, _, _) = judged_scene(3, 5);
    let sketches = app.world().resource::<ShotSketches>();
    assert_eq!(sketches.keep(), 3);
    let kept: Vec<Vec3> = sketches.shots().map(|shot| shot.direction).collect();
    // Shots 2, 3 and 4 (each aimed at where the ball was 8 ticks before it was fired).
    let expected: Vec<Vec3> = (2..5)
        .map(|n| (target_at(shot_tick(n) - 8) + CHEST - EYE).normalize())
        .collect();
    assert_eq!(kept.len(), 3);
    for (got, want) in kept.iter().zip(&expected) {
        assert_near(*got, *want, 1e-6);
    }
    assert!(sketches.shots().all(|shot| shot.outcome == "confirmed"));
}

#[test]
fn a_miss_is_drawn_to_the_weapons_range_with_the_claimed_target() {
    let mut app = support::app();
    let shooter = app
        .world_mut()
        .spawn(support::shooter(SHOOTER_AT, Vec3::NEG_Z))
        .id();
    let target = app
        .world_mut()
        .spawn((Transform::from_xyz(3.0, 0.0, 0.0), support::player()))
        .id();
    for _ in 0..20 {
        support::tick(&mut app);
    }
    // Straight up, far from anything.
    let shot = shot_at(shooter, target, 1, 15, Vec3::Y * 2.0);
    app.world_mut().write_message(shot);
    support::tick(&mut app);
    let sketches = app.world().resource::<ShotSketches>();
    assert_eq!(sketches.keep(), ShotSketches::DEFAULT_KEEP);
    let shot = sketches.shots().next().expect("one shot");
    let judged = app.world().resource::<support::Judged>().0[0];
    assert!(!matches!(
        judged.verdict.outcome,
        VerdictOutcome::Confirmed(_)
    ));
    assert_eq!(shot.outcome, judged.verdict.outcome.label());
    assert_eq!(shot.target, Some(target));
    let mut lines = Vec::new();
    sketches.lines(&mut lines);
    let ray = of(&lines, SketchPart::Ray);
    // The rules' rifle reaches 200 m.
    assert_near(ray[0].to, EYE + Vec3::Y * 200.0, 1e-3);
    // The claimed target is drawn now (its torso box and head ball).
    assert_eq!(of(&lines, SketchPart::Present).len(), 12 + 48);
}

//! Tests of the projectile module: the integrator's numbers and determinism, rewound
//! flights, the server's set, and client claims.

use std::sync::Arc;

use glam::Vec3;

use super::*;
use crate::history::{EntityId, EntityRole, EntityState, History, HistoryConfig};
use crate::math::{BoneTransform, Pose};
use crate::query::Ray;
use crate::rig::{Hitbox, HitboxId, Rig, Shape, Zone};
use crate::time::{RewindError, RewindTarget, Tick, WindowSide};
use crate::world::{StaticId, StaticWorld, WorldHit};

const RATE: f64 = 64.0;
const DT: f32 = 1.0 / 64.0;

/// A history at 64 Hz keeping `max_rewind` seconds.
fn history(max_rewind: f64) -> History {
    History::new(HistoryConfig {
        tick_rate: RATE,
        max_rewind,
    })
    .expect("valid config")
}

/// A 0.6 x 1.8 x 0.6 m body (hitbox 0) standing on its bone.
fn body() -> Arc<Rig> {
    Arc::new(
        Rig::rigid(vec![Hitbox::new(
            0,
            "body",
            Zone::Torso,
            0,
            Shape::cuboid(Vec3::new(0.3, 0.9, 0.3)),
        )])
        .expect("valid rig"),
    )
}

/// Records ticks `0..=last`, each entity where `place(entity, time)` puts it.
fn record(history: &mut History, ids: &[EntityId], last: u32, place: impl Fn(usize, f64) -> Vec3) {
    for tick in 0..=last {
        let time = f64::from(tick) / RATE;
        let mut frame = history.begin_frame(Tick(tick), time).expect("in order");
        for (i, &id) in ids.iter().enumerate() {
            let pose = BoneTransform::from_translation(place(i, time));
            frame
                .record_rigid(id, pose, EntityState::default())
                .expect("valid pose");
        }
    }
}

fn shot(fired_at: f64, origin: Vec3, direction: Vec3, flight: Flight) -> ProjectileShot {
    ProjectileShot {
        fired_at: RewindTarget::at(fired_at),
        origin,
        direction,
        flight,
        shooter: None,
        layers: u32::MAX,
    }
}

fn bullet() -> Flight {
    Flight::new(400.0, Vec3::new(0.0, -9.81, 0.0), 0.0005, 0.01, DT, 2.0).expect("valid")
}

fn rocket() -> Flight {
    Flight::new(25.0, Vec3::ZERO, 0.0, 0.15, DT, 2.0).expect("valid")
}

fn struck_entity(impact: &ProjectileImpact) -> Option<EntityId> {
    match impact.struck {
        Struck::Entity(hit) => Some(hit.entity),
        _ => None,
    }
}

fn bits(state: &FlightState) -> [u32; 6] {
    let [a, b, c] = state.position.to_array().map(f32::to_bits);
    let [d, e, f] = state.velocity.to_array().map(f32::to_bits);
    [a, b, c, d, e, f]
}

// ---- The flight model and its integrator ----

#[test]
fn a_drag_free_flight_lands_on_the_parabola_exactly() {
    // 64 m/s along x, 8 m/s^2 down, 1/8 s steps: every number is a short binary fraction,
    // so the parabola origin + v0 t + g t^2 / 2 comes out exactly. Worked by hand:
    // (step, position, velocity).
    let flight = Flight::new(64.0, Vec3::new(0.0, -8.0, 0.0), 0.0, 0.0, 0.125, 4.0).unwrap();
    let mut state = flight.launch(Vec3::new(1.0, 2.0, 3.0), Vec3::X).unwrap();
    let pins = [
        // t = 0.125: x = 1 + 8, y = 2 - 4 * 0.015625
        (1, Vec3::new(9.0, 1.9375, 3.0), Vec3::new(64.0, -1.0, 0.0)),
        // t = 0.5: y = 2 - 4 * 0.25
        (4, Vec3::new(33.0, 1.0, 3.0), Vec3::new(64.0, -4.0, 0.0)),
        // t = 1: y = 2 - 4
        (8, Vec3::new(65.0, -2.0, 3.0), Vec3::new(64.0, -8.0, 0.0)),
        // t = 2: y = 2 - 16
        (
            16,
            Vec3::new(129.0, -14.0, 3.0),
            Vec3::new(64.0, -16.0, 0.0),
        ),
    ];
    let mut at = 0;
    for (step, position, velocity) in pins {
        while at < step {
            state = flight.advance(&state);
            at += 1;
        }
        assert_eq!(state.step, step);
        assert_eq!(state.position, position, "step {step}");
        assert_eq!(state.velocity, velocity, "step {step}");
    }
    // Straight up at 20 m/s under 10 m/s^2 with 1/4 s steps: the apex, 20 m, at 2 s.
    let flight = Flight::new(20.0, Vec3::new(0.0, -10.0, 0.0), 0.0, 0.0, 0.25, 4.0).unwrap();
    let mut state = flight.launch(Vec3::ZERO, Vec3::Y * 3.0).unwrap();
    for _ in 0..8 {
        state = flight.advance(&state);
    }
    assert_eq!(
        (state.position, state.velocity),
        (Vec3::new(0.0, 20.0, 0.0), Vec3::ZERO)
    );
}

#[test]
fn an_off_axis_flight_follows_the_parabola_closely() {
    let gravity = Vec3::new(0.0, -9.81, 0.0);
    let flight = Flight::new(300.0, gravity, 0.0, 0.0, 1.0 / 60.0, 3.0).unwrap();
    let direction = Vec3::new(1.0, 0.2, -0.5);
    let mut state = flight.launch(Vec3::ZERO, direction).unwrap();
    let v0 = direction.normalize() * 300.0;
    for step in 1..=180_u32 {
        state = flight.advance(&state);
        let t = step as f32 / 60.0;
        let expected = v0 * t + gravity * (t * t * 0.5);
        let error = state.position.distance(expected);
        assert!(error < 2e-3, "step {step}: {error} m from the parabola");
    }
}

#[test]
fn drag_slows_a_projectile_towards_its_terminal_speed() {
    // Quadratic drag: falling from rest, the speed tends to sqrt(g / k) = sqrt(9.81 / 0.01).
    let flight = Flight::new(1.0, Vec3::new(0.0, -9.81, 0.0), 0.01, 0.0, 0.01, 30.0).unwrap();
    let mut state = flight.launch(Vec3::ZERO, Vec3::NEG_Y).unwrap();
    for _ in 0..3000 {
        state = flight.advance(&state);
    }
    let terminal = (9.81_f32 / 0.01).sqrt();
    let speed = state.velocity.length();
    assert!((speed - terminal).abs() < 0.05, "{speed} vs {terminal}");
    // Without gravity, drag only slows it, every step.
    let flight = Flight::new(800.0, Vec3::ZERO, 0.002, 0.0, DT, 2.0).unwrap();
    let mut state = flight.launch(Vec3::ZERO, Vec3::Z).unwrap();
    let mut last = 800.0;
    for _ in 0..128 {
        state = flight.advance(&state);
        let speed = state.velocity.length();
        assert!(speed < last && speed > 0.0, "{speed} after {last}");
        last = speed;
    }
    assert!(
        last < 400.0,
        "k v t = 0.002 * 800 * 2 halves it at least: {last}"
    );
}

/// Flies a handful of seeded flights with drag for 500 steps; every state's bits.
fn seeded_paths() -> Vec<[u32; 6]> {
    let mut out = Vec::new();
    for seed in 0..8_u32 {
        let s = seed as f32;
        let flight = Flight::new(
            50.0 + 97.3 * s,
            Vec3::new(0.1 * s, -9.81, -0.3 * s),
            0.0003 * (s + 1.0),
            0.05,
            1.0 / (30.0 + s),
            20.0,
        )
        .unwrap();
        let mut state = flight
            .launch(
                Vec3::new(s, 1.7, -s),
                Vec3::new(0.3 + s, 0.1 * s, 1.0 - 0.2 * s),
            )
            .unwrap();
        for _ in 0..500 {
            state = flight.advance(&state);
            out.push(bits(&state));
        }
    }
    out
}

#[test]
fn the_same_launch_gives_the_same_path_bit_for_bit_on_every_run_and_thread() {
    let first = seeded_paths();
    assert_eq!(first, seeded_paths());
    let threads: Vec<_> = (0..4).map(|_| std::thread::spawn(seeded_paths)).collect();
    for thread in threads {
        assert_eq!(first, thread.join().expect("no panic"));
    }
    // And a pinned value, so a change to the integrator's arithmetic shows here: the
    // first flight's 500th position, as this integrator computed it when written.
    let flight = Flight::new(
        50.0,
        Vec3::new(0.0, -9.81, 0.0),
        0.0003,
        0.05,
        1.0 / 30.0,
        20.0,
    )
    .unwrap();
    let mut state = flight
        .launch(Vec3::new(0.0, 1.7, 0.0), Vec3::new(0.3, 0.0, 1.0))
        .unwrap();
    for _ in 0..500 {
        state = flight.advance(&state);
    }
    assert_eq!(bits(&state), first[499]);
}

#[test]
fn bad_flight_models_are_refused_with_the_value_named() {
    let ok = (100.0, Vec3::new(0.0, -9.81, 0.0), 0.001, 0.05, DT, 3.0);
    // Muzzle speed, gravity, drag, radius, step, max time.
    type Inputs = (f32, Vec3, f32, f32, f32, f32);
    let new = |(speed, g, drag, radius, step, max): Inputs| {
        Flight::new(speed, g, drag, radius, step, max)
    };
    assert!(new(ok).is_ok());
    let cases: [(Inputs, FlightError); 12] = [
        (
            (0.0, ok.1, ok.2, ok.3, ok.4, ok.5),
            FlightError::MuzzleSpeed(0.0),
        ),
        (
            (-5.0, ok.1, ok.2, ok.3, ok.4, ok.5),
            FlightError::MuzzleSpeed(-5.0),
        ),
        (
            (f32::INFINITY, ok.1, ok.2, ok.3, ok.4, ok.5),
            FlightError::MuzzleSpeed(f32::INFINITY),
        ),
        (
            (ok.0, Vec3::new(0.0, f32::NAN, 0.0), ok.2, ok.3, ok.4, ok.5),
            FlightError::Gravity,
        ),
        (
            (ok.0, Vec3::splat(2e3), ok.2, ok.3, ok.4, ok.5),
            FlightError::Gravity,
        ),
        (
            (ok.0, ok.1, -0.1, ok.3, ok.4, ok.5),
            FlightError::Drag(-0.1),
        ),
        (
            (ok.0, ok.1, ok.2, -0.01, ok.4, ok.5),
            FlightError::Radius(-0.01),
        ),
        ((ok.0, ok.1, ok.2, ok.3, 0.0, ok.5), FlightError::Step(0.0)),
        ((ok.0, ok.1, ok.2, ok.3, 2.0, ok.5), FlightError::Step(2.0)),
        (
            (ok.0, ok.1, ok.2, ok.3, ok.4, 0.0),
            FlightError::MaxTime(0.0),
        ),
        (
            (ok.0, ok.1, ok.2, ok.3, ok.4, f32::INFINITY),
            FlightError::MaxTime(f32::INFINITY),
        ),
        // 10,000 s at 64 Hz is more steps than a flight may take.
        (
            (ok.0, ok.1, ok.2, ok.3, ok.4, 1e4),
            FlightError::MaxTime(1e4),
        ),
    ];
    for (inputs, error) in cases {
        assert_eq!(new(inputs), Err(error), "{inputs:?}");
    }
    let nan = new((f32::NAN, ok.1, ok.2, ok.3, ok.4, ok.5)).unwrap_err();
    assert!(matches!(nan, FlightError::MuzzleSpeed(s) if s.is_nan()));
    let nan = new((ok.0, ok.1, f32::NAN, ok.3, ok.4, ok.5)).unwrap_err();
    assert!(matches!(nan, FlightError::Drag(d) if d.is_nan()));
    // A flight of 3 s at 1/64 s steps takes 192 steps; 0.01 s more takes one more.
    assert_eq!(new(ok).unwrap().steps(), 192);
    assert_eq!(
        new((ok.0, ok.1, ok.2, ok.3, ok.4, 3.01)).unwrap().steps(),
        193
    );
}

// ---- Rewound flights ----

/// A history over one second (ticks 0..=64) with a target standing 20 m down range
/// (z = 20) until `leaves`, and 10 m to the side from then on.
fn target_that_leaves(leaves: f64) -> (History, EntityId) {
    let mut h = history(1.0);
    let target = h.spawn(body());
    record(&mut h, &[target], 64, |_, t| {
        let x = if t < leaves { 0.0 } else { 10.0 };
        Vec3::new(x, 1.0, 20.0)
    });
    (h, target)
}

#[test]
fn a_slow_rocket_does_not_hit_where_the_target_stood_half_a_second_ago() {
    // The shooter saw the target at R = 0.5 s, half a second before the present (1.0 s);
    // it stepped aside at 0.6 s. A 25 m/s rocket needs 0.8 s to cover the 20 m.
    let (h, target) = target_that_leaves(0.6);
    let aimed = shot(0.5, Vec3::Y, Vec3::Z, rocket());
    // What a rocket traced wholly at the shooter's moment would have claimed:
    let path = Ray::new(Vec3::Y, Vec3::Z, 50.0).unwrap();
    let then = h.query(RewindTarget::at(0.5)).sweep(&path, 0.15).unwrap();
    assert_eq!(then.hit.map(|hit| hit.entity), Some(target));
    // Flown step by step, it arrives after the target left: nothing struck.
    let impact = aimed.fly(&h, None).unwrap();
    assert_eq!(impact.struck, Struck::Expired, "{impact:?}");
    assert_eq!(impact.step, rocket().steps());
    // Had the target stayed, the same rocket strikes it, in the present, at step 51 (its
    // front at 19.7 m, less the rocket's 15 cm: 19.55 m at 25 m/s is 0.782 s).
    let (h, target) = target_that_leaves(f64::INFINITY);
    let impact = aimed.fly(&h, None).unwrap();
    assert_eq!(struck_entity(&impact), Some(target));
    assert_eq!(impact.step, 50);
    assert_eq!(impact.time, 1.0, "traced against the present");
    assert!(
        (impact.position.z - 19.55).abs() < 1e-3,
        "{}",
        impact.position
    );
}

#[test]
fn a_fast_bullet_with_drop_hits_the_target_the_shooter_saw() {
    // The target stood there when the shooter fired (R = 0.5 s) and left at 0.6 s; a
    // 400 m/s bullet covers the 20 m in 0.05 s, all of it rewound.
    let (h, target) = target_that_leaves(0.6);
    let aimed = shot(0.5, Vec3::new(0.0, 1.0, 0.0), Vec3::Z, bullet());
    let impact = aimed.fly(&h, None).unwrap();
    assert_eq!(struck_entity(&impact), Some(target), "{impact:?}");
    assert!(
        impact.time < 0.6 && impact.time >= 0.5,
        "rewound: {}",
        impact.time
    );
    // Traced at the shooter's moment plus the flight time, to the bit.
    assert_eq!(impact.time, 0.5 + impact.flight_time);
    assert_eq!(impact.flight_time, f64::from(impact.step) / 64.0);
    assert!(impact.position.y < 1.0, "dropped: {}", impact.position);
    // A hitscan shot against the present misses: the rewind is what made it hit.
    let ray = Ray::new(Vec3::Y, Vec3::Z, 100.0).unwrap();
    assert!(
        h.query(RewindTarget::at(1.0))
            .ray(&ray)
            .unwrap()
            .hit
            .is_none()
    );
    // Aimed a degree too low, the drop takes it under the target's feet (0.1 m): into
    // the ground, which is not there, so it flies on.
    let low = shot(
        0.5,
        Vec3::new(0.0, 0.2, 0.0),
        Vec3::new(0.0, -0.02, 1.0),
        bullet(),
    );
    assert_eq!(struck_entity(&low.fly(&h, None).unwrap()), None);
}

/// A server's own world: a wall across the range at z = 10 m, facing -z (id 77).
struct Wall;

impl StaticWorld for Wall {
    fn cast_ray(&self, ray: &Ray, layers: u32, time: f64) -> Option<WorldHit> {
        self.cast_sphere(ray, 0.0, layers, time)
    }

    fn cast_sphere(&self, ray: &Ray, radius: f32, _: u32, _: f64) -> Option<WorldHit> {
        let (z, dz) = (ray.origin().z, ray.dir().z);
        let distance = (10.0 - radius - z) / dz;
        (dz > 0.0 && (0.0..=ray.max_distance()).contains(&distance)).then_some(WorldHit {
            id: 77,
            distance,
            normal: Vec3::NEG_Z,
        })
    }
}

#[test]
fn a_wall_stops_a_projectile_from_the_level_or_the_server_world() {
    let (mut h, _target) = target_that_leaves(f64::INFINITY);
    let aimed = shot(0.5, Vec3::Y, Vec3::Z, bullet());
    // The server's own world: a wall across the range at z = 10.
    let impact = aimed.fly(&h, Some(&Wall)).unwrap();
    assert!(
        matches!(impact.struck, Struck::Static(wall) if wall.id == StaticId(77)),
        "{impact:?}"
    );
    assert!(
        (impact.position.z - 9.99).abs() < 1e-3,
        "{}",
        impact.position
    );
    // The history's own level: a box wall at z = 15.
    let wall = h
        .add_static(
            Shape::cuboid(Vec3::new(5.0, 5.0, 0.1)),
            Pose::from_translation(Vec3::new(0.0, 0.0, 15.0)),
            u32::MAX,
        )
        .unwrap();
    let impact = aimed.fly(&h, None).unwrap();
    assert!(
        matches!(impact.struck, Struck::Static(hit) if hit.id == wall),
        "{impact:?}"
    );
    // Both: the nearer one.
    let impact = aimed.fly(&h, Some(&Wall)).unwrap();
    assert!(matches!(impact.struck, Struck::Static(hit) if hit.id == StaticId(77)));
}

/// A door (a blocker entity, the body's shape) closed across the range at z = 10 until
/// t = 0.5 s, then slid 10 m aside; the target stands 20 m down range throughout.
#[test]
fn a_closed_door_stops_a_projectile_fired_while_the_shooter_saw_it_closed() {
    let mut h = history(1.0);
    let target = h.spawn(body());
    let door = h.spawn_as(body(), EntityRole::Blocker);
    record(&mut h, &[target, door], 64, |i, t| match i {
        0 => Vec3::new(0.0, 1.0, 20.0),
        _ if t < 0.5 => Vec3::new(0.0, 1.0, 10.0),
        _ => Vec3::new(10.0, 1.0, 10.0),
    });
    let closed = shot(0.2, Vec3::Y, Vec3::Z, bullet()).fly(&h, None).unwrap();
    assert!(
        matches!(closed.struck, Struck::Blocker(block) if block.entity == door),
        "{closed:?}"
    );
    assert!(
        (closed.position.z - 9.7).abs() < 0.05,
        "{}",
        closed.position
    );
    let open = shot(0.6, Vec3::Y, Vec3::Z, bullet()).fly(&h, None).unwrap();
    assert_eq!(struck_entity(&open), Some(target), "{open:?}");
}

#[test]
fn the_first_contact_along_the_path_wins() {
    let mut h = history(1.0);
    let near = h.spawn(body());
    let far = h.spawn(body());
    let shooter = h.spawn(body());
    // Two targets in line at 10 m and 20 m; the shooter stands at the muzzle.
    record(&mut h, &[near, far, shooter], 64, |i, _| {
        [
            Vec3::new(0.0, 1.0, 10.0),
            Vec3::new(0.0, 1.0, 20.0),
            Vec3::new(0.0, 1.0, 0.0),
        ][i]
    });
    let mut aimed = shot(0.5, Vec3::Y, Vec3::Z, rocket());
    aimed.shooter = Some(shooter);
    assert_eq!(struck_entity(&aimed.fly(&h, None).unwrap()), Some(near));
    // Without ignoring the shooter, it strikes its own body at the muzzle, step 0.
    let own = ProjectileShot {
        shooter: None,
        ..aimed
    };
    let impact = own.fly(&h, None).unwrap();
    assert_eq!((struck_entity(&impact), impact.step), (Some(shooter), 0));
    // Lobbed over the near target, a grenade comes down on the far one.
    let grenade = Flight::new(15.0, Vec3::new(0.0, -9.81, 0.0), 0.0, 0.05, DT, 4.0).unwrap();
    let lob = ProjectileShot {
        direction: Vec3::new(0.0, 0.62, 1.0),
        flight: grenade,
        ..aimed
    };
    let impact = lob.fly(&h, None).unwrap();
    assert_eq!(struck_entity(&impact), Some(far), "{impact:?}");
    // Layers: a projectile on another layer passes through both.
    let ghost = ProjectileShot {
        layers: 0b10,
        ..aimed
    };
    assert_eq!(ghost.fly(&h, None).unwrap().struck, Struck::Expired);
}

#[test]
fn a_flight_refuses_bad_aim_and_times_outside_the_window() {
    let (h, _) = target_that_leaves(f64::INFINITY);
    let cases: [(ProjectileShot, ProjectileError); 4] = [
        (
            shot(0.5, Vec3::Y, Vec3::ZERO, bullet()),
            ProjectileError::Aim(crate::query::RayError::ZeroDirection),
        ),
        (
            shot(0.5, Vec3::Y, Vec3::new(f32::NAN, 0.0, 1.0), bullet()),
            ProjectileError::Aim(crate::query::RayError::NonFiniteDirection),
        ),
        (
            shot(2.0, Vec3::Y, Vec3::Z, bullet()),
            ProjectileError::Rewind(RewindError::OutOfWindow {
                requested: 2.0,
                oldest: 0.0,
                newest: 1.0,
                side: WindowSide::TooNew,
            }),
        ),
        (
            shot(f64::NAN, Vec3::Y, Vec3::Z, bullet()),
            ProjectileError::Rewind(RewindError::InvalidTime(f64::NAN)),
        ),
    ];
    for (aimed, error) in cases {
        let got = aimed.fly(&h, None).unwrap_err();
        // NaN never equals itself: compare the messages.
        assert_eq!(got.to_string(), error.to_string(), "{aimed:?}");
    }
    let far = shot(0.5, Vec3::new(f32::INFINITY, 0.0, 0.0), Vec3::Z, bullet());
    assert!(matches!(far.fly(&h, None), Err(ProjectileError::Aim(_))));
    // Nothing recorded yet.
    assert!(matches!(
        shot(0.0, Vec3::Y, Vec3::Z, bullet()).fly(&history(1.0), None),
        Err(ProjectileError::Rewind(RewindError::Empty))
    ));
}

#[test]
fn a_projectile_leaving_the_coordinate_range_is_lost() {
    let (h, _) = target_that_leaves(f64::INFINITY);
    let edge = Vec3::new(0.0, 1.0, crate::math::MAX_COORDINATE - 10.0);
    let impact = shot(0.5, edge, Vec3::Z, bullet()).fly(&h, None).unwrap();
    assert_eq!((impact.struck, impact.step), (Struck::Lost, 1));
}

// ---- The server's set ----

#[test]
fn a_set_advanced_tick_by_tick_lands_as_the_whole_flight_does() {
    // Targets that stand still: a flight traced ahead of time and one advanced with the
    // server's clock see the same world, so they land at the same step and point.
    let mut full = history(1.0);
    let ids: Vec<_> = (0..3).map(|_| full.spawn(body())).collect();
    let place = |i: usize, _| Vec3::new(i as f32 * 2.0, 1.0, 8.0 + 4.0 * i as f32);
    record(&mut full, &ids, 64, place);
    let mut live = history(1.0);
    let ids_live: Vec<_> = (0..3).map(|_| live.spawn(body())).collect();
    assert_eq!(ids, ids_live);
    record(&mut live, &ids, 20, place);
    let mut set = ProjectileSet::with_capacity(8);
    let mut landed = Vec::with_capacity(set.capacity());
    let shots: Vec<_> = (0..3)
        .map(|i| {
            let target = place(i, 0.0);
            shot(0.25, Vec3::Y * 1.5, target - Vec3::Y * 1.5, rocket())
        })
        .collect();
    let fired: Vec<_> = shots.iter().map(|s| set.fire(&live, s).unwrap()).collect();
    assert_eq!(set.len(), 3);
    for tick in 21..=64 {
        let mut frame = live
            .begin_frame(Tick(tick), f64::from(tick) / RATE)
            .unwrap();
        for (i, &id) in ids.iter().enumerate() {
            frame
                .record_rigid(
                    id,
                    BoneTransform::from_translation(place(i, 0.0)),
                    EntityState::default(),
                )
                .unwrap();
        }
        drop(frame);
        set.advance(&live, None, &mut landed).unwrap();
    }
    assert_eq!(landed.len(), 3, "{landed:?}");
    assert!(set.is_empty());
    for (i, s) in shots.iter().enumerate() {
        let whole = s.fly(&full, None).unwrap();
        let got = landed
            .iter()
            .find(|l| l.projectile == fired[i])
            .expect("landed");
        assert_eq!(struck_entity(&got.impact), Some(ids[i]));
        assert_eq!(got.impact.step, whole.step);
        assert_eq!(got.impact.position, whole.position);
        // Landed: the handle is stale.
        assert_eq!(set.get(fired[i]), None);
    }
}

#[test]
fn a_set_catches_a_late_shot_up_through_rewound_steps_then_flies_in_the_present() {
    // The shooter fired at R = 0.5 s what it saw standing 20 m off; the shot reached the
    // server at 0.75 s. The first advance flies 16 steps (0.25 s) at once; the rest follow
    // a tick at a time. The target leaves at 0.8 s: a 25 m/s rocket gets there at 1.3 s.
    let mut h = history(1.0);
    let target = h.spawn(body());
    let at = |t: f64| Vec3::new(if t < 0.8 { 0.0 } else { 10.0 }, 1.0, 20.0);
    record(&mut h, &[target], 48, |_, t| at(t));
    let mut set = ProjectileSet::with_capacity(2);
    let mut landed = Vec::new();
    let id = set
        .fire(&h, &shot(0.5, Vec3::Y, Vec3::Z, rocket()))
        .unwrap();
    assert_eq!(set.get(id).unwrap().step, 0, "fire flies nothing");
    set.advance(&h, None, &mut landed).unwrap();
    let caught_up = set.get(id).unwrap();
    assert_eq!(caught_up.step, 16);
    assert!((caught_up.position.z - 25.0 * 0.25).abs() < 1e-4);
    for tick in 49..=170_u32 {
        let time = f64::from(tick) / RATE;
        let mut frame = h.begin_frame(Tick(tick), time).unwrap();
        frame
            .record_rigid(
                target,
                BoneTransform::from_translation(at(time)),
                EntityState::default(),
            )
            .unwrap();
        drop(frame);
        set.advance(&h, None, &mut landed).unwrap();
        if let Some(state) = set.get(id) {
            assert_eq!(state.step, tick - 32, "one step a tick");
        }
    }
    assert_eq!(landed.len(), 1);
    assert_eq!(landed[0].impact.struck, Struck::Expired, "{:?}", landed[0]);
    assert_eq!(landed[0].impact.step, rocket().steps());
}

#[test]
fn the_steps_due_are_those_whose_end_the_present_has_reached() {
    // Odd steps and times that are not short binary fractions: the count must agree with
    // the sums the flight itself makes, R + k * step, for every k.
    let (h, _) = target_that_leaves(f64::INFINITY);
    for (i, step) in [1.0 / 60.0, 1.0 / 64.0, 0.1, 1.0 / 128.0, 0.0333]
        .into_iter()
        .enumerate()
    {
        let flight = Flight::new(100.0, Vec3::ZERO, 0.0, 0.0, step, 5.0).unwrap();
        let fired = 0.1 + 0.0137 * i as f64;
        let flying = path::InFlight::launch(&h, &shot(fired, Vec3::Y, Vec3::Z, flight)).unwrap();
        assert_eq!(flying.fired, fired);
        for j in 0..2000 {
            let present = fired + f64::from(j) * 0.000_731;
            let until = flying.steps_ended_by(present);
            assert!(
                flying.start_of(until) <= present,
                "{step} {present} {until}"
            );
            assert!(
                flying.start_of(until + 1) > present,
                "{step} {present} {until}"
            );
        }
        // Exactly at a step's end, that step is due (with 1/60 s steps fired at 0.1 s,
        // (present - R) / step rounds to 8.999... for k = 9: a plain floor is one short).
        for k in 0..300 {
            assert_eq!(flying.steps_ended_by(flying.start_of(k)), k, "{step} {k}");
        }
    }
}

#[test]
fn a_set_projectile_stops_at_the_server_world_and_passes_its_shooter() {
    // The shooter stands at the muzzle; the wall of the server's world at 10 m; the
    // target behind it at 20 m.
    let mut h = history(1.0);
    let shooter = h.spawn(body());
    let target = h.spawn(body());
    record(&mut h, &[shooter, target], 64, |i, _| {
        [Vec3::new(0.0, 1.0, 0.0), Vec3::new(0.0, 1.0, 20.0)][i]
    });
    let mut set = ProjectileSet::with_capacity(4);
    let mut landed = Vec::new();
    let own = ProjectileShot {
        shooter: Some(shooter),
        ..shot(0.75, Vec3::Y, Vec3::Z, bullet())
    };
    let walled = set.fire(&h, &own).unwrap();
    let careless = set
        .fire(
            &h,
            &ProjectileShot {
                shooter: None,
                ..own
            },
        )
        .unwrap();
    let mut without_wall = set.clone();
    set.advance(&h, Some(&Wall), &mut landed).unwrap();
    assert_eq!(landed.len(), 2, "{landed:?}");
    // Without its shooter ignored, one strikes the shooter's own body at once.
    let first = landed
        .iter()
        .find(|l| l.projectile == careless)
        .expect("landed");
    assert_eq!(
        (first.impact.step, struck_entity(&first.impact)),
        (0, Some(shooter))
    );
    // The other stops at the server's wall, short of the target.
    let impact = landed
        .iter()
        .find(|l| l.projectile == walled)
        .expect("landed")
        .impact;
    assert!(
        matches!(impact.struck, Struck::Static(wall) if wall.id == StaticId(77)),
        "{impact:?}"
    );
    // Without the wall it strikes the target.
    landed.clear();
    without_wall.advance(&h, None, &mut landed).unwrap();
    let impact = landed
        .iter()
        .find(|l| l.projectile == walled)
        .expect("landed")
        .impact;
    assert_eq!(struck_entity(&impact), Some(target), "{impact:?}");
}

#[test]
fn bad_input_to_a_set_is_refused_and_changes_nothing() {
    let (h, _) = target_that_leaves(f64::INFINITY);
    let mut set = ProjectileSet::with_capacity(2);
    let good = shot(0.5, Vec3::Y, Vec3::X, bullet());
    let first = set.fire(&h, &good).unwrap();
    let before = set.get(first);
    let bad = [
        shot(0.5, Vec3::splat(f32::NAN), Vec3::Z, bullet()),
        shot(0.5, Vec3::Y, Vec3::ZERO, bullet()),
        shot(0.5, Vec3::Y, Vec3::new(0.0, f32::INFINITY, 1.0), bullet()),
        shot(-0.5, Vec3::Y, Vec3::Z, bullet()),
        shot(1.5, Vec3::Y, Vec3::Z, bullet()),
        shot(f64::INFINITY, Vec3::Y, Vec3::Z, bullet()),
        ProjectileShot {
            fired_at: RewindTarget::between(Tick(9), Tick(3), 0.5),
            ..good
        },
        ProjectileShot {
            fired_at: RewindTarget::between(Tick(3), Tick(9), f32::NAN),
            ..good
        },
        ProjectileShot {
            fired_at: RewindTarget::between(Tick(300), Tick(301), 0.0),
            ..good
        },
    ];
    for shot in &bad {
        assert!(set.fire(&h, shot).is_err(), "{shot:?}");
        assert_eq!((set.len(), set.get(first)), (1, before));
    }
    let second = set.fire(&h, &good).unwrap();
    assert_eq!(set.fire(&h, &good), Err(ProjectileError::Full(2)));
    assert_eq!(set.len(), 2);
    // Removing frees a place; the old handle is stale even when the place is reused.
    assert!(set.remove(second));
    assert!(!set.remove(second));
    let third = set.fire(&h, &good).unwrap();
    assert_ne!(third, second);
    assert_eq!(set.get(second), None);
    assert_eq!(set.iter().count(), 2);
    // Advancing before anything is recorded is refused, and changes nothing.
    let mut empty = ProjectileSet::with_capacity(1);
    let mut landed = Vec::new();
    assert_eq!(
        empty.advance(&history(1.0), None, &mut landed),
        Err(ProjectileError::Rewind(RewindError::Empty))
    );
    set.clear();
    assert!(set.is_empty() && set.get(first).is_none());
    assert!(ProjectileSet::with_capacity(0).fire(&h, &good).is_err());
}

// ---- Client claims ----

#[test]
fn a_claim_agrees_only_with_the_path_the_server_flies() {
    let mut h = history(1.0);
    let near = h.spawn(body());
    let far = h.spawn(body());
    record(&mut h, &[near, far], 64, |i, _| {
        [Vec3::new(0.0, 1.0, 10.0), Vec3::new(3.0, 1.0, 20.0)][i]
    });
    let aimed = shot(0.25, Vec3::Y, Vec3::Z, rocket());
    let flown = aimed.fly(&h, None).unwrap();
    assert_eq!(struck_entity(&flown), Some(near));
    let honest = ProjectileClaim {
        shot: aimed,
        step: flown.step,
        target: ClaimedTarget::Entity {
            entity: near,
            hitbox: HitboxId(0),
        },
        position: flown.position,
    };
    let tolerance = ClaimTolerance::default();
    let review = |claim: &ProjectileClaim| claim.review(&h, None, tolerance).unwrap().outcome;
    assert_eq!(review(&honest), ClaimOutcome::Agree);
    // One step off (another view of the target) still agrees; more does not.
    assert_eq!(
        review(&ProjectileClaim {
            step: flown.step + 1,
            ..honest
        }),
        ClaimOutcome::Agree
    );
    assert_eq!(
        review(&ProjectileClaim {
            step: flown.step - 1,
            ..honest
        }),
        ClaimOutcome::Agree
    );
    assert_eq!(
        review(&ProjectileClaim {
            step: flown.step - 2,
            ..honest
        }),
        ClaimOutcome::TooEarly
    );
    assert_eq!(
        review(&ProjectileClaim { step: 0, ..honest }),
        ClaimOutcome::TooEarly
    );
    assert_eq!(
        review(&ProjectileClaim {
            step: flown.step + 5,
            ..honest
        }),
        ClaimOutcome::OffPath
    );
    // Another target, another hitbox, a point a metre off, a wall: off the path.
    let other = ClaimedTarget::Entity {
        entity: far,
        hitbox: HitboxId(0),
    };
    assert_eq!(
        review(&ProjectileClaim {
            target: other,
            ..honest
        }),
        ClaimOutcome::OffPath
    );
    let wrong_box = ClaimedTarget::Entity {
        entity: near,
        hitbox: HitboxId(1),
    };
    assert_eq!(
        review(&ProjectileClaim {
            target: wrong_box,
            ..honest
        }),
        ClaimOutcome::OffPath
    );
    let off = ProjectileClaim {
        position: flown.position + Vec3::X,
        ..honest
    };
    assert_eq!(review(&off), ClaimOutcome::OffPath);
    let nan = ProjectileClaim {
        position: Vec3::NAN,
        ..honest
    };
    assert_eq!(review(&nan), ClaimOutcome::OffPath);
    assert_eq!(
        review(&ProjectileClaim {
            target: ClaimedTarget::Static(StaticId(0)),
            ..honest
        }),
        ClaimOutcome::OffPath
    );
    // The far target, behind the near one, is never reached.
    let behind = ProjectileClaim {
        shot: shot(0.1, Vec3::Y, Vec3::new(3.0, 0.0, 20.0), rocket()),
        ..honest
    };
    let to_far = behind.shot.fly(&h, None).unwrap();
    assert_eq!(struck_entity(&to_far), Some(far));
    let behind = ProjectileClaim {
        step: to_far.step,
        position: to_far.position,
        target: other,
        ..behind
    };
    assert_eq!(review(&behind), ClaimOutcome::Agree);
}

#[test]
fn a_claim_that_reaches_the_server_before_the_projectile_could_arrive_is_too_early() {
    // Fired at 0.9 s, 100 ms before the present: a rocket needs 0.39 s for the 10 m, so
    // at 1.0 s it is not there yet, whatever step the claim names.
    let mut h = history(1.0);
    let target = h.spawn(body());
    record(&mut h, &[target], 64, |_, _| Vec3::new(0.0, 1.0, 10.0));
    let aimed = shot(0.9, Vec3::Y, Vec3::Z, rocket());
    let flown = aimed.fly(&h, None).unwrap();
    assert_eq!(struck_entity(&flown), Some(target));
    let claim = ProjectileClaim {
        shot: aimed,
        step: flown.step,
        target: ClaimedTarget::Entity {
            entity: target,
            hitbox: HitboxId(0),
        },
        position: flown.position,
    };
    let review = claim.review(&h, None, ClaimTolerance::default()).unwrap();
    assert_eq!(review.outcome, ClaimOutcome::TooEarly);
    assert!(review.arrives > 1.0, "{}", review.arrives);
    // The same claim fired half a second earlier agrees.
    let earlier = ProjectileClaim {
        shot: shot(0.4, Vec3::Y, Vec3::Z, rocket()),
        ..claim
    };
    assert_eq!(
        earlier
            .review(&h, None, ClaimTolerance::default())
            .unwrap()
            .outcome,
        ClaimOutcome::Agree
    );
}

//! Tests of pellet fans and splash: a fan equals its rays one by one; a blast sees what it
//! should and walls and bodies shield what they should.

use std::sync::Arc;

use glam::Vec3;

use crate::history::{EntityId, EntityRole, EntityState, History, HistoryConfig};
use crate::math::{BoneTransform, Pose};
use crate::query::splash::{Blast, Cover};
use crate::query::{Ray, Trace};
use crate::rig::{Hitbox, Rig, Shape, Zone};
use crate::spread::{Falloff, PelletRng, Pellets, Spread, SpreadKind, pellet_seed};
use crate::time::{RewindTarget, Tick};

/// A 0.6 x 1.8 x 0.6 m body with a head ball, on one bone.
fn body() -> Arc<Rig> {
    Arc::new(
        Rig::rigid(vec![
            Hitbox::new(
                0,
                "body",
                Zone::Torso,
                0,
                Shape::cuboid(Vec3::new(0.3, 0.9, 0.3)),
            ),
            Hitbox::new(1, "head", Zone::Head, 0, Shape::sphere(0.15))
                .with_offset(Pose::from_translation(Vec3::Y * 1.05)),
        ])
        .expect("valid rig"),
    )
}

/// A history at 64 Hz, a second deep, with a wall 0.4 m thick across x = 2, z 2 to 10.
fn walled() -> History {
    let mut history = History::new(HistoryConfig {
        tick_rate: 64.0,
        max_rewind: 1.0,
    })
    .expect("valid config");
    history
        .add_static(
            Shape::cuboid(Vec3::new(0.2, 3.0, 4.0)),
            Pose::from_translation(Vec3::new(2.0, 1.0, 6.0)),
            u32::MAX,
        )
        .expect("valid wall");
    history
}

/// A crowd of `count` bodies walking in a 20 m square, 33 ticks at 64 Hz, with a wall.
fn crowd(count: usize) -> (History, Vec<EntityId>) {
    let mut history = walled();
    let ids: Vec<EntityId> = (0..count).map(|_| history.spawn(body())).collect();
    for tick in 0..=32_u32 {
        let time = f64::from(tick) / 64.0;
        let mut frame = history.begin_frame(Tick(tick), time).expect("in order");
        for (i, &id) in ids.iter().enumerate() {
            let i = i as f32;
            let at = Vec3::new(
                (i * 3.7) % 20.0 - 10.0 + time as f32 * (i % 3.0 - 1.0),
                1.0,
                (i * 7.3) % 20.0 + time as f32,
            );
            frame
                .record_rigid(
                    id,
                    BoneTransform::from_translation(at),
                    EntityState::default(),
                )
                .expect("valid pose");
        }
    }
    (history, ids)
}

#[test]
fn a_fan_equals_its_rays_one_by_one() {
    let (history, ids) = crowd(40);
    let mut rng = PelletRng::new(5);
    let mut traces: Vec<Trace> = Vec::new();
    let mut hits = 0;
    for shot in 0..200_u32 {
        let origin = Vec3::new(rng.next_unit() * 4.0 - 2.0, 1.5, -2.0);
        let aim = Vec3::new(rng.next_unit() - 0.5, rng.next_unit() * 0.2 - 0.1, 1.0);
        let kind = if shot % 2 == 0 {
            SpreadKind::Uniform
        } else {
            SpreadKind::Pattern { jitter: 0.5 }
        };
        let spread = Spread::new(12, 6.0, kind).expect("valid spread");
        let pellets = Pellets::new(&spread, aim, pellet_seed(1, shot)).expect("valid aim");
        let rays: Vec<Ray> = pellets
            .directions()
            .iter()
            .map(|&d| Ray::new(origin, d, 60.0).expect("valid ray"))
            .collect();
        // Between two ticks, so every entity is blended.
        let at = RewindTarget::at(0.2 + f64::from(shot % 7) / 256.0);
        let rewind = history
            .query(at)
            .ignore(&ids[..1])
            .ray_fan(&rays, &mut traces)
            .expect("in the window");
        assert_eq!(traces.len(), rays.len());
        for (ray, fan) in rays.iter().zip(&traces) {
            let alone = history
                .query(at)
                .ignore(&ids[..1])
                .ray(ray)
                .expect("in the window");
            assert_eq!(*fan, alone, "shot {shot}");
            assert_eq!(fan.rewind, rewind);
            hits += usize::from(fan.hit.is_some());
        }
    }
    // The crowd is dense enough that the comparison covers hits, misses and walls.
    assert!(hits > 100, "{hits} pellet hits");
}

#[test]
fn a_fan_outside_the_window_is_refused_and_leaves_no_traces() {
    let (history, _) = crowd(2);
    let mut traces = vec![];
    let ray = Ray::new(Vec3::ZERO, Vec3::Z, 10.0).expect("valid ray");
    history
        .query(RewindTarget::at(0.3))
        .ray_fan(&[ray], &mut traces)
        .expect("in the window");
    assert_eq!(traces.len(), 1);
    assert!(
        history
            .query(RewindTarget::at(-5.0))
            .ray_fan(&[ray], &mut traces)
            .is_err()
    );
    assert!(traces.is_empty());
}

/// Two bodies either side of the blast: one behind the wall at x = 2, one in the open.
fn two_bodies(shield: bool) -> (History, [EntityId; 3]) {
    let mut history = History::new(HistoryConfig {
        tick_rate: 64.0,
        max_rewind: 1.0,
    })
    .expect("valid config");
    let ids = [
        history.spawn(body()),
        history.spawn(body()),
        history.spawn(body()),
    ];
    history
        .add_static(
            Shape::cuboid(Vec3::new(0.1, 3.0, 3.0)),
            Pose::from_translation(Vec3::new(2.0, 1.0, 0.0)),
            u32::MAX,
        )
        .expect("valid wall");
    for tick in 0..=32_u32 {
        let time = f64::from(tick) / 64.0;
        let mut frame = history.begin_frame(Tick(tick), time).expect("in order");
        // The open one walks away along -x: at 0.25 s it is 3 m out, at 0.5 s 4 m.
        let open = Vec3::new(-2.0 - 4.0 * time as f32, 1.0, 0.0);
        let shielder = if shield {
            Vec3::new(-4.9, 1.0, 0.0)
        } else {
            Vec3::new(-4.9, 1.0, 30.0)
        };
        for (id, at) in ids
            .into_iter()
            .zip([Vec3::new(3.5, 1.0, 0.0), open, shielder])
        {
            frame
                .record_rigid(
                    id,
                    BoneTransform::from_translation(at),
                    EntityState::default(),
                )
                .expect("valid pose");
        }
    }
    (history, ids)
}

fn blast(center: Vec3, bodies_block: bool) -> Blast {
    Blast {
        center,
        radius: 6.0,
        falloff: Falloff::new(1.0, 6.0, 0.2).expect("valid falloff"),
        bodies_block,
    }
}

#[test]
fn a_blast_sees_the_open_body_and_not_the_one_behind_the_wall() {
    let (history, [walled, open, _]) = two_bodies(false);
    let (mut scratch, mut caught) = (Vec::new(), Vec::new());
    history
        .query(RewindTarget::at(0.25))
        .splash(&blast(Vec3::Y, true), &mut scratch, &mut caught)
        .expect("in the window");
    let of = |entity| {
        caught
            .iter()
            .filter(move |s: &&_| s.overlap.entity == entity)
    };
    assert_eq!(
        of(walled).count(),
        2,
        "body and head of the walled one are within 6 m"
    );
    assert!(of(walled).all(|s| matches!(s.cover, Some(Cover::Wall(_))) && s.multiplier == 0.0));
    let body = of(open)
        .find(|s| s.overlap.zone == Zone::Torso)
        .expect("in range");
    assert!(body.cover.is_none());
    // The open body's near face is 2.7 m out at 0.25 s: (6 - 2.7) / 5 of the way from 0.2 to 1.
    let expected = 1.0 + (0.2 - 1.0) * (2.7 - 1.0) / 5.0;
    assert!(
        (body.multiplier - expected).abs() < 1e-4,
        "{}",
        body.multiplier
    );
    // Rewound: at 0.5 s the open one stood a metre further away, and took less.
    let mut later = Vec::new();
    history
        .query(RewindTarget::at(0.5))
        .splash(&blast(Vec3::Y, true), &mut scratch, &mut later)
        .expect("in the window");
    let far = later
        .iter()
        .find(|s| s.overlap.entity == open && s.overlap.zone == Zone::Torso)
        .expect("still in range");
    assert!(far.multiplier < body.multiplier);
}

#[test]
fn bodies_shield_only_when_the_blast_says_so() {
    let (history, [_, open, shielder]) = two_bodies(true);
    // The blast 3.5 m down -x from the open one (at x = -3 at 0.25 s), the shielder between.
    let center = Vec3::new(-6.5, 1.0, 0.0);
    let (mut scratch, mut caught) = (Vec::new(), Vec::new());
    let mut query = history.query(RewindTarget::at(0.25));
    query
        .splash(&blast(center, true), &mut scratch, &mut caught)
        .expect("in the window");
    let of = |caught: &[super::super::splash::SplashHit], entity| {
        caught
            .iter()
            .filter(|s| s.overlap.entity == entity)
            .copied()
            .collect::<Vec<_>>()
    };
    assert!(!of(&caught, shielder).is_empty());
    assert!(of(&caught, shielder).iter().all(|s| s.cover.is_none()));
    let behind = of(&caught, open);
    assert_eq!(behind.len(), 2);
    assert!(
        behind
            .iter()
            .all(|s| s.cover == Some(Cover::Body(shielder)) && s.multiplier == 0.0)
    );
    let mut through = Vec::new();
    query
        .splash(&blast(center, false), &mut scratch, &mut through)
        .expect("in the window");
    assert!(
        of(&through, open)
            .iter()
            .all(|s| s.cover.is_none() && s.multiplier > 0.2)
    );
}

/// A door (a blocker entity) between a blast and a body shields it as a wall does, even
/// when bodies do not shield, and is itself never caught by the blast.
#[test]
fn a_door_shields_what_is_behind_it_from_a_blast() {
    let mut history = History::new(HistoryConfig {
        tick_rate: 64.0,
        max_rewind: 1.0,
    })
    .expect("valid config");
    let player = history.spawn(body());
    let door = history.spawn_as(body(), EntityRole::Blocker);
    for tick in 0..=8_u32 {
        let mut frame = history
            .begin_frame(Tick(tick), f64::from(tick) / 64.0)
            .expect("in order");
        for (id, x) in [(player, -3.0), (door, -4.9)] {
            frame
                .record_rigid(
                    id,
                    BoneTransform::from_translation(Vec3::new(x, 1.0, 0.0)),
                    EntityState::default(),
                )
                .expect("valid pose");
        }
    }
    let (mut scratch, mut caught) = (Vec::new(), Vec::new());
    history
        .query(RewindTarget::at(0.1))
        .splash(
            &blast(Vec3::new(-6.5, 1.0, 0.0), false),
            &mut scratch,
            &mut caught,
        )
        .expect("in the window");
    assert!(
        caught.iter().all(|s| s.overlap.entity == player),
        "{caught:?}"
    );
    assert!(!caught.is_empty());
    assert!(
        caught
            .iter()
            .all(|s| s.cover == Some(Cover::Blocker(door)) && s.multiplier == 0.0),
        "{caught:?}"
    );
}

#[test]
fn a_blast_with_a_bad_radius_is_refused() {
    let (history, _) = two_bodies(false);
    let (mut scratch, mut caught) = (Vec::new(), Vec::new());
    let mut bad = blast(Vec3::Y, true);
    bad.radius = f32::NAN;
    assert!(
        history
            .query(RewindTarget::at(0.25))
            .splash(&bad, &mut scratch, &mut caught)
            .is_err()
    );
    bad.radius = 3.0;
    bad.center = Vec3::INFINITY;
    assert!(
        history
            .query(RewindTarget::at(0.25))
            .splash(&bad, &mut scratch, &mut caught)
            .is_err()
    );
}

#[test]
fn a_splash_covers_what_a_trace_to_each_hitbox_would() {
    // The reference: a closest-hit trace from the blast to each hitbox's nearest point,
    // a centimetre short, as the splash describes its line of sight.
    let (history, _) = crowd(40);
    let mut rng = PelletRng::new(11);
    let (mut scratch, mut caught) = (Vec::new(), Vec::new());
    let (mut seen, mut walled, mut shielded) = (0, 0, 0);
    for round in 0..300_u32 {
        let center = Vec3::new(
            rng.next_unit() * 20.0 - 10.0,
            rng.next_unit() * 2.0,
            rng.next_unit() * 20.0,
        );
        let at = RewindTarget::at(0.2 + f64::from(round % 5) / 256.0);
        history
            .query(at)
            .splash(&blast(center, true), &mut scratch, &mut caught)
            .expect("in the window");
        for s in &caught {
            let reach = s.overlap.distance - 0.01;
            let expected = if reach <= 0.0 {
                None
            } else {
                let ray = Ray::new(center, s.overlap.closest_point - center, reach).unwrap();
                let trace = history.query(at).ray(&ray).unwrap();
                match (trace.blocker, trace.hit) {
                    (Some(wall), _) => Some(Cover::Wall(wall.id)),
                    (None, Some(hit)) if hit.entity != s.overlap.entity => {
                        Some(Cover::Body(hit.entity))
                    }
                    _ => None,
                }
            };
            assert_eq!(s.cover, expected, "round {round}: {s:?}");
            match s.cover {
                None => seen += 1,
                Some(Cover::Wall(_)) => walled += 1,
                Some(Cover::Body(_)) => shielded += 1,
                Some(Cover::Blocker(_)) => panic!("no blocker entities here: {s:?}"),
            }
        }
    }
    assert!(
        seen > 100 && walled > 0 && shielded > 0,
        "{seen} {walled} {shielded}"
    );
}

/// 150 bodies in a 16 m square, some doors and some vehicles, on layers 1, 2 or both, some
/// turned, some scaled, some out of lag compensation, walking; and a wall.
fn mixed_crowd() -> (History, Vec<EntityId>) {
    let mut history = walled();
    let ids: Vec<EntityId> = (0..150)
        .map(|i| match i % 11 {
            3 => history.spawn_as(body(), EntityRole::Blocker),
            7 => history.spawn_as(body(), EntityRole::TargetAndBlocker),
            _ => history.spawn(body()),
        })
        .collect();
    for tick in 0..=32_u32 {
        let time = f64::from(tick) / 64.0;
        let mut frame = history.begin_frame(Tick(tick), time).expect("in order");
        for (i, &id) in ids.iter().enumerate() {
            let f = i as f32;
            let bone = BoneTransform {
                translation: Vec3::new(
                    (f * 3.7) % 16.0 - 8.0 + time as f32 * (f % 3.0 - 1.0),
                    1.0,
                    (f * 7.3) % 16.0 + time as f32,
                ),
                rotation: glam::Quat::from_rotation_y(f * 0.7 + time as f32),
                scale: if i % 5 == 0 {
                    Vec3::new(1.2, 0.9, 1.1)
                } else {
                    Vec3::ONE
                },
            };
            let state = EntityState {
                layers: [1, 2, 3][i % 3],
                lag_compensated: i % 13 != 5,
                ..EntityState::default()
            };
            frame.record_rigid(id, bone, state).expect("valid pose");
        }
    }
    (history, ids)
}

#[test]
fn a_splash_covers_what_a_trace_would_among_doors_vehicles_layers_and_crowds() {
    // The reference, as the splash describes its line of sight: a closest-hit trace with
    // the query's filters from the blast to each hitbox's nearest point, a centimetre
    // short; a door or vehicle it stops at hides the hitbox, then a wall, then a body when
    // bodies shield. The victims are `overlap_sphere`'s, in its order.
    let (history, ids) = mixed_crowd();
    let mut rng = PelletRng::new(25);
    let (mut scratch, mut caught, mut overlaps) = (Vec::new(), Vec::new(), Vec::new());
    let (mut seen, mut walled, mut shielded, mut blocked) = (0, 0, 0, 0);
    // Blasts holding more entities than are culled together, and more victims than are
    // ordered by key: both take their rarer paths.
    let (mut crowded, mut many) = (0, 0);
    for round in 0..160_u32 {
        let center = Vec3::new(
            rng.next_unit() * 16.0 - 8.0,
            rng.next_unit() * 2.0,
            rng.next_unit() * 16.0,
        );
        // Now and then a blast that holds most of the crowd.
        let radius = 2.0 + rng.next_unit() * 8.0 + if round % 8 == 0 { 8.0 } else { 0.0 };
        let layers = [u32::MAX, 1, 2][round as usize % 3];
        let blocking = [u32::MAX, 2][round as usize / 3 % 2];
        let ignore = [ids[round as usize % ids.len()]];
        let at = RewindTarget::at(0.2 + f64::from(round % 7) / 256.0);
        let blast = Blast {
            center,
            radius,
            falloff: Falloff::new(1.0, radius, 0.2).expect("valid falloff"),
            bodies_block: round % 2 == 0,
        };
        let query = || {
            history
                .query(at)
                .layers(layers)
                .blocked_by(blocking)
                .ignore(&ignore)
        };
        query()
            .splash(&blast, &mut scratch, &mut caught)
            .expect("in the window");
        query()
            .overlap_sphere(center, radius, &mut overlaps)
            .expect("in the window");
        assert_eq!(
            caught.iter().map(|s| s.overlap).collect::<Vec<_>>(),
            overlaps,
            "round {round}"
        );
        let entities = |hits: &[super::super::splash::SplashHit]| {
            let mut entities: Vec<_> = hits.iter().map(|s| s.overlap.entity).collect();
            entities.dedup();
            entities.len()
        };
        if entities(&caught) > 64 {
            crowded += 1;
        }
        if caught.len() > 256 {
            many += 1;
        }
        for s in &caught {
            let reach = s.overlap.distance - 0.01;
            let expected = if reach <= 0.0 {
                None
            } else {
                let ray = Ray::new(center, s.overlap.closest_point - center, reach).unwrap();
                let trace = query().ray(&ray).unwrap();
                let victim = s.overlap.entity;
                match (trace.blocking_entity, trace.blocker, trace.hit) {
                    (Some(block), _, _) if block.entity != victim => {
                        Some(Cover::Blocker(block.entity))
                    }
                    (_, Some(wall), _) => Some(Cover::Wall(wall.id)),
                    (_, None, Some(hit)) if blast.bodies_block && hit.entity != victim => {
                        Some(Cover::Body(hit.entity))
                    }
                    _ => None,
                }
            };
            assert_eq!(s.cover, expected, "round {round}: {s:?}");
            match s.cover {
                None => seen += 1,
                Some(Cover::Wall(_)) => walled += 1,
                Some(Cover::Body(_)) => shielded += 1,
                Some(Cover::Blocker(_)) => blocked += 1,
            }
        }
    }
    assert!(
        seen > 100 && walled > 0 && shielded > 100 && blocked > 100 && crowded > 0 && many > 0,
        "{seen} {walled} {shielded} {blocked} {crowded} {many}"
    );
}

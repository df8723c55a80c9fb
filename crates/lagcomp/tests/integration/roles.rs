//! Entity roles: a blocker (a door) stops traces where it was at the rewound time and is
//! never hit; a target behind it is not reached; a vehicle (target and blocker) is hit and
//! ends even a penetrating trace; layer masks choose what hits and what blocks.

use lagcomp::{
    Blocker, BoneTransform, EntityId, EntityRole, EntityState, History, QueryLog, Shape, Tick, Vec3,
};

use crate::support::{at, box_rig, cube_rig, history, ray_at, state_on, tick_time};

const RATE: f64 = 64.0;
/// The player stands 3 m behind the door's line (z = 0), on the ray of `ray_at`.
const PLAYER: Vec3 = Vec3::new(0.0, 0.0, 3.0);
/// Where the door stands closed (on the line), and open (slid 5 m aside).
const CLOSED: Vec3 = Vec3::ZERO;
const OPEN: Vec3 = Vec3::new(5.0, 0.0, 0.0);
/// The door is closed until this tick and open from it on.
const OPENS_AT: u32 = 20;

/// A door (a 1 m cube, blocker) on layer `door_layers`, and a player (target) behind it,
/// recorded for 32 ticks; the door slides open at [`OPENS_AT`].
fn door_scene(role: EntityRole, door_layers: u32) -> (History, EntityId, EntityId) {
    let mut history = history(RATE, 1.0);
    let door = history.spawn_as(cube_rig(), role);
    let player = history.spawn(box_rig());
    for tick in 1..=32 {
        let mut frame = history
            .begin_frame(Tick(tick), tick_time(tick, RATE))
            .unwrap();
        let door_at = if tick < OPENS_AT { CLOSED } else { OPEN };
        frame
            .record_rigid(
                door,
                BoneTransform::from_translation(door_at),
                state_on(door_layers),
            )
            .unwrap();
        frame
            .record_rigid(
                player,
                BoneTransform::from_translation(PLAYER),
                EntityState::default(),
            )
            .unwrap();
    }
    (history, door, player)
}

#[test]
fn a_blocker_stops_the_trace_where_it_was_at_the_rewound_time() {
    let (history, door, player) = door_scene(EntityRole::Blocker, 1);
    assert_eq!(history.role(door), Ok(EntityRole::Blocker));
    assert_eq!(history.role(player), Ok(EntityRole::Target));
    // (tick looked at, what stops the ray). Rendered while the door was closed, the shot
    // ends on it even though it is open now; rendered after, it reaches the player.
    let cases = [
        // Closed, long ago.
        (5, Some(door)),
        // The last closed tick.
        (OPENS_AT - 1, Some(door)),
        // Open, the first tick.
        (OPENS_AT, None),
        // Open, now.
        (32, None),
    ];
    let ray = ray_at(PLAYER);
    for (tick, stopped) in cases {
        let trace = history.query(at(tick_time(tick, RATE))).ray(&ray).unwrap();
        match stopped {
            Some(door) => {
                assert!(
                    trace.hit.is_none(),
                    "tick {tick}: the player is behind the door"
                );
                let blocking = trace.blocking_entity.expect("the door stops it");
                assert_eq!(blocking.entity, door);
                // The cube's near face, at z = -0.5, is 6.5 m from the muzzle (at z = -7).
                assert!((blocking.distance - 6.5).abs() < 1e-5, "{blocking:?}");
                assert_eq!(
                    trace.stopped_by(),
                    Some((Blocker::Entity(door), blocking.distance))
                );
            }
            None => {
                assert_eq!(trace.hit.map(|h| h.entity), Some(player), "tick {tick}");
                assert!(trace.blocking_entity.is_none() && trace.stopped_by().is_none());
            }
        }
        // The debug walk (every entity, through `admit`) decides the same.
        let mut log = QueryLog::default();
        let observed = history
            .query(at(tick_time(tick, RATE)))
            .observe(&mut log)
            .ray(&ray)
            .unwrap();
        assert_eq!(observed, trace, "tick {tick}");
    }
}

#[test]
fn an_uncompensated_blocker_stops_at_its_present_pose() {
    // A door recorded with lag compensation off at some frame is walked outside the tree,
    // at its present pose (open): a shot rendered while it was closed passes.
    let mut history = history(RATE, 1.0);
    let door = history.spawn_as(cube_rig(), EntityRole::Blocker);
    let player = history.spawn(box_rig());
    for tick in 1..=32 {
        let mut frame = history
            .begin_frame(Tick(tick), tick_time(tick, RATE))
            .unwrap();
        let door_at = if tick < OPENS_AT { CLOSED } else { OPEN };
        let state = EntityState {
            lag_compensated: false,
            ..EntityState::default()
        };
        frame
            .record_rigid(door, BoneTransform::from_translation(door_at), state)
            .unwrap();
        frame
            .record_rigid(
                player,
                BoneTransform::from_translation(PLAYER),
                EntityState::default(),
            )
            .unwrap();
    }
    let trace = history
        .query(at(tick_time(5, RATE)))
        .ray(&ray_at(PLAYER))
        .unwrap();
    assert_eq!(trace.hit.map(|h| h.entity), Some(player));
    // Closed now, it blocks every shot.
    let mut frame = history.begin_frame(Tick(33), tick_time(33, RATE)).unwrap();
    let state = EntityState {
        lag_compensated: false,
        ..EntityState::default()
    };
    frame
        .record_rigid(door, BoneTransform::from_translation(CLOSED), state)
        .unwrap();
    frame
        .record_rigid(
            player,
            BoneTransform::from_translation(PLAYER),
            EntityState::default(),
        )
        .unwrap();
    frame.finish();
    let trace = history
        .query(at(tick_time(25, RATE)))
        .ray(&ray_at(PLAYER))
        .unwrap();
    assert_eq!(
        trace.stopped_by().map(|(b, _)| b),
        Some(Blocker::Entity(door))
    );
}

#[test]
fn a_penetrating_trace_ends_at_a_blocker_and_after_a_vehicle() {
    let ray = ray_at(PLAYER);
    let mut hits = Vec::new();
    // (door's role, entities hit in order, the blocking entity).
    let (history, door, player) = door_scene(EntityRole::Target, 1);
    let trace = history
        .query(at(tick_time(5, RATE)))
        .ray_all(&ray, &mut hits)
        .unwrap();
    let entities: Vec<_> = hits.iter().map(|h| h.entity).collect();
    assert_eq!(
        entities,
        [door, player],
        "a target does not stop a penetrating trace"
    );
    assert!(trace.blocking_entity.is_none());

    let (history, door, _) = door_scene(EntityRole::Blocker, 1);
    let trace = history
        .query(at(tick_time(5, RATE)))
        .ray_all(&ray, &mut hits)
        .unwrap();
    assert!(hits.is_empty() && trace.hit.is_none(), "{hits:?}");
    assert_eq!(trace.blocking_entity.map(|h| h.entity), Some(door));

    let (history, vehicle, _) = door_scene(EntityRole::TargetAndBlocker, 1);
    let trace = history
        .query(at(tick_time(5, RATE)))
        .ray_all(&ray, &mut hits)
        .unwrap();
    let entities: Vec<_> = hits.iter().map(|h| h.entity).collect();
    assert_eq!(entities, [vehicle], "the vehicle is hit and ends the trace");
    assert_eq!(trace.hit.map(|h| h.entity), Some(vehicle));
    assert!(trace.blocking_entity.is_none() && trace.stopped_by().is_none());
    // The closest-hit trace hits the vehicle too.
    let trace = history.query(at(tick_time(5, RATE))).ray(&ray).unwrap();
    assert_eq!(trace.hit.map(|h| h.entity), Some(vehicle));
}

#[test]
fn layer_masks_choose_what_hits_and_what_blocks() {
    const PLAYERS: u32 = 1;
    const GLASS: u32 = 2;
    const VEHICLES: u32 = 4;
    let ray = ray_at(PLAYER);
    let then = at(tick_time(5, RATE));
    // A pane of glass (blocker on its own layer): a round that is not blocked by glass
    // passes it and hits the player behind.
    let (history, glass, player) = door_scene(EntityRole::Blocker, GLASS);
    let rifle = history.query(then).ray(&ray).unwrap();
    assert_eq!(rifle.blocking_entity.map(|h| h.entity), Some(glass));
    let sniper = history
        .query(then)
        .layers(PLAYERS)
        .blocked_by(!GLASS)
        .ray(&ray)
        .unwrap();
    assert_eq!(sniper.hit.map(|h| h.entity), Some(player));
    assert!(sniper.blocking_entity.is_none());
    // Blocked by glass but hitting only layer 1: a blocker's own layer need not be hit.
    let pistol = history
        .query(then)
        .layers(PLAYERS)
        .blocked_by(u32::MAX)
        .ray(&ray)
        .unwrap();
    assert_eq!(pistol.blocking_entity.map(|h| h.entity), Some(glass));

    // A vehicle on its layer: hit by a weapon whose hit mask has it; a weapon that only
    // counts it as cover is stopped without hitting it.
    let (history, vehicle, _) = door_scene(EntityRole::TargetAndBlocker, VEHICLES);
    let rocket = history.query(then).ray(&ray).unwrap();
    assert_eq!(rocket.hit.map(|h| h.entity), Some(vehicle));
    let smg = history
        .query(then)
        .layers(PLAYERS)
        .blocked_by(u32::MAX)
        .ray(&ray)
        .unwrap();
    assert!(smg.hit.is_none());
    assert_eq!(
        smg.stopped_by().map(|(b, _)| b),
        Some(Blocker::Entity(vehicle))
    );
    let mut hits = Vec::new();
    let smg_all = history
        .query(then)
        .layers(PLAYERS)
        .blocked_by(u32::MAX)
        .ray_all(&ray, &mut hits)
        .unwrap();
    assert!(hits.is_empty());
    assert_eq!(smg_all.blocking_entity.map(|h| h.entity), Some(vehicle));
    // Seen by neither mask: the vehicle is not there for this trace.
    let ghost = history
        .query(then)
        .layers(PLAYERS)
        .blocked_by(PLAYERS)
        .ray(&ray)
        .unwrap();
    assert!(ghost.hit.is_some_and(|h| h.entity != vehicle) && ghost.blocking_entity.is_none());
}

#[test]
fn a_wall_and_a_door_the_nearer_stops_the_trace() {
    let (mut history, door, _) = door_scene(EntityRole::Blocker, 1);
    // A wall 1 m behind the door (between it and the player).
    let wall = history
        .add_static(
            Shape::cuboid(Vec3::new(2.0, 2.0, 0.1)),
            lagcomp::Pose::from_translation(Vec3::new(0.0, 0.0, 1.5)),
            1,
        )
        .unwrap();
    let ray = ray_at(PLAYER);
    let closed = history.query(at(tick_time(5, RATE))).ray(&ray).unwrap();
    assert_eq!(
        closed.stopped_by().map(|(b, _)| b),
        Some(Blocker::Entity(door))
    );
    assert_eq!(
        closed.blocker.map(|w| w.id),
        Some(wall),
        "the wall behind is reported"
    );
    let open = history.query(at(tick_time(25, RATE))).ray(&ray).unwrap();
    assert_eq!(open.stopped_by().map(|(b, _)| b), Some(Blocker::Wall(wall)));
    assert!(open.blocking_entity.is_none());
    // A door behind a wall is never reached.
    let (mut history, _, _) = door_scene(EntityRole::Blocker, 1);
    let wall = history
        .add_static(
            Shape::cuboid(Vec3::new(2.0, 2.0, 0.1)),
            lagcomp::Pose::from_translation(Vec3::new(0.0, 0.0, -2.0)),
            1,
        )
        .unwrap();
    let trace = history.query(at(tick_time(5, RATE))).ray(&ray).unwrap();
    assert_eq!(
        trace.stopped_by().map(|(b, _)| b),
        Some(Blocker::Wall(wall))
    );
    assert!(trace.blocking_entity.is_none());
}

#[test]
fn volumes_never_report_a_blocker() {
    let (history, door, player) = door_scene(EntityRole::Blocker, 1);
    let mut found = Vec::new();
    // A 10 m explosion around both.
    history
        .query(at(tick_time(5, RATE)))
        .overlap_sphere(Vec3::new(0.0, 0.0, 1.5), 10.0, &mut found)
        .unwrap();
    assert!(found.iter().all(|o| o.entity != door));
    assert!(found.iter().any(|o| o.entity == player));
    let (history, vehicle, _) = door_scene(EntityRole::TargetAndBlocker, 1);
    history
        .query(at(tick_time(5, RATE)))
        .overlap_sphere(Vec3::new(0.0, 0.0, 1.5), 10.0, &mut found)
        .unwrap();
    assert!(
        found.iter().any(|o| o.entity == vehicle),
        "a vehicle can be hurt"
    );
}

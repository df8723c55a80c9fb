//! The rewound-query system parameter and the game's own tick.

use bevy_app::App;
use bevy_ecs::prelude::*;
use bevy_ecs::system::SystemState;
use bevy_transform::components::Transform;
use lagcomp::{Ray, RewindTarget, Tick, Vec3};
use lagcomp_bevy::{
    LagCompClock, LagCompPlugin, MAX_IGNORED, RecordReport, RewoundHitboxes, RewoundQueryError,
    ServerTick,
};

use crate::support::{self, time_of};

/// Two players in a row along +z, both walking along +x at 1 m a tick.
fn scene() -> (App, [Entity; 2]) {
    let mut app = support::app();
    let near = app
        .world_mut()
        .spawn((Transform::from_xyz(0.0, 0.0, 0.0), support::player()))
        .id();
    let far = app
        .world_mut()
        .spawn((Transform::from_xyz(0.0, 0.0, 3.0), support::player()))
        .id();
    for tick in 0..8 {
        for entity in [near, far] {
            app.world_mut()
                .get_mut::<Transform>(entity)
                .expect("a transform")
                .translation
                .x = tick as f32;
        }
        support::tick(&mut app);
    }
    (app, [near, far])
}

#[test]
fn rays_sweeps_overlaps_and_entities_answer_in_bevy_entities() {
    let (mut app, [near, far]) = scene();
    let mut state = SystemState::<RewoundHitboxes>::new(app.world_mut());
    let mut rewound = state
        .get_mut(app.world_mut())
        .expect("the plugin's resources");
    let at3 = RewindTarget::at(time_of(3));
    let ray = Ray::new(Vec3::new(3.0, 0.9, -10.0), Vec3::Z, 100.0).expect("a valid ray");
    let trace = rewound.at(at3).ray(&ray).expect("a valid query");
    assert_eq!(trace.hit.map(|h| h.entity), Some(near));
    // Ignoring the near one, the far one is hit behind it.
    let trace = rewound
        .at(at3)
        .ignore(near)
        .ray(&ray)
        .expect("a valid query");
    assert_eq!(trace.hit.map(|h| h.entity), Some(far));
    // At tick 6 both stand at x = 6: the same ray passes them by.
    assert!(
        rewound
            .at(RewindTarget::at(time_of(6)))
            .ray(&ray)
            .expect("valid")
            .hit
            .is_none()
    );
    // A sweep 0.4 m wide grazes the near one from 0.45 m off its side.
    let beside = Ray::new(Vec3::new(3.65, 0.9, -10.0), Vec3::Z, 100.0).expect("a valid ray");
    assert!(rewound.at(at3).ray(&beside).expect("valid").hit.is_none());
    let swept = rewound.at(at3).sweep(&beside, 0.4).expect("valid");
    assert_eq!(swept.hit.map(|h| h.entity), Some(near));
    // Only the far one is within a metre of its own torso then.
    let mut out = Vec::new();
    rewound
        .overlap_sphere(at3, Vec3::new(3.0, 0.9, 3.0), 1.0, &mut out)
        .expect("a valid volume");
    assert!(
        !out.is_empty() && out.iter().all(|o| o.entity == far),
        "{out:?}"
    );
    // One entity at a time.
    let then = rewound
        .entity_at(near, at3)
        .expect("valid")
        .expect("recorded");
    assert_eq!(
        then.bone(0).expect("bone 0").translation,
        Vec3::new(3.0, 0.0, 0.0)
    );
    assert_eq!(rewound.newest_time(), Some(time_of(7)));
}

#[test]
fn bad_queries_are_refused_with_reasons() {
    let (mut app, [near, _]) = scene();
    let stranger = app.world_mut().spawn(Transform::default()).id();
    let mut state = SystemState::<RewoundHitboxes>::new(app.world_mut());
    let rewound = state.get(app.world()).expect("the plugin's resources");
    let ray = Ray::new(Vec3::ZERO, Vec3::Z, 10.0).expect("a valid ray");
    let at = RewindTarget::at(time_of(3));
    let mut query = rewound.at(at);
    for _ in 0..=MAX_IGNORED {
        query = query.ignore(near);
    }
    assert_eq!(
        query.ray(&ray).err(),
        Some(RewoundQueryError::TooManyIgnored)
    );
    assert_eq!(
        rewound.entity_at(stranger, at).err(),
        Some(RewoundQueryError::NoHitboxes(stranger))
    );
    // Older than the window: the core's refusal, passed on.
    assert!(matches!(
        rewound.at(RewindTarget::at(-5.0)).ray(&ray),
        Err(RewoundQueryError::Query(_))
    ));
}

/// A game's tick counter, as lightyear or replicon keep one.
#[derive(Resource)]
struct GameTick(u32);

impl ServerTick for GameTick {
    fn server_tick(&self) -> Tick {
        Tick(self.0)
    }
}

#[test]
fn frames_follow_the_games_tick_and_skip_one_that_did_not_advance() {
    let mut app = App::new();
    app.add_plugins(
        LagCompPlugin::new(support::TICK_RATE, 0.5)
            .expect("valid")
            .tick_from::<GameTick>(),
    )
    .insert_resource(GameTick(100));
    app.world_mut()
        .spawn((Transform::default(), support::player()));
    support::tick(&mut app);
    support::tick(&mut app);
    let clock = *app.world().resource::<LagCompClock>();
    assert_eq!(clock.newest(), Some((Tick(100), time_of(100))));
    assert_eq!(app.world().resource::<RecordReport>().frames, 1);
    app.world_mut().resource_mut::<GameTick>().0 = 103;
    support::tick(&mut app);
    assert_eq!(
        app.world()
            .resource::<LagCompClock>()
            .newest()
            .map(|(t, _)| t),
        Some(Tick(103))
    );
    assert_eq!(app.world().resource::<RecordReport>().frames, 2);
}

#[test]
fn the_recorded_state_comes_from_the_hitbox_state_component() {
    let mut app = support::app();
    let alive = lagcomp_bevy::HitboxState {
        alive: true,
        lag_compensated: true,
        invulnerable: true,
        evasive: false,
        layers: 0b100,
        user: 7,
    };
    let player = app
        .world_mut()
        .spawn((Transform::default(), support::player(), alive))
        .id();
    support::tick(&mut app);
    // It dies at tick 1, dodging: the past still sees it alive, spawn-protected and not
    // dodging; the present does not.
    let mut now = app
        .world_mut()
        .get_mut::<lagcomp_bevy::HitboxState>(player)
        .expect("a state");
    now.alive = false;
    now.invulnerable = false;
    now.evasive = true;
    support::tick(&mut app);
    let mut state = SystemState::<RewoundHitboxes>::new(app.world_mut());
    let rewound = state.get(app.world()).expect("the plugin's resources");
    let ray = Ray::new(Vec3::new(0.0, 0.9, -5.0), Vec3::Z, 100.0).expect("a valid ray");
    let then = RewindTarget::at(time_of(0));
    let hit = rewound
        .at(then)
        .ray(&ray)
        .expect("valid")
        .hit
        .expect("a hit");
    assert_eq!(hit.entity, player);
    let recorded = hit.hit.state;
    assert_eq!(
        (recorded.alive, recorded.layers, recorded.user),
        (true, 0b100, 7)
    );
    assert!(recorded.invulnerable && !recorded.evasive && recorded.lag_compensated);
    // A mask without its layer does not see it.
    assert!(
        rewound
            .at(then)
            .layers(0b011)
            .ray(&ray)
            .expect("valid")
            .hit
            .is_none()
    );
    let now = RewindTarget::at(time_of(1));
    assert!(
        rewound.at(now).ray(&ray).expect("valid").hit.is_none(),
        "dead at tick 1"
    );
}

/// A player behind a sliding door: the door (a blocker) slides aside at tick 4.
#[test]
fn a_door_stops_rays_where_it_stood_and_is_named_as_a_bevy_entity() {
    let mut app = support::app();
    let player = app
        .world_mut()
        .spawn((Transform::from_xyz(0.0, 0.0, 3.0), support::player()))
        .id();
    let panel = lagcomp::Hitbox::new(
        0,
        "panel",
        lagcomp::Zone::Custom(1),
        0,
        lagcomp::Shape::cuboid(Vec3::new(1.0, 1.25, 0.05)),
    );
    let door = app
        .world_mut()
        .spawn((
            Transform::from_xyz(0.0, 1.25, 1.5),
            lagcomp_bevy::Hitboxes::rigid(vec![panel])
                .expect("a one-bone rig")
                .with_role(lagcomp::EntityRole::Blocker),
        ))
        .id();
    for tick in 0..8 {
        if tick == 4 {
            app.world_mut()
                .get_mut::<Transform>(door)
                .expect("a transform")
                .translation
                .x = 3.0;
        }
        support::tick(&mut app);
    }
    let mut state = SystemState::<RewoundHitboxes>::new(app.world_mut());
    let rewound = state
        .get_mut(app.world_mut())
        .expect("the plugin's resources");
    let ray = Ray::new(Vec3::new(0.0, 0.9, -10.0), Vec3::Z, 100.0).expect("a valid ray");
    // Closed at tick 2: the door stops the ray 11.45 m out and the player is not hit.
    let closed = rewound
        .at(RewindTarget::at(time_of(2)))
        .ray(&ray)
        .expect("valid");
    assert!(closed.hit.is_none(), "{closed:?}");
    let block = closed.blocking_entity.expect("the door stops it");
    assert_eq!(block.entity, door);
    assert!((block.block.distance - 11.45).abs() < 1e-4, "{block:?}");
    // Open at tick 6: the player behind it is hit, and the door is never a hit itself.
    let open = rewound
        .at(RewindTarget::at(time_of(6)))
        .ray(&ray)
        .expect("valid");
    assert_eq!(open.hit.map(|h| h.entity), Some(player));
    assert!(open.blocking_entity.is_none());
    let at_door = Ray::new(Vec3::new(3.0, 0.9, -10.0), Vec3::Z, 100.0).expect("a valid ray");
    let trace = rewound
        .at(RewindTarget::at(time_of(6)))
        .ray(&at_door)
        .expect("valid");
    assert!(
        trace.hit.is_none(),
        "a blocker is never a target: {trace:?}"
    );
    assert_eq!(trace.blocking_entity.map(|b| b.entity), Some(door));
}

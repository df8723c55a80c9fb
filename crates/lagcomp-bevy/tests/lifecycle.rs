//! Spawning and despawning follow the components: a despawned entity stays hittable in
//! its past, the teleport flag comes from a component, recycled Bevy indices never alias.

use bevy_ecs::prelude::*;
use bevy_ecs::system::SystemState;
use bevy_transform::components::Transform;
use lagcomp::{Ray, RewindTarget, Tick, Vec3, WindowPolicy};
use lagcomp_bevy::{
    ClaimedTarget, HitboxEntities, LagCompHistory, RewoundHitboxes, Shooter, ShotFired, Teleported,
};
use lagcomp_validate::{Participant, RenderTime, VerdictOutcome};

use crate::support::{self, RIFLE, time_of};

/// A ray from 5 m in front (-z) through `x` at torso height.
fn ray_through(x: f32) -> Ray {
    Ray::new(Vec3::new(x, 0.9, -5.0), Vec3::Z, 100.0).expect("a valid ray")
}

fn first_hit(app: &mut bevy_app::App, target: RewindTarget, ray: &Ray) -> Option<Entity> {
    let mut state = SystemState::<RewoundHitboxes>::new(app.world_mut());
    let rewound = state.get(app.world()).expect("the plugin's resources");
    rewound
        .at(target)
        .ray(ray)
        .expect("a valid query")
        .hit
        .map(|hit| hit.entity)
}

#[test]
fn a_target_despawned_mid_flight_is_still_hit_in_its_past_then_forgotten() {
    let mut app = support::app();
    let shooter = app
        .world_mut()
        .spawn((
            Transform::from_xyz(0.0, 0.0, -10.0),
            support::player(),
            Shooter {
                participant: Participant {
                    aim_forward: Vec3::Z,
                    ..Participant::default()
                },
                timing: Some(support::timing()),
            },
        ))
        .id();
    let target = app
        .world_mut()
        .spawn((Transform::from_xyz(0.0, 0.0, 0.0), support::player()))
        .id();
    for _ in 0..40 {
        support::tick(&mut app);
    }
    // The target dies at tick 40; the shot that killed it, fired 150 ms before, is still
    // on its way.
    app.world_mut().despawn(target);
    support::tick(&mut app);
    let received = time_of(40);
    app.world_mut().write_message(ShotFired {
        shooter,
        weapon: RIFLE,
        seq: 0,
        render_time: RenderTime::Time(received - 0.15),
        origin: Vec3::new(0.0, 0.3, -10.0),
        direction: Vec3::new(0.0, 0.6, 10.0),
        hit: Some(ClaimedTarget {
            entity: target,
            hitbox: None,
            point: None,
        }),
        received_at: Some(received),
    });
    support::tick(&mut app);
    let judged = app.world().resource::<support::Judged>().0.clone();
    assert_eq!(judged.len(), 1);
    assert!(
        matches!(judged[0].verdict.outcome, VerdictOutcome::Confirmed(_)),
        "{:?}",
        judged[0].verdict
    );
    assert_eq!(judged[0].target, Some(target));
    assert_eq!(
        first_hit(&mut app, RewindTarget::at(time_of(38)), &ray_through(0.0)),
        Some(target)
    );
    // Once its last frame has left the half-second window, it is forgotten.
    assert!(
        app.world()
            .resource::<HitboxEntities>()
            .core_id(target)
            .is_some()
    );
    for _ in 0..40 {
        support::tick(&mut app);
    }
    let entities = app.world().resource::<HitboxEntities>();
    assert_eq!(entities.core_id(target), None);
    assert_eq!(entities.len(), 1, "only the shooter is left");
}

#[test]
fn the_teleport_flag_comes_from_a_component_for_one_frame() {
    let mut app = support::app();
    let jumper = app
        .world_mut()
        .spawn((Transform::from_xyz(0.0, 0.0, 0.0), support::player()))
        .id();
    for _ in 0..10 {
        support::tick(&mut app);
    }
    // Tick 10: a teleporter moves it 10 m.
    app.world_mut()
        .entity_mut(jumper)
        .insert(Teleported)
        .get_mut::<Transform>()
        .expect("a transform")
        .translation
        .x = 10.0;
    support::tick(&mut app);
    assert!(
        app.world().get::<Teleported>(jumper).is_none(),
        "the marker is spent"
    );
    support::tick(&mut app);
    let id = app
        .world()
        .resource::<HitboxEntities>()
        .core_id(jumper)
        .expect("registered");
    let history = app.world().resource::<LagCompHistory>();
    let at = |target| {
        history
            .entity_at(id, target, WindowPolicy::Reject)
            .expect("a valid target")
            .expect("recorded")
    };
    assert!(at(RewindTarget::at(time_of(10))).state().teleported);
    assert!(!at(RewindTarget::at(time_of(11))).state().teleported);
    // Halfway through the jump it is at one end, never in the middle.
    let x = at(RewindTarget::between(Tick(9), Tick(10), 0.5))
        .bone(0)
        .expect("bone 0")
        .translation
        .x;
    assert!(
        x == 0.0 || x == 10.0,
        "interpolated along the jump to x = {x}"
    );
    assert_eq!(
        first_hit(
            &mut app,
            RewindTarget::between(Tick(9), Tick(10), 0.5),
            &ray_through(5.0)
        ),
        None
    );
}

#[test]
fn a_recycled_bevy_index_does_not_alias_the_entity_it_replaced() {
    let mut app = support::app();
    let first = app
        .world_mut()
        .spawn((Transform::from_xyz(0.0, 0.0, 0.0), support::player()))
        .id();
    for _ in 0..5 {
        support::tick(&mut app);
    }
    // Bevy keeps freed indices in a local batch of 128 before handing them out again:
    // churn as a busy server does, then take entities until the freed one comes back.
    let churn: Vec<Entity> = (0..200)
        .map(|_| app.world_mut().spawn_empty().id())
        .collect();
    app.world_mut().despawn(first);
    for entity in churn {
        app.world_mut().despawn(entity);
    }
    let second = (0..400)
        .map(|_| app.world_mut().spawn_empty().id())
        .find(|entity| entity.index() == first.index())
        .expect("Bevy reuses a freed index");
    app.world_mut()
        .entity_mut(second)
        .insert((Transform::from_xyz(5.0, 0.0, 0.0), support::player()));
    assert_ne!(second, first);
    for _ in 0..5 {
        support::tick(&mut app);
    }
    let entities = app.world().resource::<HitboxEntities>();
    let (a, b) = (entities.core_id(first), entities.core_id(second));
    assert!(a.is_some() && b.is_some());
    assert_ne!(a, b);
    assert_eq!(entities.entity(a.expect("mapped")), Some(first));
    assert_eq!(entities.entity(b.expect("mapped")), Some(second));
    // The past names the old entity, the present the new one.
    assert_eq!(
        first_hit(&mut app, RewindTarget::at(time_of(2)), &ray_through(0.0)),
        Some(first)
    );
    assert_eq!(
        first_hit(&mut app, RewindTarget::at(time_of(2)), &ray_through(5.0)),
        None
    );
    assert_eq!(
        first_hit(&mut app, RewindTarget::at(time_of(9)), &ray_through(5.0)),
        Some(second)
    );
    assert_eq!(
        first_hit(&mut app, RewindTarget::at(time_of(9)), &ray_through(0.0)),
        None
    );
}

#[test]
fn an_entity_despawned_behind_the_plugins_back_does_not_stop_the_others_being_recorded() {
    let mut app = support::app();
    let [gone, kept] = [-1.0, 1.0].map(|x| {
        app.world_mut()
            .spawn((Transform::from_xyz(x, 0.0, 0.0), support::player()))
            .id()
    });
    for _ in 0..4 {
        support::tick(&mut app);
    }
    let ids = app.world().resource::<HitboxEntities>();
    let (gone_id, kept_id) = (
        ids.core_id(gone).expect("mapped"),
        ids.core_id(kept).expect("mapped"),
    );
    // The game despawns one through the history itself, not through Bevy.
    app.world_mut()
        .resource_mut::<LagCompHistory>()
        .despawn(gone_id)
        .expect("a live entity");
    support::tick(&mut app);
    let history = app.world().resource::<LagCompHistory>();
    let newest = history.newest_tick().expect("frames");
    assert_eq!(newest, Tick(4));
    let now = RewindTarget::between(newest, newest, 0.0);
    assert!(
        history
            .entity_at(kept_id, now, WindowPolicy::Reject)
            .expect("a valid query")
            .is_some(),
        "the other entity is in the newest frame"
    );
    let report = app.world().resource::<lagcomp_bevy::RecordReport>();
    assert_eq!((report.entities, report.skipped), (1, 1));
    assert!(
        matches!(
            report.last_error,
            Some((Tick(4), lagcomp::RecordError::Entity(_)))
        ),
        "{:?}",
        report.last_error
    );
}

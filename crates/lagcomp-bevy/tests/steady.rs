//! A steady tick allocates nothing: recording skeletal and rigid entities through the
//! plugin, and a rewound ray through `RewoundHitboxes`, after warm-up.
//!
//! The counting allocator (in `main.rs`, the binary's global allocator) counts per thread
//! and only while the thread has switched counting on, so other tests running at the same
//! time cannot disturb the numbers.

use std::cell::Cell;

use bevy_app::{FixedPostUpdate, FixedUpdate};
use bevy_ecs::prelude::*;
use bevy_ecs::system::SystemState;
use bevy_transform::components::Transform;
use lagcomp::{Quat, Ray, RewindTarget, Vec3};
use lagcomp_bevy::{RecordReport, RewoundHitboxes};

use crate::support::{self, time_of};

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

/// Counts an allocation if this thread is counting. `try_with`: the allocator may run
/// while thread-locals are torn down, and must never panic.
pub(crate) fn count() {
    if COUNTING.try_with(Cell::get).unwrap_or(false) {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
    }
}

/// Runs `f` with counting on for this thread; its result and the allocations it made.
fn counted<R>(f: impl FnOnce() -> R) -> (R, u64) {
    let before = ALLOCATIONS.with(Cell::get);
    COUNTING.with(|c| c.set(true));
    let result = f();
    COUNTING.with(|c| c.set(false));
    (result, ALLOCATIONS.with(Cell::get) - before)
}

#[derive(Component)]
struct Spinner;

fn spin(mut spinners: Query<&mut Transform, With<Spinner>>) {
    for mut transform in &mut spinners {
        transform.translation.x += 0.01;
        transform.rotation *= Quat::from_rotation_y(0.05);
    }
}

#[test]
fn the_counter_sees_allocations() {
    let (_, allocations) = counted(|| std::hint::black_box(vec![1_u8; 64]));
    assert_eq!(allocations, 1);
}

#[test]
fn a_steady_tick_and_a_rewound_ray_allocate_nothing() {
    let mut app = support::app();
    support::moving(&mut app, spin);
    for i in 0..8 {
        let at = Vec3::new(i as f32 * 2.0, 0.0, 0.0);
        app.world_mut()
            .spawn((Spinner, Transform::from_translation(at), support::player()));
        let root = app
            .world_mut()
            .spawn((
                Spinner,
                Transform::from_translation(at + Vec3::Z * 5.0),
                crate::skeleton::skeleton(),
            ))
            .id();
        crate::skeleton::spawn_joints(app.world_mut(), root);
    }
    for _ in 0..50 {
        support::tick(&mut app);
    }
    assert_eq!(app.world().resource::<RecordReport>().entities, 16);
    // The movement and the plugin's schedule, not `FixedMain` itself: its scope over its
    // schedule order writes a removal message that Bevy clears in `Main`, which this test
    // never runs, so that buffer grows now and then here (and never in a running app).
    let ((), allocations) = counted(|| {
        for _ in 0..100 {
            app.world_mut().run_schedule(FixedUpdate);
            app.world_mut().run_schedule(FixedPostUpdate);
        }
    });
    assert_eq!(allocations, 0, "100 steady ticks allocated");
    assert_eq!(app.world().resource::<RecordReport>().frames, 150);
    let mut state = SystemState::<RewoundHitboxes>::new(app.world_mut());
    let ray = Ray::new(Vec3::new(-5.0, 0.9, 0.0), Vec3::X, 100.0).expect("a valid ray");
    let (hit, allocations) = counted(|| {
        let rewound = state.get(app.world()).expect("the plugin's resources");
        rewound
            .at(RewindTarget::at(time_of(140)))
            .ray(&ray)
            .expect("a valid query")
            .hit
            .is_some()
    });
    assert!(hit);
    assert_eq!(allocations, 0, "a rewound ray allocated");
}

//! Velocities in the history and the extrapolated picture rebuilt from them
//! (`FrameRecorder::record_velocity`, `History::entity_extrapolated`): bad input refused,
//! what is missing said, and velocities kept where the lanes are laid out again.

use std::sync::Arc;

use lagcomp::{
    BoneTransform, EntityId, EntityState, History, HistoryConfig, Hitbox, QueryError, RecordError,
    RewindError, Rig, SampleKind, Shape, Tick, Vec3, WindowSide, Zone,
};

fn ball() -> Arc<Rig> {
    Arc::new(
        Rig::new(
            1,
            vec![Hitbox::new(0, "ball", Zone::Torso, 0, Shape::sphere(0.5))],
        )
        .expect("valid rig"),
    )
}

fn at(x: f32) -> BoneTransform {
    BoneTransform::from_translation(Vec3::new(x, 1.0, 0.0))
}

/// Ticks 1..=`ticks` at 64 Hz, a runner at x = tick with velocity (tick, 0, 0), recorded
/// with its velocity except at tick 3.
fn runner(ticks: u32) -> (History, EntityId) {
    let mut history = History::new(HistoryConfig {
        tick_rate: 64.0,
        max_rewind: 0.5,
    })
    .expect("valid config");
    let id = history.spawn(ball());
    for tick in 1..=ticks {
        let mut frame = history
            .begin_frame(Tick(tick), f64::from(tick) / 64.0)
            .expect("increasing");
        frame
            .record_rigid(id, at(tick as f32), EntityState::default())
            .expect("valid record");
        if tick != 3 {
            frame
                .record_velocity(id, Vec3::new(tick as f32, 0.0, 0.0))
                .expect("valid velocity");
        }
    }
    (history, id)
}

#[test]
fn bad_velocities_are_refused_and_change_nothing() {
    let (mut history, id) = runner(4);
    let mut frame = history
        .begin_frame(Tick(5), 5.0 / 64.0)
        .expect("increasing");
    frame
        .record_velocity(id, Vec3::new(2.0, 0.0, 0.0))
        .expect("valid velocity");
    for bad in [
        Vec3::new(f32::NAN, 0.0, 0.0),
        Vec3::new(0.0, f32::INFINITY, 0.0),
        Vec3::new(0.0, 0.0, -2.0e6),
    ] {
        assert!(matches!(
            frame.record_velocity(id, bad),
            Err(RecordError::InvalidVelocity { entity, .. }) if entity == id
        ));
    }
    frame
        .record_rigid(id, at(5.0), EntityState::default())
        .expect("valid record");
    drop(frame);
    // The refused ones left the accepted velocity in place.
    assert_eq!(
        history.velocity_in(id, Tick(5)),
        Ok(Some(Vec3::new(2.0, 0.0, 0.0)))
    );
}

#[test]
fn bad_extrapolations_are_typed_errors() {
    let (history, id) = runner(8);
    for by in [-0.01, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let error = history.entity_extrapolated(id, Tick(6), by).unwrap_err();
        assert!(
            matches!(error, QueryError::Rewind(RewindError::InvalidExtrapolation(b)) if b.to_bits() == by.to_bits()),
            "{by}: {error:?}"
        );
    }
    // A tick never recorded (the future, or skipped).
    assert_eq!(
        history.entity_extrapolated(id, Tick(9), 0.01).unwrap_err(),
        QueryError::Rewind(RewindError::UnknownTick(Tick(9)))
    );
    // A stale handle.
    let stranger = EntityId::from_bits(id.to_bits() + 7);
    assert!(matches!(
        history.entity_extrapolated(stranger, Tick(6), 0.01),
        Err(QueryError::Entity(_))
    ));
}

#[test]
fn a_frame_older_than_the_window_is_out_of_it() {
    let (history, id) = runner(80);
    // 0.5 s at 64 Hz: tick 46 is 0.53 s before tick 80, still held by the ring but out of
    // the window.
    assert!(matches!(
        history.entity_extrapolated(id, Tick(46), 0.01),
        Err(QueryError::Rewind(RewindError::OutOfWindow {
            side: WindowSide::TooOld,
            ..
        }))
    ));
}

#[test]
fn the_picture_is_the_frame_moved_by_its_own_velocity() {
    let (history, id) = runner(8);
    let drawn = history
        .entity_extrapolated(id, Tick(6), 0.125)
        .expect("valid")
        .expect("recorded at tick 6");
    assert_eq!(
        drawn.bone(0).expect("one bone").translation,
        Vec3::new(6.75, 1.0, 0.0)
    );
    assert_eq!(drawn.sample().kind, SampleKind::Exact { tick: Tick(6) });
    assert_eq!(drawn.rewind().time, 6.0 / 64.0 + 0.125);
    assert_eq!(drawn.extrapolation_shift(), Some(Vec3::new(0.75, 0.0, 0.0)));
    let head = drawn.hitbox(lagcomp::HitboxId(0)).expect("hitbox 0");
    assert_eq!(head.pose.translation, Vec3::new(6.75, 1.0, 0.0));
    // By nothing: the frame itself.
    let still = history
        .entity_extrapolated(id, Tick(6), 0.0)
        .expect("valid")
        .expect("recorded");
    assert_eq!(still.bone(0).expect("one bone"), at(6.0));
    // Tick 3 was recorded without a velocity: extrapolated as standing still.
    assert_eq!(history.velocity_in(id, Tick(3)), Ok(Some(Vec3::ZERO)));
    let standing = history
        .entity_extrapolated(id, Tick(3), 0.2)
        .expect("valid")
        .expect("recorded");
    assert_eq!(standing.bone(0).expect("one bone"), at(3.0));
}

#[test]
fn an_entity_missing_from_the_frame_has_no_picture() {
    let (mut history, id) = runner(4);
    let late = history.spawn(ball());
    let mut frame = history
        .begin_frame(Tick(5), 5.0 / 64.0)
        .expect("increasing");
    frame
        .record_rigid(late, at(0.0), EntityState::default())
        .expect("valid");
    // A velocity alone does not make a record.
    frame
        .record_velocity(id, Vec3::ONE)
        .expect("valid velocity");
    drop(frame);
    assert!(
        history
            .entity_extrapolated(late, Tick(4), 0.01)
            .expect("valid")
            .is_none()
    );
    assert!(
        history
            .entity_extrapolated(id, Tick(5), 0.01)
            .expect("valid")
            .is_none()
    );
    assert_eq!(history.velocity_in(id, Tick(5)), Ok(None));
    assert_eq!(history.velocity_in(late, Tick(5)), Ok(Some(Vec3::ZERO)));
}

#[test]
fn velocities_survive_the_lanes_being_laid_out_again() {
    let (mut history, id) = runner(4);
    // Enough entities to lay every lane out again at the next frame.
    let crowd: Vec<EntityId> = (0..300).map(|_| history.spawn(ball())).collect();
    let mut frame = history
        .begin_frame(Tick(5), 5.0 / 64.0)
        .expect("increasing");
    for (k, &other) in crowd.iter().enumerate() {
        frame
            .record_rigid(other, at(k as f32), EntityState::default())
            .expect("valid");
        frame
            .record_velocity(other, Vec3::new(0.0, 0.0, k as f32))
            .expect("valid");
    }
    drop(frame);
    for tick in [1, 2, 4] {
        assert_eq!(
            history.velocity_in(id, Tick(tick)),
            Ok(Some(Vec3::new(tick as f32, 0.0, 0.0)))
        );
    }
    for (k, &other) in crowd.iter().enumerate() {
        assert_eq!(
            history.velocity_in(other, Tick(5)),
            Ok(Some(Vec3::new(0.0, 0.0, k as f32)))
        );
    }
}

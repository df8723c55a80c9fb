//! The C functions called from Rust: what the C program cannot easily show (threads, and
//! the match recording of a partly refused tick).

use std::mem::MaybeUninit;
use std::ptr::null;

use lagcomp_capi::*;
use lagcomp_validate::recording::Recording;

use crate::support::scratch_dir;

pub(crate) fn history() -> *mut LagcompHistory {
    let mut config = LagcompHistoryConfig {
        struct_size: 0,
        reserved: 0,
        tick_rate: 0.0,
        max_rewind: 0.0,
    };
    let mut history = std::ptr::null_mut();
    // SAFETY: pointers to locals.
    unsafe {
        assert_eq!(lagcomp_history_config_default(&mut config), LAGCOMP_OK);
        assert_eq!(lagcomp_history_new(&config, &mut history), LAGCOMP_OK);
    }
    history
}

fn ball() -> LagcompHitbox {
    LagcompHitbox {
        id: 0,
        bone: 0,
        zone: LAGCOMP_ZONE_TORSO,
        zone_custom: 0,
        offset: LagcompPose {
            translation: LagcompVec3::default(),
            rotation: LagcompQuat {
                x: 0.0,
                y: 0.0,
                z: 0.0,
                w: 1.0,
            },
        },
        shape: LagcompShape {
            kind: LAGCOMP_SHAPE_SPHERE,
            axis: LAGCOMP_AXIS_Y,
            radius: 0.5,
            half_height: 0.0,
            half_extents: LagcompVec3::default(),
        },
        name: c"ball".as_ptr(),
    }
}

pub(crate) fn spawn(history: *mut LagcompHistory) -> u64 {
    let mut id = 0;
    let hitbox = ball();
    // SAFETY: one valid hitbox, a local out.
    let status = unsafe { lagcomp_history_spawn_rigid(history, &hitbox, 1, &mut id) };
    assert_eq!(status, LAGCOMP_OK);
    id
}

pub(crate) fn at(x: f32) -> LagcompBoneTransform {
    LagcompBoneTransform {
        rotation: LagcompQuat {
            x: 0.0,
            y: 0.0,
            z: 0.0,
            w: 1.0,
        },
        translation: LagcompVec3 { x, y: 0.0, z: 10.0 },
        scale: LagcompVec3 {
            x: 1.0,
            y: 1.0,
            z: 1.0,
        },
        padding: [0.0; 2],
    }
}

pub(crate) fn record(
    history: *mut LagcompHistory,
    tick: u32,
    ids: &[u64],
    bones: &[LagcompBoneTransform],
) -> LagcompStatus {
    record_with(history, tick, ids, None, bones)
}

/// [`record`] with the entities' states (`None`: the defaults).
pub(crate) fn record_with(
    history: *mut LagcompHistory,
    tick: u32,
    ids: &[u64],
    states: Option<&[LagcompEntityState]>,
    bones: &[LagcompBoneTransform],
) -> LagcompStatus {
    if let Some(states) = states {
        assert_eq!(states.len(), ids.len());
    }
    // SAFETY: slices of the lengths given.
    unsafe {
        lagcomp_history_record_tick(
            history,
            tick,
            f64::from(tick) / 64.0,
            ids.as_ptr(),
            states.map_or(null(), <[_]>::as_ptr),
            ids.len(),
            bones.as_ptr(),
            bones.len(),
        )
    }
}

#[test]
fn one_history_used_from_two_threads_serializes_the_calls() {
    let history = history();
    let id = spawn(history);
    assert_eq!(record(history, 0, &[id], &[at(0.0)]), LAGCOMP_OK);
    // Handles are plain values: a thread gets the number, the library finds the history.
    let bits = history.addr();
    let recorder = std::thread::spawn(move || {
        let history: *mut LagcompHistory = std::ptr::without_provenance_mut(bits);
        for tick in 1..=2000 {
            assert_eq!(record(history, tick, &[id], &[at(0.0)]), LAGCOMP_OK);
        }
    });
    // Meanwhile (how much overlaps is up to the scheduler): rays at the newest moment, which must always see the ball whole (a
    // query racing a half-written tick could miss it or read torn bones).
    let mut query = std::mem::MaybeUninit::uninit();
    // SAFETY: a local out.
    let status = unsafe { lagcomp_query_default(query.as_mut_ptr()) };
    assert_eq!(status, LAGCOMP_OK);
    // SAFETY: initialized just above.
    let mut query = unsafe { query.assume_init() };
    query.window_policy = LAGCOMP_WINDOW_CLAMP;
    query.time = 1.0e6;
    let ray = LagcompRay {
        origin: LagcompVec3::default(),
        direction: LagcompVec3 {
            x: 0.0,
            y: 0.0,
            z: 1.0,
        },
        max_distance: 100.0,
    };
    for _ in 0..2000 {
        let mut trace = std::mem::MaybeUninit::uninit();
        // SAFETY: valid query and ray, a local out.
        let status = unsafe { lagcomp_history_ray(history, &query, &ray, trace.as_mut_ptr()) };
        assert_eq!(status, LAGCOMP_OK);
        // SAFETY: written on LAGCOMP_OK.
        let trace = unsafe { trace.assume_init() };
        assert_eq!(trace.has_hit, 1);
        assert!((trace.hit.distance - 9.5).abs() < 1e-4);
    }
    recorder.join().expect("the recording thread");
    let (mut oldest, mut newest) = (0.0, 0.0);
    // SAFETY: local outs.
    let status = unsafe { lagcomp_history_window(history, &mut oldest, &mut newest) };
    assert_eq!(status, LAGCOMP_OK);
    assert_eq!(newest, 2000.0 / 64.0);
    assert_eq!(lagcomp_history_free(history), LAGCOMP_OK);
}

#[test]
fn a_partly_refused_tick_records_the_others_and_the_recording_says_so() {
    let dir = scratch_dir("partial");
    let path = std::ffi::CString::new(dir.join("match.jsonl").to_str().unwrap()).unwrap();
    let history = history();
    // SAFETY: a NUL-terminated path.
    let status = unsafe { lagcomp_history_start_match_recording(history, path.as_ptr()) };
    assert_eq!(status, LAGCOMP_OK);
    let (a, b) = (spawn(history), spawn(history));
    assert_eq!(record(history, 0, &[a, b], &[at(0.0), at(3.0)]), LAGCOMP_OK);
    // b's bone is not finite: a is recorded, b is left out of tick 1.
    assert_eq!(
        record(history, 1, &[a, b], &[at(0.0), at(f32::NAN)]),
        LAGCOMP_NOT_FINITE
    );
    // A batch naming an unknown entity changes nothing: tick 2 is still free.
    assert_eq!(
        record(history, 2, &[a, 999], &[at(0.0), at(3.0)]),
        LAGCOMP_UNKNOWN_ENTITY
    );
    assert_eq!(record(history, 2, &[a, b], &[at(0.0), at(3.0)]), LAGCOMP_OK);
    assert_eq!(lagcomp_history_finish_match_recording(history), LAGCOMP_OK);
    assert_eq!(lagcomp_history_free(history), LAGCOMP_OK);

    let text = std::fs::read_to_string(dir.join("match.jsonl")).unwrap();
    let recording = Recording::read(text.as_bytes()).expect("the recording reads");
    recording
        .check()
        .expect("the recording replays as recorded");
    let frames: Vec<&str> = text.lines().filter(|l| l.contains("\"frame\"")).collect();
    assert_eq!(frames.len(), 3, "{text}");
    assert_eq!(frames[1].matches("\"entity\"").count(), 1, "{}", frames[1]);
    assert_eq!(frames[2].matches("\"entity\"").count(), 2, "{}", frames[2]);
}

#[test]
fn a_repeated_batch_is_still_checked_after_changes() {
    let history = history();
    let (a, b) = (spawn(history), spawn(history));
    let ids = [a, b];
    let bones = [at(0.0), at(3.0)];
    let alive = LagcompEntityState {
        flags: LAGCOMP_STATE_ALIVE | LAGCOMP_STATE_LAG_COMPENSATED,
        layers: 1,
        user: 7,
        reserved: 0,
    };
    let mut states = [alive, alive];
    let tick = |tick: u32, states: &[LagcompEntityState]| {
        record_with(history, tick, &ids, Some(states), &bones)
    };
    assert_eq!(tick(0, &states), LAGCOMP_OK);
    // The caller changes its states array in place: the new states are recorded (dead,
    // not rewound, spawn-protected and dodging: every bit comes back as set).
    states[1].flags = LAGCOMP_STATE_INVULNERABLE | LAGCOMP_STATE_EVASIVE;
    states[1].user = 9;
    assert_eq!(tick(1, &states), LAGCOMP_OK);
    let state_of = |entity: u64, tick: u32| {
        let mut query = MaybeUninit::uninit();
        let mut sample = MaybeUninit::<LagcompEntitySample>::uninit();
        let mut count = 0;
        // SAFETY: local outs; no bones asked for.
        unsafe {
            assert_eq!(lagcomp_query_default(query.as_mut_ptr()), LAGCOMP_OK);
            let mut query = query.assume_init();
            query.time = f64::from(tick) / 64.0;
            let status = lagcomp_history_entity_at(
                history,
                &query,
                entity,
                LAGCOMP_ENTITY_AS_RECORDED,
                std::ptr::null_mut(),
                0,
                &mut count,
                sample.as_mut_ptr(),
            );
            assert_eq!(status, LAGCOMP_BUFFER_TOO_SMALL, "one bone, no room");
            sample.assume_init().state
        }
    };
    assert_eq!(state_of(b, 0), alive);
    assert_eq!(state_of(b, 1), states[1]);
    // A flag the library does not know is refused even in a batch seen before.
    states[0].flags = 1 << 7;
    assert_eq!(tick(2, &states), LAGCOMP_INVALID_ARGUMENT);
    states[0].flags = alive.flags;
    // After a despawn the same list is checked again: b can no longer record.
    assert_eq!(lagcomp_history_despawn(history, b), LAGCOMP_OK);
    assert_eq!(tick(2, &states), LAGCOMP_UNKNOWN_ENTITY);
    assert_eq!(lagcomp_history_free(history), LAGCOMP_OK);
}

#[test]
fn a_door_spawned_as_a_blocker_stops_a_ray_and_is_named() {
    let history = history();
    let target = spawn(history);
    let hitbox = ball();
    let (mut door, mut bad) = (0, 0);
    // SAFETY: one valid hitbox, local outs.
    unsafe {
        assert_eq!(
            lagcomp_history_spawn_as(history, 1, &hitbox, 1, LAGCOMP_ROLE_BLOCKER, &mut door),
            LAGCOMP_OK
        );
        assert_eq!(
            lagcomp_history_spawn_as(history, 1, &hitbox, 1, 7, &mut bad),
            LAGCOMP_INVALID_ARGUMENT
        );
    }
    let mut closed = at(0.0);
    closed.translation.z = 5.0;
    for tick in 0..4 {
        assert_eq!(
            record(history, tick, &[target, door], &[at(0.0), closed]),
            LAGCOMP_OK
        );
    }
    let mut query = MaybeUninit::<LagcompQuery>::uninit();
    // SAFETY: a local out.
    let status = unsafe { lagcomp_query_default(query.as_mut_ptr()) };
    assert_eq!(status, LAGCOMP_OK);
    // SAFETY: initialised just above.
    let mut query = unsafe { query.assume_init() };
    query.target = LAGCOMP_TARGET_TIME;
    query.time = 2.0 / 64.0;
    let ray = LagcompRay {
        origin: LagcompVec3::default(),
        direction: LagcompVec3 {
            x: 0.0,
            y: 0.0,
            z: 1.0,
        },
        max_distance: 100.0,
    };
    let mut trace = MaybeUninit::<LagcompTrace>::uninit();
    // SAFETY: locals.
    let status = unsafe { lagcomp_history_ray(history, &query, &ray, trace.as_mut_ptr()) };
    assert_eq!(status, LAGCOMP_OK);
    // SAFETY: written by the call.
    let trace = unsafe { trace.assume_init() };
    assert_eq!(trace.has_hit, 0, "the target behind the door is not hit");
    assert_eq!(trace.has_blocking_entity, 1);
    assert_eq!(trace.blocking_entity, door);
    assert!(
        (trace.blocking_distance - 4.5).abs() < 1e-5,
        "{}",
        trace.blocking_distance
    );
    assert_eq!(lagcomp_history_free(history), LAGCOMP_OK);
}

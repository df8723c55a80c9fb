//! Steady state allocates nothing through the C interface either: after warm-up, recording
//! a tick and running a ray, a penetrating trace, an overlap and an entity lookup make no
//! heap allocation (the history's scratch buffers are reused).
//!
//! The binary's global allocator counts per thread, only while that thread has switched
//! counting on, so other tests running beside this one do not disturb it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::mem::MaybeUninit;
use std::ptr::null;

use lagcomp_capi::*;

use crate::api::{at, history, record, spawn};

pub(crate) struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn bump() {
    if COUNTING.try_with(Cell::get).unwrap_or(false) {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so the
// `GlobalAlloc` contract holds as it does for `System`; counting touches only
// const-initialised thread-locals without destructors, which never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        bump();
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        bump();
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        bump();
        // SAFETY: `ptr` came from `System` through this allocator; the caller's contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` through this allocator with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Allocations `body` made on this thread.
fn allocations(body: impl FnOnce()) -> u64 {
    ALLOCATIONS.with(|n| n.set(0));
    COUNTING.with(|c| c.set(true));
    body();
    COUNTING.with(|c| c.set(false));
    ALLOCATIONS.with(Cell::get)
}

#[test]
fn a_tick_and_queries_through_the_c_interface_allocate_nothing() {
    let history = history();
    let ids: Vec<u64> = (0..16).map(|_| spawn(history)).collect();
    let bones: Vec<LagcompBoneTransform> = (0..16).map(|e| at(e as f32)).collect();
    let mut query = MaybeUninit::uninit();
    // SAFETY: a local out.
    let status = unsafe { lagcomp_query_default(query.as_mut_ptr()) };
    assert_eq!(status, LAGCOMP_OK);
    // SAFETY: written just above.
    let mut query = unsafe { query.assume_init() };
    query.window_policy = LAGCOMP_WINDOW_CLAMP;
    query.time = 1.0e6;
    query.ignore = ids.as_ptr();
    query.ignore_count = 1;
    let ray = LagcompRay {
        origin: LagcompVec3 {
            x: -5.0,
            y: 0.0,
            z: 10.0,
        },
        direction: LagcompVec3 {
            x: 1.0,
            y: 0.0,
            z: 0.0,
        },
        max_distance: 100.0,
    };
    let center = LagcompVec3 {
        x: 3.0,
        y: 0.0,
        z: 10.0,
    };
    let mut hits: [MaybeUninit<LagcompHit>; 32] = [const { MaybeUninit::uninit() }; 32];
    let mut overlaps: [MaybeUninit<LagcompOverlap>; 32] = [const { MaybeUninit::uninit() }; 32];
    let mut one_bone = MaybeUninit::<LagcompBoneTransform>::uninit();
    let mut tick = 0;
    let mut step = |tick: &mut u32| {
        assert_eq!(record(history, *tick, &ids, &bones), LAGCOMP_OK);
        *tick += 1;
        let mut trace = MaybeUninit::uninit();
        let mut sample = MaybeUninit::uninit();
        let (mut count, mut bone_count) = (0, 0);
        // SAFETY: valid arguments, outs of the capacities given.
        unsafe {
            assert_eq!(
                lagcomp_history_ray(history, &query, &ray, trace.as_mut_ptr()),
                LAGCOMP_OK
            );
            assert_eq!(trace.assume_init().hit.entity, ids[1]);
            let status = lagcomp_history_trace_all(
                history,
                &query,
                &ray,
                0.0,
                hits.as_mut_ptr().cast(),
                32,
                &mut count,
                null::<LagcompTrace>().cast_mut(),
            );
            assert_eq!((status, count), (LAGCOMP_OK, 15));
            let status = lagcomp_history_overlap_sphere(
                history,
                &query,
                &center,
                1.0,
                overlaps.as_mut_ptr().cast(),
                32,
                &mut count,
            );
            assert_eq!((status, count), (LAGCOMP_OK, 3));
            let status = lagcomp_history_entity_at(
                history,
                &query,
                ids[2],
                LAGCOMP_ENTITY_AS_HIT,
                one_bone.as_mut_ptr(),
                1,
                &mut bone_count,
                sample.as_mut_ptr(),
            );
            assert_eq!(status, LAGCOMP_OK);
        }
    };
    // Warm-up: the ring fills and wraps, the scratch buffers grow to size.
    for _ in 0..100 {
        step(&mut tick);
    }
    assert_eq!(
        allocations(|| for _ in 0..50 {
            step(&mut tick)
        }),
        0
    );
    assert_eq!(lagcomp_history_free(history), LAGCOMP_OK);
}

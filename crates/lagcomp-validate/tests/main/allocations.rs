//! Judging a claim of any kind allocates nothing in steady state: a hitscan shot, a
//! projectile hit, a shotgun's pellets and a blast, each judged once to grow the
//! per-thread buffers, then again on a validator cloned beforehand, with every allocation
//! on this thread counted.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use lagcomp::Vec3;
use lagcomp_validate::{RenderTime, ShotClaim, VerdictOutcome};

use crate::kinds::{ARRIVAL, EYE, RENDER, RIFLE, scene};

/// Forwards to [`System`], counting this thread's allocations while asked to.
struct ThreadCounted;

#[global_allocator]
static ALLOCATOR: ThreadCounted = ThreadCounted;

thread_local! {
    static ON: Cell<bool> = const { Cell::new(false) };
    static SEEN: Cell<u64> = const { Cell::new(0) };
}

fn count() {
    if ON.try_with(Cell::get).unwrap_or(false) {
        let _ = SEEN.try_with(|n| n.set(n.get() + 1));
    }
}

// SAFETY: each method hands its arguments unchanged to `System`, which upholds the
// `GlobalAlloc` contract; counting only touches const-initialised thread-locals that have
// no destructor and never allocate.
unsafe impl GlobalAlloc for ThreadCounted {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller's contract, unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller's contract, unchanged.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: `ptr` came from `System` through this allocator; the caller's contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` through this allocator with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// How many times `body` allocated on this thread.
fn allocations<T>(body: impl FnOnce() -> T) -> (u64, T) {
    SEEN.with(|n| n.set(0));
    ON.with(|on| on.set(true));
    let out = body();
    ON.with(|on| on.set(false));
    (SEEN.with(Cell::get), out)
}

#[test]
fn judging_a_claim_of_any_kind_allocates_nothing_in_steady_state() {
    // The count sees this thread's allocations.
    assert_eq!(allocations(|| Vec::<u8>::with_capacity(8)).0, 1);
    let s = scene();
    let rifle = ShotClaim {
        shooter: s.shooter,
        weapon: RIFLE,
        seq: 0,
        render_time: RenderTime::Time(RENDER),
        origin: EYE,
        direction: Vec3::NEG_Z,
        hit: None,
    };
    let rocket = s.rocket();
    let rocket_at = ARRIVAL + f64::from(rocket.step) / 64.0;
    let pellets = s.shotgun();
    let blast = s.blast(&[s.front]);
    // One validator per claim (the weapons share the shooter's fire rate), cloned before
    // counting; the first round grows the per-thread buffers.
    for round in 0..2 {
        let mut v = [(); 4].map(|()| s.validator.clone());
        let (n, verdict) = allocations(|| v[0].validate(&s.history, &rifle, ARRIVAL));
        assert!(
            matches!(verdict.outcome, VerdictOutcome::Confirmed(_)),
            "{verdict:?}"
        );
        let hitscan = n;
        let (n, verdict) =
            allocations(|| v[1].validate_projectile(&s.history, None, &rocket, rocket_at));
        assert_eq!(verdict.outcome.label(), "confirmed");
        let projectile = n;
        let (n, verdict) = allocations(|| {
            let verdict = v[2].validate_pellets(&s.history, None, &pellets, ARRIVAL);
            (verdict.verdicts().count(), verdict)
        });
        assert_eq!(verdict.1.outcome.label(), "confirmed");
        let pellet = n;
        let (n, verdict) = allocations(|| {
            let verdict = v[3].validate_splash(&s.history, None, &blast, ARRIVAL);
            (verdict.verdicts().count(), verdict)
        });
        assert_eq!(verdict.1.outcome.label(), "confirmed");
        let splash = n;
        if round == 1 {
            assert_eq!(
                (hitscan, projectile, pellet, splash),
                (0, 0, 0, 0),
                "allocations per claim: hitscan, projectile, pellets, splash"
            );
        }
    }
}

#[test]
fn judging_a_penetration_claim_allocates_nothing_in_steady_state() {
    let (range, claim) = crate::penetration::through_wood();
    // The first round builds the weapon's rules and grows the walk's buffers; the rules
    // are built once per thread, whichever validator judges.
    for round in 0..2 {
        let mut validator = range.validator.clone();
        let (n, verdict) = allocations(|| {
            let verdict = validator.validate_penetration(
                &range.history,
                None,
                &claim,
                crate::penetration::ARRIVAL,
            );
            (verdict.verdicts().count(), verdict)
        });
        assert_eq!(verdict.1.outcome.label(), "confirmed");
        assert_eq!(verdict.0, 2, "two bodies struck");
        if round == 1 {
            assert_eq!(n, 0, "allocations per penetration claim");
        }
    }
}

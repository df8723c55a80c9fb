//! Steady state allocates nothing: recording a whole tick of 64 skeletal entities,
//! running every kind of rewound query, and advancing server-side projectiles, after
//! warm-up, makes zero heap allocations.
//!
//! A counting global allocator wraps the system one. It counts per thread, and only while
//! a thread has switched counting on, so the test harness's other threads (and other tests
//! in this binary) cannot disturb the numbers. This file is its own test binary because
//! of the global allocator.

#[path = "integration/support.rs"]
mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use lagcomp::projectile::{
    ClaimOutcome, ClaimTolerance, ClaimedTarget, Flight, Landed, ProjectileClaim, ProjectileError,
    ProjectileSet, ProjectileShot, Struck,
};
use lagcomp::{
    BoneTransform, EntityId, EntityState, History, Hit, LevelPiece, Obb, Overlap, PlacedShape,
    Pose, Quat, Ray, RewindTarget, Shape, ShapeSweep, Swing, Tick, Vec3, WindowPolicy,
};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use support::{HUMANOID_BONES, history, humanoid_pose, humanoid_rig};

/// The system allocator, counting what the current thread asks of it while counting is on.
struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
    static DEALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

/// Bumps `counter` if this thread is counting. `try_with` because the allocator may run
/// while thread-locals are being torn down; it must never panic.
fn bump(counter: &'static std::thread::LocalKey<Cell<u64>>) {
    if COUNTING.try_with(Cell::get).unwrap_or(false) {
        let _ = counter.try_with(|n| n.set(n.get() + 1));
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so the
// `GlobalAlloc` contract holds exactly as it does for `System`; the counting only touches
// const-initialised thread-locals without destructors, which never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        bump(&ALLOCATIONS);
        // SAFETY: the caller upholds `alloc`'s contract (non-zero size), passed on as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        bump(&ALLOCATIONS);
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        bump(&ALLOCATIONS);
        // SAFETY: `ptr` was allocated by this allocator, i.e. by `System`, with `layout`;
        // the caller upholds the rest of `realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        bump(&DEALLOCATIONS);
        // SAFETY: `ptr` was allocated by `System` (through this allocator) with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Runs `f` with counting on for this thread; returns its result and the allocations and
/// deallocations it made.
fn counted<R>(f: impl FnOnce() -> R) -> (R, u64, u64) {
    let (a0, d0) = (ALLOCATIONS.with(Cell::get), DEALLOCATIONS.with(Cell::get));
    COUNTING.with(|c| c.set(true));
    let result = f();
    COUNTING.with(|c| c.set(false));
    let (a1, d1) = (ALLOCATIONS.with(Cell::get), DEALLOCATIONS.with(Cell::get));
    (result, a1 - a0, d1 - d0)
}

#[test]
fn the_counter_sees_allocations() {
    let (v, allocs, _) = counted(|| {
        let mut v: Vec<u64> = Vec::with_capacity(4);
        v.extend(0..100); // grows: reallocations
        std::hint::black_box(v)
    });
    assert!(allocs >= 2, "{allocs}");
    let ((), _, deallocs) = counted(|| drop(v));
    assert_eq!(deallocs, 1);
    let ((), allocs, deallocs) = counted(|| {
        std::hint::black_box(3_u64.pow(3));
    });
    assert_eq!((allocs, deallocs), (0, 0));
}

const RATE: f64 = 64.0;
const ENTITIES: usize = 64;

/// Where entity `i` stands at `tick`: 64 humanoids walking in circles on an 8 x 8 grid.
fn root_of(i: usize, tick: u32) -> (Vec3, f32) {
    let phase = tick as f32 * 0.05 + i as f32;
    let centre = Vec3::new((i % 8) as f32 * 4.0, 0.0, (i / 8) as f32 * 4.0);
    (
        centre + Vec3::new(phase.cos(), 0.0, phase.sin()) * 1.2,
        phase,
    )
}

/// Records one tick of every entity. Allocation free once the history is warm.
fn record_tick(h: &mut History, ids: &[EntityId], tick: u32, bones: &mut [BoneTransform]) {
    let time = f64::from(tick) / RATE;
    let mut frame = h.begin_frame(Tick(tick), time).expect("frame");
    for (i, &id) in ids.iter().enumerate() {
        let (root, yaw) = root_of(i, tick);
        humanoid_pose(root, yaw, tick as f32 * 0.2, bones);
        let state = EntityState {
            // A few die and come back, some teleport now and then, layers vary.
            alive: !(tick / 7 + i as u32).is_multiple_of(11),
            teleported: (tick + i as u32).is_multiple_of(97),
            layers: 1 << (i % 3),
            ..EntityState::default()
        };
        frame.record(id, bones, state).expect("record");
        // The velocity its snapshot carries (what clients extrapolate with).
        let velocity = Vec3::new(yaw.cos(), 0.0, yaw.sin()) * 5.0;
        frame.record_velocity(id, velocity).expect("velocity");
    }
}

/// What the queries found, to show they did real work.
#[derive(Debug, Default)]
struct Found {
    rays: u32,
    ray_hits: u32,
    all_hits: usize,
    sweep_hits: u32,
    overlaps: usize,
    melee_hits: u32,
}

/// Runs a batch of queries of every kind at random rewind targets, into the reused
/// output vectors. Allocation free.
fn query_batch(
    h: &History,
    rng: &mut Pcg64,
    hits: &mut Vec<Hit>,
    overlaps: &mut Vec<Overlap>,
    found: &mut Found,
) {
    let (lo, hi) = h.window().expect("window");
    let newest = h.newest_tick().expect("newest").0;
    for _ in 0..6 {
        let target = match rng.random_range(0..3) {
            0 => RewindTarget::at(rng.random_range(lo..=hi)),
            1 => RewindTarget::latency(hi, rng.random_range(0.0..=0.45)),
            _ => {
                let from = newest - rng.random_range(1..25);
                RewindTarget::between(Tick(from), Tick(from + 1), rng.random())
            }
        };
        let mask = if rng.random_bool(0.8) {
            u32::MAX
        } else {
            1 << rng.random_range(0..3)
        };
        let aim = Vec3::new(
            rng.random_range(-2.0..30.0),
            rng.random_range(0.0..1.8),
            rng.random_range(-2.0..30.0),
        );
        let origin = Vec3::new(rng.random_range(-10.0..40.0), 1.5, -15.0);
        let ray = Ray::new(origin, aim - origin, 80.0).expect("ray");
        let mut q = h
            .query(target)
            .layers(mask)
            .window_policy(WindowPolicy::Clamp);
        found.rays += 1;
        if q.ray(&ray).expect("ray query").hit.is_some() {
            found.ray_hits += 1;
        }
        q.ray_all(&ray, hits).expect("ray_all");
        found.all_hits += hits.len();
        if q.sweep(&ray, 0.25).expect("sweep").hit.is_some() {
            found.sweep_hits += 1;
        }
        q.sweep_all(&ray, 0.25, hits).expect("sweep_all");
        found.all_hits += hits.len();
        q.overlap_sphere(aim, 2.5, overlaps).expect("sphere");
        found.overlaps += overlaps.len();
        let obb = Obb::new(aim, Quat::from_rotation_y(aim.x), Vec3::new(1.5, 1.0, 0.8));
        q.overlap_box(&obb, overlaps).expect("box");
        found.overlaps += overlaps.len();
        // Melee: a blade thrust at the aim point, and swung about a shoulder beside it.
        let blade = PlacedShape::new(
            Pose::new(aim - Vec3::Z * 0.8, Quat::from_rotation_y(aim.z)),
            Shape::cuboid(Vec3::new(0.5, 0.02, 0.01)),
        );
        let thrust = ShapeSweep::line(blade, Vec3::Z, 1.0).expect("thrust");
        if q.sweep_shape(&thrust).expect("thrust query").hit.is_some() {
            found.melee_hits += 1;
        }
        let swing = Swing::new(aim - Vec3::Z * 0.8 - Vec3::X * 0.6, Vec3::Y, -2.0).expect("swing");
        let swing = ShapeSweep::arc(blade, swing).expect("swing");
        if q.sweep_shape(&swing).expect("swing query").hit.is_some() {
            found.melee_hits += 1;
        }
    }
}

/// A wall across the far side of the arena (z = 35 m), on every layer.
fn add_far_wall(h: &mut History) {
    h.add_static(
        Shape::cuboid(Vec3::new(40.0, 3.0, 0.2)),
        Pose::from_translation(Vec3::new(15.0, 1.5, 35.0)),
        u32::MAX,
    )
    .unwrap();
}

#[test]
fn steady_state_recording_and_queries_allocate_nothing() {
    let mut h = history(RATE, 0.5);
    let capacity = h.capacity() as u32;
    // Level geometry (added at load, before warm-up): a wall some rays hit first.
    add_far_wall(&mut h);
    h.add_static(
        Shape::cuboid(Vec3::new(2.0, 3.0, 0.2)),
        Pose::from_translation(Vec3::new(10.0, 1.5, -8.0)),
        1,
    )
    .unwrap();
    // A triangle-mesh wall, a heightfield under the arena, and the small wall destroyed
    // a second in: each kind of piece and a lifetime on the query path.
    let mesh_wall = LevelPiece::Mesh {
        vertices: vec![
            Vec3::new(-5.0, 0.0, -20.0),
            Vec3::new(5.0, 0.0, -20.0),
            Vec3::new(5.0, 3.0, -20.0),
            Vec3::new(-5.0, 3.0, -20.0),
        ],
        triangles: vec![[0, 1, 2], [0, 2, 3]],
        layers: u32::MAX,
    };
    let ground = LevelPiece::HeightField {
        heights: (0..64).map(|i| -0.5 - (i % 7) as f32 * 0.05).collect(),
        rows: 8,
        columns: 8,
        size: Vec3::new(200.0, 1.0, 200.0),
        pose: Pose::IDENTITY,
        layers: u32::MAX,
    };
    h.load_level([mesh_wall, ground]).unwrap();
    h.remove_static(lagcomp::StaticId(1), 1.0).unwrap();
    let rig = humanoid_rig();
    assert_eq!(rig.hitboxes().len(), 16);
    let ids: Vec<EntityId> = (0..ENTITIES).map(|_| h.spawn(rig.clone())).collect();
    let mut bones = vec![BoneTransform::IDENTITY; HUMANOID_BONES];
    let mut rng = Pcg64::seed_from_u64(2024);
    let mut hits: Vec<Hit> = Vec::with_capacity(ENTITIES * 16);
    let mut overlaps: Vec<Overlap> = Vec::with_capacity(ENTITIES * 16);
    let mut found = Found::default();

    // Warm-up: fill the ring twice over (the BVH is built on the first frame and rebuilt
    // every `capacity` frames) and run every query once.
    let warm = 2 * capacity;
    for tick in 0..warm {
        record_tick(&mut h, &ids, tick, &mut bones);
    }
    query_batch(&h, &mut rng, &mut hits, &mut overlaps, &mut found);
    let history_bytes = h.history_bytes();
    let broadphase_bytes = h.broadphase_bytes();

    // Steady state: several hundred ticks, so the periodic BVH rebuild happens many times.
    let steady = 400;
    assert!(steady > 5 * capacity);
    let (mut record_allocs, mut record_frees) = (0, 0);
    let (mut query_allocs, mut query_frees) = (0, 0);
    let mut worst_tick = None;
    for tick in warm..warm + steady {
        let ((), a, d) = counted(|| record_tick(&mut h, &ids, tick, &mut bones));
        record_allocs += a;
        record_frees += d;
        if a > 0 && worst_tick.is_none() {
            worst_tick = Some(tick);
        }
        let ((), a, d) =
            counted(|| query_batch(&h, &mut rng, &mut hits, &mut overlaps, &mut found));
        query_allocs += a;
        query_frees += d;
    }
    assert_eq!(
        (record_allocs, record_frees),
        (0, 0),
        "recording allocated (first at tick {worst_tick:?}, rebuild every {capacity})"
    );
    assert_eq!((query_allocs, query_frees), (0, 0), "queries allocated");
    assert_eq!(h.history_bytes(), history_bytes);
    assert_eq!(h.broadphase_bytes(), broadphase_bytes);
    assert_eq!(hits.capacity(), ENTITIES * 16);
    assert_eq!(overlaps.capacity(), ENTITIES * 16);
    // The queries did real work.
    assert!(found.rays >= steady * 6, "{found:?}");
    assert!(found.ray_hits > found.rays / 10, "{found:?}");
    assert!(found.sweep_hits > found.ray_hits / 2, "{found:?}");
    assert!(found.all_hits > found.ray_hits as usize, "{found:?}");
    assert!(found.overlaps > 1000, "{found:?}");
    assert!(found.melee_hits > 100, "{found:?}");
}

/// Records one tick of every entity in one `record_all` call, from one buffer of every
/// entity's bones (`entities` and `all_bones` reused tick after tick).
fn record_tick_all(
    h: &mut History,
    entities: &mut [(EntityId, EntityState)],
    tick: u32,
    all_bones: &mut [BoneTransform],
) {
    let time = f64::from(tick) / RATE;
    for (i, (entity, bones)) in entities
        .iter_mut()
        .zip(all_bones.chunks_exact_mut(HUMANOID_BONES))
        .enumerate()
    {
        let (root, yaw) = root_of(i, tick);
        humanoid_pose(root, yaw, tick as f32 * 0.2, bones);
        entity.1 = EntityState {
            alive: !(tick / 7 + i as u32).is_multiple_of(11),
            teleported: (tick + i as u32).is_multiple_of(97),
            lag_compensated: !(tick + i as u32).is_multiple_of(53),
            layers: 1 << (i % 3),
            ..EntityState::default()
        };
    }
    let mut frame = h.begin_frame(Tick(tick), time).expect("frame");
    frame.record_all(entities, all_bones).expect("record_all");
}

#[test]
fn steady_state_recording_with_record_all_allocates_nothing() {
    let mut h = history(RATE, 0.5);
    let capacity = h.capacity() as u32;
    let rig = humanoid_rig();
    let mut entities: Vec<(EntityId, EntityState)> = (0..ENTITIES)
        .map(|_| (h.spawn(rig.clone()), EntityState::default()))
        .collect();
    let mut bones = vec![BoneTransform::IDENTITY; ENTITIES * HUMANOID_BONES];
    let warm = 2 * capacity;
    for tick in 0..warm {
        record_tick_all(&mut h, &mut entities, tick, &mut bones);
    }
    let history_bytes = h.history_bytes();
    let (mut allocs, mut frees) = (0, 0);
    for tick in warm..warm + 5 * capacity {
        let ((), a, d) = counted(|| record_tick_all(&mut h, &mut entities, tick, &mut bones));
        allocs += a;
        frees += d;
    }
    assert_eq!((allocs, frees), (0, 0), "record_all allocated");
    assert_eq!(h.history_bytes(), history_bytes);
    // Every entity was recorded in the newest frame.
    let newest = h.newest_tick().expect("frames");
    assert_eq!(newest, Tick(warm + 5 * capacity - 1));
    for &(id, state) in &entities {
        assert_eq!(h.present_state(id), Ok(state));
    }
}

#[test]
fn a_single_query_allocates_nothing_even_cold() {
    // No warm-up of the queries themselves: the first query on a recorded history, with a
    // pre-reserved output, allocates nothing either.
    let mut h = history(RATE, 0.25);
    let rig = humanoid_rig();
    let ids: Vec<EntityId> = (0..8).map(|_| h.spawn(rig.clone())).collect();
    let mut bones = vec![BoneTransform::IDENTITY; HUMANOID_BONES];
    for tick in 0..10 {
        record_tick(&mut h, &ids, tick, &mut bones);
    }
    let mut hits = Vec::with_capacity(128);
    let mut overlaps = Vec::with_capacity(128);
    let (root, _) = root_of(1, 4); // entity 0 is dead at tick 4
    let ray = Ray::new(root + Vec3::new(0.0, 1.3, -10.0), Vec3::Z, 100.0).unwrap();
    let target = RewindTarget::between(Tick(4), Tick(5), 0.3);
    let ((), allocs, frees) = counted(|| {
        let mut q = h.query(target);
        q.ray(&ray).unwrap();
        q.ray_all(&ray, &mut hits).unwrap();
        q.sweep(&ray, 0.5).unwrap();
        q.overlap_sphere(root + Vec3::Y, 1.0, &mut overlaps)
            .unwrap();
        let _ = h.resolve(target, WindowPolicy::Reject);
        // Errors are values too: no formatting, no allocation.
        let _ = h.query(RewindTarget::at(f64::NAN)).ray(&ray).unwrap_err();
        let _ = h.query(RewindTarget::at(-1.0)).ray(&ray).unwrap_err();
    });
    assert_eq!((allocs, frees), (0, 0));
    assert!(!hits.is_empty());
    assert!(!overlaps.is_empty());
}

#[test]
fn the_first_non_unit_scale_allocates_once_then_never_again() {
    // The documented exception: an entity's scale lane is allocated the first time it is
    // recorded with a non-unit scale. After that, scaled recording is steady too.
    let mut h = history(RATE, 0.25);
    let rig = humanoid_rig();
    let ids: Vec<EntityId> = (0..4).map(|_| h.spawn(rig.clone())).collect();
    let mut bones = vec![BoneTransform::IDENTITY; HUMANOID_BONES];
    let capacity = h.capacity() as u32;
    for tick in 0..2 * capacity {
        record_tick(&mut h, &ids, tick, &mut bones);
    }
    let record_scaled = |h: &mut History, tick: u32, bones: &mut [BoneTransform]| {
        let mut frame = h.begin_frame(Tick(tick), f64::from(tick) / RATE).unwrap();
        for (i, &id) in ids.iter().enumerate() {
            let (root, yaw) = root_of(i, tick);
            humanoid_pose(root, yaw, 0.0, bones);
            if i == 2 {
                for bone in bones.iter_mut() {
                    bone.scale = Vec3::splat(1.0 + tick as f32 * 0.001);
                }
            }
            frame.record(id, bones, EntityState::default()).unwrap();
        }
    };
    let tick = 2 * capacity;
    let ((), first, _) = counted(|| record_scaled(&mut h, tick, &mut bones));
    assert!(first >= 1, "the scale lane is allocated on first use");
    for tick in tick + 1..tick + 3 * capacity {
        let ((), allocs, frees) = counted(|| record_scaled(&mut h, tick, &mut bones));
        assert_eq!((allocs, frees), (0, 0), "tick {tick}");
    }
}

#[test]
fn steady_state_with_a_tree_broadphase_allocates_nothing() {
    // The entity broadphase is a flat scan up to 512 entities and a tree above: 600
    // entities (the same 8-wide grid, 75 rows deep) take the tree, whose rebuild every
    // `capacity` frames must reuse its memory too.
    const MANY: usize = 600;
    let mut h = history(RATE, 0.5);
    let capacity = h.capacity() as u32;
    let rig = humanoid_rig();
    let mut entities: Vec<(EntityId, EntityState)> = (0..MANY)
        .map(|_| (h.spawn(rig.clone()), EntityState::default()))
        .collect();
    let mut bones = vec![BoneTransform::IDENTITY; MANY * HUMANOID_BONES];
    let mut rng = Pcg64::seed_from_u64(600);
    let mut hits: Vec<Hit> = Vec::with_capacity(MANY * 16);
    let mut overlaps: Vec<Overlap> = Vec::with_capacity(MANY * 16);
    let mut found = Found::default();
    let warm = 2 * capacity;
    for tick in 0..warm {
        record_tick_all(&mut h, &mut entities, tick, &mut bones);
    }
    query_batch(&h, &mut rng, &mut hits, &mut overlaps, &mut found);
    let (history_bytes, broadphase_bytes) = (h.history_bytes(), h.broadphase_bytes());
    let (mut record, mut query) = ((0, 0), (0, 0));
    for tick in warm..warm + 3 * capacity {
        let ((), a, d) = counted(|| record_tick_all(&mut h, &mut entities, tick, &mut bones));
        record = (record.0 + a, record.1 + d);
        let ((), a, d) =
            counted(|| query_batch(&h, &mut rng, &mut hits, &mut overlaps, &mut found));
        query = (query.0 + a, query.1 + d);
    }
    assert_eq!(record, (0, 0), "recording allocated");
    assert_eq!(query, (0, 0), "queries allocated");
    assert_eq!(h.history_bytes(), history_bytes);
    assert_eq!(h.broadphase_bytes(), broadphase_bytes);
    assert!(found.ray_hits > found.rays / 10, "{found:?}");
    assert!(found.overlaps > 100, "{found:?}");
}

/// Fires `count` projectiles from the arena's edge at random entities' spots, as shooters
/// saw them up to 200 ms ago: bullets with drop and slow rockets. Returns how many the set
/// refused for being full. Allocation free.
fn fire_projectiles(
    h: &History,
    set: &mut ProjectileSet,
    rng: &mut Pcg64,
    flights: &[Flight; 2],
    count: usize,
) -> usize {
    let (lo, hi) = h.window().expect("window");
    let mut full = 0;
    for _ in 0..count {
        let fired = (hi - rng.random_range(0.0..0.2)).max(lo);
        let aim = Vec3::new(
            rng.random_range(-2.0..30.0),
            rng.random_range(0.5..1.8),
            rng.random_range(-2.0..30.0),
        );
        let origin = Vec3::new(rng.random_range(-10.0..40.0), 1.5, -15.0);
        let shot = ProjectileShot {
            fired_at: RewindTarget::at(fired),
            origin,
            direction: aim - origin,
            flight: flights[rng.random_range(0..2)],
            shooter: None,
            layers: u32::MAX,
        };
        match set.fire(h, &shot) {
            Ok(_) => {}
            Err(ProjectileError::Full(_)) => full += 1,
            Err(e) => panic!("{e}"),
        }
    }
    full
}

#[test]
fn steady_state_projectiles_allocate_nothing() {
    // 64 walking humanoids, a wall across the far side; every tick records a frame, fires
    // eight projectiles with latency, advances the set, and reviews a claim.
    let mut h = history(RATE, 0.5);
    let capacity = h.capacity() as u32;
    add_far_wall(&mut h);
    let rig = humanoid_rig();
    let ids: Vec<EntityId> = (0..ENTITIES).map(|_| h.spawn(rig.clone())).collect();
    let mut bones = vec![BoneTransform::IDENTITY; HUMANOID_BONES];
    let mut rng = Pcg64::seed_from_u64(25);
    let gravity = Vec3::new(0.0, -9.81, 0.0);
    let flights = [
        Flight::new(300.0, gravity, 0.001, 0.01, 1.0 / 64.0, 0.5).unwrap(),
        Flight::new(30.0, Vec3::ZERO, 0.0, 0.15, 1.0 / 64.0, 2.0).unwrap(),
    ];
    let mut set = ProjectileSet::with_capacity(512);
    let mut landed: Vec<Landed> = Vec::with_capacity(set.capacity());
    let (mut entity, mut wall, mut expired, mut full, mut agreed) = (0, 0, 0, 0, 0);
    let mut tally = |landed: &[Landed]| {
        for l in landed {
            match l.impact.struck {
                Struck::Entity(_) => entity += 1,
                Struck::Static(_) | Struck::Blocker(_) => wall += 1,
                Struck::Expired => expired += 1,
                Struck::Lost => panic!("nothing leaves the arena: {l:?}"),
            }
        }
    };
    let warm = 2 * capacity;
    for tick in 0..warm {
        record_tick(&mut h, &ids, tick, &mut bones);
        if tick >= capacity {
            full += fire_projectiles(&h, &mut set, &mut rng, &flights, 8);
            landed.clear();
            set.advance(&h, None, &mut landed).unwrap();
            tally(&landed);
        }
    }
    let mut counts = (0, 0);
    for tick in warm..warm + 4 * capacity {
        let ((), a, d) = counted(|| {
            record_tick(&mut h, &ids, tick, &mut bones);
            full += fire_projectiles(&h, &mut set, &mut rng, &flights, 8);
            landed.clear();
            set.advance(&h, None, &mut landed).unwrap();
            // A client's claim of the first landing this tick, re-flown.
            if let Some(first) = landed.first() {
                let (lo, hi) = h.window().unwrap();
                let claim = ProjectileClaim {
                    shot: ProjectileShot {
                        fired_at: RewindTarget::at((hi - 0.1).max(lo)),
                        origin: Vec3::new(5.0, 1.5, -15.0),
                        direction: first.impact.position - Vec3::new(5.0, 1.5, -15.0),
                        flight: flights[0],
                        shooter: None,
                        layers: u32::MAX,
                    },
                    step: 3,
                    target: ClaimedTarget::Static(lagcomp::StaticId(0)),
                    position: first.impact.position,
                };
                let review = claim.review(&h, None, ClaimTolerance::default()).unwrap();
                if review.outcome == ClaimOutcome::Agree {
                    agreed += 1;
                }
            }
        });
        tally(&landed);
        counts = (counts.0 + a, counts.1 + d);
    }
    assert_eq!(counts, (0, 0), "projectiles allocated");
    assert_eq!(full, 0, "the set never filled");
    // Real work: projectiles struck walkers and the wall, and some flew past everything.
    assert!(
        entity > 50 && wall > 50 && expired > 10,
        "{entity} {wall} {expired}"
    );
    std::hint::black_box(agreed);
}

#[test]
fn steady_state_pellet_fans_and_splashes_allocate_nothing() {
    use lagcomp::Trace;
    use lagcomp::query::splash::{Blast, SplashHit};
    use lagcomp::spread::{Falloff, Pellets, Spread, SpreadKind, pellet_seed};

    // 64 walking humanoids and a wall; every tick records a frame, fires a 12-pellet shot
    // as one rewound fan, and sets off a 10 m blast with line-of-sight checks.
    let mut h = history(RATE, 0.5);
    let capacity = h.capacity() as u32;
    add_far_wall(&mut h);
    let rig = humanoid_rig();
    let ids: Vec<EntityId> = (0..ENTITIES).map(|_| h.spawn(rig.clone())).collect();
    let mut bones = vec![BoneTransform::IDENTITY; HUMANOID_BONES];
    let mut rng = Pcg64::seed_from_u64(26);
    let spread = Spread::new(12, 4.0, SpreadKind::Pattern { jitter: 0.5 }).unwrap();
    let falloff = Falloff::new(1.0, 10.0, 0.1).unwrap();
    let mut rays = [Ray::new(Vec3::ZERO, Vec3::Z, 1.0).unwrap(); 12];
    let mut traces: Vec<Trace> = Vec::new();
    let (mut scratch, mut caught): (Vec<Overlap>, Vec<SplashHit>) = (Vec::new(), Vec::new());
    let (mut pellet_hits, mut splashed, mut covered) = (0, 0, 0);
    let mut tick_work = |h: &History, rng: &mut Pcg64, seq: u32| {
        let (lo, hi) = h.window().unwrap();
        let at = RewindTarget::at((hi - rng.random_range(0.0..0.2)).max(lo));
        let origin = Vec3::new(rng.random_range(-5.0..30.0), 1.5, -8.0);
        let aim = Vec3::new(
            rng.random_range(0.0..28.0),
            1.2,
            rng.random_range(0.0..28.0),
        );
        let pellets = Pellets::new(&spread, aim - origin, pellet_seed(7, seq)).unwrap();
        for (ray, &dir) in rays.iter_mut().zip(pellets.directions()) {
            *ray = Ray::new(origin, dir, 80.0).unwrap();
        }
        h.query(at).ray_fan(&rays, &mut traces).unwrap();
        pellet_hits += traces.iter().filter(|t| t.hit.is_some()).count();
        let blast = Blast {
            center: aim,
            radius: 10.0,
            falloff,
            bodies_block: true,
        };
        h.query(at)
            .splash(&blast, &mut scratch, &mut caught)
            .unwrap();
        splashed += caught.len();
        covered += caught.iter().filter(|s| s.cover.is_some()).count();
    };
    let warm = 2 * capacity;
    for tick in 0..warm {
        record_tick(&mut h, &ids, tick, &mut bones);
        if tick >= capacity {
            tick_work(&h, &mut rng, tick);
        }
    }
    let mut counts = (0, 0);
    for tick in warm..warm + 4 * capacity {
        let ((), a, d) = counted(|| {
            record_tick(&mut h, &ids, tick, &mut bones);
            tick_work(&h, &mut rng, tick);
        });
        counts.0 += a;
        counts.1 += d;
    }
    assert_eq!(counts, (0, 0), "allocations and frees in steady state");
    // The fans hit people and the blasts caught some in the open and some behind others.
    assert!(pellet_hits > 100, "{pellet_hits}");
    assert!(
        splashed > 100 && covered > 0,
        "{splashed} caught, {covered} covered"
    );
}

#[test]
fn penetrating_shots_allocate_nothing_once_the_chain_has_grown() {
    use lagcomp::MaterialId;
    use lagcomp::query::penetration::{PenetrationChain, PenetrationRules};
    let mut h = history(RATE, 0.25);
    let rig = humanoid_rig();
    let ids: Vec<EntityId> = (0..8).map(|_| h.spawn(rig.clone())).collect();
    // A wooden wall in front of the arena, a mesh wall across it and the far wall: shots
    // cross walls of two kinds and the bodies between them.
    let wood = h
        .add_static(
            Shape::cuboid(Vec3::new(40.0, 3.0, 0.1)),
            Pose::from_translation(Vec3::new(15.0, 1.5, -5.0)),
            u32::MAX,
        )
        .unwrap();
    h.set_static_material(wood, MaterialId(1)).unwrap();
    h.load_level([LevelPiece::Mesh {
        vertices: vec![
            Vec3::new(-10.0, 0.0, 20.0),
            Vec3::new(40.0, 0.0, 20.0),
            Vec3::new(40.0, 4.0, 20.0),
            Vec3::new(-10.0, 4.0, 20.0),
        ],
        triangles: vec![[0, 1, 2], [0, 2, 3]],
        layers: u32::MAX,
    }])
    .unwrap();
    add_far_wall(&mut h);
    let mut bones = vec![BoneTransform::IDENTITY; HUMANOID_BONES];
    for tick in 0..20 {
        record_tick(&mut h, &ids, tick, &mut bones);
    }
    let rules = PenetrationRules::new(3.0, 0.75, vec![1.0, 0.25])
        .unwrap()
        .with_body_material(MaterialId(1));
    let mut chain = PenetrationChain::new();
    let shots: Vec<Ray> = (0..8)
        .flat_map(|i| {
            let (root, _) = root_of(i, 15);
            [1.0_f32, 1.3, 1.6].map(|y| {
                Ray::new(
                    root + Vec3::new(0.0, y, -10.0),
                    Vec3::new(0.01, 0.0, 1.0),
                    60.0,
                )
                .unwrap()
            })
        })
        .collect();
    let target = RewindTarget::between(Tick(15), Tick(16), 0.4);
    let walk = |chain: &mut PenetrationChain| {
        let mut layers = 0;
        for ray in &shots {
            h.query(target).penetrate(ray, &rules, chain).unwrap();
            layers += chain.layers().len();
        }
        layers
    };
    let warm = walk(&mut chain);
    let (layers, allocs, frees) = counted(|| walk(&mut chain));
    assert_eq!((allocs, frees), (0, 0));
    assert_eq!(layers, warm);
    assert!(
        layers > 2 * shots.len(),
        "the shots cross walls and bodies: {layers} layers"
    );
}

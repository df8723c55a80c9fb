//! Recording one tick of 200 entities x 20 bones through the C interface
//! (`lagcomp_history_record_tick`) against the Rust call it wraps (`begin_frame`,
//! `record_all`, `finish`), on the same seeded input. The floor: the C call costs
//! at most 1.2x the Rust call.
//!
//! - `rust`: the Rust call.
//! - `capi`: the C call with the bones in an array aligned to 16 bytes (read in place).
//! - `capi_unaligned`: the C call with the bones 4 bytes off that alignment (copied into
//!   the history's scratch first): what the in-place read saves.
//!
//! Criterion times one after the other, so machine load that changes between them moves
//! the ratio. Afterwards the bench also alternates: 401 rounds of 25 Rust ticks then 25 C
//! ticks, and prints the median of the rounds' ratios (`alternating: ...` on stderr).

use std::ffi::CString;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::Criterion;
use lagcomp::{
    BoneTransform, EntityId, EntityState, History, HistoryConfig, Hitbox, Quat, Rig, Shape, Tick,
    Vec3, Zone,
};
use lagcomp_capi::{
    LAGCOMP_OK, LagcompBoneTransform, LagcompHistory, LagcompHistoryConfig, LagcompHitbox,
    LagcompPose, LagcompQuat, LagcompShape, LagcompVec3, lagcomp_history_config_default,
    lagcomp_history_free, lagcomp_history_new, lagcomp_history_record_tick, lagcomp_history_spawn,
};

const ENTITIES: usize = 200;
const BONES: u16 = 20;
const TICK_RATE: f64 = 60.0;
/// Ticks recorded before timing: the ring has wrapped, as in a running match.
const WARM_TICKS: u32 = 60;
/// Alternating rounds, and ticks per side in a round: short rounds, so that a time slice
/// lost to another process spoils few of them, and the median skips those.
const ROUNDS: usize = 401;
const ROUND_TICKS: u32 = 25;

/// A twenty-bone rig: one capsule per bone, stacked.
fn rig() -> Rig {
    let hitboxes = (0..BONES)
        .map(|b| {
            Hitbox::new(
                b,
                format!("bone{b}"),
                Zone::Torso,
                b,
                Shape::capsule(0.08, 0.1, lagcomp::Axis::Y),
            )
        })
        .collect();
    Rig::new(BONES, hitboxes).expect("a valid rig")
}

/// Every entity's bones at `tick`, entity-major: standing in a grid, walking along x,
/// each bone turned a little.
fn frame(tick: u32, out: &mut Vec<BoneTransform>) {
    out.clear();
    let t = f64::from(tick) / TICK_RATE;
    for e in 0..ENTITIES {
        let base = Vec3::new(
            (e % 15) as f32 * 10.0 + 3.0 * t as f32,
            0.0,
            (e / 15) as f32 * 10.0,
        );
        for b in 0..BONES {
            let angle = 0.1 * f32::from(b) + 0.5 * t as f32 + e as f32;
            out.push(BoneTransform::new(
                base + Vec3::new(0.05 * angle.sin(), 0.09 * f32::from(b), 0.05 * angle.cos()),
                Quat::from_rotation_y(angle),
            ));
        }
    }
}

fn c_vec3(v: Vec3) -> LagcompVec3 {
    LagcompVec3 {
        x: v.x,
        y: v.y,
        z: v.z,
    }
}

fn c_bone(b: &BoneTransform) -> LagcompBoneTransform {
    let [x, y, z, w] = b.rotation.to_array();
    LagcompBoneTransform {
        rotation: LagcompQuat { x, y, z, w },
        translation: c_vec3(b.translation),
        scale: c_vec3(b.scale),
        padding: [0.0; 2],
    }
}

/// Bones as the C caller lays them out, in a buffer aligned to 16 bytes, starting
/// `offset_floats` floats in.
struct CBones {
    buffer: Vec<[f32; 4]>,
    offset_floats: usize,
    len: usize,
}

impl CBones {
    fn new(bones: &[BoneTransform], offset_floats: usize) -> Self {
        let bytes = bones.len() * size_of::<LagcompBoneTransform>() + 16;
        let mut this = Self {
            buffer: vec![[0.0; 4]; bytes / 16 + 1],
            offset_floats,
            len: bones.len(),
        };
        this.fill(bones);
        this
    }

    fn ptr(&self) -> *const LagcompBoneTransform {
        // The buffer's `[f32; 4]`s are 4-byte aligned at least, as the struct needs.
        self.buffer
            .as_ptr()
            .cast::<f32>()
            .wrapping_add(self.offset_floats)
            .cast()
    }

    fn fill(&mut self, bones: &[BoneTransform]) {
        let dst = self.ptr().cast_mut();
        for (i, b) in bones.iter().enumerate() {
            // SAFETY: the buffer holds `len` structs past the offset, 4-byte aligned.
            unsafe { dst.add(i).write(c_bone(b)) };
        }
    }
}

/// A history built through the C interface with the same entities and warm-up ticks.
fn c_history(entities: usize) -> (*mut LagcompHistory, Vec<u64>) {
    let mut config = LagcompHistoryConfig {
        struct_size: 0,
        reserved: 0,
        tick_rate: 0.0,
        max_rewind: 0.0,
    };
    // SAFETY: valid pointers to locals.
    unsafe {
        assert_eq!(lagcomp_history_config_default(&mut config), LAGCOMP_OK);
        config.tick_rate = TICK_RATE;
        let mut history = std::ptr::null_mut();
        assert_eq!(lagcomp_history_new(&config, &mut history), LAGCOMP_OK);
        let names: Vec<CString> = (0..BONES)
            .map(|b| CString::new(format!("bone{b}")).unwrap())
            .collect();
        let hitboxes: Vec<LagcompHitbox> = rig()
            .hitboxes()
            .iter()
            .zip(&names)
            .map(|(hb, name)| LagcompHitbox {
                id: hb.id.0,
                bone: hb.bone,
                zone: lagcomp_capi::LAGCOMP_ZONE_TORSO,
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
                    kind: lagcomp_capi::LAGCOMP_SHAPE_CAPSULE,
                    axis: lagcomp_capi::LAGCOMP_AXIS_Y,
                    radius: 0.08,
                    half_height: 0.1,
                    half_extents: LagcompVec3::default(),
                },
                name: name.as_ptr(),
            })
            .collect();
        let ids = (0..entities)
            .map(|_| {
                let mut id = 0;
                assert_eq!(
                    lagcomp_history_spawn(
                        history,
                        BONES,
                        hitboxes.as_ptr(),
                        hitboxes.len(),
                        &mut id
                    ),
                    LAGCOMP_OK
                );
                id
            })
            .collect();
        (history, ids)
    }
}

fn record(c: &mut Criterion) {
    let mut group = c.benchmark_group("capi_record_200x20");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(40);
    let mut input = Vec::new();
    frame(WARM_TICKS, &mut input);

    // The Rust call.
    let mut history = History::new(HistoryConfig {
        tick_rate: TICK_RATE,
        max_rewind: 0.5,
    })
    .expect("a valid config");
    let shared = Arc::new(rig());
    let entities: Vec<(EntityId, EntityState)> = (0..ENTITIES)
        .map(|_| (history.spawn(Arc::clone(&shared)), EntityState::default()))
        .collect();
    let mut warm = Vec::new();
    for tick in 0..WARM_TICKS {
        frame(tick, &mut warm);
        let mut f = history
            .begin_frame(Tick(tick), f64::from(tick) / TICK_RATE)
            .unwrap();
        f.record_all(&entities, &warm).unwrap();
    }
    let mut tick = WARM_TICKS;
    group.bench_function("rust", |b| {
        b.iter(|| {
            rust_tick(&mut history, &entities, tick, &input);
            tick += 1;
        });
    });

    // The C call, in place and copied.
    for (name, offset) in [("capi", 0), ("capi_unaligned", 1)] {
        let (history, ids, bones) = warm_c_history(&input, offset);
        let mut tick = WARM_TICKS;
        group.bench_function(name, |b| {
            b.iter(|| {
                c_tick(history, tick, &ids, &bones);
                tick += 1;
            });
        });
        assert_eq!(lagcomp_history_free(history), LAGCOMP_OK);
    }
    group.finish();

    // Alternating rounds, each side with its own history past criterion's ticks.
    let (c_hist, ids, bones) = warm_c_history(&input, 0);
    let mut c_tick_no = WARM_TICKS;
    let mut ratios = Vec::new();
    for _ in 0..ROUNDS {
        let start = std::time::Instant::now();
        for _ in 0..ROUND_TICKS {
            rust_tick(&mut history, &entities, tick, &input);
            tick += 1;
        }
        let rust = start.elapsed();
        let start = std::time::Instant::now();
        for _ in 0..ROUND_TICKS {
            c_tick(c_hist, c_tick_no, &ids, &bones);
            c_tick_no += 1;
        }
        let capi = start.elapsed();
        ratios.push((capi.as_secs_f64() / rust.as_secs_f64(), rust, capi));
    }
    ratios.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (ratio, rust, capi) = ratios[ratios.len() / 2];
    eprintln!(
        "alternating: median of {ROUNDS} rounds of {ROUND_TICKS} ticks, capi/rust = {ratio:.3} (that round: rust {:.2} us, capi {:.2} us a tick); quartiles {:.3}..{:.3}",
        rust.as_secs_f64() * 1e6 / ROUND_TICKS as f64,
        capi.as_secs_f64() * 1e6 / ROUND_TICKS as f64,
        ratios[ratios.len() / 4].0,
        ratios[3 * ratios.len() / 4].0,
    );
    assert_eq!(lagcomp_history_free(c_hist), LAGCOMP_OK);
}

/// A C-interface history with the bench's entities and warm-up ticks recorded, and the
/// timed tick's bones laid out `offset_floats` floats past a 16-byte boundary.
fn warm_c_history(
    input: &[BoneTransform],
    offset_floats: usize,
) -> (*mut LagcompHistory, Vec<u64>, CBones) {
    let (history, ids) = c_history(ENTITIES);
    let mut bones = CBones::new(input, offset_floats);
    let mut warm = Vec::new();
    for tick in 0..WARM_TICKS {
        frame(tick, &mut warm);
        bones.fill(&warm);
        c_tick(history, tick, &ids, &bones);
    }
    bones.fill(input);
    (history, ids, bones)
}

/// One tick through the Rust call.
fn rust_tick(
    history: &mut History,
    entities: &[(EntityId, EntityState)],
    tick: u32,
    bones: &[BoneTransform],
) {
    let mut f = black_box(history)
        .begin_frame(Tick(tick), f64::from(tick) / TICK_RATE)
        .expect("ticks increase");
    f.record_all(black_box(entities), black_box(bones))
        .expect("valid records");
    f.finish();
}

/// One tick through `lagcomp_history_record_tick`.
fn c_tick(history: *mut LagcompHistory, tick: u32, ids: &[u64], bones: &CBones) {
    // SAFETY: a live handle, arrays of the lengths given.
    let status = unsafe {
        lagcomp_history_record_tick(
            black_box(history),
            tick,
            f64::from(tick) / TICK_RATE,
            black_box(ids.as_ptr()),
            std::ptr::null(),
            ids.len(),
            black_box(bones.ptr()),
            bones.len,
        )
    };
    debug_assert_eq!(status, LAGCOMP_OK);
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    record(&mut c);
    c.final_summary();
}

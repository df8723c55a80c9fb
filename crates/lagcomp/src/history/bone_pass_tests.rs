//! Tests of the bone pass kernels: every kernel against the portable one.

use glam::{Quat, Vec3};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

use glam::{Vec3A, Vec4};

use super::super::lane::Lane;
use super::*;
use crate::math::{MAX_COORDINATE, MAX_EXTENT, MIN_EXTENT, ROTATION_NORM_TOLERANCE};
use crate::simd::{Isa, KernelBody, Kernels};

/// One entity's bone pass with the kernels it is run with: plain stores, or streaming
/// ones (fenced before it returns).
struct OnePass<'a> {
    stream: bool,
    bones: &'a [BoneTransform],
    reach: &'a [[f32; 4]],
    translations: &'a mut [StoredTranslation],
    rotations: &'a mut [StoredRotation],
}

impl KernelBody for OnePass<'_> {
    type Output = BonePass;

    fn run<K: Isa>(self, isa: K) -> BonePass {
        let Self {
            stream,
            bones,
            reach,
            translations,
            rotations,
        } = self;
        if stream {
            // SAFETY: the tests that stream give rows aligned as the lanes align them
            // (`Lane` starts on a cache line); fenced below.
            let pass = unsafe { isa.bone_pass::<true>(bones, reach, translations, rotations) };
            isa.fence();
            pass
        } else {
            // SAFETY: plain stores: nothing to promise.
            unsafe { isa.bone_pass::<false>(bones, reach, translations, rotations) }
        }
    }
}

/// A batch plan's segment pass (`Isa::bone_segment`) over `bounds.len()` entities of `4 *
/// groups` bones, its checks decided alone; `GROUPS` as the recorder passes it.
struct Segment<'a, const GROUPS: usize> {
    stream: bool,
    bones: &'a [BoneTransform],
    reach: &'a [[f32; 4]],
    translations: &'a mut [StoredTranslation],
    rotations: &'a mut [StoredRotation],
    groups: usize,
    bounds: &'a mut [[Vec3A; 2]],
}

impl<const GROUPS: usize> KernelBody for Segment<'_, GROUPS> {
    type Output = bool;

    fn run<K: Isa>(self, isa: K) -> bool {
        let Self {
            stream,
            bones,
            reach,
            translations,
            rotations,
            groups,
            bounds,
        } = self;
        assert!(
            bones.len() == bounds.len() * 4 * groups
                && reach.len() == 4 * groups
                && rotations.len() == bones.len()
                && translations.len() == bones.len() + 1
        );
        let mut checks = isa.batch_checks();
        let (src, reach) = (bones.as_ptr(), reach.as_ptr());
        let (t_out, r_out) = (translations.as_mut_ptr(), rotations.as_mut_ptr());
        // SAFETY: the lengths checked above; streamed rows start aligned (`Lane`), and
        // are fenced below.
        unsafe {
            if stream {
                isa.bone_segment::<true, GROUPS>(
                    src,
                    reach,
                    t_out,
                    r_out,
                    groups,
                    bounds,
                    &mut checks,
                );
                isa.fence();
            } else {
                isa.bone_segment::<false, GROUPS>(
                    src,
                    reach,
                    t_out,
                    r_out,
                    groups,
                    bounds,
                    &mut checks,
                );
            }
        }
        isa.batch_checks_pass(&checks)
    }
}

/// Guard values around each output row: a kernel must not write outside its row.
const GUARD: usize = 3;
const SENTINEL_T: [f32; 3] = [-7.5, -7.5, -7.5];
const SENTINEL_R: [f32; 4] = [9.25, 9.25, 9.25, 9.25];

fn random_unit_quat(rng: &mut Pcg64Mcg) -> Quat {
    loop {
        let v = Vec4::new(
            rng.random_range(-1.0..1.0),
            rng.random_range(-1.0..1.0),
            rng.random_range(-1.0..1.0),
            rng.random_range(-1.0..1.0),
        );
        if v.length_squared() > 0.01 {
            return Quat::from_vec4(v.normalize());
        }
    }
}

/// A float from a list of values that sit on or next to a decision boundary.
fn edge_value(rng: &mut Pcg64Mcg) -> f32 {
    const EDGES: [f32; 14] = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        MAX_COORDINATE,
        -MAX_COORDINATE,
        2.0e6,
        0.0,
        -0.0,
        1.0,
        -1.0,
        2.0,
        f32::MIN_POSITIVE,
        MIN_EXTENT,
        MAX_EXTENT,
    ];
    let v = EDGES[rng.random_range(0..EDGES.len())];
    match rng.random_range(0..4) {
        0 => v.next_up(),
        1 => v.next_down(),
        _ => v,
    }
}

/// A rotation whose squared norm sits within a few ulps of the tolerance's edge.
fn borderline_quat(rng: &mut Pcg64Mcg) -> Quat {
    let q = random_unit_quat(rng);
    let sign = if rng.random_bool(0.5) { 1.0 } else { -1.0 };
    let mut s = (1.0 + sign * ROTATION_NORM_TOLERANCE).sqrt();
    for _ in 0..rng.random_range(0..6) {
        s = if rng.random_bool(0.5) {
            s.next_up()
        } else {
            s.next_down()
        };
    }
    Quat::from_vec4(Vec4::from(q) * s)
}

/// A random bone, valid and unit-scale, or (`adversarial`, 30 %) one with a component
/// on or next to a decision boundary, a borderline norm, or a valid non-unit scale.
pub(in crate::history) fn random_bone(rng: &mut Pcg64Mcg, adversarial: bool) -> BoneTransform {
    let mut bone = BoneTransform::new(
        Vec3::new(
            rng.random_range(-1000.0..1000.0),
            rng.random_range(-50.0..50.0),
            rng.random_range(-1000.0..1000.0),
        ),
        random_unit_quat(rng),
    );
    if !adversarial || rng.random_bool(0.7) {
        return bone;
    }
    match rng.random_range(0..5) {
        0 => bone.translation[rng.random_range(0..3)] = edge_value(rng),
        1 => {
            let mut v = Vec4::from(bone.rotation).to_array();
            v[rng.random_range(0..4)] = edge_value(rng);
            bone.rotation = Quat::from_array(v);
        }
        2 => bone.scale[rng.random_range(0..3)] = edge_value(rng),
        3 => bone.rotation = borderline_quat(rng),
        _ => bone.scale = Vec3::splat(rng.random_range(0.5..2.0)),
    }
    bone
}

/// Runs `kernel` into rows with guards on both sides; returns the rows and the pass.
fn run(
    kernel: Kernels,
    bones: &[BoneTransform],
    reach: &[[f32; 4]],
) -> (Vec<StoredTranslation>, Vec<StoredRotation>, BonePass) {
    let n = bones.len();
    let mut t = vec![SENTINEL_T; n + 2 * GUARD];
    let mut r = vec![SENTINEL_R; n + 2 * GUARD];
    let pass = kernel.run(OnePass {
        stream: false,
        bones,
        reach,
        // The element after the row may be written, but must end as it was.
        translations: &mut t[GUARD..GUARD + n + 1],
        rotations: &mut r[GUARD..GUARD + n],
    });
    for k in (0..GUARD).chain(GUARD + n..n + 2 * GUARD) {
        assert_eq!(
            t[k], SENTINEL_T,
            "{kernel:?} wrote outside the translation row"
        );
        assert_eq!(
            r[k], SENTINEL_R,
            "{kernel:?} wrote outside the rotation row"
        );
    }
    (t, r, pass)
}

fn bits<const N: usize>(rows: &[[f32; N]]) -> Vec<[u32; N]> {
    rows.iter().map(|row| row.map(f32::to_bits)).collect()
}

/// The padded bounds as bits: what the recorder stores.
fn stored_bounds(pass: &BonePass) -> [u32; 6] {
    let b = crate::math::Aabb::new(pass.lo.into(), pass.hi.into()).padded();
    let [a, c, d] = b.min.to_array().map(f32::to_bits);
    let [e, f, g] = b.max.to_array().map(f32::to_bits);
    [a, c, d, e, f, g]
}

#[test]
fn every_kernel_stores_bounds_and_decides_like_the_portable_one() {
    let kernels = Kernels::available();
    let mut rng = Pcg64Mcg::seed_from_u64(0x5eed_b0e5);
    let (mut clean, mut unclean) = (0, 0);
    for case in 0..20_000 {
        let n = rng.random_range(1..=23);
        let adversarial = case % 2 == 1;
        let bones: Vec<BoneTransform> =
            (0..n).map(|_| random_bone(&mut rng, adversarial)).collect();
        let reach: Vec<[f32; 4]> = (0..n)
            .map(|_| match rng.random_range(0..4) {
                0 => [0.0; 4],
                _ => [rng.random_range(0.0..1.5); 4],
            })
            .collect();
        let (t0, r0, p0) = run(Kernels::PORTABLE, &bones, &reach);
        if p0.clean {
            clean += 1;
            // Clean means valid, unit-scale bones, except that the fast norm sum and
            // `validate`'s (glam's `length_squared`, summed in another order) may round
            // a rotation on the tolerance's edge to different sides of it.
            for b in &bones {
                assert_eq!(b.scale, Vec3::ONE);
                match b.validate() {
                    Ok(()) => {}
                    Err(crate::math::TransformError::RotationNotNormalized) => {
                        let off = (b.rotation.length_squared() - 1.0).abs();
                        assert!(off - ROTATION_NORM_TOLERANCE < 1.0e-6, "{b:?}");
                    }
                    Err(e) => panic!("clean pass over an invalid bone: {e} {b:?}"),
                }
            }
        } else {
            unclean += 1;
        }
        for &kernel in &kernels[1..] {
            let (t, r, p) = run(kernel, &bones, &reach);
            assert_eq!(bits(&t), bits(&t0), "{kernel:?} translations, case {case}");
            assert_eq!(bits(&r), bits(&r0), "{kernel:?} rotations, case {case}");
            assert_eq!(
                p.clean, p0.clean,
                "{kernel:?} decision, case {case}: {bones:?}"
            );
            if p.clean {
                assert_eq!(stored_bounds(&p), stored_bounds(&p0), "{kernel:?} bounds");
            }
        }
    }
    // Both kinds of input were exercised.
    assert!(
        clean > 8_000 && unclean > 3_000,
        "{clean} clean, {unclean} not"
    );
}

/// Every kernel's pass with streaming stores writes what it writes with plain ones, and
/// nothing outside the row (rows aligned as the lanes align them).
#[test]
fn streaming_stores_write_the_same_rows() {
    // Four elements of guard: 48 bytes of translations, 64 of rotations, so the rows
    // start 16- and 64-byte aligned in the cache-line-aligned lanes.
    const AHEAD: usize = 4;
    for kernel in Kernels::available() {
        let mut rng = Pcg64Mcg::seed_from_u64(0x57_4ea3);
        for case in 0..4_000 {
            let n = rng.random_range(1..=23);
            let adversarial = case % 3 == 1;
            let bones: Vec<BoneTransform> =
                (0..n).map(|_| random_bone(&mut rng, adversarial)).collect();
            let reach: Vec<[f32; 4]> = (0..n).map(|_| [rng.random_range(0.0..1.5); 4]).collect();
            let (t0, r0, p0) = run(kernel, &bones, &reach);
            let mut t = Lane::filled(n + 2 * AHEAD, SENTINEL_T);
            let mut r = Lane::filled(n + 2 * AHEAD, SENTINEL_R);
            let p = kernel.run(OnePass {
                stream: true,
                bones: &bones,
                reach: &reach,
                translations: &mut t[AHEAD..AHEAD + n + 1],
                rotations: &mut r[AHEAD..AHEAD + n],
            });
            assert_eq!(
                bits(&t[AHEAD..AHEAD + n]),
                bits(&t0[GUARD..GUARD + n]),
                "{kernel:?} case {case}: {n} translations"
            );
            assert_eq!(
                bits(&r[AHEAD..AHEAD + n]),
                bits(&r0[GUARD..GUARD + n]),
                "{kernel:?} case {case}: {n} rotations"
            );
            for k in (0..AHEAD).chain(AHEAD + n..n + 2 * AHEAD) {
                assert_eq!(
                    t[k], SENTINEL_T,
                    "{kernel:?} case {case}: wrote outside the translations"
                );
                assert_eq!(
                    r[k], SENTINEL_R,
                    "{kernel:?} case {case}: wrote outside the rotations"
                );
            }
            assert_eq!(p.clean, p0.clean, "{kernel:?} case {case}: decision");
            if p.clean {
                assert_eq!(
                    stored_bounds(&p),
                    stored_bounds(&p0),
                    "{kernel:?} case {case}: bounds"
                );
            }
        }
    }
}

/// Every kernel's batch pass (`Isa::bone_segment`: several entities' rows back to back,
/// the checks decided once) writes each entity's rows and bounds as its per-entity pass
/// does, and passes a batch exactly when every entity passes: loop and written-out forms,
/// plain and streaming stores, clean, borderline and broken bones.
#[test]
fn the_batch_kernel_records_and_decides_like_one_entity_at_a_time() {
    for kernel in Kernels::available() {
        batch_kernel_records_like_one_entity_at_a_time(kernel);
    }
}

fn batch_kernel_records_like_one_entity_at_a_time(kernel: Kernels) {
    let mut rng = Pcg64Mcg::seed_from_u64(0x5e9_3e47);
    let (mut passed, mut failed) = (0, 0);
    for case in 0..3_000 {
        let groups = [1, 4, 5, 6][case % 4];
        let n = 4 * groups;
        let entities = rng.random_range(1..=5);
        // Mostly clean batches, a few with one entity's bones adversarial.
        let bad_one = (case % 3 == 0).then(|| rng.random_range(0..entities));
        let bones: Vec<BoneTransform> = (0..entities * n)
            .map(|i| random_bone(&mut rng, bad_one == Some(i / n)))
            .collect();
        let reach: Vec<[f32; 4]> = (0..n).map(|_| [rng.random_range(0.0..1.5); 4]).collect();
        // Entity by entity.
        let mut want_t = Vec::new();
        let mut want_r = Vec::new();
        let mut want_bounds = Vec::new();
        let mut all_clean = true;
        for own in bones.chunks_exact(n) {
            let (t, r, pass) = run(kernel, own, &reach);
            want_t.extend_from_slice(&t[GUARD..GUARD + n]);
            want_r.extend_from_slice(&r[GUARD..GUARD + n]);
            want_bounds.push(stored_bounds(&pass));
            all_clean &= pass.clean;
        }
        for stream in [false, true] {
            // Rows start aligned (the lanes start on a cache line), as in a history.
            let mut t = Lane::filled(entities * n + 1, SENTINEL_T);
            let mut r = Lane::filled(entities * n, SENTINEL_R);
            let mut bounds = vec![[Vec3A::ZERO; 2]; entities];
            let spilled = t[entities * n];
            let (bones, reach) = (&bones[..], &reach[..]);
            let (translations, rotations, b) = (&mut t[..], &mut r[..], &mut bounds[..]);
            // Written out for 4 and 5 groups, as the recorder calls it; the loop otherwise.
            let clean = match groups {
                4 => kernel.run(Segment::<4> {
                    stream,
                    bones,
                    reach,
                    translations,
                    rotations,
                    groups,
                    bounds: b,
                }),
                5 => kernel.run(Segment::<5> {
                    stream,
                    bones,
                    reach,
                    translations,
                    rotations,
                    groups,
                    bounds: b,
                }),
                _ => kernel.run(Segment::<0> {
                    stream,
                    bones,
                    reach,
                    translations,
                    rotations,
                    groups,
                    bounds: b,
                }),
            };
            assert_eq!(
                clean, all_clean,
                "{kernel:?} case {case}, stream {stream}: decision"
            );
            assert_eq!(
                bits(&t[..entities * n]),
                bits(&want_t),
                "case {case}: translations"
            );
            assert_eq!(bits(&r[..]), bits(&want_r), "case {case}: rotations");
            if stream {
                assert_eq!(
                    t[entities * n],
                    spilled,
                    "case {case}: a streamed row spilled"
                );
            }
            if clean {
                for (k, [lo, hi]) in bounds.iter().enumerate() {
                    let got = BonePass {
                        lo: *lo,
                        hi: *hi,
                        clean,
                    };
                    assert_eq!(
                        stored_bounds(&got),
                        want_bounds[k],
                        "case {case}: bounds {k}"
                    );
                }
            }
        }
        if all_clean {
            passed += 1;
        } else {
            failed += 1;
        }
    }
    assert!(
        passed > 1_500 && failed > 300,
        "{passed} clean batches, {failed} not"
    );
}

#[test]
fn a_scale_of_minus_one_is_not_unit() {
    // `-1.0 ^ 1.0` is -0.0 as a float, equal to zero: the scale check must compare bits.
    for kernel in Kernels::available() {
        for n in [1, 4, 5] {
            let mut bones = vec![BoneTransform::IDENTITY; n];
            bones[n - 1].scale.y = -1.0;
            let (_, _, pass) = run(kernel, &bones, &vec![[0.5; 4]; n]);
            assert!(!pass.clean, "{kernel:?} with {n} bones");
        }
    }
}

#[test]
fn each_fast_check_rejects_in_every_position() {
    // One bad component at every bone position and every lane, for every kernel.
    for kernel in Kernels::available() {
        for n in [1, 2, 3, 4, 7, 8, 9, 16, 20] {
            for bone in 0..n {
                for lane in 0..10 {
                    let mut bones = vec![BoneTransform::IDENTITY; n];
                    let b = &mut bones[bone];
                    match lane {
                        0..3 => b.translation[lane] = MAX_COORDINATE.next_up(),
                        3..7 => {
                            let mut v = b.rotation.to_array();
                            v[lane - 3] = f32::NAN;
                            b.rotation = Quat::from_array(v);
                        }
                        _ => b.scale[lane - 7] = 1.0_f32.next_down(),
                    }
                    let (_, _, pass) = run(kernel, &bones, &vec![[0.25; 4]; n]);
                    assert!(!pass.clean, "{kernel:?} n {n} bone {bone} lane {lane}");
                }
                let mut bones = vec![BoneTransform::IDENTITY; n];
                bones[bone].translation = Vec3::splat(-MAX_COORDINATE);
                let (_, _, pass) = run(kernel, &bones, &vec![[0.25; 4]; n]);
                assert!(pass.clean, "{kernel:?}: the range edge itself is accepted");
            }
        }
    }
}

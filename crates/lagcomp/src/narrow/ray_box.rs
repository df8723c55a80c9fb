//! Line against box (in the box's local space).

use glam::{Quat, Vec3, Vec3A};

use super::{Crossing, PARALLEL_EPSILON};

/// Where the line crosses the box `[-half, half]` (slab method), if it does.
///
/// Works in the box's own space: callers rotate the line in and the normals back out
/// (a placed box's exact test rotates them back without leaving vector lanes).
/// A line parallel to a pair of faces and outside them misses; on them, it counts as inside.
///
/// PERF: the three slabs are computed side by side and the entry (the latest slab entry,
/// the first axis on a tie) and exit (the earliest slab exit, the first axis on a tie) are
/// picked by selects rather than a branch per axis, whose outcome depends on the ray and
/// was mispredicted often. The numbers are the per-axis slab loop's: the same operations
/// on each axis, a parallel axis (skipped by the loop) entered at `-inf` and left at
/// `+inf`, which no comparison below picks. Always inline: out of line, its crossing went
/// back through memory in 4-byte stores that the caller read 16 bytes at a time.
#[must_use]
#[inline(always)]
pub fn line_box(origin: Vec3, dir: Vec3, half: Vec3) -> Option<Crossing> {
    slabs(origin, dir, half).map(|(enter, enter_normal, exit, exit_normal)| Crossing {
        enter,
        enter_normal: enter_normal.into(),
        exit,
        exit_normal: exit_normal.into(),
    })
}

/// [`line_box`] with the normals rotated by `rotation` (a box placed with that rotation,
/// the line given in its space): the same numbers as `line_box(..).map(|c|
/// c.rotate_normals(rotation))`, glam's rotation of a `Vec3` being that of a `Vec3A`.
///
/// PERF: the normals stay on vector lanes until rotated: built as `Vec3` fields first, the
/// compiler assembled them through the stack, stored as floats and loaded back as a
/// vector (a load the store buffer cannot forward), on every box crossing.
#[must_use]
#[inline(always)]
pub(crate) fn line_box_rotated(
    origin: Vec3,
    dir: Vec3,
    half: Vec3,
    rotation: Quat,
) -> Option<Crossing> {
    slabs(origin, dir, half).map(|(enter, enter_normal, exit, exit_normal)| Crossing {
        enter,
        enter_normal: rotation.mul_vec3a(enter_normal).into(),
        exit,
        exit_normal: rotation.mul_vec3a(exit_normal).into(),
    })
}

/// [`line_box`]'s crossing with its normals on vector lanes.
#[inline(always)]
fn slabs(origin: Vec3, dir: Vec3, half: Vec3) -> Option<(f32, Vec3A, f32, Vec3A)> {
    // Per axis: whether the line is parallel to its faces, the slab's entry and exit
    // parameters, and the outward normal's sign on the entry face.
    let slab = |o: f32, d: f32, h: f32| {
        let parallel = d * d < PARALLEL_EPSILON;
        let inv = 1.0 / d;
        // The face the line meets first is the one facing against its direction.
        let face = if d > 0.0 { -1.0 } else { 1.0 };
        let near = (face * h - o) * inv;
        let far = (-face * h - o) * inv;
        let outside = parallel && o.abs() > h;
        let near = if parallel { f32::NEG_INFINITY } else { near };
        let far = if parallel { f32::INFINITY } else { far };
        (outside, near, far, face)
    };
    let (out_x, near_x, far_x, face_x) = slab(origin.x, dir.x, half.x);
    let (out_y, near_y, far_y, face_y) = slab(origin.y, dir.y, half.y);
    let (out_z, near_z, far_z, face_z) = slab(origin.z, dir.z, half.z);
    if out_x | out_y | out_z {
        return None;
    }
    // The loop's `if near > enter { enter = near }` from `-inf`, axis after axis: strict,
    // so the first axis keeps a tie.
    let (enter, enter_axis) = pick(
        [near_x, near_y, near_z],
        |a: f32, b: f32| a > b,
        f32::NEG_INFINITY,
    );
    let (exit, exit_axis) = pick([far_x, far_y, far_z], |a: f32, b: f32| a < b, f32::INFINITY);
    // Per axis `sign * face` on the picked axis, `0.0` on the others (none when no axis
    // was picked), selected on vector lanes.
    let faces = Vec3A::new(face_x, face_y, face_z);
    let normal = |axis: usize, sign: f32| {
        let picked = Vec3A::new(0.0, 1.0, 2.0).cmpeq(Vec3A::splat(axis as f32));
        Vec3A::select(picked, faces * sign, Vec3A::ZERO)
    };
    (enter <= exit).then(|| {
        (
            enter,
            normal(enter_axis, 1.0),
            exit,
            normal(exit_axis, -1.0),
        )
    })
}

/// The loop `best = start; for each value: if better(value, best) { best = value }` over
/// three values, and the index of the value kept (3 when none).
#[inline(always)]
fn pick(values: [f32; 3], better: impl Fn(f32, f32) -> bool, start: f32) -> (f32, usize) {
    let (mut best, mut axis) = (start, 3);
    for (k, v) in values.into_iter().enumerate() {
        let take = better(v, best);
        best = if take { v } else { best };
        axis = if take { k } else { axis };
    }
    (best, axis)
}

#[cfg(test)]
mod tests {
    use rand::{Rng as _, SeedableRng as _};

    use super::*;

    /// The slab loop, one axis after the other: what [`line_box`] must give bit for bit.
    fn slab_loop(origin: Vec3, dir: Vec3, half: Vec3) -> Option<Crossing> {
        let mut enter = f32::NEG_INFINITY;
        let mut exit = f32::INFINITY;
        let mut enter_normal = Vec3::ZERO;
        let mut exit_normal = Vec3::ZERO;
        for axis in 0..3 {
            let (o, d, h) = (origin[axis], dir[axis], half[axis]);
            if d * d < PARALLEL_EPSILON {
                if o.abs() > h {
                    return None;
                }
                continue;
            }
            let inv = 1.0 / d;
            let face = if d > 0.0 { -1.0 } else { 1.0 };
            let near = (face * h - o) * inv;
            let far = (-face * h - o) * inv;
            if near > enter {
                enter = near;
                enter_normal = Vec3::ZERO;
                enter_normal[axis] = face;
            }
            if far < exit {
                exit = far;
                exit_normal = Vec3::ZERO;
                exit_normal[axis] = -face;
            }
        }
        (enter <= exit).then_some(Crossing {
            enter,
            enter_normal,
            exit,
            exit_normal,
        })
    }

    fn bits(c: Option<Crossing>) -> Option<[u32; 8]> {
        c.map(|c| {
            [
                c.enter.to_bits(),
                c.exit.to_bits(),
                c.enter_normal.x.to_bits(),
                c.enter_normal.y.to_bits(),
                c.enter_normal.z.to_bits(),
                c.exit_normal.x.to_bits(),
                c.exit_normal.y.to_bits(),
                c.exit_normal.z.to_bits(),
            ]
        })
    }

    #[test]
    fn the_branch_free_slabs_give_the_slab_loop_bit_for_bit() {
        // Random lines, lines along axes and planes (parallel slabs, inside and outside
        // them), cube boxes and lines through edges and corners (ties between axes).
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(21);
        let (mut hits, mut misses) = (0, 0);
        for round in 0..200_000 {
            let half = if round % 4 == 0 {
                Vec3::splat(rng.random_range(0.1..2.0))
            } else {
                Vec3::new(
                    rng.random_range(0.05..2.0),
                    rng.random_range(0.05..2.0),
                    rng.random_range(0.05..2.0),
                )
            };
            let mut origin = Vec3::new(
                rng.random_range(-4.0..4.0),
                rng.random_range(-4.0..4.0),
                rng.random_range(-4.0..4.0),
            );
            let mut dir = Vec3::new(
                rng.random_range(-1.0..1.0),
                rng.random_range(-1.0..1.0),
                rng.random_range(-1.0..1.0),
            );
            match round % 5 {
                // Parallel to one or two pairs of faces.
                1 => dir[rng.random_range(0..3)] = 0.0,
                2 => {
                    let keep = rng.random_range(0..3);
                    for axis in 0..3 {
                        if axis != keep {
                            dir[axis] = if rng.random_bool(0.5) { 0.0 } else { 1e-7 };
                        }
                    }
                }
                // Aimed at a corner or along a diagonal: equal slab entries.
                3 => {
                    origin = -half * rng.random_range(1.5..3.0);
                    dir = half;
                }
                _ => {}
            }
            let dir = dir.normalize_or(Vec3::X);
            let (got, want) = (line_box(origin, dir, half), slab_loop(origin, dir, half));
            assert_eq!(
                bits(got),
                bits(want),
                "round {round}: {origin} {dir} {half}"
            );
            // The rotated form (a placed box's exact test) gives the rotated normals bit
            // for bit.
            let rotation = Quat::from_euler(
                glam::EulerRot::XYZ,
                rng.random_range(-3.0..3.0),
                rng.random_range(-3.0..3.0),
                rng.random_range(-3.0..3.0),
            );
            assert_eq!(
                bits(line_box_rotated(origin, dir, half, rotation)),
                bits(want.map(|c| c.rotate_normals(rotation))),
                "round {round}: {origin} {dir} {half} {rotation}"
            );
            if want.is_some() {
                hits += 1;
            } else {
                misses += 1;
            }
        }
        assert!(
            hits > 20_000 && misses > 20_000,
            "{hits} hits, {misses} misses"
        );
    }
}

//! Shared helpers for the geometry tests: approximate assertions, scene builders, random
//! rigs and an independent signed distance to a placed shape.
//!
//! The geometry modules (`shapes`, `properties`, `differential_parry`) each use a different
//! part of it.

use std::sync::Arc;

use lagcomp::{
    Axis, BoneTransform, EntityId, EntityState, History, HistoryConfig, Hitbox, PlacedShape, Pose,
    Quat, Rig, Shape, Tick, Vec3, Zone,
};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

/// Asserts that two `f32`s or two `Vec3`s differ by at most `tol` (absolute; for vectors the
/// Euclidean distance). The failure message shows both values, the allowed and the actual
/// difference, and an optional formatted context.
macro_rules! assert_approx_eq {
    ($a:expr, $b:expr, $tol:expr $(,)?) => {
        assert_approx_eq!($a, $b, $tol, "")
    };
    ($a:expr, $b:expr, $tol:expr, $($ctx:tt)+) => {{
        let (a, b, tol) = ($a, $b, $tol);
        let diff = $crate::common::ApproxDiff::approx_diff(&a, &b);
        assert!(
            diff <= tol,
            "assertion `{} ≈ {}` failed: {}\n  left:  {:?}\n  right: {:?}\n  \
             allowed difference: {:e}\n  actual difference:  {:e}",
            stringify!($a),
            stringify!($b),
            format_args!($($ctx)+),
            a,
            b,
            tol,
            diff,
        );
    }};
}

/// The distance between two values of a type `assert_approx_eq!` compares.
pub(crate) trait ApproxDiff {
    /// `|self - other|` (NaN when either is NaN, which fails every comparison).
    fn approx_diff(&self, other: &Self) -> f32;
}

impl ApproxDiff for f32 {
    fn approx_diff(&self, other: &Self) -> f32 {
        (self - other).abs()
    }
}

impl ApproxDiff for Vec3 {
    fn approx_diff(&self, other: &Self) -> f32 {
        self.distance(*other)
    }
}

/// Tick rate of every test history.
pub(crate) const TICK_RATE: f64 = 64.0;

/// A history at [`TICK_RATE`] with a half-second window (38 frames).
pub(crate) fn history() -> History {
    History::new(HistoryConfig {
        tick_rate: TICK_RATE,
        max_rewind: 0.5,
    })
    .expect("valid config")
}

/// Server time of tick `tick` in the test histories.
pub(crate) fn time_of(tick: u32) -> f64 {
    f64::from(tick) / TICK_RATE
}

/// One entity with `rig`, recorded at ticks 0, 1, 2, ... (time `tick / 64`) with one entry
/// of `poses_per_tick` per tick (one transform per bone).
pub(crate) fn scene_with(rig: Rig, poses_per_tick: &[Vec<BoneTransform>]) -> (History, EntityId) {
    let mut history = history();
    let id = history.spawn(Arc::new(rig));
    for (tick, bones) in (0_u32..).zip(poses_per_tick) {
        let mut frame = history
            .begin_frame(Tick(tick), time_of(tick))
            .expect("increasing ticks");
        frame
            .record(id, bones, EntityState::default())
            .expect("valid bones");
    }
    (history, id)
}

/// One rigid entity carrying `hitbox`, its bone at `bone`, recorded in a single frame at
/// time 0 (query it with `RewindTarget::at(0.0)`).
pub(crate) fn single(hitbox: Hitbox, bone: BoneTransform) -> (History, EntityId) {
    let rig = Rig::rigid(vec![hitbox]).expect("valid rig");
    scene_with(rig, &[vec![bone]])
}

/// A hitbox with id 0 on bone 0, centred on the bone.
pub(crate) fn hitbox(shape: Shape) -> Hitbox {
    Hitbox::new(0, "test", Zone::Torso, 0, shape)
}

/// The seeded generator every random test uses.
pub(crate) fn rng(seed: u64) -> Pcg64 {
    Pcg64::seed_from_u64(seed)
}

/// A uniformly random unit vector.
pub(crate) fn random_unit(rng: &mut Pcg64) -> Vec3 {
    loop {
        let v = Vec3::new(
            rng.random_range(-1.0..=1.0),
            rng.random_range(-1.0..=1.0),
            rng.random_range(-1.0..=1.0),
        );
        let len_sq = v.length_squared();
        if (1.0e-4..=1.0).contains(&len_sq) {
            return v / len_sq.sqrt();
        }
    }
}

/// A uniformly random point in the ball of `radius` around the origin.
pub(crate) fn random_in_ball(rng: &mut Pcg64, radius: f32) -> Vec3 {
    random_unit(rng) * radius * rng.random::<f32>().cbrt()
}

/// A uniformly random rotation.
pub(crate) fn random_rotation(rng: &mut Pcg64) -> Quat {
    loop {
        let q = Quat::from_xyzw(
            rng.random_range(-1.0..=1.0),
            rng.random_range(-1.0..=1.0),
            rng.random_range(-1.0..=1.0),
            rng.random_range(-1.0..=1.0),
        );
        let len_sq = q.length_squared();
        if (1.0e-4..=1.0).contains(&len_sq) {
            return q.normalize();
        }
    }
}

/// A random axis.
pub(crate) fn random_axis(rng: &mut Pcg64) -> Axis {
    [Axis::X, Axis::Y, Axis::Z][rng.random_range(0..3)]
}

/// A random sphere, box or capsule (kind chosen by `kind % 3`), 5 cm to 60 cm across its
/// smaller dimensions.
pub(crate) fn random_shape_of_kind(rng: &mut Pcg64, kind: usize) -> Shape {
    match kind % 3 {
        0 => Shape::sphere(rng.random_range(0.05..0.6)),
        1 => Shape::cuboid(Vec3::new(
            rng.random_range(0.05..0.6),
            rng.random_range(0.05..0.6),
            rng.random_range(0.05..0.6),
        )),
        _ => Shape::capsule(
            rng.random_range(0.05..0.4),
            // Sometimes a degenerate capsule (a sphere).
            if rng.random_bool(0.1) {
                0.0
            } else {
                rng.random_range(0.05..0.6)
            },
            random_axis(rng),
        ),
    }
}

/// A random rig: 1..=8 bones, 1..=12 hitboxes on random bones, all three shapes, random
/// offsets (translation within 0.5 m, half of them rotated).
pub(crate) fn random_rig(rng: &mut Pcg64) -> Rig {
    let bones: u16 = rng.random_range(1..=8);
    let count: u16 = rng.random_range(1..=12);
    let hitboxes = (0..count)
        .map(|i| {
            // Cycle through the kinds so every rig with three or more hitboxes has all three.
            let kind = usize::from(i) + rng.random_range(0..3);
            let shape = random_shape_of_kind(rng, kind);
            let rotation = if rng.random_bool(0.5) {
                random_rotation(rng)
            } else {
                Quat::IDENTITY
            };
            let offset = Pose::new(random_in_ball(rng, 0.5), rotation);
            let zone = [Zone::Head, Zone::Torso, Zone::Limb, Zone::Custom(i)][usize::from(i % 4)];
            Hitbox::new(
                100 + i,
                format!("hb{i}"),
                zone,
                rng.random_range(0..bones),
                shape,
            )
            .with_offset(offset)
        })
        .collect();
    Rig::new(bones, hitboxes).expect("random rigs are valid")
}

/// A random bone transform near `center` (within `spread`), randomly rotated; scaled in a
/// third of the cases (uniformly or not, 0.5..2 per axis).
pub(crate) fn random_bone(rng: &mut Pcg64, center: Vec3, spread: f32) -> BoneTransform {
    let bone = BoneTransform::new(center + random_in_ball(rng, spread), random_rotation(rng));
    match rng.random_range(0..6) {
        0 => bone.with_scale(Vec3::splat(rng.random_range(0.5..2.0))),
        1 => bone.with_scale(Vec3::new(
            rng.random_range(0.5..2.0),
            rng.random_range(0.5..2.0),
            rng.random_range(0.5..2.0),
        )),
        _ => bone,
    }
}

/// Signed distance from `p` to the placed shape (negative inside), computed in `f64`
/// from the shape's own definition, independently of the crate's geometry code.
pub(crate) fn signed_distance(placed: &PlacedShape, p: Vec3) -> f64 {
    signed_distance_f64(placed, d3(p))
}

/// [`signed_distance`] of a point given in `f64`.
pub(crate) fn signed_distance_f64(placed: &PlacedShape, p: [f64; 3]) -> f64 {
    let c = d3(placed.pose.translation);
    let q = placed.pose.rotation;
    let q = [q.x, q.y, q.z, q.w].map(f64::from);
    match placed.shape {
        Shape::Sphere { radius } => len(sub(p, c)) - f64::from(radius),
        Shape::Box { half_extents } => {
            // Into the box's frame with the conjugate rotation.
            let local = rotate([-q[0], -q[1], -q[2], q[3]], sub(p, c));
            let h = d3(half_extents);
            let d = [0, 1, 2].map(|i| local[i].abs() - h[i]);
            let outside = len(d.map(|x| x.max(0.0)));
            let inside = d[0].max(d[1]).max(d[2]).min(0.0);
            outside + inside
        }
        Shape::Capsule {
            radius,
            half_height,
            axis,
        } => {
            let along = rotate(q, d3(axis.unit() * half_height));
            let a = sub(c, along);
            let ab = [2.0 * along[0], 2.0 * along[1], 2.0 * along[2]];
            let len_sq = dot(ab, ab);
            let t = if len_sq == 0.0 {
                0.0
            } else {
                (dot(sub(p, a), ab) / len_sq).clamp(0.0, 1.0)
            };
            let on_axis = [0, 1, 2].map(|i| a[i] + ab[i] * t);
            len(sub(p, on_axis)) - f64::from(radius)
        }
    }
}

/// Narrows `[lo, hi]` around the minimum of `f`, a convex function, by `rounds` ternary
/// search steps; returns the final bracket.
pub(crate) fn ternary_min(
    f: impl Fn(f64) -> f64,
    mut lo: f64,
    mut hi: f64,
    rounds: usize,
) -> (f64, f64) {
    for _ in 0..rounds {
        let m1 = lo + (hi - lo) / 3.0;
        let m2 = hi - (hi - lo) / 3.0;
        if f(m1) <= f(m2) {
            hi = m2;
        } else {
            lo = m1;
        }
    }
    (lo, hi)
}

/// Where the infinite line `origin + t * dir` (unit `dir`) is within `inflate` of the
/// placed shape: the interval `[enter, exit]` of `t`, found in `f64` from
/// [`signed_distance_f64`] alone (it is convex along a line: a ternary search finds its
/// minimum, bisections the two roots around it). `None` when the line stays outside.
pub(crate) fn exact_crossing(
    placed: &PlacedShape,
    origin: Vec3,
    dir: Vec3,
    inflate: f32,
) -> Option<(f64, f64)> {
    let (o, d) = (d3(origin), d3(dir));
    let f = |t: f64| {
        signed_distance_f64(placed, [o[0] + t * d[0], o[1] + t * d[1], o[2] + t * d[2]])
            - f64::from(inflate)
    };
    // The line's point nearest the centre, and a half-width that covers the shape.
    let mid = dot(sub(d3(placed.pose.translation), o), d);
    let reach = 2.0 * f64::from(placed.shape.bounding_radius() + inflate) + 1.0;
    let (lo, hi) = ternary_min(f, mid - reach, mid + reach, 200);
    let deepest = 0.5 * (lo + hi);
    if f(deepest) > 0.0 {
        return None;
    }
    let (mut out, mut inside) = (mid - reach, deepest);
    for _ in 0..200 {
        let m = 0.5 * (out + inside);
        if f(m) > 0.0 { out = m } else { inside = m }
    }
    let enter = inside;
    let (mut inside, mut out) = (deepest, mid + reach);
    for _ in 0..200 {
        let m = 0.5 * (out + inside);
        if f(m) > 0.0 { out = m } else { inside = m }
    }
    Some((enter, inside))
}

/// The outward unit normal of the placed shape at the surface point `p`, in `f64`, or
/// `None` where it is not unique to within `1e-4` (a box edge or corner).
pub(crate) fn exact_normal(placed: &PlacedShape, p: [f64; 3]) -> Option<[f64; 3]> {
    let c = d3(placed.pose.translation);
    let q = placed.pose.rotation;
    let q = [q.x, q.y, q.z, q.w].map(f64::from);
    let unit = |v: [f64; 3]| {
        let l = len(v);
        v.map(|x| x / l)
    };
    match placed.shape {
        Shape::Sphere { .. } => Some(unit(sub(p, c))),
        Shape::Box { half_extents } => {
            let local = rotate([-q[0], -q[1], -q[2], q[3]], sub(p, c));
            let h = d3(half_extents);
            let d = [0, 1, 2].map(|i| local[i].abs() - h[i]);
            let mut order = [0, 1, 2];
            order.sort_by(|&a, &b| d[b].total_cmp(&d[a]));
            if d[order[0]] - d[order[1]] < 1.0e-4 {
                return None;
            }
            let mut n = [0.0; 3];
            n[order[0]] = local[order[0]].signum();
            Some(rotate(q, n))
        }
        Shape::Capsule {
            half_height, axis, ..
        } => {
            let along = rotate(q, d3(axis.unit() * half_height));
            let a = sub(c, along);
            let ab = [2.0 * along[0], 2.0 * along[1], 2.0 * along[2]];
            let len_sq = dot(ab, ab);
            let t = if len_sq == 0.0 {
                0.0
            } else {
                (dot(sub(p, a), ab) / len_sq).clamp(0.0, 1.0)
            };
            Some(unit(sub(p, [0, 1, 2].map(|i| a[i] + ab[i] * t))))
        }
    }
}

pub(crate) fn d3(v: Vec3) -> [f64; 3] {
    v.to_array().map(f64::from)
}

fn sub(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

fn len(a: [f64; 3]) -> f64 {
    dot(a, a).sqrt()
}

/// `v` rotated by the unit quaternion `[x, y, z, w]`: v + 2w (q x v) + 2 q x (q x v).
fn rotate(q: [f64; 4], v: [f64; 3]) -> [f64; 3] {
    let u = [q[0], q[1], q[2]];
    let t = cross(u, v);
    let tt = cross(u, t);
    [0, 1, 2].map(|i| v[i] + 2.0 * q[3] * t[i] + 2.0 * tt[i])
}

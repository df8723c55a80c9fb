//! Analytic geometry cases, one table per shape and per query kind.
//!
//! Every row is a scene with one hitbox on one bone, recorded in a single frame and queried
//! at that frame, so the rewind machinery is the identity and only geometry is tested. The
//! expected values are worked out by hand in the row's comment.
//!
//! Conventions the tables pin down (decided here, documented per row):
//! - Shapes are closed: a ray tangent to a sphere or capsule, or touching only a box's
//!   edge or corner, hits with zero penetration (entry == exit). (Tangents lying in a face
//!   plane of the hitbox's bounding box are lost by the broadphase: a bug, see the ignored
//!   `tangent_in_a_bounding_box_face_plane`.)
//! - A ray sliding along a box face, exactly in the face plane, is inside the box.
//! - A ray starting inside (or on the exit surface, moving out) reports `started_inside`,
//!   distance 0, entry point = the start point (for a sweep: the hitbox point nearest the
//!   start), entry normal = -dir.
//! - A hit exactly at the ray's max distance counts; `exit_distance` may exceed it.
//! - Overlaps that only touch count.

use crate::common;
use std::f32::consts::{FRAC_1_SQRT_2, FRAC_PI_2, FRAC_PI_4, FRAC_PI_6, SQRT_2};
use std::sync::Arc;

use crate::common::{history, hitbox, single};
use lagcomp::narrow::{
    Crossing, line_box, line_capsule, line_rounded_box, line_sphere, obb_overlaps_obb,
    segment_overlaps_box,
};
use lagcomp::{
    Axis, BoneTransform, EntityId, EntityState, History, Hit, Hitbox, Obb, Overlap, Pose, Quat,
    Ray, RewindTarget, Rig, SampleKind, Shape, Tick, Trace, Vec3, Zone,
};

/// Tolerance on distances, points and normals of the analytic cases (a few f32 ulps of the
/// coordinates involved, which stay below 20).
const TOL: f32 = 2.0e-5;

const X: Vec3 = Vec3::X;
const Y: Vec3 = Vec3::Y;
const Z: Vec3 = Vec3::Z;

fn v(x: f32, y: f32, z: f32) -> Vec3 {
    Vec3::new(x, y, z)
}

// ---------------------------------------------------------------------------------------
// Ray and sweep tables
// ---------------------------------------------------------------------------------------

/// What a trace should report for its one hitbox.
#[derive(Debug, Clone, Copy)]
struct Expect {
    distance: f32,
    entry_point: Vec3,
    entry_normal: Vec3,
    exit_distance: f32,
    exit_point: Vec3,
    exit_normal: Vec3,
    started_inside: bool,
}

/// A hit from outside. Points are on the hitbox (for sweeps: the contact points).
fn hit(
    distance: f32,
    entry_point: Vec3,
    entry_normal: Vec3,
    exit_distance: f32,
    exit_point: Vec3,
    exit_normal: Vec3,
) -> Option<Expect> {
    Some(Expect {
        distance,
        entry_point,
        entry_normal,
        exit_distance,
        exit_point,
        exit_normal,
        started_inside: false,
    })
}

/// A trace that starts inside: distance 0, entry normal -dir.
fn inside(
    entry_point: Vec3,
    dir: Vec3,
    exit_distance: f32,
    exit_point: Vec3,
    exit_normal: Vec3,
) -> Option<Expect> {
    Some(Expect {
        distance: 0.0,
        entry_point,
        entry_normal: -dir,
        exit_distance,
        exit_point,
        exit_normal,
        started_inside: true,
    })
}

/// One row: a hitbox on a bone, a ray, and what it should report.
struct TraceCase {
    what: &'static str,
    hitbox: Hitbox,
    bone: BoneTransform,
    origin: Vec3,
    dir: Vec3,
    max: f32,
    expect: Option<Expect>,
}

/// A row with an unrotated, unscaled bone at the world origin.
fn row(
    what: &'static str,
    shape: Shape,
    origin: Vec3,
    dir: Vec3,
    max: f32,
    expect: Option<Expect>,
) -> TraceCase {
    TraceCase {
        what,
        hitbox: hitbox(shape),
        bone: BoneTransform::IDENTITY,
        origin,
        dir,
        max,
        expect,
    }
}

impl TraceCase {
    fn bone(mut self, bone: BoneTransform) -> Self {
        self.bone = bone;
        self
    }

    fn offset(mut self, offset: Pose) -> Self {
        self.hitbox = self.hitbox.with_offset(offset);
        self
    }
}

/// Runs every row as a ray (`sweep == None`) or a sphere sweep, checking every field.
fn check_traces(cases: &[TraceCase], sweep: Option<f32>) {
    for case in cases {
        let (history, id) = single(case.hitbox.clone(), case.bone);
        let ray = Ray::new(case.origin, case.dir, case.max).expect("valid ray");
        let mut query = history.query(RewindTarget::at(0.0));
        let trace = match sweep {
            None => query.ray(&ray),
            Some(radius) => query.sweep(&ray, radius),
        }
        .expect("query runs");
        assert!(trace.blocker.is_none(), "{}: no walls here", case.what);
        let kind = if sweep.is_some() { "sweep" } else { "ray" };
        match (case.expect, trace.hit) {
            (None, None) => {}
            (None, Some(h)) => panic!("{kind} {}: expected a miss, got {h:#?}", case.what),
            (Some(e), None) => panic!("{kind} {}: expected {e:#?}, got a miss", case.what),
            (Some(e), Some(h)) => check_hit(case.what, kind, &e, &h, id, case),
        }
    }
}

fn check_hit(what: &str, kind: &str, e: &Expect, h: &Hit, id: EntityId, case: &TraceCase) {
    let ctx = |field: &str| format!("{kind} {what}: {field}");
    assert_eq!(h.entity, id, "{}", ctx("entity"));
    assert_eq!(h.hitbox, case.hitbox.id, "{}", ctx("hitbox"));
    assert_eq!(h.zone, case.hitbox.zone, "{}", ctx("zone"));
    assert_eq!(
        h.started_inside,
        e.started_inside,
        "{}",
        ctx("started_inside")
    );
    assert_eq!(h.sample.kind, SampleKind::Exact { tick: Tick(0) });
    assert_eq!(h.bone_scale, case.bone.scale, "{}", ctx("bone_scale"));
    assert_eq!(
        h.placement,
        case.hitbox.placed(&case.bone),
        "{}",
        ctx("placement")
    );
    assert_approx_eq!(h.distance, e.distance, TOL, "{}", ctx("distance"));
    assert_approx_eq!(h.entry.point, e.entry_point, TOL, "{}", ctx("entry point"));
    assert_approx_eq!(
        h.entry.normal,
        e.entry_normal,
        TOL,
        "{}",
        ctx("entry normal")
    );
    assert_approx_eq!(
        h.exit_distance,
        e.exit_distance,
        TOL,
        "{}",
        ctx("exit distance")
    );
    assert_approx_eq!(h.exit.point, e.exit_point, TOL, "{}", ctx("exit point"));
    assert_approx_eq!(h.exit.normal, e.exit_normal, TOL, "{}", ctx("exit normal"));
    assert_approx_eq!(
        h.penetration,
        e.exit_distance - e.distance,
        TOL,
        "{}",
        ctx("penetration")
    );
    assert_approx_eq!(
        h.penetration,
        h.exit_distance - h.distance,
        1.0e-6,
        "{}",
        ctx("penetration is exit - entry")
    );
}

/// Half the chord of a unit sphere cut by a line 0.6 from its centre: sqrt(1 - 0.36).
const CHORD_0_6: f32 = 0.8;

#[test]
#[rustfmt::skip]
fn ray_against_sphere() {
    let s = Shape::sphere(1.0);
    let cases = [
        // Head-on through the centre: enters at x = -1 (t = 4), leaves at x = 1 (t = 6).
        row("head-on +x", s, v(-5.0, 0.0, 0.0), X, 100.0,
            hit(4.0, v(-1.0, 0.0, 0.0), -X, 6.0, v(1.0, 0.0, 0.0), X)),
        // The same along -z from +z.
        row("head-on -z", s, v(0.0, 0.0, 7.0), -Z, 100.0,
            hit(6.0, v(0.0, 0.0, 1.0), Z, 8.0, v(0.0, 0.0, -1.0), -Z)),
        // 0.6 off the centre: half chord 0.8, normals are the points themselves.
        row("off-centre chord", s, v(-5.0, 0.6, 0.0), X, 100.0,
            hit(5.0 - CHORD_0_6, v(-CHORD_0_6, 0.6, 0.0), v(-CHORD_0_6, 0.6, 0.0),
                5.0 + CHORD_0_6, v(CHORD_0_6, 0.6, 0.0), v(CHORD_0_6, 0.6, 0.0))),
        // A 3-4-5 diagonal through the centre: centre at t = 5.
        row("diagonal", s, v(-3.0, -4.0, 0.0), v(0.6, 0.8, 0.0), 100.0,
            hit(4.0, v(-0.6, -0.8, 0.0), v(-0.6, -0.8, 0.0),
                6.0, v(0.6, 0.8, 0.0), v(0.6, 0.8, 0.0))),
        // Grazing tangent at (0, 1, 0): see `tangent_in_a_bounding_box_face_plane` (the
        // decision is a zero-penetration hit, but the broadphase drops it).
        // 1e-4 beyond tangent: a miss.
        row("just past tangent", s, v(-5.0, 1.0001, 0.0), X, 100.0, None),
        // Starts inside: distance 0 at the start, normal -dir; leaves at x = 1.
        row("start inside", s, v(0.5, 0.0, 0.0), X, 100.0,
            inside(v(0.5, 0.0, 0.0), X, 0.5, X, X)),
        // Starts at the centre going down.
        row("start at centre", s, Vec3::ZERO, -Y, 100.0,
            inside(Vec3::ZERO, -Y, 1.0, -Y, -Y)),
        // Starts on the surface moving in: entry at t = 0, not "inside".
        row("start on surface, moving in", s, v(-1.0, 0.0, 0.0), X, 100.0,
            hit(0.0, -X, -X, 2.0, X, X)),
        // Starts on the surface moving out: the interval is [-2, 0], it touches at t = 0.
        // Decision: a zero-length hit that started inside.
        row("start on surface, moving out", s, X, X, 100.0,
            inside(X, X, 0.0, X, X)),
        // The sphere is entirely behind the start.
        row("behind the start", s, v(5.0, 0.0, 0.0), X, 100.0, None),
        // Entry at t = 4, reach 3.999.
        row("beyond max distance", s, v(-5.0, 0.0, 0.0), X, 3.999, None),
        // Entry at exactly the reach: counts; exit (6) is reported beyond the reach.
        row("exactly at max distance", s, v(-5.0, 0.0, 0.0), X, 4.0,
            hit(4.0, -X, -X, 6.0, X, X)),
        // Zero reach from inside still reports the containing hitbox.
        row("zero reach, inside", s, Vec3::ZERO, X, 0.0,
            inside(Vec3::ZERO, X, 1.0, X, X)),
        // Bone moved to (10, 2, -3).
        row("translated bone", s, v(10.0, 2.0, -10.0), Z, 100.0,
            hit(6.0, v(10.0, 2.0, -4.0), -Z, 8.0, v(10.0, 2.0, -2.0), Z))
            .bone(BoneTransform::from_translation(v(10.0, 2.0, -3.0))),
        // Scale (1, 3, 2): radius x largest component = 3.
        row("scaled bone (1, 3, 2)", s, v(-10.0, 0.0, 0.0), X, 100.0,
            hit(7.0, v(-3.0, 0.0, 0.0), -X, 13.0, v(3.0, 0.0, 0.0), X))
            .bone(BoneTransform::IDENTITY.with_scale(v(1.0, 3.0, 2.0))),
        // Offset (1, 0, 0) on a bone scaled 2 and turned 90 degrees about z: the offset is
        // stretched to 2 and turned to +y; radius 2.
        row("scaled offset", s, v(-10.0, 2.0, 0.0), X, 100.0,
            hit(8.0, v(-2.0, 2.0, 0.0), -X, 12.0, v(2.0, 2.0, 0.0), X))
            .bone(BoneTransform::new(Vec3::ZERO, Quat::from_rotation_z(FRAC_PI_2))
                .with_scale(Vec3::splat(2.0)))
            .offset(Pose::from_translation(X)),
    ];
    check_traces(&cases, None);
}

#[test]
#[rustfmt::skip]
fn ray_against_box() {
    let b = Shape::cuboid(v(1.0, 0.5, 0.25));
    let unit = Shape::cuboid(Vec3::ONE);
    let (c30, s30) = (FRAC_PI_6.cos(), FRAC_PI_6.sin());
    let cases = [
        // Through the centre along each axis: the half extents set the distances.
        row("+x through centre", b, v(-5.0, 0.0, 0.0), X, 100.0,
            hit(4.0, -X, -X, 6.0, X, X)),
        row("-y off-centre", b, v(0.3, 5.0, 0.1), -Y, 100.0,
            hit(4.5, v(0.3, 0.5, 0.1), Y, 5.5, v(0.3, -0.5, 0.1), -Y)),
        row("+z through centre", b, v(0.0, 0.0, -5.0), Z, 100.0,
            hit(4.75, v(0.0, 0.0, -0.25), -Z, 5.25, v(0.0, 0.0, 0.25), Z)),
        // 45 degrees in the xy plane from (-2, -1.4): the x slab is entered last (t = sqrt 2,
        // at (-1, -0.4)), the y slab left first (t = 1.9 sqrt 2, at (-0.1, 0.5)).
        row("oblique, enters -x face, leaves +y face", b, v(-2.0, -1.4, 0.0),
            v(FRAC_1_SQRT_2, FRAC_1_SQRT_2, 0.0), 100.0,
            hit(SQRT_2, v(-1.0, -0.4, 0.0), -X, 1.9 * SQRT_2, v(-0.1, 0.5, 0.0), Y)),
        // Parallel to the +y face, exactly in its plane. Decision: the face plane is part of
        // the box, so the ray runs inside it from x = -1 to x = 1.
        row("in the +y face plane", b, v(-5.0, 0.5, 0.0), X, 100.0,
            hit(4.0, v(-1.0, 0.5, 0.0), -X, 6.0, v(1.0, 0.5, 0.0), X)),
        // Parallel, 1e-4 above the face: a miss.
        row("just above the +y face", b, v(-5.0, 0.5001, 0.0), X, 100.0, None),
        // Along the edge y = 0.5, z = 0.25: inside, as on a face.
        row("along an edge", b, v(-5.0, 0.5, 0.25), X, 100.0,
            hit(4.0, v(-1.0, 0.5, 0.25), -X, 6.0, v(1.0, 0.5, 0.25), X)),
        // Through the corner (1, 0.5, 0.25) only, diagonally in the z = 0.25 plane: the y
        // slab is entered at t = sqrt 2 exactly when the x slab is left. Decision: a hit with
        // zero penetration; entry on the +y face, exit on the +x face.
        row("touching a corner", b, v(0.0, 1.5, 0.25), v(FRAC_1_SQRT_2, -FRAC_1_SQRT_2, 0.0),
            100.0, hit(SQRT_2, v(1.0, 0.5, 0.25), Y, SQRT_2, v(1.0, 0.5, 0.25), X)),
        // Starts inside, going -x: exits at x = -1.
        row("start inside", b, v(0.5, 0.0, 0.0), -X, 100.0,
            inside(v(0.5, 0.0, 0.0), -X, 1.5, -X, -X)),
        // Starts exactly on the entry face: entry at t = 0, not inside.
        row("start on the entry face", b, -X, X, 100.0,
            hit(0.0, -X, -X, 2.0, X, X)),
        // Starts exactly on the exit face moving out: a zero-length hit from inside.
        row("start on the exit face, moving out", b, X, X, 100.0,
            inside(X, X, 0.0, X, X)),
        row("behind the start", b, v(5.0, 0.0, 0.0), X, 100.0, None),
        row("beyond max distance", b, v(-5.0, 0.0, 0.0), X, 3.999, None),
        row("exactly at max distance", b, v(-5.0, 0.0, 0.0), X, 4.0,
            hit(4.0, -X, -X, 6.0, X, X)),
        // Bone turned 90 degrees about z: local y (half 0.5) now spans world x. The ray
        // enters the local +y face, whose world normal is -x.
        row("bone rotated 90 about z", b, v(-5.0, 0.0, 0.0), X, 100.0,
            hit(4.5, v(-0.5, 0.0, 0.0), -X, 5.5, v(0.5, 0.0, 0.0), X))
            .bone(BoneTransform::new(Vec3::ZERO, Quat::from_rotation_z(FRAC_PI_2))),
        // A unit box turned 30 degrees about y by its offset: in its frame the ray runs along
        // (cos 30, 0, sin 30) and enters the -x face at t = 5 - 1/cos 30; that face's world
        // normal is (-cos 30, 0, sin 30).
        row("offset rotated 30 about y", unit, v(-5.0, 0.0, 0.0), X, 100.0,
            hit(5.0 - 1.0 / c30, v(-1.0 / c30, 0.0, 0.0), v(-c30, 0.0, s30),
                5.0 + 1.0 / c30, v(1.0 / c30, 0.0, 0.0), v(c30, 0.0, -s30)))
            .offset(Pose::new(Vec3::ZERO, Quat::from_rotation_y(FRAC_PI_6))),
        // Per-axis scale (2, 3, 4): half extents (2, 3, 4).
        row("scaled, along x", unit, v(-10.0, 0.0, 0.0), X, 100.0,
            hit(8.0, v(-2.0, 0.0, 0.0), -X, 12.0, v(2.0, 0.0, 0.0), X))
            .bone(BoneTransform::IDENTITY.with_scale(v(2.0, 3.0, 4.0))),
        row("scaled, along y", unit, v(0.0, -10.0, 0.0), Y, 100.0,
            hit(7.0, v(0.0, -3.0, 0.0), -Y, 13.0, v(0.0, 3.0, 0.0), Y))
            .bone(BoneTransform::IDENTITY.with_scale(v(2.0, 3.0, 4.0))),
        row("scaled, along -z", unit, v(0.0, 0.0, 10.0), -Z, 100.0,
            hit(6.0, v(0.0, 0.0, 4.0), Z, 14.0, v(0.0, 0.0, -4.0), -Z))
            .bone(BoneTransform::IDENTITY.with_scale(v(2.0, 3.0, 4.0))),
        // Scale (2, 3, 4) in the bone's axes, bone turned 90 degrees about z: the local y
        // extent 3 now spans world x.
        row("scaled and rotated", unit, v(-10.0, 0.0, 0.0), X, 100.0,
            hit(7.0, v(-3.0, 0.0, 0.0), -X, 13.0, v(3.0, 0.0, 0.0), X))
            .bone(BoneTransform::new(Vec3::ZERO, Quat::from_rotation_z(FRAC_PI_2))
                .with_scale(v(2.0, 3.0, 4.0))),
    ];
    check_traces(&cases, None);
}

#[test]
#[rustfmt::skip]
fn ray_against_capsule() {
    // Radius 0.5, segment from (0, -1, 0) to (0, 1, 0).
    let c = Shape::capsule(0.5, 1.0, Axis::Y);
    let (s45, c45) = (FRAC_PI_4.sin(), FRAC_PI_4.cos());
    let cases = [
        // Across the side through the axis.
        row("side, through the axis", c, v(-5.0, 0.0, 0.0), X, 100.0,
            hit(4.5, v(-0.5, 0.0, 0.0), -X, 5.5, v(0.5, 0.0, 0.0), X)),
        // 0.3 off the axis in z: half chord 0.4; radial normals (-0.8, 0, 0.6), (0.8, 0, 0.6).
        row("side, off the axis", c, v(-5.0, 0.7, 0.3), X, 100.0,
            hit(4.6, v(-0.4, 0.7, 0.3), v(-0.8, 0.0, 0.6), 5.4, v(0.4, 0.7, 0.3),
                v(0.8, 0.0, 0.6))),
        // Along the axis: bottom tip at y = -1.5, top tip at y = 1.5.
        row("along the axis", c, v(0.0, -5.0, 0.0), Y, 100.0,
            hit(3.5, v(0.0, -1.5, 0.0), -Y, 6.5, v(0.0, 1.5, 0.0), Y)),
        // Parallel to the axis, 0.3 off: through both end spheres, half chord 0.4.
        row("parallel to the axis, off it", c, v(0.3, -5.0, 0.0), Y, 100.0,
            hit(3.6, v(0.3, -1.4, 0.0), v(0.6, -0.8, 0.0), 6.4, v(0.3, 1.4, 0.0),
                v(0.6, 0.8, 0.0))),
        // Down a 3-4-5 diagonal at the top sphere's centre (0, 1, 0): enters the cap at
        // t = 4.5; leaves through the side x = 0.5, 5/6 past the centre, at y = 1/3.
        row("into the cap, out of the side", c, v(-3.0, 5.0, 0.0), v(0.6, -0.8, 0.0), 100.0,
            hit(4.5, v(-0.3, 1.4, 0.0), v(-0.6, 0.8, 0.0), 5.0 + 5.0 / 6.0,
                v(0.5, 1.0 / 3.0, 0.0), X)),
        // Tangent to the side at (0, 0, 0.5). Decision: a hit with zero penetration.
        row("tangent to the side", c, v(-5.0, 0.0, 0.5), X, 100.0,
            hit(5.0, v(0.0, 0.0, 0.5), Z, 5.0, v(0.0, 0.0, 0.5), Z)),
        // Tangent to the top cap at (0, 1.5, 0): see `tangent_in_a_bounding_box_face_plane`.
        row("just past the side", c, v(-5.0, 0.0, 0.5001), X, 100.0, None),
        row("just above the cap", c, v(-5.0, 1.5001, 0.0), X, 100.0, None),
        // Inside the capsule's bounding box but 0.636 from the top centre: a miss.
        row("in the box corner, off the cap", c, v(-5.0, 1.45, 0.45), X, 100.0, None),
        row("start inside", c, v(0.0, 0.9, 0.0), X, 100.0,
            inside(v(0.0, 0.9, 0.0), X, 0.5, v(0.5, 0.9, 0.0), X)),
        row("start inside the cap", c, v(0.0, 1.2, 0.0), Y, 100.0,
            inside(v(0.0, 1.2, 0.0), Y, 0.3, v(0.0, 1.5, 0.0), Y)),
        row("behind the start", c, v(5.0, 0.0, 0.0), X, 100.0, None),
        row("beyond max distance", c, v(-5.0, 0.0, 0.0), X, 4.499, None),
        row("exactly at max distance", c, v(-5.0, 0.0, 0.0), X, 4.5,
            hit(4.5, v(-0.5, 0.0, 0.0), -X, 5.5, v(0.5, 0.0, 0.0), X)),
        // Turned 90 degrees about z: the segment lies along x.
        row("rotated 90 about z", c, v(-5.0, 0.0, 0.0), X, 100.0,
            hit(3.5, v(-1.5, 0.0, 0.0), -X, 6.5, v(1.5, 0.0, 0.0), X))
            .bone(BoneTransform::new(Vec3::ZERO, Quat::from_rotation_z(FRAC_PI_2))),
        // Turned 45 degrees about z: the axis is (-s45, c45, 0). The x axis is 0.5 from it
        // at x = -0.5 / sin 45; the normal there is (-c45, -s45, 0).
        row("rotated 45 about z", c, v(-5.0, 0.0, 0.0), X, 100.0,
            hit(5.0 - 0.5 / s45, v(-0.5 / s45, 0.0, 0.0), v(-c45, -s45, 0.0),
                5.0 + 0.5 / s45, v(0.5 / s45, 0.0, 0.0), v(c45, s45, 0.0)))
            .offset(Pose::new(Vec3::ZERO, Quat::from_rotation_z(FRAC_PI_4))),
        // Capsules along their own x and z axes.
        row("axis x, along x", Shape::capsule(0.5, 1.0, Axis::X), v(-5.0, 0.0, 0.0), X, 100.0,
            hit(3.5, v(-1.5, 0.0, 0.0), -X, 6.5, v(1.5, 0.0, 0.0), X)),
        row("axis x, across", Shape::capsule(0.5, 1.0, Axis::X), v(0.0, -5.0, 0.0), Y, 100.0,
            hit(4.5, v(0.0, -0.5, 0.0), -Y, 5.5, v(0.0, 0.5, 0.0), Y)),
        row("axis z, along z", Shape::capsule(0.5, 1.0, Axis::Z), v(0.0, 0.0, -5.0), Z, 100.0,
            hit(3.5, v(0.0, 0.0, -1.5), -Z, 6.5, v(0.0, 0.0, 1.5), Z)),
        // Scale (2, 3, 4) on a y capsule: half height 1 x 3, radius 0.5 x max(2, 4) = 2.
        row("scaled, along the axis", c, v(0.0, -10.0, 0.0), Y, 100.0,
            hit(5.0, v(0.0, -5.0, 0.0), -Y, 15.0, v(0.0, 5.0, 0.0), Y))
            .bone(BoneTransform::IDENTITY.with_scale(v(2.0, 3.0, 4.0))),
        row("scaled, across along x", c, v(-10.0, 0.0, 0.0), X, 100.0,
            hit(8.0, v(-2.0, 0.0, 0.0), -X, 12.0, v(2.0, 0.0, 0.0), X))
            .bone(BoneTransform::IDENTITY.with_scale(v(2.0, 3.0, 4.0))),
        // Across along z: still radius 2 (the capsule stays round, not elliptical).
        row("scaled, across along z", c, v(0.0, 0.0, -10.0), Z, 100.0,
            hit(8.0, v(0.0, 0.0, -2.0), -Z, 12.0, v(0.0, 0.0, 2.0), Z))
            .bone(BoneTransform::IDENTITY.with_scale(v(2.0, 3.0, 4.0))),
        // A zero half height is a sphere.
        row("zero half height", Shape::capsule(0.5, 0.0, Axis::Y), v(-5.0, 0.0, 0.0), X, 100.0,
            hit(4.5, v(-0.5, 0.0, 0.0), -X, 5.5, v(0.5, 0.0, 0.0), X)),
    ];
    check_traces(&cases, None);
}

#[test]
#[rustfmt::skip]
fn sweep_against_sphere() {
    let s = Shape::sphere(1.0);
    let cases = [
        // Centre stops 1.5 from the sphere's centre; contact at the sphere's surface.
        row("head-on", s, v(-5.0, 0.0, 0.0), X, 100.0,
            hit(3.5, -X, -X, 6.5, X, X)),
        // Grazing tangent at (0, 1, 0): see `tangent_in_a_bounding_box_face_plane`.
        row("just past tangent", s, v(-5.0, 1.5001, 0.0), X, 100.0, None),
        // The swept sphere overlaps at the start though its centre is outside: started
        // inside; the entry point is the hitbox point nearest the start.
        row("start overlapping", s, v(-1.2, 0.0, 0.0), X, 100.0,
            inside(-X, X, 2.7, X, X)),
        row("behind the start", s, v(5.0, 0.0, 0.0), X, 100.0, None),
        row("beyond max distance", s, v(-5.0, 0.0, 0.0), X, 3.499, None),
        row("exactly at max distance", s, v(-5.0, 0.0, 0.0), X, 3.5,
            hit(3.5, -X, -X, 6.5, X, X)),
    ];
    check_traces(&cases, Some(0.5));
}

#[test]
#[rustfmt::skip]
fn sweep_radius_zero_is_a_ray() {
    let s = Shape::sphere(1.0);
    let cases = [row("radius 0", s, v(-5.0, 0.0, 0.0), X, 100.0,
        hit(4.0, -X, -X, 6.0, X, X))];
    check_traces(&cases, Some(0.0));
    let b = Shape::cuboid(Vec3::ONE);
    let cases = [row("radius 0, box", b, v(-5.0, 0.3, 0.0), X, 100.0,
        hit(4.0, v(-1.0, 0.3, 0.0), -X, 6.0, v(1.0, 0.3, 0.0), X))];
    check_traces(&cases, Some(0.0));
}

#[test]
#[rustfmt::skip]
fn sweep_against_box() {
    let b = Shape::cuboid(Vec3::ONE);
    // Corner case: sqrt(0.5^2 - 0.2^2 - 0.2^2) = sqrt(0.17) before the corner in x.
    let k = 0.17_f32.sqrt();
    let cases = [
        // Flat face: the centre stops 0.5 before x = -1.
        row("face", b, v(-5.0, 0.0, 0.0), X, 100.0,
            hit(3.5, -X, -X, 6.5, X, X)),
        row("face, off-centre", b, v(-5.0, 0.9, 0.2), X, 100.0,
            hit(3.5, v(-1.0, 0.9, 0.2), -X, 6.5, v(1.0, 0.9, 0.2), X)),
        // 0.3 above the top face: the sphere meets the edge (-1, 1, z) when its centre is
        // 0.4 before it in x; normal (-0.4, 0.3, 0) / 0.5.
        row("edge", b, v(-5.0, 1.3, 0.0), X, 100.0,
            hit(3.6, v(-1.0, 1.0, 0.0), v(-0.8, 0.6, 0.0), 6.4, v(1.0, 1.0, 0.0),
                v(0.8, 0.6, 0.0))),
        // 0.2 beyond two faces: the sphere meets the corner (-1, 1, 1).
        row("corner", b, v(-5.0, 1.2, 1.2), X, 100.0,
            hit(4.0 - k, v(-1.0, 1.0, 1.0), v(-k, 0.2, 0.2) / 0.5, 6.0 + k,
                v(1.0, 1.0, 1.0), v(k, 0.2, 0.2) / 0.5)),
        // Inside the box grown squarely by 0.5, but 0.636 from the corner: a miss.
        row("past the corner's rounding", b, v(-5.0, 1.45, 1.45), X, 100.0, None),
        // Sliding along the top face touching it: first touch at the edge x = -1.
        row("sliding on the top face", b, v(-5.0, 1.5, 0.0), X, 100.0,
            hit(4.0, v(-1.0, 1.0, 0.0), Y, 6.0, v(1.0, 1.0, 0.0), Y)),
        row("start overlapping", b, v(-1.2, 0.0, 0.0), X, 100.0,
            inside(-X, X, 2.7, X, X)),
        row("behind the start", b, v(5.0, 0.0, 0.0), X, 100.0, None),
        row("beyond max distance", b, v(-5.0, 0.0, 0.0), X, 3.499, None),
        row("exactly at max distance", b, v(-5.0, 0.0, 0.0), X, 3.5,
            hit(3.5, -X, -X, 6.5, X, X)),
        // Turned 45 degrees about z: the edge (along z) at x = -sqrt 2 faces the sweep.
        row("rotated, edge on", b, v(-5.0, 0.0, 0.0), X, 100.0,
            hit(4.5 - SQRT_2, v(-SQRT_2, 0.0, 0.0), -X, 5.5 + SQRT_2, v(SQRT_2, 0.0, 0.0), X))
            .bone(BoneTransform::new(Vec3::ZERO, Quat::from_rotation_z(FRAC_PI_4))),
        // Scaled (2, 1, 1): the face at x = -2.
        row("scaled", b, v(-5.0, 0.0, 0.0), X, 100.0,
            hit(2.5, v(-2.0, 0.0, 0.0), -X, 7.5, v(2.0, 0.0, 0.0), X))
            .bone(BoneTransform::IDENTITY.with_scale(v(2.0, 1.0, 1.0))),
    ];
    check_traces(&cases, Some(0.5));
}

#[test]
#[rustfmt::skip]
fn sweep_against_capsule() {
    let c = Shape::capsule(0.5, 1.0, Axis::Y);
    let cases = [
        row("side", c, v(-5.0, 0.0, 0.0), X, 100.0,
            hit(4.25, v(-0.5, 0.0, 0.0), -X, 5.75, v(0.5, 0.0, 0.0), X)),
        row("along the axis", c, v(0.0, -5.0, 0.0), Y, 100.0,
            hit(3.25, v(0.0, -1.5, 0.0), -Y, 6.75, v(0.0, 1.5, 0.0), Y)),
        // Tangent: centre line 0.75 from the axis.
        row("tangent", c, v(-5.0, 0.0, 0.75), X, 100.0,
            hit(5.0, v(0.0, 0.0, 0.5), Z, 5.0, v(0.0, 0.0, 0.5), Z)),
        row("just past tangent", c, v(-5.0, 0.0, 0.7501), X, 100.0, None),
        // Turned 90 degrees about x: the segment lies along z.
        row("rotated 90 about x", c, v(0.0, 0.0, -5.0), Z, 100.0,
            hit(3.25, v(0.0, 0.0, -1.5), -Z, 6.75, v(0.0, 0.0, 1.5), Z))
            .bone(BoneTransform::new(Vec3::ZERO, Quat::from_rotation_x(FRAC_PI_2))),
        // Scale (2, 3, 4): half height 3, radius 2.
        row("scaled", c, v(0.0, -10.0, 0.0), Y, 100.0,
            hit(4.75, v(0.0, -5.0, 0.0), -Y, 15.25, v(0.0, 5.0, 0.0), Y))
            .bone(BoneTransform::IDENTITY.with_scale(v(2.0, 3.0, 4.0))),
        row("start overlapping", c, v(0.0, 1.6, 0.0), Y, 100.0,
            inside(v(0.0, 1.5, 0.0), Y, 0.15, v(0.0, 1.5, 0.0), Y)),
    ];
    check_traces(&cases, Some(0.25));
}

/// Tangent rays and sweeps that lie exactly in a face plane of the hitbox's (or wall's)
/// bounding box, parallel to an axis.
///
/// The narrowphase reports each of them (zero-penetration hits, or a ray sliding inside a
/// wall's face plane, as `line_box` documents), but the broadphase slab test drops them:
/// `math::ray_recip` turns the zero direction component into 1e30 instead of infinity, so
/// Regression: an axis-parallel ray lying exactly in the plane of a bounding box's face
/// (`(max - origin) * inv = 0`) used to be clipped to `t <= 0` by the slab test, culling a
/// tangent hit the exact test reports. Broadphase boxes are now padded by a few ulps.
#[test]
#[rustfmt::skip]
fn tangent_in_a_bounding_box_face_plane() {
    let s = Shape::sphere(1.0);
    let c = Shape::capsule(0.5, 1.0, Axis::Y);
    // Tangent to the sphere at (0, 1, 0): the sphere's bounds end at y = 1.
    check_traces(&[row("sphere tangent", s, v(-5.0, 1.0, 0.0), X, 100.0,
        hit(5.0, Y, Y, 5.0, Y, Y))], None);
    // Tangent to the capsule's top at (0, 1.5, 0): its bounds end at y = 1.5.
    check_traces(&[row("capsule cap tangent", c, v(-5.0, 1.5, 0.0), X, 100.0,
        hit(5.0, v(0.0, 1.5, 0.0), Y, 5.0, v(0.0, 1.5, 0.0), Y))], None);
    // A sweep of radius 0.5 grazing the sphere: the bounds inflated by 0.5 end at y = 1.5.
    check_traces(&[row("sphere sweep tangent", s, v(-5.0, 1.5, 0.0), X, 100.0,
        hit(5.0, Y, Y, 5.0, Y, Y))], Some(0.5));
    // A direction with a -0.0 component, tangent on the min side: same bug, other plane.
    check_traces(&[row("sphere tangent, -0.0", s, v(-5.0, -1.0, 0.0), v(1.0, -0.0, 0.0),
        100.0, hit(5.0, -Y, -Y, 5.0, -Y, -Y))], None);
    // A floor whose top is y = 0, and a ray sliding along that plane from outside it: the
    // wall's exact test (`line_box`) treats the plane as inside, so it blocks at x = -10.
    let mut history = history();
    history
        .add_static(Shape::cuboid(v(10.0, 0.5, 10.0)), Pose::from_translation(v(0.0, -0.5, 0.0)), 1)
        .expect("valid floor");
    let rig = Rig::rigid(vec![hitbox(Shape::sphere(0.1))]).expect("valid rig");
    let id = history.spawn(Arc::new(rig));
    history.begin_frame(Tick(0), 0.0).expect("frame")
        .record_rigid(id, BoneTransform::from_translation(v(0.0, 5.0, 0.0)), EntityState::default())
        .expect("valid");
    let placed = history.statics()[0].placed;
    let exact = placed.cast_line(v(-20.0, 0.0, 0.0), X).expect("the exact test says inside");
    assert_approx_eq!(exact.enter, 10.0, TOL);
    let trace = ray_from(&history, v(-20.0, 0.0, 0.0), X);
    let wall = trace.blocker.expect("sliding along the floor's top plane is blocked at x = -10");
    assert_approx_eq!(wall.distance, 10.0, TOL);
}

/// The geometry of the rows above, without the broadphase: every one is a crossing.
#[test]
fn tangent_in_a_bounding_box_face_plane_narrowphase() {
    let c = line_sphere(v(-5.0, 1.0, 0.0), X, Vec3::ZERO, 1.0).expect("tangent");
    assert_eq!((c.enter, c.exit), (5.0, 5.0));
    let c = line_capsule(v(-5.0, 1.5, 0.0), X, -Y, Y, 0.5).expect("tangent");
    assert_eq!((c.enter, c.exit), (5.0, 5.0));
    let c = line_sphere(v(-5.0, -1.0, 0.0), v(1.0, -0.0, 0.0), Vec3::ZERO, 1.0).expect("tangent");
    assert_eq!((c.enter, c.exit), (5.0, 5.0));
    // Starting on the floor's top plane inside its extent, the query does report it (the
    // slab interval [-1e30, 0] still contains t = 0): only entries at t > 0 are lost.
    let mut history = history();
    history
        .add_static(
            Shape::cuboid(v(10.0, 0.5, 10.0)),
            Pose::from_translation(v(0.0, -0.5, 0.0)),
            1,
        )
        .expect("valid floor");
    let rig = Rig::rigid(vec![hitbox(Shape::sphere(0.1))]).expect("valid rig");
    let id = history.spawn(Arc::new(rig));
    history
        .begin_frame(Tick(0), 0.0)
        .expect("frame")
        .record_rigid(
            id,
            BoneTransform::from_translation(v(0.0, 5.0, 0.0)),
            EntityState::default(),
        )
        .expect("valid");
    let trace = ray_from(&history, v(0.0, 0.0, 0.0), X);
    assert_eq!(trace.blocker.expect("blocked at once").distance, 0.0);
}

// ---------------------------------------------------------------------------------------
// Overlap tables
// ---------------------------------------------------------------------------------------

/// The query volume of an overlap row.
#[derive(Debug, Clone, Copy)]
enum Volume {
    Sphere(Vec3, f32),
    Box(Obb),
}

/// One overlap row: a hitbox, a volume and the expected (closest point, distance).
struct OverlapCase {
    what: &'static str,
    shape: Shape,
    bone: BoneTransform,
    volume: Volume,
    expect: Option<(Vec3, f32)>,
}

fn overlap_row(
    what: &'static str,
    shape: Shape,
    volume: Volume,
    expect: Option<(Vec3, f32)>,
) -> OverlapCase {
    OverlapCase {
        what,
        shape,
        bone: BoneTransform::IDENTITY,
        volume,
        expect,
    }
}

impl OverlapCase {
    fn bone(mut self, bone: BoneTransform) -> Self {
        self.bone = bone;
        self
    }
}

fn sphere(center: Vec3, radius: f32) -> Volume {
    Volume::Sphere(center, radius)
}

fn obb(center: Vec3, rotation: Quat, half: Vec3) -> Volume {
    Volume::Box(Obb::new(center, rotation, half))
}

fn check_overlaps(cases: &[OverlapCase]) {
    for case in cases {
        let (history, id) = single(hitbox(case.shape), case.bone);
        let mut out = Vec::new();
        let mut query = history.query(RewindTarget::at(0.0));
        match case.volume {
            Volume::Sphere(c, r) => query.overlap_sphere(c, r, &mut out),
            Volume::Box(b) => query.overlap_box(&b, &mut out),
        }
        .expect("query runs");
        match (case.expect, out.as_slice()) {
            (None, []) => {}
            (None, found) => panic!("{}: expected no overlap, got {found:#?}", case.what),
            (Some(_), []) => panic!("{}: expected an overlap, got none", case.what),
            (Some((point, distance)), [o]) => {
                assert_eq!(o.entity, id, "{}", case.what);
                assert_approx_eq!(o.closest_point, point, TOL, "{}: closest point", case.what);
                assert_approx_eq!(o.distance, distance, TOL, "{}: distance", case.what);
            }
            (Some(_), found) => panic!("{}: one hitbox, got {found:#?}", case.what),
        }
    }
}

#[test]
#[rustfmt::skip]
fn overlap_sphere_table() {
    let s = Shape::sphere(1.0);
    let b = Shape::cuboid(v(1.0, 0.5, 0.25));
    let unit = Shape::cuboid(Vec3::ONE);
    let c = Shape::capsule(0.5, 1.0, Axis::Y);
    let cases = [
        // Sphere hitbox r 1: the centre-to-surface gap is 1.5.
        overlap_row("sphere, apart", s, sphere(v(2.5, 0.0, 0.0), 1.4), None),
        // Touching counts.
        overlap_row("sphere, touching", s, sphere(v(2.5, 0.0, 0.0), 1.5), Some((X, 1.5))),
        // Centre inside the hitbox: closest point is the centre itself, distance 0.
        overlap_row("sphere, centre inside", s, sphere(v(0.5, 0.0, 0.0), 0.1),
            Some((v(0.5, 0.0, 0.0), 0.0))),
        overlap_row("sphere, swallowing it", s, sphere(Vec3::ZERO, 5.0), Some((Vec3::ZERO, 0.0))),
        // A zero-radius query is a point test.
        overlap_row("sphere, point inside", s, sphere(v(0.0, 0.99, 0.0), 0.0),
            Some((v(0.0, 0.99, 0.0), 0.0))),
        overlap_row("sphere, point outside", s, sphere(v(0.0, 1.01, 0.0), 0.0), None),
        // Box (1, 0.5, 0.25): the +x face is 2 from (3, 0, 0).
        overlap_row("box face, apart", b, sphere(v(3.0, 0.0, 0.0), 1.9), None),
        overlap_row("box face, touching", b, sphere(v(3.0, 0.0, 0.0), 2.0), Some((X, 2.0))),
        // Nearest the edge (1, 0.5, z): sqrt 2 away.
        overlap_row("box edge, apart", b, sphere(v(2.0, 1.5, 0.0), 1.41), None),
        overlap_row("box edge, overlapping", b, sphere(v(2.0, 1.5, 0.0), 1.42),
            Some((v(1.0, 0.5, 0.0), SQRT_2))),
        // Nearest the corner (1, 0.5, 0.25): sqrt 3 away.
        overlap_row("box corner, apart", b, sphere(v(2.0, 1.5, 1.25), 1.73), None),
        overlap_row("box corner, overlapping", b, sphere(v(2.0, 1.5, 1.25), 1.74),
            Some((v(1.0, 0.5, 0.25), 3.0_f32.sqrt()))),
        // Unit box turned 45 degrees about z: its edge reaches x = sqrt 2.
        overlap_row("rotated box, apart", unit, sphere(v(2.0, 0.0, 0.0), 0.58), None)
            .bone(BoneTransform::new(Vec3::ZERO, Quat::from_rotation_z(FRAC_PI_4))),
        overlap_row("rotated box, overlapping", unit, sphere(v(2.0, 0.0, 0.0), 0.59),
            Some((v(SQRT_2, 0.0, 0.0), 2.0 - SQRT_2)))
            .bone(BoneTransform::new(Vec3::ZERO, Quat::from_rotation_z(FRAC_PI_4))),
        // Capsule: tip at y = 1.5, side at x = 0.5.
        overlap_row("capsule tip, apart", c, sphere(v(0.0, 3.0, 0.0), 1.49), None),
        overlap_row("capsule tip, touching", c, sphere(v(0.0, 3.0, 0.0), 1.5),
            Some((v(0.0, 1.5, 0.0), 1.5))),
        overlap_row("capsule side, touching", c, sphere(v(2.0, 0.3, 0.0), 1.5),
            Some((v(0.5, 0.3, 0.0), 1.5))),
        // Scaled (2, 3, 4): half height 3, radius 2, tip at y = 5.
        overlap_row("scaled capsule, apart", c, sphere(v(0.0, 6.0, 0.0), 0.99), None)
            .bone(BoneTransform::IDENTITY.with_scale(v(2.0, 3.0, 4.0))),
        overlap_row("scaled capsule, touching", c, sphere(v(0.0, 6.0, 0.0), 1.0),
            Some((v(0.0, 5.0, 0.0), 1.0)))
            .bone(BoneTransform::IDENTITY.with_scale(v(2.0, 3.0, 4.0))),
        // Scaled sphere (radius 1 x 3).
        overlap_row("scaled sphere", s, sphere(v(0.0, 0.0, 4.0), 1.0),
            Some((v(0.0, 0.0, 3.0), 1.0)))
            .bone(BoneTransform::IDENTITY.with_scale(v(1.0, 3.0, 1.0))),
    ];
    check_overlaps(&cases);
}

/// An oriented box whose only separating axis against the unit box is the cross product
/// of the unit box's z edges and its own long edges: a thin rod along (1, -1, 1), its
/// cross-section turned 45 degrees about the rod, centred on the diagonal (d, d, 0).
///
/// Face axes of the unit box: the rod reaches 1.83 along x and y, more than `d - 1`, and
/// the centre is at z = 0: no separation. The rod's own axes: its length axis is
/// perpendicular to (d, d, 0); its cross axes see the centre at distance d against a
/// reach of 1.58 (unit box) + 0.1 (rod): no separation for d < 1.68. The axis
/// z x (1, -1, 1), along (1, 1, 0), sees the centre at sqrt 2 d against a reach of sqrt 2
/// (unit box) + 0.1 sqrt 2 (rod): separated exactly when d > 1.1. For d <= 1.1 the rod's
/// point (d - 0.1, d - 0.1, 0) is inside the unit box.
fn rod_across_edge(d: f32) -> Obb {
    let u = v(1.0, -1.0, 1.0).normalize();
    let n = v(1.0, 1.0, 0.0).normalize();
    let m = u.cross(n);
    // Cross-section axes at 45 degrees to n around the rod.
    let a = (n + m).normalize();
    let b = u.cross(a);
    let rotation = Quat::from_mat3(&glam::Mat3::from_cols(u, a, b));
    Obb::new(v(d, d, 0.0), rotation, v(3.0, 0.1, 0.1))
}

#[test]
#[rustfmt::skip]
fn overlap_box_table() {
    let s = Shape::sphere(1.0);
    let unit = Shape::cuboid(Vec3::ONE);
    let c = Shape::capsule(0.5, 1.0, Axis::Y);
    let id = Quat::IDENTITY;
    let rot45 = Quat::from_rotation_z(FRAC_PI_4);
    let cases = [
        // Sphere r 1 against a cube whose -x face is at 1.5 - half.
        overlap_row("sphere, apart", s, obb(v(1.5, 0.0, 0.0), id, Vec3::splat(0.4)), None),
        // Touching at (1, 0, 0); the reported distance is from the box's centre.
        overlap_row("sphere, touching", s, obb(v(1.5, 0.0, 0.0), id, Vec3::splat(0.5)),
            Some((X, 0.5))),
        // A cube turned 45 degrees about z: its corner edge at x = c - 0.5 sqrt 2.
        overlap_row("sphere, rotated box apart", s, obb(v(1.9, 0.0, 0.0), rot45, Vec3::splat(0.5)),
            None),
        overlap_row("sphere, rotated box overlapping", s,
            obb(v(1.7, 0.0, 0.0), rot45, Vec3::splat(0.5)), Some((X, 0.7))),
        // Unit box against a unit cube 2 away: faces touch.
        overlap_row("box, faces touching", unit, obb(v(2.0, 0.0, 0.0), id, Vec3::ONE),
            Some((X, 1.0))),
        overlap_row("box, faces apart", unit, obb(v(2.01, 0.0, 0.0), id, Vec3::ONE), None),
        // Only an edge-edge axis separates (see `rod_across_edge`).
        overlap_row("box, separated on an edge x edge axis", unit,
            Volume::Box(rod_across_edge(1.2)), None),
        overlap_row("box, rod through the edge", unit, Volume::Box(rod_across_edge(1.0)),
            Some((v(1.0, 1.0, 0.0), 0.0))),
        // Scaled box (2, 1, 1): its +x face at 2; the query's -x face at 2.9 - half.
        overlap_row("scaled box, apart", unit, obb(v(2.9, 0.0, 0.0), id, Vec3::splat(0.85)), None)
            .bone(BoneTransform::IDENTITY.with_scale(v(2.0, 1.0, 1.0))),
        overlap_row("scaled box, overlapping", unit,
            obb(v(2.9, 0.0, 0.0), id, Vec3::splat(0.95)), Some((v(2.0, 0.0, 0.0), 0.9)))
            .bone(BoneTransform::IDENTITY.with_scale(v(2.0, 1.0, 1.0))),
        // Capsule tip at y = 1.5; query bottom at 2.2 - half.y.
        overlap_row("capsule tip, apart", c, obb(v(0.0, 2.2, 0.0), id, v(0.5, 0.2, 0.5)), None),
        overlap_row("capsule tip, overlapping", c, obb(v(0.0, 2.2, 0.0), id, v(0.5, 0.8, 0.5)),
            Some((v(0.0, 1.5, 0.0), 0.7))),
        // Capsule side at x = 0.5; query spans x from 1 - half.x.
        overlap_row("capsule side, apart", c, obb(X, id, v(0.49, 0.1, 0.1)), None),
        overlap_row("capsule side, touching", c, obb(X, id, v(0.5, 0.1, 0.1)),
            Some((v(0.5, 0.0, 0.0), 0.5))),
        // A query box parallel to the capsule, beside it in its bounding box corner.
        overlap_row("capsule, box in the rounded corner", c,
            obb(v(0.6, 1.6, 0.0), id, v(0.1, 0.1, 0.1)), None),
    ];
    check_overlaps(&cases);
}

#[test]
fn rod_across_edge_is_what_its_doc_says() {
    // Cross-check the hand-derived rod against parry's box-box test, so the table row
    // above tests lagcomp and not the derivation.
    use parry3d::math::Pose as PPose;
    use parry3d::query::intersection_test;
    use parry3d::shape::Cuboid;
    for (d, expected) in [(1.0, true), (1.05, true), (1.15, false), (1.2, false)] {
        let rod = rod_across_edge(d);
        let parry = intersection_test(
            &PPose::IDENTITY,
            &Cuboid::new(Vec3::ONE),
            &PPose::from_parts(rod.center, rod.rotation),
            &Cuboid::new(rod.half_extents),
        )
        .expect("supported")
        .intersecting;
        assert_eq!(parry, expected, "parry at d = {d}");
        let unit = Obb::new(Vec3::ZERO, Quat::IDENTITY, Vec3::ONE);
        assert_eq!(
            obb_overlaps_obb(&unit, &rod),
            expected,
            "lagcomp at d = {d}"
        );
        assert_eq!(
            obb_overlaps_obb(&rod, &unit),
            expected,
            "lagcomp swapped at d = {d}"
        );
    }
}

#[test]
fn overlaps_come_nearest_first() {
    // Three spheres at x = 1, 3, 6 (radius 0.5) in one rig, and an explosion at the origin.
    let rig = Rig::rigid(vec![
        Hitbox::new(1, "far", Zone::Limb, 0, Shape::sphere(0.5)).offset_by(v(6.0, 0.0, 0.0)),
        Hitbox::new(2, "near", Zone::Head, 0, Shape::sphere(0.5)).offset_by(v(1.0, 0.0, 0.0)),
        Hitbox::new(3, "mid", Zone::Torso, 0, Shape::sphere(0.5)).offset_by(v(3.0, 0.0, 0.0)),
    ])
    .expect("valid rig");
    let (history, _) = common::scene_with(rig, &[vec![BoneTransform::IDENTITY]]);
    let mut out: Vec<Overlap> = Vec::new();
    history
        .query(RewindTarget::at(0.0))
        .overlap_sphere(Vec3::ZERO, 5.6, &mut out)
        .expect("query runs");
    let ids: Vec<u16> = out.iter().map(|o| o.hitbox.0).collect();
    assert_eq!(ids, [2, 3, 1]);
    let distances: Vec<f32> = out.iter().map(|o| o.distance).collect();
    for (d, e) in distances.iter().zip([0.5, 2.5, 5.5]) {
        assert_approx_eq!(*d, e, TOL);
    }
    // 5.4 stops short of the far one.
    history
        .query(RewindTarget::at(0.0))
        .overlap_sphere(Vec3::ZERO, 5.4, &mut out)
        .expect("query runs");
    assert_eq!(out.len(), 2);
}

// ---------------------------------------------------------------------------------------
// Static walls, layers, ignore lists
// ---------------------------------------------------------------------------------------

/// A unit sphere entity at the origin (layers as given) and a wall: a slab 0.2 thick
/// centred on x = 3, on layer 2.
fn walled(entity_layers: u32) -> (History, EntityId) {
    let mut history = history();
    let rig = Rig::rigid(vec![hitbox(Shape::sphere(1.0))]).expect("valid rig");
    let id = history.spawn(Arc::new(rig));
    history
        .add_static(
            Shape::cuboid(v(0.1, 5.0, 5.0)),
            Pose::from_translation(v(3.0, 0.0, 0.0)),
            2,
        )
        .expect("valid wall");
    let state = EntityState {
        layers: entity_layers,
        ..EntityState::default()
    };
    history
        .begin_frame(Tick(0), 0.0)
        .expect("first frame")
        .record_rigid(id, BoneTransform::IDENTITY, state)
        .expect("valid record");
    (history, id)
}

fn ray_from(history: &History, origin: Vec3, dir: Vec3) -> Trace {
    let ray = Ray::new(origin, dir, 100.0).expect("valid ray");
    history
        .query(RewindTarget::at(0.0))
        .ray(&ray)
        .expect("query runs")
}

#[test]
fn entity_in_front_of_a_wall_is_hit_and_the_wall_reported() {
    let (history, id) = walled(1);
    let trace = ray_from(&history, v(-5.0, 0.0, 0.0), X);
    let hit = trace.hit.expect("the entity is in front of the wall");
    assert_eq!(hit.entity, id);
    assert_approx_eq!(hit.distance, 4.0, TOL);
    let wall = trace.blocker.expect("the wall is within reach");
    assert_eq!(wall.id.0, 0);
    assert_approx_eq!(wall.distance, 7.9, TOL);
    assert_approx_eq!(wall.point, v(2.9, 0.0, 0.0), TOL);
    assert_approx_eq!(wall.normal, -X, TOL);
}

#[test]
fn entity_behind_a_wall_is_not_hit() {
    let (history, _) = walled(1);
    let trace = ray_from(&history, v(10.0, 0.0, 0.0), -X);
    assert!(trace.hit.is_none(), "blocked: {:?}", trace.hit);
    let wall = trace.blocker.expect("blocked by the wall");
    assert_approx_eq!(wall.distance, 6.9, TOL);
    assert_approx_eq!(wall.point, v(3.1, 0.0, 0.0), TOL);
    assert_approx_eq!(wall.normal, X, TOL);

    // A sweep is stopped where the swept sphere touches the wall.
    let ray = Ray::new(v(10.0, 0.0, 0.0), -X, 100.0).expect("valid ray");
    let trace = history
        .query(RewindTarget::at(0.0))
        .sweep(&ray, 0.5)
        .expect("query runs");
    assert!(trace.hit.is_none());
    let wall = trace.blocker.expect("blocked");
    assert_approx_eq!(wall.distance, 6.4, TOL);
    assert_approx_eq!(wall.point, v(3.1, 0.0, 0.0), TOL);

    // A wall beyond the ray's reach blocks nothing and is not reported.
    let ray = Ray::new(v(10.0, 0.0, 0.0), -X, 6.8).expect("valid ray");
    let trace = history
        .query(RewindTarget::at(0.0))
        .ray(&ray)
        .expect("query runs");
    assert!(trace.blocker.is_none() && trace.hit.is_none());
}

#[test]
fn ray_starting_inside_a_wall_is_blocked_at_zero() {
    let (history, _) = walled(1);
    let trace = ray_from(&history, v(3.05, 0.0, 0.0), -X);
    assert!(trace.hit.is_none());
    let wall = trace.blocker.expect("starts inside the wall");
    assert_eq!(wall.distance, 0.0);
    assert_approx_eq!(wall.normal, X, TOL, "normal faces back along the ray");
}

#[test]
fn hit_exactly_at_the_wall_distance_counts() {
    // A unit sphere at the origin and a small wall cube spanning x in [-1, -0.8], so the
    // wall's face and the sphere's surface are both at x = -1 on the ray along +x.
    let mut history = history();
    let rig = Rig::rigid(vec![hitbox(Shape::sphere(1.0))]).expect("valid rig");
    let id = history.spawn(Arc::new(rig));
    history
        .add_static(
            Shape::cuboid(v(0.1, 0.1, 0.1)),
            Pose::from_translation(v(-0.9, 0.0, 0.0)),
            u32::MAX,
        )
        .expect("valid wall");
    history
        .begin_frame(Tick(0), 0.0)
        .expect("first frame")
        .record_rigid(id, BoneTransform::IDENTITY, EntityState::default())
        .expect("valid record");
    let trace = ray_from(&history, v(-5.0, 0.0, 0.0), X);
    let wall = trace.blocker.expect("the wall");
    assert_approx_eq!(wall.distance, 4.0, TOL);
    // Decision pinned by the crate's inclusive clip (`enter <= reach`): a hit at exactly the
    // wall's distance counts as in front of the wall.
    let hit = trace.hit.expect("a tie with the wall goes to the entity");
    assert_approx_eq!(hit.distance, 4.0, TOL);
}

#[test]
fn layers_filter_walls_and_entities() {
    // Entity on layer 4, wall on layer 2.
    let (history, id) = walled(4);
    let ray = Ray::new(v(10.0, 0.0, 0.0), -X, 100.0).expect("valid ray");
    let at = RewindTarget::at(0.0);
    // Mask 4 sees the entity through the wall (the wall is on layer 2).
    let trace = history.query(at).layers(4).ray(&ray).expect("runs");
    assert!(trace.blocker.is_none());
    assert_eq!(trace.hit.expect("seen through").entity, id);
    // Mask 2 sees only the wall.
    let trace = history.query(at).layers(2).ray(&ray).expect("runs");
    assert!(trace.hit.is_none());
    assert!(trace.blocker.is_some());
    // Mask 1 sees neither.
    let trace = history.query(at).layers(1).ray(&ray).expect("runs");
    assert!(trace.hit.is_none() && trace.blocker.is_none());
    // Overlaps filter entities the same way.
    let mut out = Vec::new();
    history
        .query(at)
        .layers(1)
        .overlap_sphere(Vec3::ZERO, 1.0, &mut out)
        .expect("runs");
    assert!(out.is_empty());
    history
        .query(at)
        .layers(4 | 1)
        .overlap_sphere(Vec3::ZERO, 1.0, &mut out)
        .expect("runs");
    assert_eq!(out.len(), 1);
}

#[test]
fn ignored_entities_are_skipped() {
    // Two unit spheres on the x axis, at 0 and at 4; a ray from -5 along +x.
    let mut history = history();
    let rig = Arc::new(Rig::rigid(vec![hitbox(Shape::sphere(1.0))]).expect("valid rig"));
    let near = history.spawn(rig.clone());
    let far = history.spawn(rig);
    {
        let mut frame = history.begin_frame(Tick(0), 0.0).expect("first frame");
        frame
            .record_rigid(near, BoneTransform::IDENTITY, EntityState::default())
            .expect("valid");
        frame
            .record_rigid(
                far,
                BoneTransform::from_translation(v(4.0, 0.0, 0.0)),
                EntityState::default(),
            )
            .expect("valid");
    }
    let ray = Ray::new(v(-5.0, 0.0, 0.0), X, 100.0).expect("valid ray");
    let at = RewindTarget::at(0.0);
    let hit = history.query(at).ray(&ray).expect("runs").hit.expect("hit");
    assert_eq!(hit.entity, near);
    let ignore = [near];
    let hit = history
        .query(at)
        .ignore(&ignore)
        .ray(&ray)
        .expect("runs")
        .hit
        .expect("hit");
    assert_eq!(hit.entity, far);
    assert_approx_eq!(hit.distance, 8.0, TOL);
    let ignore = [far, near];
    assert!(
        history
            .query(at)
            .ignore(&ignore)
            .ray(&ray)
            .expect("runs")
            .hit
            .is_none()
    );
    let mut out = Vec::new();
    history
        .query(at)
        .ignore(&[near])
        .overlap_sphere(v(2.0, 0.0, 0.0), 1.5, &mut out)
        .expect("runs");
    assert_eq!(out.iter().map(|o| o.entity).collect::<Vec<_>>(), [far]);
}

// ---------------------------------------------------------------------------------------
// The narrowphase functions on their own
// ---------------------------------------------------------------------------------------

fn assert_crossing(what: &str, c: Option<Crossing>, enter: f32, en: Vec3, exit: f32, xn: Vec3) {
    let c = c.unwrap_or_else(|| panic!("{what}: expected a crossing"));
    assert_approx_eq!(c.enter, enter, TOL, "{what}: enter");
    assert_approx_eq!(c.enter_normal, en, TOL, "{what}: enter normal");
    assert_approx_eq!(c.exit, exit, TOL, "{what}: exit");
    assert_approx_eq!(c.exit_normal, xn, TOL, "{what}: exit normal");
}

#[test]
#[rustfmt::skip]
fn narrow_line_sphere() {
    // Along an axis, both directions: a line has the same interval reversed.
    assert_crossing("along +z", line_sphere(v(0.0, 0.0, -5.0), Z, Vec3::ZERO, 2.0),
        3.0, -Z, 7.0, Z);
    // Pointing away: the sphere is behind, entered at (0, 0, 2) (t = -7), left at
    // (0, 0, -2) (t = -3).
    assert_crossing("along -z", line_sphere(v(0.0, 0.0, -5.0), -Z, Vec3::ZERO, 2.0),
        -7.0, Z, -3.0, -Z);
    // A 1 cm sphere 1 km away, 6 mm off the line: the closest-approach form keeps the
    // 8 mm half chord exact where the textbook discriminant would lose it to cancellation.
    // The normals carry the exact chord; distances are only as exact as f32 at 1e5.
    let c = line_sphere(v(-1.0e5, 0.006, 0.0), X, Vec3::ZERO, 0.01).expect("crosses");
    assert_approx_eq!(c.enter_normal, v(-0.8, 0.6, 0.0), 1.0e-4);
    assert_approx_eq!(c.exit_normal, v(0.8, 0.6, 0.0), 1.0e-4);
    assert_approx_eq!(c.enter, 1.0e5 - 0.008, 0.008);
    assert_approx_eq!(c.exit, 1.0e5 + 0.008, 0.008);
    assert!(line_sphere(v(0.0, 2.0001, -5.0), Z, Vec3::ZERO, 2.0).is_none());
}

#[test]
#[rustfmt::skip]
fn narrow_line_box() {
    let h = v(1.0, 2.0, 3.0);
    // Exactly along each axis through the centre.
    assert_crossing("+x", line_box(v(-5.0, 0.0, 0.0), X, h), 4.0, -X, 6.0, X);
    assert_crossing("-y", line_box(v(0.0, 5.0, 0.0), -Y, h), 3.0, Y, 7.0, -Y);
    assert_crossing("+z", line_box(v(0.0, 0.0, -5.0), Z, h), 2.0, -Z, 8.0, Z);
    // A negative-zero direction component is still parallel.
    assert_crossing("-0 components", line_box(v(-5.0, 0.5, 0.5), v(1.0, -0.0, -0.0), h),
        4.0, -X, 6.0, X);
    // Starting on a face plane, moving in: enter exactly 0.
    let c = line_box(v(-1.0, 0.0, 0.0), X, h).expect("crosses");
    assert_eq!(c.enter, 0.0);
    // Starting on a face plane, moving along it (parallel, in the plane): inside.
    assert_crossing("in the x face plane", line_box(v(-1.0, -5.0, 0.0), Y, h),
        3.0, -Y, 7.0, Y);
    // Starting on a face plane, moving out: the box is behind.
    assert_crossing("leaving through a face", line_box(X, X, h), -2.0, -X, 0.0, X);
    // Parallel just outside a face plane: no crossing.
    assert!(line_box(v(-1.0001, -5.0, 0.0), Y, h).is_none());
    // A line missing the box diagonally.
    assert!(line_box(v(-5.0, 3.0, 0.0), v(1.0, 1.0, 0.0).normalize(), h).is_none());
}

#[test]
#[rustfmt::skip]
fn narrow_line_capsule() {
    let (a, b) = (v(0.0, -1.0, 0.0), v(0.0, 1.0, 0.0));
    assert_crossing("along the axis", line_capsule(v(0.0, -5.0, 0.0), Y, a, b, 0.5),
        3.5, -Y, 6.5, Y);
    assert_crossing("against the axis", line_capsule(v(0.0, 5.0, 0.0), -Y, a, b, 0.5),
        3.5, Y, 6.5, -Y);
    assert_crossing("across", line_capsule(v(-5.0, 0.2, 0.0), X, a, b, 0.5),
        4.5, -X, 5.5, X);
    // Across, exactly at the junction of the side and the cap (y = 1).
    assert_crossing("at the cap junction", line_capsule(v(-5.0, 1.0, 0.0), X, a, b, 0.5),
        4.5, -X, 5.5, X);
    // A degenerate segment is a sphere.
    assert_crossing("a == b", line_capsule(v(-5.0, 0.0, 0.0), X, Vec3::ZERO, Vec3::ZERO, 0.5),
        4.5, -X, 5.5, X);
    // Segment endpoints given in the other order: same crossing.
    assert_crossing("b, a", line_capsule(v(-5.0, 0.0, 0.3), X, b, a, 0.5),
        4.6, v(-0.8, 0.0, 0.6), 5.4, v(0.8, 0.0, 0.6));
    assert!(line_capsule(v(-5.0, 1.6, 0.0), X, a, b, 0.5).is_none());
}

/// A ray far from a thin capsule, crossing its side 0.3 mm below the top junction.
///
/// Regression: the side is entered at t = 19.9 with normal -x, and the top end sphere's
/// chord starts less than an f32 ulp later, so both entries round to 19.9. The normal used
/// to come from whichever piece won the union (the sphere's, tilted by 3e-3 rad); it is
/// now derived from the nearest point of the segment, exactly -x on the flat side.
#[test]
fn capsule_normal_near_the_cap_junction() {
    let (a, b) = (v(0.0, -1.0, 0.0), v(0.0, 1.0, 0.0));
    let origin = v(-20.0, 1.0 - 3.0e-4, 0.0);
    let c = line_capsule(origin, X, a, b, 0.1).expect("crosses the side");
    assert_approx_eq!(c.enter, 19.9, TOL);
    assert_approx_eq!(c.enter_normal, -X, 1.0e-4, "entry on the side");
    assert_approx_eq!(c.exit_normal, X, 1.0e-4, "exit on the side");
    // The same through a rewound query.
    let (history, _) = single(
        hitbox(Shape::capsule(0.1, 1.0, Axis::Y)),
        BoneTransform::IDENTITY,
    );
    let ray = Ray::new(origin, X, 100.0).expect("valid ray");
    let hit = history
        .query(RewindTarget::at(0.0))
        .ray(&ray)
        .expect("runs")
        .hit
        .expect("hits");
    assert_approx_eq!(hit.entry.normal, -X, 1.0e-4);
}

/// The same crossing from 2 m away is resolved: the two entries are 2 ulps apart there.
#[test]
fn capsule_normal_near_the_cap_junction_close_up() {
    let (a, b) = (v(0.0, -1.0, 0.0), v(0.0, 1.0, 0.0));
    let c = line_capsule(v(-2.0, 1.0 - 3.0e-4, 0.0), X, a, b, 0.1).expect("crosses");
    assert_approx_eq!(c.enter_normal, -X, 1.0e-5);
    assert_approx_eq!(c.exit_normal, X, 1.0e-5);
}

#[test]
#[rustfmt::skip]
fn narrow_line_rounded_box() {
    let h = Vec3::ONE;
    let k = 0.17_f32.sqrt();
    // Flat face region.
    assert_crossing("face", line_rounded_box(v(-5.0, 0.3, -0.2), X, h, 0.5),
        3.5, -X, 6.5, X);
    // Edge region: 0.3 above the top face.
    assert_crossing("edge", line_rounded_box(v(-5.0, 1.3, 0.0), X, h, 0.5),
        3.6, v(-0.8, 0.6, 0.0), 6.4, v(0.8, 0.6, 0.0));
    // Corner region: 0.2 beyond two faces.
    assert_crossing("corner", line_rounded_box(v(-5.0, 1.2, 1.2), X, h, 0.5),
        4.0 - k, v(-k, 0.2, 0.2) / 0.5, 6.0 + k, v(k, 0.2, 0.2) / 0.5);
    // Diagonal straight at the corner (1, 1, 1) from outside: the corner sphere.
    let d = v(-1.0, -1.0, -1.0).normalize();
    let origin = Vec3::splat(5.0);
    let to_corner = (origin - Vec3::ONE).length();
    assert_crossing("at a corner, diagonally", line_rounded_box(origin, d, h, 0.5),
        to_corner - 0.5, -d, to_corner + 2.0 * 3.0_f32.sqrt() + 0.5, d);
    // Inside the squarely grown box, outside the rounding.
    assert!(line_rounded_box(v(-5.0, 1.45, 1.45), X, h, 0.5).is_none());
    // Parallel to an edge, 0.4 out on x and y: 0.566 from it, outside the rounding.
    assert!(line_rounded_box(v(1.4, 1.4, -5.0), Z, h, 0.5).is_none());
    // Along an edge (parallel to z), 0.3 out on both x and y: inside the edge's capsule the
    // whole way: enters and leaves through the corner spheres.
    let r = (0.25_f32 - 0.18).sqrt();
    assert_crossing("along an edge", line_rounded_box(v(1.3, 1.3, -5.0), Z, h, 0.5),
        4.0 - r, v(0.3, 0.3, -r) / 0.5, 6.0 + r, v(0.3, 0.3, r) / 0.5);
}

#[test]
#[rustfmt::skip]
fn narrow_obb_overlaps_obb() {
    let unit = Obb::new(Vec3::ZERO, Quat::IDENTITY, Vec3::ONE);
    assert!(obb_overlaps_obb(&unit, &unit));
    // Nested.
    assert!(obb_overlaps_obb(&unit, &Obb::new(Vec3::ZERO, Quat::from_rotation_x(0.3),
        Vec3::splat(0.1))));
    // Face axis separation, either order.
    let apart = Obb::new(v(0.0, 2.5, 0.0), Quat::IDENTITY, Vec3::ONE);
    assert!(!obb_overlaps_obb(&unit, &apart));
    assert!(!obb_overlaps_obb(&apart, &unit));
    // Touching faces overlap.
    assert!(obb_overlaps_obb(&unit, &Obb::new(v(0.0, 0.0, 2.0), Quat::IDENTITY, Vec3::ONE)));
    // Separated along the other box's face axis only: a cube turned 45 degrees about z at
    // (2.3, 2.3, 0) reaches sqrt 2 along x and y (2.3 < 1 + sqrt 2: no gap on the unit
    // box's axes), but along its own face axis (1, 1, 0) / sqrt 2 the centre is at 3.25
    // against a reach of sqrt 2 + 1 = 2.41.
    let turned = Obb::new(v(2.3, 2.3, 0.0), Quat::from_rotation_z(FRAC_PI_4), Vec3::ONE);
    assert!(!obb_overlaps_obb(&unit, &turned));
    assert!(!obb_overlaps_obb(&turned, &unit));
    // At (1.6, 1.6, 0): 2.26 < 2.41 along that axis, overlapping.
    let closer = Obb::new(v(1.6, 1.6, 0.0), Quat::from_rotation_z(FRAC_PI_4), Vec3::ONE);
    assert!(obb_overlaps_obb(&unit, &closer));
    // Edge x edge separation (see `rod_across_edge`).
    assert!(!obb_overlaps_obb(&unit, &rod_across_edge(1.2)));
    assert!(obb_overlaps_obb(&unit, &rod_across_edge(1.0)));
}

#[test]
fn narrow_segment_overlaps_box() {
    let h = Vec3::ONE;
    // Parallel to the top face, 0.5 above it: overlaps only with radius >= 0.5.
    let (a, b) = (v(-3.0, 1.5, 0.0), v(3.0, 1.5, 0.0));
    assert!(!segment_overlaps_box(a, b, 0.49, h));
    assert!(segment_overlaps_box(a, b, 0.51, h));
    // Through the box.
    assert!(segment_overlaps_box(
        v(-3.0, 0.0, 0.0),
        v(3.0, 0.0, 0.0),
        0.01,
        h
    ));
    // Entirely inside.
    assert!(segment_overlaps_box(
        v(-0.5, 0.0, 0.0),
        v(0.5, 0.0, 0.0),
        0.01,
        h
    ));
    // Ending short of the box: the end at x = -1.6 is 0.6 from the face.
    let (a, b) = (v(-5.0, 0.0, 0.0), v(-1.6, 0.0, 0.0));
    assert!(!segment_overlaps_box(a, b, 0.59, h));
    assert!(segment_overlaps_box(a, b, 0.61, h));
    // A point (degenerate segment) off a corner: sqrt 3 * 0.4 = 0.69 away.
    let p = Vec3::splat(1.4);
    assert!(!segment_overlaps_box(p, p, 0.69, h));
    assert!(segment_overlaps_box(p, p, 0.70, h));
    // Passing an edge diagonally: the segment x + y = 2.6 in z = 0 is 0.6 / sqrt 2 = 0.424
    // from the edge (1, 1, z).
    let (a, b) = (v(3.0, -0.4, 0.0), v(-0.4, 3.0, 0.0));
    assert!(!segment_overlaps_box(a, b, 0.42, h));
    assert!(segment_overlaps_box(a, b, 0.43, h));
}

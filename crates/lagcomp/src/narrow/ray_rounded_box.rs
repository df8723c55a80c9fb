//! Line against a rounded box (a box grown by a sphere): a sphere swept against a box.

use glam::Vec3;

use super::{Crossing, line_box, line_capsule};

/// Where the line crosses the box `[-half, half]` grown by `radius` in every direction
/// (its Minkowski sum with a sphere), in the box's local space.
///
/// This is a sphere of `radius` swept along the line against the box. The grown box's
/// surface is flat over each face, a capsule along each edge and a sphere at each corner.
/// The line first meets the box grown squarely by `radius`; where that point lies beyond the
/// original box on two axes it is in an edge region and the true surface there is the
/// edge's capsule; on three axes, a corner region, where one of the three edges meeting at
/// the corner decides. Exits are found the same way from the far side.
#[must_use]
pub fn line_rounded_box(origin: Vec3, dir: Vec3, half: Vec3, radius: f32) -> Option<Crossing> {
    let square = line_box(origin, dir, half + Vec3::splat(radius))?;
    let (enter, enter_normal) = match rounded_region(origin + dir * square.enter, half) {
        None => (square.enter, square.enter_normal),
        Some(corner) => {
            let c = edges_crossing(origin, dir, half, radius, corner)?;
            (c.enter, c.enter_normal)
        }
    };
    let (exit, exit_normal) = match rounded_region(origin + dir * square.exit, half) {
        None => (square.exit, square.exit_normal),
        Some(corner) => {
            let c = edges_crossing(origin, dir, half, radius, corner)?;
            (c.exit, c.exit_normal)
        }
    };
    Some(Crossing {
        enter,
        enter_normal,
        exit,
        exit_normal,
    })
}

/// The rounded region a point on the grown box lies in, if any: per axis, the sign of the
/// side it is beyond (or 0 when within the original box on that axis). `None` in a flat
/// face region.
fn rounded_region(point: Vec3, half: Vec3) -> Option<[i8; 3]> {
    let mut side = [0_i8; 3];
    let mut beyond = 0;
    for axis in 0..3 {
        if point[axis] > half[axis] {
            side[axis] = 1;
            beyond += 1;
        } else if point[axis] < -half[axis] {
            side[axis] = -1;
            beyond += 1;
        }
    }
    (beyond >= 2).then_some(side)
}

/// The union of the edge capsules touching the region: one edge (two axes beyond) or the
/// three edges meeting at a corner (three axes beyond).
fn edges_crossing(
    origin: Vec3,
    dir: Vec3,
    half: Vec3,
    radius: f32,
    side: [i8; 3],
) -> Option<Crossing> {
    let mut best: Option<Crossing> = None;
    for along in 0..3 {
        // An edge runs along `along`; it touches the region if every other axis is beyond.
        if (0..3).any(|axis| axis != along && side[axis] == 0) {
            continue;
        }
        let mut a = Vec3::ZERO;
        for axis in 0..3 {
            a[axis] = f32::from(side[axis]) * half[axis];
        }
        let mut b = a;
        a[along] = -half[along];
        b[along] = half[along];
        if let Some(c) = line_capsule(origin, dir, a, b, radius) {
            best = Some(best.map_or(c, |acc| acc.union(c)));
        }
    }
    best
}

//! Shape sweeps at a rewound time: a box or capsule (a blade, a fist) carried along a line
//! or swung about a pivot, against the rewound hitboxes and the static world.

use glam::Vec3;

use super::observer::QueryObserver;
use super::trace::first_wall;
use super::{Hit, Query, QueryError, Ray, RayError, StaticHit, SurfacePoint, Trace, Walk, admit};
use crate::history::Sample;
use crate::math::{Aabb, BoneTransform, TransformError, ray_recip};
use crate::narrow::{PlacedShape, SweepContact, Swing};
use crate::rig::{Shape, ShapeError};

/// The largest distance (metres) a swing's centre path may stray from the chords the
/// static world is traced along: see [`ShapeSweep`].
pub const SWING_CHORD_TOLERANCE: f32 = 5.0e-3;

/// The most chords a swing's centre path is traced along (a swing of more than about
/// 3 m radius over a full turn gets fewer than the tolerance asks for, and strays more).
const MAX_SWING_CHORDS: usize = 64;

/// How a swept shape moves.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum SweepPath {
    /// Straight, without turning: a thrust or a stab.
    Line {
        /// Unit direction.
        direction: Vec3,
        /// How far, metres.
        distance: f32,
    },
    /// Turned about a pivot: a swing.
    Arc(Swing),
}

/// A box or capsule (a blade, a fist; a sphere works too) and the way it moves: what a
/// melee attack sweeps through. Built checked, then traced with [`Query::sweep_shape`].
///
/// Distances along the sweep are metres: for a line, how far the shape travelled; for a
/// swing, how far its tip travelled ([`Swing::tip_path`]), so hits and walls order the
/// same way on either path.
///
/// The static world stops the sweep where the shape's *core* meets it: the ball of the
/// shape's smallest half size (a box's smallest half extent, a capsule's or sphere's
/// radius) around its centre, traced along the centre's path. A blade whose middle
/// crosses a wall is stopped there; its edge grazing a corner is not. A swing's centre
/// path is traced as chords: enough that the arc strays at most
/// [`SWING_CHORD_TOLERANCE`] from them (the sagitta `r (1 - cos(step / 2))` of a step of the
/// centre's circle of radius `r`), at most 64.
///
/// # Example
/// ```
/// use lagcomp::{PlacedShape, Pose, Shape, ShapeSweep, Swing, Vec3};
///
/// // A blade, a box 1 m long along x, held out to the right of a shoulder at 1.5 m.
/// let blade = PlacedShape::new(Pose::from_translation(Vec3::new(0.6, 1.5, 0.0)), Shape::cuboid(Vec3::new(0.5, 0.02, 0.01)));
/// let thrust = ShapeSweep::line(blade, Vec3::NEG_Z, 1.0)?; // 1 m forward
/// assert_eq!(thrust.length(), 1.0);
/// let swing = ShapeSweep::arc(blade, Swing::new(Vec3::new(0.0, 1.5, 0.0), Vec3::Y, 1.5)?)?;
/// assert!((swing.length() - 1.5 * (0.6 + blade.shape.bounding_radius())).abs() < 1e-5);
/// // Bad input is refused.
/// assert!(ShapeSweep::line(blade, Vec3::ZERO, 1.0).is_err());
/// assert!(ShapeSweep::line(PlacedShape::new(Pose::IDENTITY, Shape::sphere(-1.0)), Vec3::X, 1.0).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ShapeSweep {
    start: PlacedShape,
    path: SweepPath,
}

/// Why a shape sweep was refused.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum ShapeSweepError {
    /// The shape has a bad dimension.
    #[error("swept shape: {0}")]
    Shape(#[from] ShapeError),
    /// The start pose is not finite, out of range or its rotation not unit length.
    #[error("swept shape's pose: {0}")]
    Pose(#[from] TransformError),
    /// The line's direction or distance is bad (as a [`Ray`]'s).
    #[error("sweep line: {0}")]
    Line(#[from] RayError),
    /// The swing is bad.
    #[error("swing: {0}")]
    Swing(#[from] crate::narrow::SwingError),
}

impl ShapeSweep {
    /// `start` carried `distance` metres along `direction` (normalized here), not turning.
    ///
    /// # Errors
    /// [`ShapeSweepError`] for a bad shape or pose, or a direction and distance a [`Ray`]
    /// would refuse.
    pub fn line(
        start: PlacedShape,
        direction: Vec3,
        distance: f32,
    ) -> Result<Self, ShapeSweepError> {
        check_start(&start)?;
        let ray = Ray::new(start.pose.translation, direction, distance)?;
        Ok(Self {
            start,
            path: SweepPath::Line {
                direction: ray.dir(),
                distance,
            },
        })
    }

    /// `start` swung by `swing`, turning with it.
    ///
    /// # Errors
    /// [`ShapeSweepError`] for a bad shape or pose.
    pub fn arc(start: PlacedShape, swing: Swing) -> Result<Self, ShapeSweepError> {
        check_start(&start)?;
        Ok(Self {
            start,
            path: SweepPath::Arc(swing),
        })
    }

    /// The shape where the sweep starts.
    #[must_use]
    pub const fn start(&self) -> &PlacedShape {
        &self.start
    }

    /// How it moves.
    #[must_use]
    pub const fn path(&self) -> SweepPath {
        self.path
    }

    /// The sweep's length in metres: the line's distance, or the swing's tip path.
    #[must_use]
    pub fn length(&self) -> f32 {
        match self.path {
            SweepPath::Line { distance, .. } => distance,
            SweepPath::Arc(swing) => swing.tip_path(&self.start),
        }
    }

    /// The shape after `fraction` of the sweep (0: the start, 1: the end).
    #[must_use]
    pub fn at(&self, fraction: f32) -> PlacedShape {
        let pose = match self.path {
            SweepPath::Line {
                direction,
                distance,
            } => crate::math::Pose::new(
                self.start.pose.translation + direction * (distance * fraction),
                self.start.pose.rotation,
            ),
            SweepPath::Arc(swing) => swing.pose_at(&self.start.pose, fraction),
        };
        PlacedShape::new(pose, self.start.shape)
    }

    /// Where `target` is first touched, its distance on the sweep's scale (metres).
    #[must_use]
    pub fn contact(&self, target: &PlacedShape) -> Option<SweepContact> {
        match self.path {
            SweepPath::Line {
                direction,
                distance,
            } => target.cast_shape(&self.start, direction, distance),
            SweepPath::Arc(swing) => target
                .cast_swing(&self.start, &swing)
                .map(|c| SweepContact {
                    distance: c.distance * self.length(),
                    ..c
                }),
        }
    }

    /// A world box holding everything the sweep passes through.
    #[must_use]
    pub fn bounds(&self) -> Aabb {
        let reach = self.start.shape.bounding_radius();
        match self.path {
            SweepPath::Line {
                direction,
                distance,
            } => {
                let from = self.start.pose.translation;
                let to = from + direction * distance;
                Aabb::new(from.min(to), from.max(to)).inflated(reach)
            }
            SweepPath::Arc(swing) => {
                // The centre's circle between samples strays from the chord by at most the
                // sagitta, and each chord lies in the box of its ends.
                let steps = self.chords();
                let (sagitta, _) = self.chord_sagitta(steps);
                let mut bounds = Aabb::EMPTY;
                for k in 0..=steps {
                    let c = swing
                        .pose_at(&self.start.pose, k as f32 / steps as f32)
                        .translation;
                    bounds = bounds.union(&Aabb::new(c, c));
                }
                bounds.inflated(reach + sagitta)
            }
        }
    }

    /// How many chords trace a swing's centre path (1 for a line).
    fn chords(&self) -> usize {
        let SweepPath::Arc(swing) = self.path else {
            return 1;
        };
        let radius = swing.lever(&self.start) - self.start.shape.bounding_radius();
        let angle = swing.angle().abs();
        if radius <= SWING_CHORD_TOLERANCE || angle == 0.0 {
            return 1;
        }
        // sagitta = r (1 - cos(step / 2)) <= tolerance  <=>  step <= 2 acos(1 - tol / r).
        let step = 2.0 * (1.0 - SWING_CHORD_TOLERANCE / radius).acos();
        ((angle / step).ceil() as usize).clamp(1, MAX_SWING_CHORDS)
    }

    /// The sagitta of one of `steps` chords of the centre's circle, and that radius.
    fn chord_sagitta(&self, steps: usize) -> (f32, f32) {
        let SweepPath::Arc(swing) = self.path else {
            return (0.0, 0.0);
        };
        let radius = swing.lever(&self.start) - self.start.shape.bounding_radius();
        let step = swing.angle().abs() / steps as f32;
        (radius * (1.0 - (step / 2.0).cos()), radius)
    }

    /// The radius of the shape's core, the ball the static world is traced with.
    fn core_radius(&self) -> f32 {
        match self.start.shape {
            Shape::Sphere { radius } | Shape::Capsule { radius, .. } => radius,
            Shape::Box { half_extents } => half_extents.min_element(),
        }
    }
}

/// The path of a sweep's centre as chords (one for a line), and how far from them the
/// swept shape reaches: its bounding radius and the chords' sagitta.
struct CentrePath {
    points: [Vec3; MAX_SWING_CHORDS + 1],
    len: usize,
    reach: f32,
}

impl CentrePath {
    fn of(sweep: &ShapeSweep) -> Self {
        let mut points = [Vec3::ZERO; MAX_SWING_CHORDS + 1];
        let steps = sweep.chords();
        for (k, point) in points.iter_mut().enumerate().take(steps + 1) {
            *point = sweep.at(k as f32 / steps as f32).pose.translation;
        }
        let (sagitta, _) = sweep.chord_sagitta(steps);
        Self {
            points,
            len: steps + 1,
            reach: sweep.start.shape.bounding_radius() + sagitta,
        }
    }

    /// The earliest fraction of the sweep at which the ball of `radius` around `center`
    /// comes within reach of the centre's path; `None` if it never does. No contact with
    /// a shape inside that ball can come sooner.
    fn first_reach(&self, center: Vec3, radius: f32) -> Option<f32> {
        let reach = self.reach + radius;
        let chords = (self.len - 1) as f32;
        self.points[..self.len]
            .windows(2)
            .enumerate()
            .find_map(|(k, chord)| {
                let (a, ab) = (chord[0], chord[1] - chord[0]);
                let to = center - a;
                let length_sq = ab.length_squared();
                if to.length_squared() <= reach * reach {
                    return Some(k as f32 / chords);
                }
                if length_sq == 0.0 {
                    return None;
                }
                // The entry of the segment into the ball: |to - s ab| = reach, the smaller s.
                let along = to.dot(ab) / length_sq;
                let off_sq = (to - ab * along).length_squared();
                let half_sq = (reach * reach - off_sq) / length_sq;
                if half_sq < 0.0 {
                    return None;
                }
                let enter = along - half_sq.sqrt();
                (enter <= 1.0 && along + half_sq.sqrt() >= 0.0)
                    .then(|| (k as f32 + enter.max(0.0)) / chords)
            })
    }
}

fn check_start(start: &PlacedShape) -> Result<(), ShapeSweepError> {
    start.shape.validate()?;
    start.pose.validate()?;
    Ok(())
}

/// The earliest contact found so far: its key (distance, entity, hitbox) and the hit.
type Earliest = Option<Hit>;

impl<O: QueryObserver> Query<'_, '_, O> {
    /// The first hitbox a moving shape touches at the target time (a blade's swing, a
    /// thrust), and the first wall its core meets: see [`ShapeSweep`] for how walls and
    /// distances are measured. The hit's `distance` is on the sweep's scale (metres);
    /// `entry` is the point of the hitbox touched and its normal; a shape sweep does not
    /// measure an exit, so `exit` is the entry and `penetration` 0. A hitbox the shape
    /// starts inside is hit at distance 0 (`started_inside`). A hit counts up to the wall's
    /// distance; a hitbox behind it is not hit.
    ///
    /// # Errors
    /// [`QueryError`] when the target cannot be resolved.
    ///
    /// # Example
    /// ```
    /// # use std::sync::Arc;
    /// # use lagcomp::{Axis, BoneTransform, EntityState, History, HistoryConfig, Hitbox, HitboxId, Obb, Quat, Ray, RewindTarget, Rig, Shape, Tick, Vec3, WindowPolicy, Zone};
    /// use lagcomp::{PlacedShape, Pose, ShapeSweep, Swing};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let humanoid = Arc::new(Rig::new(4, vec![
    /// #     Hitbox::new(0, "pelvis", Zone::Torso, 0, Shape::cuboid(Vec3::new(0.18, 0.12, 0.12))),
    /// #     Hitbox::new(1, "chest", Zone::Torso, 1, Shape::capsule(0.2, 0.15, Axis::Y)),
    /// #     Hitbox::new(2, "head", Zone::Head, 2, Shape::sphere(0.12)),
    /// # ])?);
    /// # // Pelvis, chest, head and eye bones of a player standing at `feet`, in metres.
    /// # let pose = |feet: Vec3| [0.95, 1.35, 1.7, 1.68].map(|y| BoneTransform::from_translation(feet + Vec3::Y * y));
    /// # let mut history = History::new(HistoryConfig { tick_rate: 64.0, max_rewind: 0.5 })?;
    /// # let target = history.spawn(humanoid);
    /// # for tick in 1..=32_u32 {
    /// #     let time = f64::from(tick) / 64.0;
    /// #     let mut frame = history.begin_frame(Tick(tick), time)?;
    /// #     frame.record(target, &pose(Vec3::X * 4.0 * time as f32), EntityState::default())?;
    /// # }
    /// // At tick 16 the target stood 1 m along x. An attacker 1 m in front of it (z = -1),
    /// // shoulder at 1.4 m, holds a 1 m blade out to its side (-x), 80 cm from the shoulder.
    /// let blade = PlacedShape::new(
    ///     Pose::from_translation(Vec3::new(0.2, 1.4, -1.0)),
    ///     Shape::cuboid(Vec3::new(0.5, 0.02, 0.01)),
    /// );
    /// let mut query = history.query(RewindTarget::at(0.25));
    /// // A stab forward passes beside the target...
    /// let stab = ShapeSweep::line(blade, Vec3::Z, 0.8)?;
    /// assert!(query.sweep_shape(&stab)?.hit.is_none());
    /// // ...a swing of 90 degrees about the shoulder (+y), round to the front (+z), strikes it.
    /// let shoulder = Vec3::new(1.0, 1.4, -1.0);
    /// let swing = ShapeSweep::arc(blade, Swing::new(shoulder, Vec3::Y, 90f32.to_radians())?)?;
    /// let hit = query.sweep_shape(&swing)?.hit.expect("the swing strikes the chest");
    /// assert_eq!(hit.zone, Zone::Torso);
    /// assert!(hit.distance > 0.0 && hit.distance < swing.length()); // metres of the tip's path
    /// # Ok(())
    /// # }
    /// ```
    pub fn sweep_shape(&mut self, sweep: &ShapeSweep) -> Result<Trace, QueryError> {
        let bracket = self.bracket()?;
        let history = self.history;
        let tree = match history.entity_tree(&bracket) {
            Some(tree) => tree,
            // Rare: no one tree holds the bracket's frames (across the last rebuild).
            None if !O::ENABLED => return self.every_entity().sweep_shape(sweep),
            None => history.current_entity_tree(),
        };
        let blocker = if history.level().is_empty() && self.world.is_none() {
            None
        } else {
            self.first_wall_of(sweep, bracket.time)
        };
        if let Some(wall) = blocker.as_ref().filter(|_| O::ENABLED) {
            self.observer.blocked(wall);
        }
        let reach = blocker.map_or(f32::INFINITY, |w| w.distance);
        let swept = sweep.bounds();
        let path = CentrePath::of(sweep);
        let length = sweep.length();
        let (masks, ignore) = (self.role_masks(), self.ignore);
        let observer = &mut self.observer;
        let mut best: Earliest = None;
        let mut visit = |index: usize, walk: Walk| {
            let Some((rig, id, sample)) = admit(
                history,
                index,
                &bracket,
                walk,
                &masks,
                ignore,
                &mut *observer,
                |bounds, _| bounds.intersects(&swept),
            ) else {
                return;
            };
            let public_sample = Sample {
                time: bracket.time,
                kind: sample.kind,
            };
            if O::ENABLED {
                observer.sample(id, &public_sample);
            }
            let present = O::ENABLED.then(|| history.sample_present(index)).flatten();
            let view = history.view(index, &sample);
            let mut cached_bone = usize::MAX;
            let mut bone = BoneTransform::IDENTITY;
            for (i, hitbox) in rig.hitboxes().iter().enumerate() {
                let bone_index = usize::from(hitbox.bone);
                let (origin, max_scale) = view.bone_origin(bone_index);
                let hitbox_reach = rig.hitbox_reach(i) * max_scale;
                if !Aabb::around_sphere(origin, hitbox_reach).intersects(&swept) {
                    continue;
                }
                if bone_index != cached_bone {
                    bone = view.bone(bone_index);
                    cached_bone = bone_index;
                }
                let placed = hitbox.placed(&bone);
                if O::ENABLED {
                    let now = present.map(|p| hitbox.placed(&history.bone(index, &p, bone_index)));
                    observer.hitbox(id, hitbox, &placed, now.as_ref());
                }
                // The ball around the placed hitbox against the sweep's centre path before
                // the exact cast (a GJK cast, or a swing's closest-point steps): skipped
                // when the path never nears it, or only after the best contact so far.
                // PERF: on the 200x20 bench, a thrust 28.6 -> 9.1 us, a swing 48.6 -> 43.5 us
                // with the skip past the best contact (the swing's time is in its
                // closest-point steps against the struck target's hitboxes).
                let Some(earliest) =
                    path.first_reach(placed.pose.translation, placed.shape.bounding_radius())
                else {
                    continue;
                };
                if best
                    .as_ref()
                    .is_some_and(|b| earliest * length > b.distance)
                {
                    continue;
                }
                let Some(contact) = sweep.contact(&placed) else {
                    continue;
                };
                if contact.distance > reach {
                    continue;
                }
                let key = (contact.distance, id, hitbox.id);
                if best
                    .as_ref()
                    .is_some_and(|b| (b.distance, b.entity, b.hitbox) <= key)
                {
                    continue;
                }
                let entry = SurfacePoint {
                    point: contact.point,
                    normal: contact.normal,
                };
                best = Some(Hit {
                    entity: id,
                    hitbox: hitbox.id,
                    hitbox_index: i as u16,
                    zone: hitbox.zone,
                    distance: contact.distance,
                    entry,
                    exit_distance: contact.distance,
                    exit: entry,
                    penetration: 0.0,
                    started_inside: contact.started_inside,
                    sample: public_sample,
                    placement: placed,
                    bone_scale: bone.scale,
                    state: sample.state,
                });
            }
        };
        if O::ENABLED {
            for index in 0..history.slot_count() {
                visit(index, Walk::Everyone);
            }
        } else {
            tree.overlap(bracket.spans, &swept, |index| {
                visit(index as usize, Walk::Tree);
            });
            for index in history.uncompensated() {
                visit(index, Walk::Uncompensated);
            }
        }
        // The earliest touch is a hit when its entity is a target on the hit layers, and
        // otherwise what stopped the sweep (a door, a vehicle seen only as a blocker).
        let target = best.as_ref().is_some_and(|hit| {
            masks.hits(
                history.slot_role(hit.entity.index() as usize),
                hit.state.layers,
            )
        });
        let blocking_entity = best
            .as_ref()
            .filter(|_| !target)
            .map(super::EntityBlock::from);
        let hit = best.filter(|_| target);
        if let Some(hit) = hit.as_ref().filter(|_| O::ENABLED) {
            self.observer.hit(hit);
        }
        Ok(Trace {
            hit,
            blocker,
            blocking_entity,
            rewind: (&bracket).into(),
        })
    }

    /// The first wall the sweep's core meets, its distance on the sweep's scale.
    fn first_wall_of(&self, sweep: &ShapeSweep, time: f64) -> Option<StaticHit> {
        let core = sweep.core_radius();
        let start = sweep.start.pose.translation;
        let wall_along = |ray: &Ray| {
            first_wall(
                self.history,
                self.world,
                ray,
                ray_recip(ray.dir()),
                core,
                self.layers,
                time,
            )
        };
        match sweep.path {
            SweepPath::Line {
                direction,
                distance,
            } => wall_along(&Ray::new(start, direction, distance).ok()?),
            SweepPath::Arc(swing) => {
                let steps = sweep.chords();
                let length = sweep.length();
                let mut from = start;
                for k in 0..steps {
                    let fraction = (k + 1) as f32 / steps as f32;
                    let to = swing.pose_at(&sweep.start.pose, fraction).translation;
                    let chord = from.distance(to);
                    if chord > 0.0
                        && let Some(wall) = wall_along(&Ray::new(from, to - from, chord).ok()?)
                    {
                        let done = (k as f32 + wall.distance / chord) / steps as f32;
                        return Some(StaticHit {
                            distance: done * length,
                            ..wall
                        });
                    }
                    from = to;
                }
                None
            }
        }
    }
}

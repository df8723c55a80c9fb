//! Debug drawing of judged shots (feature `debug-draw`): for the last few verdicts, the
//! target's hitboxes as they are now and as the shot was judged against them, and the ray,
//! as line segments the game draws with its own gizmos.
//!
//! Why line lists rather than `bevy_gizmos`: `bevy_gizmos` 0.20 brings in the asset,
//! camera, image, mesh, window and input crates and `wgpu-types`, a render stack a headless
//! server does not otherwise build. A game that draws (a listen server, a debug client
//! sharing the server's world) already has gizmos and passes each [`SketchLine`] to
//! `Gizmos::line` with a colour per [`SketchPart`]:
//!
//! ```ignore
//! fn draw_shots(sketches: Res<ShotSketches>, mut lines: Local<Vec<SketchLine>>, mut gizmos: Gizmos) {
//!     sketches.lines(&mut lines);
//!     for line in lines.iter() {
//!         let colour = match line.part {
//!             SketchPart::Present => Color::srgb(0.2, 0.9, 0.2),
//!             SketchPart::Rewound => Color::srgb(0.9, 0.2, 0.2),
//!             SketchPart::Ray => Color::WHITE,
//!         };
//!         gizmos.line(line.from, line.to, colour);
//!     }
//! }
//! ```
//!
//! Everything here is off the recording path: sketches are taken when a shot is judged, and
//! once the ring has filled they reuse their buffers (no allocation per shot).

use bevy_ecs::prelude::*;
use lagcomp::{EntityId, History, PlacedShape, RewindTarget, Shape, Vec3, WindowPolicy};
use lagcomp_validate::{Verdict, VerdictOutcome};

/// Line segments per full circle of a sphere or a capsule's rim.
const CIRCLE_SEGMENTS: usize = 16;

/// How far a ray that hit nothing is drawn when its weapon has no range (metres).
const UNRANGED_RAY: f32 = 100.0;

/// Which part of a sketch a line belongs to: the game picks a colour for each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SketchPart {
    /// The target's hitboxes in the newest recorded frame.
    Present,
    /// The target's hitboxes at the moment the shot was judged against.
    Rewound,
    /// The shot, from the muzzle to what stopped it (or to its range).
    Ray,
}

/// One line segment of a sketch, world space, metres.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SketchLine {
    /// One end.
    pub from: Vec3,
    /// The other end.
    pub to: Vec3,
    /// What it shows.
    pub part: SketchPart,
}

/// One judged shot, kept for drawing: the ray and the target's hitboxes then and now.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ShotSketch {
    /// Who fired.
    pub shooter: Option<Entity>,
    /// The entity hit when confirmed, otherwise the claimed target (if any).
    pub target: Option<Entity>,
    /// The verdict's label (`confirmed`, `miss`, `blocked`, or the rejection reason).
    pub outcome: &'static str,
    /// Where the shot started, world space.
    pub origin: Vec3,
    /// Where it went, unit length (zero for a claim whose direction was not usable).
    pub direction: Vec3,
    /// How far it is drawn, metres: to the hit or the wall, else the weapon's range.
    pub length: f32,
    /// The target's hitboxes in the newest frame (empty without a target).
    pub present: Vec<PlacedShape>,
    /// The target's hitboxes at the time the verdict used (empty when it used none).
    pub rewound: Vec<PlacedShape>,
}

/// The last judged shots, newest last, for drawing. Added by [`crate::LagCompPlugin`] when
/// the `debug-draw` feature is on; holds [`ShotSketches::DEFAULT_KEEP`] shots unless
/// [`crate::LagCompPlugin::sketch_shots`] says otherwise.
#[derive(Resource, Debug, Clone, PartialEq)]
pub struct ShotSketches {
    /// A ring: `shots[(first + i) % keep]` is the `i`-th oldest.
    shots: Vec<ShotSketch>,
    first: usize,
    keep: usize,
}

impl Default for ShotSketches {
    fn default() -> Self {
        Self::new(Self::DEFAULT_KEEP)
    }
}

impl ShotSketches {
    /// How many shots are kept unless told otherwise.
    pub const DEFAULT_KEEP: usize = 8;

    /// Keeps the last `keep` judged shots (at least one).
    #[must_use]
    pub fn new(keep: usize) -> Self {
        Self {
            shots: Vec::new(),
            first: 0,
            keep: keep.max(1),
        }
    }

    /// How many shots are kept at most.
    #[must_use]
    pub fn keep(&self) -> usize {
        self.keep
    }

    /// How many shots are kept now.
    #[must_use]
    pub fn len(&self) -> usize {
        self.shots.len()
    }

    /// Whether none is.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.shots.is_empty()
    }

    /// The kept shots, oldest first.
    pub fn shots(&self) -> impl Iterator<Item = &ShotSketch> + '_ {
        let (newer, older) = self.shots.split_at(self.first);
        older.iter().chain(newer.iter())
    }

    /// Forgets every kept shot.
    pub fn clear(&mut self) {
        self.shots.clear();
        self.first = 0;
    }

    /// Every kept shot as line segments, oldest shot first, into `out` (cleared first).
    /// Allocates nothing once `out` has grown to the largest answer.
    pub fn lines(&self, out: &mut Vec<SketchLine>) {
        out.clear();
        for shot in self.shots() {
            shot.lines(out);
        }
    }

    /// Keeps a sketch of a judged shot: `target` (the lagcomp entity of the hit or the
    /// claimed target) as it is in the newest frame and at the time the verdict used.
    pub(crate) fn note(&mut self, history: &History, judged: JudgedShot<'_>) {
        let slot = if self.shots.len() < self.keep {
            self.shots.push(ShotSketch::default());
            self.shots.len() - 1
        } else {
            let slot = self.first;
            self.first = (self.first + 1) % self.keep;
            slot
        };
        let sketch = &mut self.shots[slot];
        sketch.shooter = Some(judged.shooter);
        sketch.target = judged.target;
        sketch.outcome = judged.verdict.outcome.label();
        sketch.origin = judged.origin;
        sketch.direction = judged.direction.normalize_or_zero();
        sketch.length = match judged.verdict.outcome {
            VerdictOutcome::Confirmed(hit) => hit.distance,
            VerdictOutcome::Blocked { distance, .. } | VerdictOutcome::Refused { distance, .. } => {
                distance
            }
            _ => judged.range.unwrap_or(UNRANGED_RAY),
        };
        sketch.present.clear();
        sketch.rewound.clear();
        let Some(id) = judged.target_id else {
            return;
        };
        if let Some(newest) = history.newest_tick() {
            placed_hitboxes(
                history,
                id,
                RewindTarget::between(newest, newest, 0.0),
                &mut sketch.present,
            );
        }
        if let Some(time) = judged.verdict.basis.time_used {
            placed_hitboxes(history, id, RewindTarget::at(time), &mut sketch.rewound);
        }
    }
}

/// What [`ShotSketches::note`] needs of a judged shot.
#[derive(Debug, Clone, Copy)]
pub(crate) struct JudgedShot<'a> {
    pub(crate) shooter: Entity,
    /// The Bevy entity of the hit or claimed target.
    pub(crate) target: Option<Entity>,
    /// Its lagcomp entity (known even for one spawned into the history directly).
    pub(crate) target_id: Option<EntityId>,
    pub(crate) origin: Vec3,
    pub(crate) direction: Vec3,
    /// The weapon's range, if the weapon is known.
    pub(crate) range: Option<f32>,
    pub(crate) verdict: &'a Verdict,
}

/// Appends every hitbox of `id` as placed at `target` (nothing if it was not recorded
/// then, or the moment is outside the window).
fn placed_hitboxes(
    history: &History,
    id: EntityId,
    target: RewindTarget,
    out: &mut Vec<PlacedShape>,
) {
    let Ok(Some(then)) = history.entity_at(id, target, WindowPolicy::Clamp) else {
        return;
    };
    let Ok(rig) = history.rig(id) else {
        return;
    };
    out.extend(
        rig.hitboxes()
            .iter()
            .filter_map(|hitbox| then.hitbox(hitbox.id)),
    );
}

impl ShotSketch {
    /// This shot as line segments, appended to `out`: the ray, then the present hitboxes,
    /// then the rewound ones.
    pub fn lines(&self, out: &mut Vec<SketchLine>) {
        out.push(SketchLine {
            from: self.origin,
            to: self.origin + self.direction * self.length,
            part: SketchPart::Ray,
        });
        for shape in &self.present {
            shape_lines(shape, SketchPart::Present, out);
        }
        for shape in &self.rewound {
            shape_lines(shape, SketchPart::Rewound, out);
        }
    }
}

/// A wireframe of `placed`: a box's twelve edges; a sphere's three great circles; a
/// capsule's two rims, four sides and the two half circles over each cap.
fn shape_lines(placed: &PlacedShape, part: SketchPart, out: &mut Vec<SketchLine>) {
    let pose = placed.pose;
    let mut line = |from: Vec3, to: Vec3| {
        out.push(SketchLine {
            from: pose.transform_point(from),
            to: pose.transform_point(to),
            part,
        });
    };
    match placed.shape {
        Shape::Box { half_extents: h } => {
            let corner = |i: usize| {
                Vec3::new(
                    if i & 1 == 0 { -h.x } else { h.x },
                    if i & 2 == 0 { -h.y } else { h.y },
                    if i & 4 == 0 { -h.z } else { h.z },
                )
            };
            // Corners differing in one bit share an edge.
            for i in 0..8 {
                for bit in [1, 2, 4] {
                    if i & bit == 0 {
                        line(corner(i), corner(i | bit));
                    }
                }
            }
        }
        Shape::Sphere { radius } => {
            for (u, v) in [(Vec3::X, Vec3::Y), (Vec3::Y, Vec3::Z), (Vec3::Z, Vec3::X)] {
                arc(
                    Vec3::ZERO,
                    u * radius,
                    v * radius,
                    CIRCLE_SEGMENTS,
                    &mut line,
                );
            }
        }
        Shape::Capsule {
            radius,
            half_height,
            axis,
        } => {
            let along = axis.unit();
            // Two axes across the capsule.
            let u = along.any_orthonormal_vector();
            let v = along.cross(u);
            let top = along * half_height;
            for end in [top, -top] {
                arc(end, u * radius, v * radius, CIRCLE_SEGMENTS, &mut line);
            }
            for side in [u, -u, v, -v] {
                line(top + side * radius, -top + side * radius);
            }
            // Half circles over each cap, bulging away from the capsule.
            for (end, out_dir) in [(top, along), (-top, -along)] {
                for across in [u, v] {
                    arc(
                        end,
                        across * radius,
                        out_dir * radius,
                        CIRCLE_SEGMENTS / 2,
                        &mut line,
                    );
                }
            }
        }
    }
}

/// `segments` chords of the circle `center + cos(a) * u + sin(a) * v`: a full circle when
/// `segments` is [`CIRCLE_SEGMENTS`], the half from `u` through `v` to `-u` otherwise.
fn arc(center: Vec3, u: Vec3, v: Vec3, segments: usize, line: &mut impl FnMut(Vec3, Vec3)) {
    let step = std::f32::consts::TAU / CIRCLE_SEGMENTS as f32;
    let point = |i: usize| {
        let (sin, cos) = (step * i as f32).sin_cos();
        center + u * cos + v * sin
    };
    for i in 0..segments {
        line(point(i), point(i + 1));
    }
}

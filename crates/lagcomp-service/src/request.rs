//! Rewound queries as values, so they can be queued and run on another thread.
//!
//! What lives here: [`RewoundRequest`] (what [`lagcomp::History::query`]'s builder takes:
//! target, window policy, layers, ignore list, and one [`Probe`]), the [`Line`] a ray is
//! built from, and [`Found`], the owned result. [`RewoundRequest::run`] is the synchronous
//! query itself: the service and the batch API run exactly this.

use lagcomp::{
    EntityId, History, Hit, Obb, Overlap, QueryError, Ray, Rewind, RewindTarget, Trace, Vec3,
    WindowPolicy,
};

/// The line a ray is traced along: either a [`Ray`] already checked, or raw numbers as a
/// client sent them, turned into a ray (normalized and checked by [`Ray::new`]) when the
/// query runs, so that a malformed one comes back as [`QueryError::Ray`] like any other
/// bad input.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Line(LineKind);

#[derive(Debug, Clone, Copy, PartialEq)]
enum LineKind {
    Checked(Ray),
    Raw {
        origin: Vec3,
        direction: Vec3,
        max_distance: f32,
    },
}

impl Line {
    /// A line from raw parts, checked when the query runs.
    #[must_use]
    pub const fn new(origin: Vec3, direction: Vec3, max_distance: f32) -> Self {
        Self(LineKind::Raw {
            origin,
            direction,
            max_distance,
        })
    }

    /// The checked ray: the one given, or [`Ray::new`] of the raw parts.
    ///
    /// # Errors
    /// [`QueryError::Ray`] when [`Ray::new`] refuses the raw parts.
    pub fn ray(&self) -> Result<Ray, QueryError> {
        match self.0 {
            LineKind::Checked(ray) => Ok(ray),
            LineKind::Raw {
                origin,
                direction,
                max_distance,
            } => Ok(Ray::new(origin, direction, max_distance)?),
        }
    }
}

impl From<Ray> for Line {
    /// The ray as it is (not normalized again, so answers are bit for bit those of a
    /// query with `ray`).
    fn from(ray: Ray) -> Self {
        Self(LineKind::Checked(ray))
    }
}

/// What a query traces or overlaps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Probe {
    /// The closest hit along the line ([`lagcomp::Query::ray`]).
    Ray(Line),
    /// Every hitbox along the line before the first wall ([`lagcomp::Query::ray_all`]).
    RayAll(Line),
    /// The closest hitbox a sphere moving along the line touches
    /// ([`lagcomp::Query::sweep`]).
    Sweep {
        /// The path of the sphere's centre.
        line: Line,
        /// The sphere's radius.
        radius: f32,
    },
    /// Every hitbox overlapping a sphere ([`lagcomp::Query::overlap_sphere`]).
    Sphere {
        /// Its centre.
        center: Vec3,
        /// Its radius.
        radius: f32,
    },
    /// Every hitbox overlapping an oriented box ([`lagcomp::Query::overlap_box`]).
    Box(Obb),
}

/// One rewound query: the moment, the filters and the probe.
#[derive(Debug, Clone, PartialEq)]
pub struct RewoundRequest {
    /// The moment to look at.
    pub target: RewindTarget,
    /// What to do with a target outside the window.
    pub policy: WindowPolicy,
    /// Only entities and walls sharing a bit with this mask are seen.
    pub layers: u32,
    /// Entities never reported (the shooter, their vehicle).
    pub ignore: Vec<EntityId>,
    /// What to trace or overlap.
    pub probe: Probe,
}

impl RewoundRequest {
    /// `probe` at `target`, with [`lagcomp::History::query`]'s defaults: every layer,
    /// nothing ignored, a target outside the window rejected.
    #[must_use]
    pub fn new(target: RewindTarget, probe: Probe) -> Self {
        Self {
            target,
            policy: WindowPolicy::Reject,
            layers: u32::MAX,
            ignore: Vec::new(),
            probe,
        }
    }

    /// The same query seeing only `layers`.
    #[must_use]
    pub fn layers(mut self, layers: u32) -> Self {
        self.layers = layers;
        self
    }

    /// The same query ignoring `entities`.
    #[must_use]
    pub fn ignore(mut self, entities: impl IntoIterator<Item = EntityId>) -> Self {
        self.ignore = entities.into_iter().collect();
        self
    }

    /// The same query with `policy` for targets outside the window.
    #[must_use]
    pub fn window_policy(mut self, policy: WindowPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Runs the query against `history`, on this thread.
    ///
    /// # Errors
    /// [`QueryError`] as the core query returns it: a malformed line, radius or box, or a
    /// target that cannot be resolved.
    pub fn run(&self, history: &History) -> Result<Found, QueryError> {
        let mut query = history
            .query(self.target)
            .window_policy(self.policy)
            .layers(self.layers)
            .ignore(&self.ignore);
        match self.probe {
            Probe::Ray(line) => query.ray(&line.ray()?).map(Found::Trace),
            Probe::RayAll(line) => {
                let mut hits = Vec::new();
                let trace = query.ray_all(&line.ray()?, &mut hits)?;
                Ok(Found::Traces { trace, hits })
            }
            Probe::Sweep { line, radius } => query.sweep(&line.ray()?, radius).map(Found::Trace),
            Probe::Sphere { center, radius } => {
                let mut overlaps = Vec::new();
                let rewind = query.overlap_sphere(center, radius, &mut overlaps)?;
                Ok(Found::Overlaps { rewind, overlaps })
            }
            Probe::Box(obb) => {
                let mut overlaps = Vec::new();
                let rewind = query.overlap_box(&obb, &mut overlaps)?;
                Ok(Found::Overlaps { rewind, overlaps })
            }
        }
    }
}

/// What a rewound query found.
#[derive(Debug, Clone, PartialEq)]
pub enum Found {
    /// A closest-hit ray or sweep.
    Trace(Trace),
    /// A ray through everything: the trace (whose hit is the first) and every hit, sorted.
    Traces {
        /// The trace.
        trace: Trace,
        /// Every hit, nearest first.
        hits: Vec<Hit>,
    },
    /// An overlap: the moment looked at and every overlapping hitbox, nearest first.
    Overlaps {
        /// The moment looked at.
        rewind: Rewind,
        /// The overlaps.
        overlaps: Vec<Overlap>,
    },
}

impl Found {
    /// The closest hit of a trace (the first of a ray through everything); `None` for a
    /// miss or an overlap.
    #[must_use]
    pub fn hit(&self) -> Option<&Hit> {
        match self {
            Self::Trace(trace) | Self::Traces { trace, .. } => trace.hit.as_ref(),
            Self::Overlaps { .. } => None,
        }
    }

    /// The moment looked at.
    #[must_use]
    pub fn rewind(&self) -> Rewind {
        match self {
            Self::Trace(trace) | Self::Traces { trace, .. } => trace.rewind,
            Self::Overlaps { rewind, .. } => *rewind,
        }
    }
}

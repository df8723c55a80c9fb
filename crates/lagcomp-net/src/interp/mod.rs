//! Snapshot interpolation: what a client draws of a remote entity, and how far in the past.
//!
//! What lives here: [`SnapshotBuffer`], one remote entity's recent [`Snapshot`]s and the
//! pose at a render time ([`SnapshotBuffer::sample`], which says how it got it as a
//! [`View`]); [`InterpolationDelay`], how far behind the server's clock to render, adapted
//! to the measured send interval and jitter, in [`delay`]. What does not: the clock
//! ([`crate::clock`]) and turning a view into what a shot claims ([`crate::shot`]).
//!
//! # Agreeing with the server bit for bit
//!
//! The server rebuilds what the client drew from the [`View`]'s ticks and fraction (as
//! [`lagcomp::RewindTarget::Ticks`]). The blend here is the core's, operation for
//! operation: translation and scale with [`lagcomp::math::lerp`], rotation with
//! [`lagcomp::math::slerp`], at the `f32` fraction `((render_time − a.time) / (b.time −
//! a.time)) as f32`; a fraction of exactly 0 or 1 is the stored frame itself (not a blend
//! that happens to land there), and a teleport frame is never blended into: the frame
//! nearer in time is shown, chosen by `fraction < 0.5` exactly as the core chooses. So the
//! server, fed the same transforms, gets the same bits.
//!
//! One case the client cannot mirror on its own: the core refuses to blend across a
//! teleport in *any* frame between `from` and `to`, including frames this client never
//! received. If a teleport's snapshot is lost, the next one must still say so, or the two
//! sides disagree: the server sends each entity's latest teleport tick and the client sets
//! [`Snapshot::teleport`] with [`teleported_since`] the newest snapshot it holds.

pub mod delay;

/// Whether an entity whose latest teleport was at `last_teleport` (as the server says)
/// teleported after `newest_held`, the newest snapshot tick of it the client holds (`None`
/// before any): then the next snapshot must not be blended into, received or not the
/// snapshot of the teleport itself.
#[must_use]
pub fn teleported_since(last_teleport: Option<Tick>, newest_held: Option<Tick>) -> bool {
    last_teleport.is_some_and(|t| newest_held.is_none_or(|n| t > n))
}

use std::collections::VecDeque;

use glam::Vec3;
use lagcomp::math::{MAX_COORDINATE, extrapolate, extrapolation_shift, lerp, slerp};
use lagcomp::{BoneTransform, Tick};

pub use delay::{InterpolationConfig, InterpolationDelay};

/// Extrapolate at most this far past the newest snapshot by default, seconds (Source's
/// `cl_extrapolate_amount`).
pub const DEFAULT_MAX_EXTRAPOLATION: f64 = 0.25;

/// One remote entity's state at one server tick, as the server sent it.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Snapshot {
    /// The server tick.
    pub tick: Tick,
    /// The server time of the tick, seconds (what the server recorded the frame at).
    pub time: f64,
    /// World transforms of the entity's bones, in bone order (as the server recorded them).
    pub bones: Vec<BoneTransform>,
    /// The entity's linear velocity, units per second, used only to extrapolate past the
    /// newest snapshot.
    pub velocity: Vec3,
    /// The entity jumped to this pose (respawn, teleporter) since the snapshot before it:
    /// never blend into this snapshot.
    pub teleport: bool,
}

/// What [`SnapshotBuffer::push`] did with a snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pushed {
    /// Kept.
    Accepted,
    /// A snapshot of the same tick is already held: dropped.
    Duplicate,
    /// Older than the newest snapshot held: dropped (the interval it would fill may already
    /// have been drawn).
    OutOfOrder,
    /// Dropped as corrupt: a time that is not one (NaN, infinite, beyond
    /// [`crate::MAX_TIME`]), a velocity component that is NaN or beyond
    /// [`lagcomp::math::MAX_COORDINATE`] per second, a bone transform that
    /// [`BoneTransform::validate`] refuses, a bone count different from the snapshots held,
    /// or a newer tick whose time is not later.
    Invalid,
}

/// How [`SnapshotBuffer::sample`] obtained a pose.
///
/// [`crate::shot::stamp`] turns a view into what a shot claims.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum View {
    /// The render time fell on a snapshot (or the blend fraction rounded to exactly 0 or
    /// 1): that snapshot's bones, bit for bit.
    Exact {
        /// The snapshot shown.
        tick: Tick,
    },
    /// Blended between two consecutive snapshots held.
    Interpolated {
        /// The older snapshot.
        from: Tick,
        /// The newer snapshot.
        to: Tick,
        /// Progress from `from` to `to`, strictly between 0 and 1.
        fraction: f32,
    },
    /// The render time fell between a snapshot and a teleport snapshot: the one nearer in
    /// time is shown as is, never a blend across the jump (the core's rule).
    Nearest {
        /// The snapshot shown: `from` when `fraction < 0.5`, else `to`.
        tick: Tick,
        /// The older snapshot.
        from: Tick,
        /// The newer snapshot, which teleported.
        to: Tick,
        /// Where the render time fell between them.
        fraction: f32,
    },
    /// Past the newest snapshot: its bones moved by its velocity times `by`.
    Extrapolated {
        /// The newest snapshot.
        from: Tick,
        /// How far past it, seconds; at most the extrapolation limit (held there beyond it).
        by: f64,
    },
    /// The render time is before the oldest snapshot held (or past the newest with
    /// extrapolation off): that snapshot's bones, bit for bit.
    Held {
        /// The snapshot shown.
        tick: Tick,
    },
}

impl View {
    /// The tick whose bones are shown (or moved, when extrapolated); `None` for a blend.
    #[must_use]
    pub fn shown_tick(&self) -> Option<Tick> {
        match *self {
            Self::Exact { tick } | Self::Held { tick } | Self::Nearest { tick, .. } => Some(tick),
            Self::Extrapolated { from, .. } => Some(from),
            Self::Interpolated { .. } => None,
        }
    }
}

/// One remote entity's recent snapshots, oldest first, at most `capacity` of them.
///
/// ```
/// use lagcomp_net::{Pushed, Snapshot, SnapshotBuffer, View};
/// use lagcomp::{BoneTransform, Tick, Vec3};
///
/// let snapshot = |tick: u32, x: f32| Snapshot {
///     tick: Tick(tick),
///     time: f64::from(tick) / 20.0,
///     bones: vec![BoneTransform::from_translation(Vec3::new(x, 0.0, 0.0))],
///     velocity: Vec3::new(20.0, 0.0, 0.0),
///     teleport: false,
/// };
/// let mut buffer = SnapshotBuffer::new(32);
/// assert_eq!(buffer.push(snapshot(10, 10.0)), Pushed::Accepted);
/// assert_eq!(buffer.push(snapshot(11, 11.0)), Pushed::Accepted);
///
/// let mut bones = Vec::new();
/// let view = buffer.sample(0.5125, 0.25, &mut bones).unwrap();
/// assert_eq!(view, View::Interpolated { from: Tick(10), to: Tick(11), fraction: 0.25 });
/// assert_eq!(bones[0].translation.x, 10.25);
///
/// // 40 ms past the newest: moved on at 20 m/s.
/// let view = buffer.sample(0.59, 0.25, &mut bones).unwrap();
/// assert!(matches!(view, View::Extrapolated { from: Tick(11), .. }));
/// assert!((bones[0].translation.x - 11.8).abs() < 1e-5);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotBuffer {
    capacity: usize,
    snapshots: VecDeque<Snapshot>,
}

impl SnapshotBuffer {
    /// An empty buffer keeping at most `capacity` snapshots (at least 2, so there is always
    /// something to interpolate between).
    #[must_use]
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(2);
        Self {
            capacity,
            snapshots: VecDeque::with_capacity(capacity),
        }
    }

    /// How many snapshots the buffer keeps at most.
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// How many snapshots are held.
    #[must_use]
    pub fn len(&self) -> usize {
        self.snapshots.len()
    }

    /// Whether no snapshot is held.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.snapshots.is_empty()
    }

    /// The snapshots held, oldest first.
    pub fn snapshots(&self) -> impl ExactSizeIterator<Item = &Snapshot> + '_ {
        self.snapshots.iter()
    }

    /// The newest snapshot held.
    #[must_use]
    pub fn newest(&self) -> Option<&Snapshot> {
        self.snapshots.back()
    }

    /// The oldest snapshot held.
    #[must_use]
    pub fn oldest(&self) -> Option<&Snapshot> {
        self.snapshots.front()
    }

    /// The server time of the snapshot of `tick`, if held (to turn an extrapolated view
    /// into a server time: the newest's time plus `by`).
    #[must_use]
    pub fn time_of(&self, tick: Tick) -> Option<f64> {
        self.find(tick).map(|i| self.snapshots[i].time)
    }

    fn find(&self, tick: Tick) -> Option<usize> {
        self.snapshots.binary_search_by_key(&tick, |s| s.tick).ok()
    }

    /// Forgets every snapshot (the entity left, or the connection restarted).
    pub fn clear(&mut self) {
        self.snapshots.clear();
    }

    /// Adds a snapshot newer than every one held, dropping the oldest if the buffer is full.
    /// Anything else is dropped and the result says why.
    pub fn push(&mut self, snapshot: Snapshot) -> Pushed {
        let valid = crate::is_time(snapshot.time)
            && snapshot.velocity.is_finite()
            && snapshot.velocity.abs().max_element() <= MAX_COORDINATE
            && snapshot.bones.iter().all(|b| b.validate().is_ok());
        if !valid {
            return Pushed::Invalid;
        }
        if let Some(newest) = self.snapshots.back() {
            if snapshot.bones.len() != newest.bones.len() {
                return Pushed::Invalid;
            }
            if snapshot.tick <= newest.tick {
                return if self.find(snapshot.tick).is_some() {
                    Pushed::Duplicate
                } else {
                    Pushed::OutOfOrder
                };
            }
            if snapshot.time <= newest.time {
                return Pushed::Invalid;
            }
        }
        if self.snapshots.len() == self.capacity {
            self.snapshots.pop_front();
        }
        self.snapshots.push_back(snapshot);
        Pushed::Accepted
    }

    /// The entity's pose at server time `render_time`, into `out` (cleared first, then one
    /// transform per bone), and how it was obtained.
    ///
    /// - Between two snapshots: blended as the core blends a tick pair (see the
    ///   [module documentation](self)), or the nearer one when the newer teleported.
    /// - On a snapshot: that snapshot.
    /// - Before the oldest: the oldest, held.
    /// - Past the newest: every bone translated by the newest's velocity times the time
    ///   past it, for at most `max_extrapolation` seconds, then held there (bones are world
    ///   transforms, so moving only the root would tear the skeleton). Rotation and scale
    ///   are not extrapolated. A `max_extrapolation` that is not a positive number turns
    ///   extrapolation off: the newest is held.
    ///
    /// `None` (and `out` empty) when no snapshot is held or `render_time` is not a time
    /// (NaN, infinite, beyond [`crate::MAX_TIME`]).
    pub fn sample(
        &self,
        render_time: f64,
        max_extrapolation: f64,
        out: &mut Vec<BoneTransform>,
    ) -> Option<View> {
        out.clear();
        if !crate::is_time(render_time) {
            return None;
        }
        let (oldest, newest) = (self.snapshots.front()?, self.snapshots.back()?);
        if render_time < oldest.time {
            out.extend_from_slice(&oldest.bones);
            return Some(View::Held { tick: oldest.tick });
        }
        if render_time >= newest.time {
            return Some(self.beyond_newest(newest, render_time, max_extrapolation, out));
        }
        // The first snapshot later than the render time; it has a predecessor because the
        // oldest is not later.
        let after = self.snapshots.partition_point(|s| s.time <= render_time);
        let (a, b) = (&self.snapshots[after - 1], &self.snapshots[after]);
        if render_time == a.time {
            out.extend_from_slice(&a.bones);
            return Some(View::Exact { tick: a.tick });
        }
        let fraction = ((render_time - a.time) / (b.time - a.time)) as f32;
        // The core treats 0 and 1 as the stored frames, before any teleport rule.
        if fraction == 0.0 || fraction == 1.0 {
            let exact = if fraction == 0.0 { a } else { b };
            out.extend_from_slice(&exact.bones);
            return Some(View::Exact { tick: exact.tick });
        }
        if b.teleport {
            let shown = if fraction < 0.5 { a } else { b };
            out.extend_from_slice(&shown.bones);
            return Some(View::Nearest {
                tick: shown.tick,
                from: a.tick,
                to: b.tick,
                fraction,
            });
        }
        out.extend(a.bones.iter().zip(&b.bones).map(|(ba, bb)| BoneTransform {
            translation: lerp(ba.translation, bb.translation, fraction),
            rotation: slerp(ba.rotation, bb.rotation, fraction),
            scale: lerp(ba.scale, bb.scale, fraction),
        }));
        Some(View::Interpolated {
            from: a.tick,
            to: b.tick,
            fraction,
        })
    }

    fn beyond_newest(
        &self,
        newest: &Snapshot,
        render_time: f64,
        max_extrapolation: f64,
        out: &mut Vec<BoneTransform>,
    ) -> View {
        let past = render_time - newest.time;
        let limit = if max_extrapolation > 0.0 {
            max_extrapolation.min(crate::MAX_TIME)
        } else {
            0.0
        };
        if past == 0.0 {
            out.extend_from_slice(&newest.bones);
            return View::Exact { tick: newest.tick };
        }
        if limit == 0.0 {
            out.extend_from_slice(&newest.bones);
            return View::Held { tick: newest.tick };
        }
        let by = past.min(limit);
        // The core's formula, which the server rebuilds this picture with.
        let shift = extrapolation_shift(newest.velocity, by);
        out.extend(newest.bones.iter().map(|bone| extrapolate(bone, shift)));
        View::Extrapolated {
            from: newest.tick,
            by,
        }
    }
}

impl Default for SnapshotBuffer {
    /// A buffer of 32 snapshots (a second and a half at 20 Hz, half a second at 64 Hz).
    fn default() -> Self {
        Self::new(32)
    }
}

#[cfg(test)]
mod tests {
    use lagcomp::Quat;

    use super::*;

    fn snapshot(tick: u32, time: f64, x: f32) -> Snapshot {
        Snapshot {
            tick: Tick(tick),
            time,
            bones: vec![
                BoneTransform::from_translation(Vec3::new(x, 0.0, 0.0)),
                BoneTransform::new(Vec3::new(x, 1.0, 0.0), Quat::from_rotation_y(0.3)),
            ],
            velocity: Vec3::new(2.0, 0.0, 0.0),
            teleport: false,
        }
    }

    #[test]
    fn push_says_what_it_did() {
        let mut b = SnapshotBuffer::new(4);
        assert_eq!(b.push(snapshot(10, 1.0, 0.0)), Pushed::Accepted);
        assert_eq!(b.push(snapshot(12, 1.2, 0.0)), Pushed::Accepted);
        assert_eq!(b.push(snapshot(12, 1.2, 5.0)), Pushed::Duplicate);
        assert_eq!(b.push(snapshot(10, 1.0, 0.0)), Pushed::Duplicate);
        assert_eq!(b.push(snapshot(11, 1.1, 0.0)), Pushed::OutOfOrder);
        assert_eq!(b.push(snapshot(9, 0.9, 0.0)), Pushed::OutOfOrder);
        // A newer tick must be later in time.
        assert_eq!(b.push(snapshot(13, 1.2, 0.0)), Pushed::Invalid);
        assert_eq!(b.push(snapshot(13, f64::NAN, 0.0)), Pushed::Invalid);
        assert_eq!(b.push(snapshot(13, 2e12, 0.0)), Pushed::Invalid);
        let mut bad = snapshot(13, 1.3, 0.0);
        bad.bones[1].rotation = Quat::from_xyzw(0.0, 0.0, 0.0, 2.0);
        assert_eq!(b.push(bad), Pushed::Invalid);
        let mut bad = snapshot(13, 1.3, 0.0);
        bad.velocity.y = f32::NAN;
        assert_eq!(b.push(bad), Pushed::Invalid);
        let mut bad = snapshot(13, 1.3, 0.0);
        bad.bones.pop();
        assert_eq!(b.push(bad), Pushed::Invalid, "bone count changed");
        assert_eq!(b.len(), 2);
        assert_eq!(b.time_of(Tick(12)), Some(1.2));
        assert_eq!(b.time_of(Tick(11)), None);
    }

    #[test]
    fn capacity_drops_the_oldest() {
        let mut b = SnapshotBuffer::new(0);
        assert_eq!(b.capacity(), 2);
        for k in 0..5 {
            assert_eq!(b.push(snapshot(k, f64::from(k), 0.0)), Pushed::Accepted);
        }
        let ticks: Vec<u32> = b.snapshots().map(|s| s.tick.0).collect();
        assert_eq!(ticks, [3, 4]);
        b.clear();
        assert!(b.is_empty());
    }

    #[test]
    fn before_the_oldest_holds_it_and_on_a_snapshot_is_exact() {
        let mut b = SnapshotBuffer::default();
        let mut out = Vec::new();
        assert_eq!(b.sample(1.0, 0.25, &mut out), None);
        b.push(snapshot(1, 1.0, 1.0));
        b.push(snapshot(2, 2.0, 2.0));
        assert_eq!(
            b.sample(0.5, 0.25, &mut out),
            Some(View::Held { tick: Tick(1) })
        );
        assert_eq!(out, snapshot(1, 1.0, 1.0).bones);
        assert_eq!(
            b.sample(1.0, 0.25, &mut out),
            Some(View::Exact { tick: Tick(1) })
        );
        assert_eq!(
            b.sample(2.0, 0.25, &mut out),
            Some(View::Exact { tick: Tick(2) })
        );
        assert_eq!(out, snapshot(2, 2.0, 2.0).bones);
        assert_eq!(b.sample(f64::NAN, 0.25, &mut out), None);
        assert!(out.is_empty());
    }

    #[test]
    fn extrapolation_moves_every_bone_and_stops_at_the_limit() {
        let mut b = SnapshotBuffer::default();
        b.push(snapshot(1, 1.0, 0.0));
        let mut out = Vec::new();
        let view = b.sample(1.1, 0.25, &mut out).unwrap();
        assert_eq!(
            view,
            View::Extrapolated {
                from: Tick(1),
                by: 0.10000000000000009
            }
        );
        let held = snapshot(1, 1.0, 0.0).bones;
        for (moved, held) in out.iter().zip(&held) {
            assert!((moved.translation.x - held.translation.x - 0.2).abs() < 1e-6);
            assert_eq!(moved.translation.y, held.translation.y);
            assert_eq!(
                moved.rotation, held.rotation,
                "rotation is not extrapolated"
            );
        }
        // Past the limit: held at the limit.
        let view = b.sample(5.0, 0.25, &mut out).unwrap();
        assert_eq!(
            view,
            View::Extrapolated {
                from: Tick(1),
                by: 0.25
            }
        );
        assert_eq!(out[0].translation.x, 0.5);
        // Extrapolation off: the newest, held.
        for off in [0.0, -1.0, f64::NAN] {
            assert_eq!(
                b.sample(1.1, off, &mut out),
                Some(View::Held { tick: Tick(1) })
            );
            assert_eq!(out, held);
        }
    }

    #[test]
    fn a_fraction_that_rounds_to_one_is_the_newer_frame() {
        let mut b = SnapshotBuffer::default();
        b.push(snapshot(1, 1.0, 0.0));
        b.push(snapshot(2, 2.0, 1.0));
        let mut out = Vec::new();
        // 1 - 1e-12 rounds to 1.0 in f32.
        let view = b.sample(2.0 - 1e-12, 0.25, &mut out).unwrap();
        assert_eq!(view, View::Exact { tick: Tick(2) });
        assert_eq!(out, snapshot(2, 2.0, 1.0).bones);
        // Just after the older one is a (tiny) blend: f32 has the range for it.
        let view = b.sample(1.0 + 1e-12, 0.25, &mut out).unwrap();
        let View::Interpolated { fraction, .. } = view else {
            panic!("{view:?}");
        };
        assert!(fraction > 0.0 && fraction < 1e-11, "{fraction}");
    }
}

//! Rebuilding the past: from a rewind target to bracketing frames, and from those to an
//! entity's bones at that moment.

use glam::Vec3;

use super::{
    ALIVE, EntityState, History, LAG_COMPENSATED, StoredRotation, StoredTranslation, TELEPORTED,
};
use crate::bvh::SpanRange;
use crate::math::{Aabb, BoneTransform, lerp, slerp};
use crate::time::{RewindError, RewindTarget, Tick, WindowPolicy, WindowSide};

/// How an entity's pose at the rewound time was obtained.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum SampleKind {
    /// The target fell exactly on a recorded frame: the stored pose, bit for bit.
    Exact {
        /// The frame's tick.
        tick: Tick,
    },
    /// Blended between two frames: translation and scale lerped, rotation slerped.
    Interpolated {
        /// The older frame.
        from: Tick,
        /// The newer frame.
        to: Tick,
        /// Progress from `from` to `to`.
        alpha: f32,
    },
    /// One frame used as is, because interpolating was not allowed or not possible.
    Nearest {
        /// The frame used.
        tick: Tick,
        /// Why it was not interpolated.
        reason: NearestReason,
    },
    /// Lag compensation was off for this entity at the target time (invulnerable,
    /// dodging): it was tested at its present pose, the newest frame it was recorded in.
    Present {
        /// The frame used.
        tick: Tick,
    },
}

/// Why a sample used a single frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum NearestReason {
    /// The entity teleported between the bracketing frames; the frame nearer in time is
    /// used, never a blend across the jump.
    Teleport,
    /// The entity was not recorded in one of the bracketing frames.
    MissingNeighbour,
}

/// The moment an entity was sampled at, and how.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Sample {
    /// The server time the query rewound to.
    pub time: f64,
    /// How the pose was obtained.
    pub kind: SampleKind,
}

impl Sample {
    /// Whether the entity was actually rewound (false when tested at its present pose).
    #[must_use]
    pub fn rewound(&self) -> bool {
        !matches!(self.kind, SampleKind::Present { .. })
    }
}

/// A rewind target resolved against the frame ring: which frames bracket it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Bracket {
    /// The time asked for.
    pub(crate) requested: f64,
    /// The time used (differs only when clamped).
    pub(crate) time: f64,
    pub(crate) clamped: bool,
    /// Older and newer frame sequence numbers; equal for an exact frame.
    pub(crate) older: u64,
    pub(crate) newer: u64,
    /// Ring slots of `older` and `newer`.
    pub(crate) rings: (usize, usize),
    /// The broadphase spans that cover `older..=newer`.
    pub(crate) spans: SpanRange,
    pub(crate) alpha: f32,
    /// The window the target was checked against.
    pub(crate) window: (f64, f64),
}

/// An entity resolved at a bracket: which of its stored frames to read and how to blend.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct EntitySample {
    pub(crate) kind: SampleKind,
    /// Ring slots of the frames to blend (equal when one frame is used).
    a: usize,
    b: usize,
    alpha: f32,
    /// Flags as they were at the target time.
    pub(crate) state: EntityState,
    /// Bounds of the entity over the frames used: the exact-time broadphase box.
    pub(crate) bounds: Aabb,
}

impl EntitySample {
    /// Whether the entity was rewound (not tested at its present pose).
    #[inline]
    pub(crate) fn rewound(&self) -> bool {
        !matches!(self.kind, SampleKind::Present { .. })
    }
}

/// Which stored frames an entity is rewound from at a bracket.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Pick {
    /// The bracket is one frame, and the entity was recorded in it.
    Exact(usize),
    /// Blend these two frames by the bracket's alpha.
    Blend(usize, usize),
    /// One frame of the two, for this reason.
    Nearest(usize, NearestReason),
}

/// An entity admitted by [`History::rewound_for_tree`]: ring slots of the frames to blend
/// (equal when one frame is used) and the blend.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Rewound {
    a: usize,
    b: usize,
    alpha: f32,
}

impl History {
    /// Resolves `target` to the frames around it.
    ///
    /// PERF: a time target (what a shot gives) is resolved inline, so the caller gets the
    /// bracket in registers: returned through memory, it was written field by field and
    /// read back in 16-byte pieces (and copied three times) by every trace. The other
    /// targets go through [`History::bracket_other`].
    #[inline(always)]
    pub(crate) fn bracket(
        &self,
        target: RewindTarget,
        policy: WindowPolicy,
    ) -> Result<Bracket, RewindError> {
        match target {
            RewindTarget::Time(t) => self.bracket_at_time(t, policy),
            _ => self.bracket_other(target, policy),
        }
    }

    /// [`History::bracket`] for [`RewindTarget::Time`]`(time)`, always inline: a trace
    /// takes the other targets on a separate path, so this bracket stays in registers.
    #[inline(always)]
    pub(crate) fn bracket_at_time(
        &self,
        time: f64,
        policy: WindowPolicy,
    ) -> Result<Bracket, RewindError> {
        let window = self.window().ok_or(RewindError::Empty)?;
        self.bracket_time(time, window, policy)
    }

    /// [`History::bracket`] for latency and tick-pair targets.
    #[inline(never)]
    fn bracket_other(
        &self,
        target: RewindTarget,
        policy: WindowPolicy,
    ) -> Result<Bracket, RewindError> {
        let (lo, hi) = self.window().ok_or(RewindError::Empty)?;
        match target {
            RewindTarget::Time(t) => self.bracket_time(t, (lo, hi), policy),
            RewindTarget::Latency { now, latency } => {
                if !now.is_finite() {
                    return Err(RewindError::InvalidTime(now));
                }
                if !(latency.is_finite() && latency >= 0.0) {
                    return Err(RewindError::InvalidTime(latency));
                }
                self.bracket_time(now - latency, (lo, hi), policy)
            }
            RewindTarget::Ticks { from, to, fraction } => {
                if !(0.0..=1.0).contains(&fraction) {
                    return Err(RewindError::InvalidFraction(fraction));
                }
                if from > to {
                    return Err(RewindError::TicksOutOfOrder { from, to });
                }
                let older = self
                    .seq_of_tick(from)
                    .ok_or(RewindError::UnknownTick(from))?;
                let newer = self.seq_of_tick(to).ok_or(RewindError::UnknownTick(to))?;
                let (t0, t1) = (self.meta(older).time, self.meta(newer).time);
                // Exact at both ends and never outside them, so a blend that ends on the
                // newest frame is not mistaken for the future.
                let time = match fraction {
                    0.0 => t0,
                    1.0 => t1,
                    f => (t0 + (t1 - t0) * f64::from(f)).clamp(t0, t1),
                };
                if time < lo || time > hi {
                    // The blend of two frames is only meaningful inside the window; a
                    // clamped target becomes a plain time at the edge.
                    return self.bracket_time(time, (lo, hi), policy);
                }
                let (older, newer, alpha) = if fraction == 0.0 || older == newer {
                    (older, older, 0.0)
                } else if fraction == 1.0 {
                    (newer, newer, 0.0)
                } else {
                    (older, newer, fraction)
                };
                Ok(Bracket {
                    requested: time,
                    time,
                    clamped: false,
                    older,
                    newer,
                    rings: (self.ring(older), self.ring(newer)),
                    spans: self.spans(older, newer),
                    alpha,
                    window: (lo, hi),
                })
            }
        }
    }

    #[inline(always)]
    fn bracket_time(
        &self,
        requested: f64,
        (lo, hi): (f64, f64),
        policy: WindowPolicy,
    ) -> Result<Bracket, RewindError> {
        if !requested.is_finite() {
            return Err(RewindError::InvalidTime(requested));
        }
        let side = if requested < lo {
            Some((WindowSide::TooOld, lo))
        } else if requested > hi {
            Some((WindowSide::TooNew, hi))
        } else {
            None
        };
        let (time, clamped) = match (side, policy) {
            (None, _) => (requested, false),
            (Some((_, edge)), WindowPolicy::Clamp) => (edge, true),
            (Some((side, _)), WindowPolicy::Reject) => {
                return Err(RewindError::OutOfWindow {
                    requested,
                    oldest: lo,
                    newest: hi,
                    side,
                });
            }
        };
        let (older, ring) = self.last_frame_at_or_before(time);
        let t0 = self.frames[ring].time;
        // The newer frame is the next ring slot (`older` is not the newest when they differ).
        let (newer, next, alpha) = if t0 == time {
            (older, ring, 0.0)
        } else {
            let next = self.next_ring(ring);
            let t1 = self.frames[next].time;
            (older + 1, next, ((time - t0) / (t1 - t0)) as f32)
        };
        Ok(Bracket {
            requested,
            time,
            clamped,
            older,
            newer,
            rings: (ring, next),
            spans: SpanRange {
                first: ring,
                count: 1,
            },
            alpha,
            window: (lo, hi),
        })
    }

    /// The ring slot after `ring`.
    #[inline]
    fn next_ring(&self, ring: usize) -> usize {
        if ring + 1 == self.capacity {
            0
        } else {
            ring + 1
        }
    }

    /// The newest frame recorded at or before `time`, which must not be older than the
    /// oldest frame held (a resolved target never is).
    ///
    /// PERF: servers tick at a steady rate, so a frame's place in the ring is its time's
    /// distance from the oldest frame's times the tick rate: one guess, checked against
    /// its two neighbours' times, finds it without a search (about 290 instructions per
    /// query went to the binary search). The configured rate makes the guess a
    /// multiplication: taken from the window's span and frame count it was a division on
    /// every shot's path to its broadphase (64x16: 283-291 -> 278-283 ns). Times that do
    /// not follow the configured rate take that span-based guess next, and irregular ticks
    /// (a stalled server, skipped ticks) the binary search; either way the answer is the
    /// same, because frame times strictly increase.
    /// Returns the frame and its ring slot.
    #[inline(always)]
    fn last_frame_at_or_before(&self, time: f64) -> (u64, usize) {
        let (oldest, newest) = (self.oldest_seq(), self.newest_seq);
        let newest_time = self.frames[self.newest_ring].time;
        if time >= newest_time {
            return (newest, self.newest_ring);
        }
        // Here `oldest < newest`: `time` is at least the oldest frame's time and below the
        // newest's.
        let oldest_time = self.meta(oldest).time;
        let place = (time - oldest_time) * self.config.tick_rate;
        self.frame_at_place(time, place)
            .unwrap_or_else(|| self.frame_by_span(time, oldest_time, newest_time))
    }

    /// The frame at or before `time` if it is the one `place` frames after the oldest or
    /// the next (a time on a frame's own time often rounds to just below its place).
    #[inline(always)]
    fn frame_at_place(&self, time: f64, place: f64) -> Option<(u64, usize)> {
        let (oldest, newest) = (self.oldest_seq(), self.newest_seq);
        // The float-to-int cast saturates (a negative place gives 0).
        let guess = (oldest + place as u64).min(newest - 1);
        let ring = self.ring(guess);
        if self.frames[ring].time <= time {
            let next = self.next_ring(ring);
            if time < self.frames[next].time {
                return Some((guess, ring));
            }
            // The next frame, checked against the one after it (which exists below the
            // newest).
            if guess + 1 < newest && time < self.frames[self.next_ring(next)].time {
                return Some((guess + 1, next));
            }
        }
        None
    }

    /// [`History::last_frame_at_or_before`] for times off the configured rate: the place
    /// guessed from the window's span and frame count, then the binary search.
    #[cold]
    #[inline(never)]
    fn frame_by_span(&self, time: f64, oldest_time: f64, newest_time: f64) -> (u64, usize) {
        let (oldest, newest) = (self.oldest_seq(), self.newest_seq);
        let place = (time - oldest_time) / (newest_time - oldest_time) * (newest - oldest) as f64;
        self.frame_at_place(time, place)
            .unwrap_or_else(|| self.search_frame_at_or_before(time))
    }

    /// [`History::last_frame_at_or_before`] by binary search, for irregular ticks.
    #[cold]
    #[inline(never)]
    fn search_frame_at_or_before(&self, time: f64) -> (u64, usize) {
        let (mut first, mut last) = (self.oldest_seq(), self.newest_seq);
        while first < last {
            let mid = first + (last - first).div_ceil(2);
            if self.meta(mid).time <= time {
                first = mid;
            } else {
                last = mid - 1;
            }
        }
        (first, self.ring(first))
    }

    /// The tree spans covering frames `older..=newer`: each frame's span reaches the next.
    fn spans(&self, older: u64, newer: u64) -> SpanRange {
        SpanRange {
            first: self.ring(older),
            count: (newer - older).max(1) as usize,
        }
    }

    /// Whether the entity in slot `index` was recorded in frame `seq` (still in the ring).
    #[inline]
    pub(super) fn recorded_in(&self, index: usize, seq: u64) -> bool {
        seq >= self.oldest_seq() && self.recorded_at(index, seq, self.ring(seq))
    }

    /// [`History::recorded_in`] for a frame known to be in the ring at slot `ring`.
    #[inline]
    pub(super) fn recorded_at(&self, index: usize, seq: u64, ring: usize) -> bool {
        let slot = &self.slots[index];
        seq <= slot.last_seq && self.entity_frame(index, ring).seq == seq as u32
    }

    #[inline]
    fn single(&self, index: usize, ring: usize, kind: SampleKind) -> EntitySample {
        let frame = self.entity_frame(index, ring);
        EntitySample {
            kind,
            a: ring,
            b: ring,
            alpha: 0.0,
            state: EntityState::from_frame(frame),
            bounds: frame.bounds(),
        }
    }

    /// The entity in slot `index` at the bracket's moment, or `None` if it did not exist
    /// then. When its lag compensation was off at that moment, its present pose is used
    /// (with the flags it had at the moment).
    #[inline(always)]
    pub(crate) fn sample(&self, index: usize, bracket: &Bracket) -> Option<EntitySample> {
        let rewound = self.sample_rewound(index, bracket)?;
        if rewound.state.lag_compensated {
            return Some(rewound);
        }
        let mut present = self.sample_present(index)?;
        present.state = rewound.state;
        Some(present)
    }

    /// The entity in its newest recorded frame.
    pub(crate) fn sample_present(&self, index: usize) -> Option<EntitySample> {
        let seq = self.slots[index].last_seq;
        if seq == 0 || !self.recorded_in(index, seq) {
            return None;
        }
        let tick = self.meta(seq).tick;
        Some(self.single(index, self.ring(seq), SampleKind::Present { tick }))
    }

    #[inline]
    pub(crate) fn sample_rewound(&self, index: usize, bracket: &Bracket) -> Option<EntitySample> {
        let tick = |ring: usize| self.frames[ring].tick;
        Some(match self.pick(index, bracket)? {
            Pick::Exact(ring) => self.single(index, ring, SampleKind::Exact { tick: tick(ring) }),
            Pick::Nearest(ring, reason) => self.single(
                index,
                ring,
                SampleKind::Nearest {
                    tick: tick(ring),
                    reason,
                },
            ),
            Pick::Blend(a, b) => {
                let (fa, fb) = (self.entity_frame(index, a), self.entity_frame(index, b));
                EntitySample {
                    kind: SampleKind::Interpolated {
                        from: tick(a),
                        to: tick(b),
                        alpha: bracket.alpha,
                    },
                    a,
                    b,
                    alpha: bracket.alpha,
                    // The state of the older frame holds until the newer one begins.
                    state: EntityState::from_frame(fa),
                    bounds: fa.bounds().union(&fb.bounds()),
                }
            }
        })
    }

    /// Which of its stored frames the entity in slot `index` is rewound from at the
    /// bracket's moment (`None`: it did not exist then). [`History::sample_rewound`] builds
    /// its sample from this; a trace's tree walk decides on it without building one.
    #[inline(always)]
    fn pick(&self, index: usize, bracket: &Bracket) -> Option<Pick> {
        let (older, newer) = (bracket.older, bracket.newer);
        let (a, b) = bracket.rings;
        if older == newer {
            return self.recorded_at(index, older, a).then_some(Pick::Exact(a));
        }
        let slot = &self.slots[index];
        let teleported_in = |seq: u64| {
            self.recorded_in(index, seq)
                && self.entity_frame(index, self.ring(seq)).flags & TELEPORTED != 0
        };
        match (
            self.recorded_at(index, older, a),
            self.recorded_at(index, newer, b),
        ) {
            (true, true) => {
                // A tick-pair target may span frames the client never saw; a teleport in
                // any of them forbids the blend. (Between adjacent frames that is the newer
                // one alone, known to be recorded at ring slot `b`.)
                let teleported = if newer == older + 1 {
                    self.entity_frame(index, b).flags & TELEPORTED != 0
                } else {
                    (older + 1..=newer).any(teleported_in)
                };
                if teleported {
                    let ring = if bracket.alpha < 0.5 { a } else { b };
                    return Some(Pick::Nearest(ring, NearestReason::Teleport));
                }
                Some(Pick::Blend(a, b))
            }
            (true, false) => Some(Pick::Nearest(a, NearestReason::MissingNeighbour)),
            // Before its first frame, or before appearing with a teleport, the entity did
            // not exist: a spawn is never pulled back in time.
            (false, true) if slot.first_seq >= newer || teleported_in(newer) => None,
            (false, true) => Some(Pick::Nearest(b, NearestReason::MissingNeighbour)),
            (false, false) => None,
        }
    }

    /// The entity in slot `index` as a trace's walk over the entity tree needs it first:
    /// the frames to read and how to blend them, when [`History::sample`] would rewind it
    /// (lag compensation on: the tree walk leaves the others to the uncompensated list)
    /// and it was alive and on one of `layers` then; `None` otherwise. The same decision
    /// [`History::sample`] and a query's admission checks make, without building the
    /// sample (kind, state, bounds): a trace rebuilds that only for the hit it keeps.
    #[inline(always)]
    pub(crate) fn rewound_for_tree(
        &self,
        index: usize,
        bracket: &Bracket,
        layers: u32,
    ) -> Option<Rewound> {
        let (a, b, state_ring) = match self.pick(index, bracket)? {
            Pick::Exact(ring) | Pick::Nearest(ring, _) => (ring, ring, ring),
            Pick::Blend(a, b) => (a, b, a),
        };
        let frame = self.entity_frame(index, state_ring);
        let wanted = ALIVE | LAG_COMPENSATED;
        (frame.flags & wanted == wanted && frame.layers & layers != 0).then_some(Rewound {
            a,
            b,
            alpha: if a == b { 0.0 } else { bracket.alpha },
        })
    }

    /// Prefetches what a trace reads first of the entity in slot `index` at the bracket:
    /// its frame records and translation rows in the bracket's two frames (the same frame
    /// twice for an exact one). Only a hint (see [`crate::simd::prefetch_line`]): nothing
    /// is read, so nothing is checked beyond the slot index.
    ///
    /// PERF: a trace reads the frame records, then (after their checks) the translation
    /// rows for the bone cull, each step waiting on the one before: asking for them as the
    /// tree walk pushes the entity's leaf lets their misses overlap with each other and
    /// with the rest of the walk. The rotation rows are not asked for: only the bones the
    /// cull passes (a few of a rig's) read theirs, and prefetching every line of both rows
    /// for every survivor of the walk (24 prefetches a survivor of a 16-bone rig with
    /// them, 12 without) cost the walk more than it saved the bones. On an AVX-512 host,
    /// funnel (`FUNNEL_SHORT=1`, pinned, alternated with the rotations' form, minima
    /// (medians)):
    /// walk+admit (layers 0) 64x16 71-75 -> 61-63 ns; full query 64x16 153-163 (165-167)
    /// -> 156-162 (161-163) ns, 200x20 234-242 (243-247) -> 220-236 (239-243) ns, 5000x20
    /// 439-460 -> 441-447 ns; callgrind 2,540 -> 2,475 / 3,746 -> 3,642 / 4,675 -> 4,603
    /// instructions a shot.
    #[inline(always)]
    pub(crate) fn prefetch_rewound(&self, index: usize, bracket: &Bracket) {
        use crate::simd::prefetch_line;
        let Some(slot) = self.slots.get(index) else {
            return;
        };
        let (a, b) = bracket.rings;
        let lanes = &self.lanes;
        let t = lanes.translations.as_ptr();
        let (ta, tb) = (
            t.wrapping_add(lanes.row(slot, a)).cast::<u8>(),
            t.wrapping_add(lanes.row(slot, b)).cast::<u8>(),
        );
        let frames = lanes.frames.as_ptr();
        for record in [
            frames.wrapping_add(lanes.frame(index, a)),
            frames.wrapping_add(lanes.frame(index, b)),
        ] {
            // 36 bytes: one line, or two when it straddles.
            let record = record.cast::<u8>();
            prefetch_line(record);
            prefetch_line(record.wrapping_add(35));
        }
        let translation_bytes = 12 * slot.bone_count;
        let mut offset = 0;
        while offset < translation_bytes {
            prefetch_line(ta.wrapping_add(offset));
            prefetch_line(tb.wrapping_add(offset));
            offset += 64;
        }
        // The rows' last lines, which a row not starting on a line boundary spills into.
        let last = translation_bytes.max(1) - 1;
        prefetch_line(ta.wrapping_add(last));
        prefetch_line(tb.wrapping_add(last));
    }

    /// The sampled entity's bones, ready for the per-hitbox loop of a query.
    #[inline(always)]
    pub(crate) fn view(&self, index: usize, sample: &EntitySample) -> EntityView<'_> {
        self.view_of(index, sample.a, sample.b, sample.alpha)
    }

    /// [`History::view`] for an entity picked by [`History::rewound_for_tree`].
    #[inline(always)]
    pub(crate) fn rewound_view(&self, index: usize, rewound: &Rewound) -> EntityView<'_> {
        self.view_of(index, rewound.a, rewound.b, rewound.alpha)
    }

    #[inline(always)]
    fn view_of(&self, index: usize, a: usize, b: usize, alpha: f32) -> EntityView<'_> {
        let slot = &self.slots[index];
        let bc = slot.bone_count;
        let rows = |ring: usize| {
            let at = self.lanes.row(slot, ring);
            let range = at..at + bc;
            (
                &self.lanes.translations[range.clone()],
                &self.lanes.rotations[range],
            )
        };
        let scale_rows = |ring: usize| {
            (!slot.scales.is_empty()).then(|| &slot.scales[ring * bc..(ring + 1) * bc])
        };
        EntityView {
            a: rows(a),
            b: rows(b),
            scales_a: scale_rows(a),
            scales_b: scale_rows(b),
            alpha,
            single: a == b,
        }
    }

    /// Bone `bone` of the entity in slot `index`, as sampled.
    #[inline]
    pub(crate) fn bone(&self, index: usize, sample: &EntitySample, bone: usize) -> BoneTransform {
        self.view(index, sample).bone(bone)
    }
}

/// One sampled entity's two frames of bone poses (the same frame twice when a single frame
/// is used), borrowed from its rings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EntityView<'h> {
    pub(super) a: (&'h [StoredTranslation], &'h [StoredRotation]),
    pub(super) b: (&'h [StoredTranslation], &'h [StoredRotation]),
    pub(super) scales_a: Option<&'h [[f32; 3]]>,
    pub(super) scales_b: Option<&'h [[f32; 3]]>,
    pub(super) alpha: f32,
    pub(super) single: bool,
}

impl EntityView<'_> {
    /// Bone `bone` at the sampled moment: lerped translation and scale, slerped rotation;
    /// the stored pose bit for bit when a single frame is used.
    #[inline]
    pub(crate) fn bone(&self, bone: usize) -> BoneTransform {
        let scale =
            |rows: Option<&[[f32; 3]]>| rows.map_or(Vec3::ONE, |r| Vec3::from_array(r[bone]));
        if self.single {
            return BoneTransform::from_stored(
                &self.a.0[bone],
                &self.a.1[bone],
                scale(self.scales_a),
            );
        }
        let t = |rows: &[StoredTranslation]| Vec3::from_array(rows[bone]);
        let q = |rows: &[StoredRotation]| glam::Quat::from_array(rows[bone]);
        BoneTransform {
            translation: lerp(t(self.a.0), t(self.b.0), self.alpha),
            rotation: slerp(q(self.a.1), q(self.b.1), self.alpha),
            scale: lerp(scale(self.scales_a), scale(self.scales_b), self.alpha),
        }
    }

    /// Whether a single frame is used (no blend).
    #[inline]
    pub(crate) fn single(&self) -> bool {
        self.single
    }

    /// Bone `bone`'s translation and rotation at the sampled moment, exactly as
    /// [`EntityView::bone`] computes them, for an entity without a scale lane (whose bones
    /// then have unit scale: `lerp(1, 1, alpha)` is exactly 1 for every alpha in `[0, 1]`,
    /// checked over every `f32`). `SINGLE`: the view uses one frame (a loop over bones
    /// decides once, not per bone).
    #[inline(always)]
    pub(crate) fn bone_unscaled_as<const SINGLE: bool>(&self, bone: usize) -> BoneTransform {
        debug_assert!(!self.has_scale() && self.single == SINGLE);
        let t = |rows: &[StoredTranslation]| Vec3::from_array(rows[bone]);
        let q = |rows: &[StoredRotation]| glam::Quat::from_array(rows[bone]);
        if SINGLE {
            return BoneTransform::new(t(self.a.0), q(self.a.1));
        }
        BoneTransform::new(
            lerp(t(self.a.0), t(self.b.0), self.alpha),
            slerp(q(self.a.1), q(self.b.1), self.alpha),
        )
    }

    /// Bone `bone`'s origin and an upper bound of its largest scale component: enough to
    /// cull its hitboxes by their reach before paying for a slerp.
    #[inline]
    pub(crate) fn bone_origin(&self, bone: usize) -> (Vec3, f32) {
        let ta = Vec3::from_array(self.a.0[bone]);
        let origin = if self.single {
            ta
        } else {
            lerp(ta, Vec3::from_array(self.b.0[bone]), self.alpha)
        };
        let max_scale = match (self.scales_a, self.scales_b) {
            // Lerped scale never exceeds the larger end.
            (Some(sa), Some(sb)) => sa[bone].into_iter().chain(sb[bone]).fold(0.0_f32, f32::max),
            _ => 1.0,
        };
        (origin, max_scale)
    }

    /// Whether any bone has a scale other than one in either frame (then
    /// [`EntityView::cull_bones`] does not apply).
    #[inline]
    pub(crate) fn has_scale(&self) -> bool {
        self.scales_a.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::super::cull::*;
    use super::*;
    use crate::history::HistoryConfig;
    use crate::simd::Kernels;

    /// A history of frames only (no entities) at these times, ticks 1, 2, 3, ...
    fn frames_at(times: &[f64]) -> History {
        let mut h = History::new(HistoryConfig {
            tick_rate: 64.0,
            max_rewind: 0.5,
        })
        .expect("valid config");
        for (k, &time) in times.iter().enumerate() {
            h.begin_frame(Tick(k as u32 + 1), time)
                .expect("increasing")
                .finish();
        }
        h
    }

    /// The frame a linear scan finds: the newest at or before `time`.
    fn scan(h: &History, time: f64) -> u64 {
        (h.oldest_seq()..=h.newest_seq)
            .rev()
            .find(|&seq| h.meta(seq).time <= time)
            .expect("time is inside the ring")
    }

    #[test]
    fn the_eight_lane_bone_cull_gives_the_four_lane_mask() {
        // Every lane computes the same operations in the same order, so the AVX2 kernel's
        // mask equals the SSE kernel's bit for bit, for exact and blended entities, any
        // bone count (whole groups of eight, a whole four and a partial four after them),
        // and rays that graze, pass and miss the bones.
        for kernels in Kernels::available() {
            use rand::{Rng as _, SeedableRng as _};
            let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(14);
            let (mut compared, mut set) = (0, 0);
            for round in 0..3000 {
                let bones = rng.random_range(1..=140_usize);
                let point = |rng: &mut rand_pcg::Pcg64Mcg| {
                    [
                        rng.random_range(-3.0..3.0_f32),
                        rng.random_range(-3.0..3.0_f32),
                        rng.random_range(-3.0..3.0_f32),
                    ]
                };
                let ta: Vec<StoredTranslation> = (0..bones).map(|_| point(&mut rng)).collect();
                let tb: Vec<StoredTranslation> = (0..bones).map(|_| point(&mut rng)).collect();
                let rotations: Vec<StoredRotation> = vec![[0.0, 0.0, 0.0, 1.0]; bones];
                let reach: Vec<f32> = (0..bones).map(|_| rng.random_range(0.0..1.5)).collect();
                let carrying: Vec<u8> = (0..bones.div_ceil(4))
                    .map(|_| rng.random_range(0..16_u8))
                    .collect();
                let single = round % 3 == 0;
                let view = EntityView {
                    a: (&ta, &rotations),
                    b: (if single { &ta } else { &tb }, &rotations),
                    scales_a: None,
                    scales_b: None,
                    alpha: if single {
                        0.0
                    } else {
                        rng.random_range(0.0..1.0)
                    },
                    single,
                };
                let origin = Vec3::from_array(point(&mut rng)) * 4.0;
                let dir = (Vec3::from_array(point(&mut rng)) - origin).normalize_or(Vec3::X);
                let line = LineLanes::new(origin, dir, rng.random_range(0.0..0.3), kernels);
                let t_max = rng.random_range(0.0..20.0);
                for first in (0..bones).step_by(64) {
                    // The eight lanes (where these kernels have them) against the four.
                    let wide = view.cull_bones(first, &carrying, &reach, &line, t_max);
                    let narrow = view.cull_bones_sse(first, &carrying, &reach, &line, t_max);
                    assert_eq!(wide, narrow, "round {round} first {first}");
                    compared += 1;
                    set += wide.count_ones();
                }
            }
            assert!(
                compared > 3000 && set > 1000,
                "{compared} masks, {set} bones kept"
            );
        }
    }

    #[test]
    fn four_points_become_lanes() {
        let rows: Vec<StoredTranslation> = (0..6)
            .map(|k| [k as f32, 10.0 + k as f32, -20.0 - k as f32])
            .collect();
        for first in 0..6 {
            let [xs, ys, zs] = lanes_of_four(&rows, first);
            for k in 0..4 {
                // Past the end, the last row repeats.
                let row = rows[(first + k).min(5)];
                assert_eq!([xs[k], ys[k], zs[k]], row, "first {first} lane {k}");
            }
        }
    }

    #[test]
    fn the_frame_before_a_time_is_found_with_regular_and_irregular_ticks() {
        // Regular ticks (the ring wraps), regular ticks at another rate than the configured
        // 64 Hz (the guess from the window's span), jittered ticks, a stall, and a burst.
        let regular: Vec<f64> = (0..100).map(|k| 10.0 + f64::from(k) / 64.0).collect();
        let off_rate: Vec<f64> = (0..100).map(|k| 5.0 + f64::from(k) / 50.0).collect();
        let jittered: Vec<f64> = (0..60)
            .map(|k| 3.0 + f64::from(k) / 64.0 + f64::from(k * 7 % 5) * 0.002)
            .collect();
        let mut stalled: Vec<f64> = (0..20).map(|k| f64::from(k) / 64.0).collect();
        stalled.extend((0..15).map(|k| 2.0 + f64::from(k) / 64.0));
        let burst: Vec<f64> = (0..30)
            .map(|k| {
                if k < 25 {
                    f64::from(k) * 1e-3
                } else {
                    1.0 + f64::from(k)
                }
            })
            .collect();
        let mut checked = 0;
        for times in [regular, off_rate, jittered, stalled, burst] {
            let h = frames_at(&times);
            let (lo, hi) = (h.meta(h.oldest_seq()).time, h.meta(h.newest_seq).time);
            for k in 0..=997 {
                let time = lo + (hi - lo) * f64::from(k) / 997.0;
                let (seq, ring) = h.last_frame_at_or_before(time);
                assert_eq!(seq, scan(&h, time), "{time}");
                assert_eq!(ring, h.ring(seq), "{time}");
                checked += 1;
            }
            // Exactly on every frame.
            for seq in h.oldest_seq()..=h.newest_seq {
                assert_eq!(
                    h.last_frame_at_or_before(h.meta(seq).time),
                    (seq, h.ring(seq))
                );
            }
        }
        assert_eq!(checked, 5 * 998);
    }
}

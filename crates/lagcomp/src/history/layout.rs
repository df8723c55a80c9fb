//! Where each entity's rows lie in the history's lanes ([`Lanes`]): the frame-major
//! layout, laying it out again when entities come, and when a batch streams its stores.
//! The lanes' memory and the allocation of bone places are `lane`'s.

use super::lane::{self, BoneRanges, Lane};
use super::{EntityFrame, EntitySlot, EntityVelocity, StoredRotation, StoredTranslation};

/// The rings of every entity, one allocation per lane.
///
/// Layout (frame-major): each lane is `capacity` blocks, one per ring slot, of `row_stride`
/// bone places (bone lanes) or `frame_stride` records (frame lane). Entity slot `i` with
/// `n` bones has its row of ring slot `r` at `r * row_stride + bones_at` (`n` consecutive
/// bones) and its frame record at `r * frame_stride + i`. A tick writes one block of each
/// lane, front to back when entities are recorded in the order they were spawned: three
/// sequential streams, which the hardware prefetches, instead of a few lines in every
/// entity's ring.
#[derive(Debug, Clone, Default)]
pub(super) struct Lanes {
    /// Bone translations, and one spare element after the last row: recording's 16-byte
    /// stores spill onto the element after a row and put it back (see `bone_pass`).
    pub(super) translations: Lane<StoredTranslation>,
    /// Bone rotations, row for row with the translations.
    pub(super) rotations: Lane<StoredRotation>,
    /// Per-entity frame records.
    pub(super) frames: Lane<EntityFrame>,
    /// Per-entity velocities, record for record with `frames` (written only by
    /// `FrameRecorder::record_velocity`).
    pub(super) velocities: Lane<EntityVelocity>,
    /// Bone places per ring slot block (at least `ranges.end()`).
    pub(super) row_stride: usize,
    /// Frame records per ring slot block (at least the number of entity slots).
    pub(super) frame_stride: usize,
    /// Which bone places belong to which entity.
    pub(super) ranges: BoneRanges,
    /// Slots spawned since the lanes were last fitted (`History::fit_lanes`): their places
    /// may lie past the lanes' end, and their rows are reset there.
    pub(super) pending: Vec<u32>,
    /// Whether a batch writes the rows with non-temporal (streaming) stores: the bone lanes
    /// hold at least [`STREAM_MIN_BYTES`] (see there).
    pub(super) stream: bool,
    /// Tests: streaming on or off whatever the size.
    #[cfg(test)]
    pub(super) force_stream: Option<bool>,
}

/// Bone lanes of at least this many bytes are written by [`FrameRecorder::record_all`](super::FrameRecorder::record_all)
/// with streaming stores (x86_64 with AVX2), which go to memory without first reading each
/// line. A ring slot is rewritten once per window, after every other slot: when the lanes
/// are larger than the last-level cache (32 MiB on the machine measured), the slot being
/// written has left the caches, and a plain store waits for its line to be read from
/// memory. Smaller lanes keep plain stores: their
/// rows are still cached when rewritten, and queries read the newest frames warm.
pub(super) const STREAM_MIN_BYTES: usize = 32 << 20;

/// The identity rotation, as stored.
pub(super) const IDENTITY_ROTATION: StoredRotation = [0.0, 0.0, 0.0, 1.0];

impl Lanes {
    /// Index in the bone lanes of `slot`'s row of ring slot `ring`.
    #[inline(always)]
    pub(super) fn row(&self, slot: &EntitySlot, ring: usize) -> usize {
        ring * self.row_stride + slot.bones_at
    }

    /// Index in the frame lane of slot `index`'s record of ring slot `ring`.
    #[inline(always)]
    pub(super) fn frame(&self, index: usize, ring: usize) -> usize {
        ring * self.frame_stride + index
    }

    /// Lays the lanes out again (a copy of every row) if their blocks are shorter than
    /// `places` bone places or `slots` frame records, to the length `stride(old, needed)`
    /// gives.
    ///
    /// Bone blocks are a whole number of [`lane::GROUP`]s long, so that every aligned range
    /// of places is aligned in every block.
    pub(super) fn fit(
        &mut self,
        capacity: usize,
        places: usize,
        slots: usize,
        stride: impl Fn(usize, usize) -> usize,
    ) {
        if self.row_stride < places {
            let new = stride(self.row_stride, places).next_multiple_of(lane::GROUP);
            let strides = (self.row_stride, new);
            // One spare translation after the last block: see `bone_pass`.
            self.translations = restrided(&self.translations, capacity, strides, 1, [0.0; 3]);
            self.rotations = restrided(&self.rotations, capacity, strides, 0, IDENTITY_ROTATION);
            self.row_stride = strides.1;
        }
        if self.frame_stride < slots {
            let strides = (self.frame_stride, stride(self.frame_stride, slots));
            self.frames = restrided(&self.frames, capacity, strides, 0, EntityFrame::NEVER);
            self.velocities = restrided(
                &self.velocities,
                capacity,
                strides,
                0,
                EntityVelocity::NEVER,
            );
            self.frame_stride = strides.1;
        }
        self.stream =
            self.translations.held_bytes() + self.rotations.held_bytes() >= STREAM_MIN_BYTES;
        #[cfg(test)]
        if let Some(forced) = self.force_stream {
            self.stream = forced;
        }
    }
}

/// `lane` (`capacity` blocks of `old` elements, then `extra`) laid out again as
/// `capacity` blocks of `new` elements, then `extra`: each block keeps its elements at the
/// front and is filled with `fill` after them.
fn restrided<T: Copy>(
    lane: &Lane<T>,
    capacity: usize,
    (old, new): (usize, usize),
    extra: usize,
    fill: T,
) -> Lane<T> {
    debug_assert!(new >= old && lane.len() == capacity * old + if old == 0 { 0 } else { extra });
    let mut grown = Lane::filled(capacity * new + extra, fill);
    for ring in 0..capacity {
        grown[ring * new..][..old].copy_from_slice(&lane[ring * old..][..old]);
    }
    grown
}

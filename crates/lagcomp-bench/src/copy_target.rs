//! Where the memcpy baselines copy to: a destination placed half a page from its source.
//!
//! glibc copies blocks from a few KiB up with `rep movsb`, and on this machine's AMD EPYC
//! that instruction runs about 20 times slower when the destination starts 1 to 31 bytes
//! after the source modulo 4 KiB (measured with 48 KiB blocks, one per distance 0..4096:
//! 20.5-21.8 µs at those 31 distances, 1.0-1.3 µs at every other). Two buffers of the same
//! size allocated one after the other land exactly there: malloc's 16-byte chunk header
//! puts the second 16 bytes after the first modulo the page when their size is a multiple
//! of 4 KiB, as the 64-entity scene's 49,152-byte frame is. The `funnel` example hit it
//! (its memcpy line read 16-24 µs against criterion's 1.3 µs).
//!
//! A baseline that depends on where the allocator happened to put two buffers is not a
//! baseline, and a slow one would flatter `record/memcpy`. So the destination of every
//! memcpy baseline starts at 2 KiB (half a page) after its source modulo 4 KiB, far from
//! the slow distances whatever the copy engine, and in a ring every slot does.

use lagcomp::BoneTransform;

/// Bytes per page, the period of the slow distances.
const PAGE: usize = 4096;
/// Where each destination starts relative to its source, modulo a page (4 KiB).
pub const DISTANCE: usize = PAGE / 2;
/// Transforms per page period: a slot stride of a multiple of this keeps every slot at
/// the same distance from the source (48-byte transforms: 256 of them are 3 pages).
const STRIDE_STEP: usize = PAGE / 16;

/// `slots` destinations, each as long as the source and each starting [`DISTANCE`]
/// bytes after it modulo a page.
#[derive(Debug)]
pub struct CopyTarget {
    buffer: Vec<BoneTransform>,
    start: usize,
    stride: usize,
    len: usize,
    slots: usize,
}

impl CopyTarget {
    /// Destinations for copies of `source`, which must not move while they are used (the
    /// distance is computed from its address now).
    #[must_use]
    pub fn new(source: &[BoneTransform], slots: usize) -> Self {
        const {
            assert!(
                size_of::<BoneTransform>().is_multiple_of(16) && align_of::<BoneTransform>() >= 16
            )
        };
        let len = source.len();
        let slots = slots.max(1);
        let stride = len.div_ceil(STRIDE_STEP).max(1) * STRIDE_STEP;
        // One page period of slack to move the start by.
        let buffer = vec![BoneTransform::IDENTITY; stride * slots + STRIDE_STEP];
        let here = (buffer.as_ptr() as usize).wrapping_sub(source.as_ptr() as usize);
        let wanted = DISTANCE.wrapping_sub(here) % PAGE;
        // Moving the start by one transform moves the distance by its size modulo a page;
        // both buffers are 16-byte aligned, so some start within one period lands on it.
        let start = (0..STRIDE_STEP)
            .find(|k| (k * size_of::<BoneTransform>()) % PAGE == wanted)
            .unwrap_or(0);
        Self {
            buffer,
            start,
            stride,
            len,
            slots,
        }
    }

    /// How many destinations there are.
    #[must_use]
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// Destination `slot` (modulo [`CopyTarget::slots`]), as long as the source.
    pub fn slot(&mut self, slot: usize) -> &mut [BoneTransform] {
        let at = self.start + (slot % self.slots) * self.stride;
        &mut self.buffer[at..at + self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn distance(to: &[BoneTransform], from: &[BoneTransform]) -> usize {
        (to.as_ptr() as usize).wrapping_sub(from.as_ptr() as usize) % PAGE
    }

    #[test]
    fn every_slot_starts_half_a_page_from_the_source() {
        for len in [1, 7, 1024, 4000, 4096, 5003] {
            // Sources at every 16-byte offset of a page, through a sliced allocation.
            let backing = vec![BoneTransform::IDENTITY; len + STRIDE_STEP];
            for skip in [0, 1, 5, 100, 255] {
                let source = &backing[skip..skip + len];
                let mut target = CopyTarget::new(source, 3);
                for slot in 0..target.slots() {
                    let to = target.slot(slot);
                    assert_eq!(to.len(), len);
                    assert_eq!(distance(to, source), DISTANCE, "len {len} skip {skip}");
                }
            }
        }
    }

    #[test]
    fn slots_do_not_overlap() {
        let source = vec![BoneTransform::IDENTITY; 300];
        let mut target = CopyTarget::new(&source, 4);
        let starts: Vec<usize> = (0..4).map(|s| target.slot(s).as_ptr() as usize).collect();
        for pair in starts.windows(2) {
            assert!(pair[1] - pair[0] >= 300 * size_of::<BoneTransform>());
        }
    }
}

//! A bare copy of the bytes a tick stores: each bone's translation (12 bytes) and rotation
//! (16 bytes) copied field by field into the next row of two lanes as long as the history,
//! with nothing checked and nothing bounded.
//!
//! Why it is in the suite: `record/memcpy` compares a tick with glibc's `memcpy` of the
//! input into one hot buffer. How close any recorder can come to that depends on the
//! machine's memory system as much as on the recorder: a tick writes its rows into a ring
//! longer than the L2 cache (every row is cold when it is written again), and the
//! ordinary stores that fill it wait for each line to be read first, which glibc's
//! `rep movsb` does not. This baseline is the same traffic as a tick's bone pass (the
//! 48-byte inputs read, 28 bytes a bone written into the ring) with no work at all, so
//! `copy-rows/memcpy` says what the machine allows a recorder of this layout, and
//! `record/copy-rows` what the recorder adds to it.

use glam::{Quat, Vec3};
use lagcomp::BoneTransform;

/// Cache line: rows start on one, as the history's lanes do.
const LINE: usize = 64;

/// Two lanes of `slots` rows of `len` bones each (a translation and a rotation a bone).
#[derive(Debug)]
pub struct RowCopy {
    translations: Vec<Vec3>,
    rotations: Vec<Quat>,
    /// Bones per row, padded so every row starts on a cache line in both lanes.
    stride: usize,
    len: usize,
    slots: usize,
}

impl RowCopy {
    /// Lanes for `slots` rows of `len` bones.
    #[must_use]
    pub fn new(len: usize, slots: usize) -> Self {
        // A multiple of 16 bones is a whole number of lines in both lanes (16 * 12 bytes
        // and 16 * 16 bytes); the slack lets the first row start on a line (at most 15
        // translations or 3 rotations in).
        let stride = len.div_ceil(16).max(1) * 16;
        let slots = slots.max(1);
        let slack = LINE;
        Self {
            translations: vec![Vec3::ZERO; stride * slots + slack],
            rotations: vec![Quat::IDENTITY; stride * slots + slack],
            stride,
            len,
            slots,
        }
    }

    /// How many rows there are.
    #[must_use]
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// Copies `bones`' translations and rotations into row `slot` (modulo
    /// [`RowCopy::slots`]).
    ///
    /// # Panics
    /// If `bones` is not as long as a row.
    pub fn copy(&mut self, slot: usize, bones: &[BoneTransform]) {
        assert_eq!(bones.len(), self.len, "one row of bones");
        let row = (slot % self.slots) * self.stride;
        let t_at = row + first_on_line(&self.translations);
        let r_at = row + first_on_line(&self.rotations);
        let translations = &mut self.translations[t_at..t_at + self.len];
        let rotations = &mut self.rotations[r_at..r_at + self.len];
        for ((t, r), bone) in translations.iter_mut().zip(rotations).zip(bones) {
            *t = bone.translation;
            *r = bone.rotation;
        }
    }

    /// The bits of row `slot`'s bone `i` (for tests).
    #[must_use]
    pub fn bone(&self, slot: usize, i: usize) -> (Vec3, Quat) {
        let row = (slot % self.slots) * self.stride;
        (
            self.translations[row + first_on_line(&self.translations) + i],
            self.rotations[row + first_on_line(&self.rotations) + i],
        )
    }
}

/// The first element of `lane` that starts a cache line.
fn first_on_line<T>(lane: &[T]) -> usize {
    let address = lane.as_ptr() as usize;
    // Vec3s sit on 4 bytes and step by 12, Quats on 16 and step by 16: either reaches
    // every distance to a line its alignment allows within `LINE` elements.
    (0..LINE)
        .find(|k| (address + k * size_of::<T>()).is_multiple_of(LINE))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_hold_the_bones_and_start_on_lines() {
        let bones: Vec<BoneTransform> = (0..20)
            .map(|i| {
                BoneTransform::new(
                    Vec3::new(i as f32, 1.0, -2.0),
                    Quat::from_rotation_y(i as f32 * 0.1),
                )
            })
            .collect();
        let mut rows = RowCopy::new(bones.len(), 3);
        rows.copy(4, &bones);
        for (i, bone) in bones.iter().enumerate() {
            assert_eq!(rows.bone(1, i), (bone.translation, bone.rotation));
            assert_eq!(rows.bone(0, i), (Vec3::ZERO, Quat::IDENTITY));
        }
        for slot in 0..rows.slots() {
            let row = slot * rows.stride;
            let t = &rows.translations[row + first_on_line(&rows.translations)];
            let r = &rows.rotations[row + first_on_line(&rows.rotations)];
            assert_eq!(std::ptr::from_ref(t) as usize % LINE, 0);
            assert_eq!(std::ptr::from_ref(r) as usize % LINE, 0);
        }
    }
}

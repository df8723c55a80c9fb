//! What the validator remembers of each shooter's shots between claims: the sequence
//! numbers used (the replay check) and the claimed times of the shots that counted (the
//! fire-rate check). Both are fixed-size, so judging a shot never allocates. The checks
//! that read them, and when a shot counts, are in `validator.rs`.

use crate::measurement::Measurement;
use crate::verdict::RejectReason;

/// Sequence numbers already used by one shooter: the highest seen and a bit per number
/// in the window behind it.
#[derive(Debug, Clone, Default)]
pub(crate) struct SequenceWindow {
    highest: Option<u32>,
    /// Bit `seq % 2048` is set when `seq` (within the window) was used. Twice the largest
    /// window: a claim `sequence_window` (up to 1024) behind the highest is admitted, so
    /// the highest and every number down to 1024 behind it need bits of their own.
    used: Box<[u64; 32]>,
}

impl SequenceWindow {
    const BITS: u64 = 2048;

    fn bit(seq: u32) -> (usize, u64) {
        let i = u64::from(seq) % Self::BITS;
        ((i / 64) as usize, 1 << (i % 64))
    }

    /// Marks `seq` used, or says why it cannot be.
    pub(crate) fn admit(&mut self, seq: u32, window: u32) -> Result<(), RejectReason> {
        // Checked rules hold at most 1024; unchecked ones are held to what the bits cover.
        let window = window.min((Self::BITS / 2) as u32);
        let Some(highest) = self.highest else {
            self.highest = Some(seq);
            let (w, b) = Self::bit(seq);
            self.used[w] |= b;
            return Ok(());
        };
        if seq > highest {
            let ahead = u64::from(seq - highest);
            if ahead >= Self::BITS {
                self.used.fill(0);
            } else {
                for s in highest + 1..=seq {
                    let (w, b) = Self::bit(s);
                    self.used[w] &= !b;
                }
            }
            self.highest = Some(seq);
        } else if highest - seq > window {
            // `window` behind the highest is still inside the window (the documented rule).
            return Err(RejectReason::SequenceTooOld);
        }
        let (w, b) = Self::bit(seq);
        if self.used[w] & b != 0 {
            return Err(RejectReason::Replayed);
        }
        self.used[w] |= b;
        Ok(())
    }

    /// How far `seq` lies behind the highest number seen, against the window, when that
    /// is what [`Self::admit`] refused it for.
    pub(crate) fn behind(&self, seq: u32, window: u32) -> Option<Measurement> {
        let window = window.min((Self::BITS / 2) as u32);
        let behind = self.highest?.checked_sub(seq)?;
        if behind <= window {
            return None;
        }
        Measurement::at_most(f64::from(behind), f64::from(window))
    }
}

/// The claimed times of the shots one shooter fired that counted, with every weapon,
/// sorted: the newest [`FiredShots::CAPACITY`] by claimed time. Fixed size, so counting a
/// shot never allocates.
#[derive(Debug, Clone)]
pub(crate) struct FiredShots {
    times: Box<[f64; FiredShots::CAPACITY]>,
    len: usize,
}

impl Default for FiredShots {
    fn default() -> Self {
        Self {
            times: Box::new([0.0; Self::CAPACITY]),
            len: 0,
        }
    }
}

impl FiredShots {
    /// Twice the longest run a rule can ask about (a burst of 64 and the shots around it).
    pub(crate) const CAPACITY: usize = 136;

    pub(crate) fn held(&self) -> &[f64] {
        &self.times[..self.len]
    }

    /// The shots claimed at `from` or later.
    pub(crate) fn since(&self, from: f64) -> &[f64] {
        let held = self.held();
        &held[held.partition_point(|&f| f < from)..]
    }

    /// Remembers a shot claimed at `t`; when full, the oldest is forgotten (which may be
    /// this one).
    pub(crate) fn insert(&mut self, t: f64) {
        let at = self.held().partition_point(|&f| f <= t);
        if self.len == Self::CAPACITY {
            if at == 0 {
                return;
            }
            // Drop the oldest: shift the older part down by one and put `t` at `at - 1`.
            self.times.copy_within(1..at, 0);
            self.times[at - 1] = t;
            return;
        }
        self.times.copy_within(at..self.len, at + 1);
        self.times[at] = t;
        self.len += 1;
    }
}

/// Whether a shot at claimed time `t` keeps every run of shots (with the recent ones,
/// sorted in `fired`) within the weapon's rate: `m` intervals need at least
/// `(m - burst) * spacing` seconds.
pub(crate) fn spacing_allows(fired: &[f64], t: f64, spacing: f64, burst: u32) -> bool {
    let at = fired.partition_point(|&f| f <= t);
    let burst = burst as usize;
    let need = |intervals: usize| intervals.saturating_sub(burst) as f64 * spacing;
    // Runs that start or end at the new shot.
    let earlier = fired[..at].iter().rev().enumerate();
    for (k, &f) in earlier {
        if t - f < need(k + 1) {
            return false;
        }
    }
    for (k, &f) in fired[at..].iter().enumerate() {
        if f - t < need(k + 1) {
            return false;
        }
    }
    // Runs across it, which it lengthens by one interval.
    for i in 0..at {
        for j in at..fired.len() {
            if fired[j] - fired[i] < need(j - i + 1) {
                return false;
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_window_rejects_replays_and_stale_numbers() {
        let mut w = SequenceWindow::default();
        assert_eq!(w.admit(10, 4), Ok(()));
        assert_eq!(w.admit(10, 4), Err(RejectReason::Replayed));
        assert_eq!(w.admit(12, 4), Ok(()));
        assert_eq!(w.admit(11, 4), Ok(()), "late but inside the window");
        assert_eq!(w.admit(11, 4), Err(RejectReason::Replayed));
        assert_eq!(w.admit(7, 4), Err(RejectReason::SequenceTooOld));
        assert_eq!(
            w.admit(8, 4),
            Ok(()),
            "exactly the window behind the highest"
        );
        assert_eq!(w.admit(9, 4), Ok(()));
        assert_eq!(w.admit(5000, 4), Ok(()), "a jump clears the window");
        assert_eq!(w.admit(12 + 2048, 4), Err(RejectReason::SequenceTooOld));
        assert_eq!(w.admit(4999, 4), Ok(()));
        assert_eq!(w.admit(5000, 4), Err(RejectReason::Replayed));
    }

    #[test]
    fn spacing_honours_interval_and_burst() {
        // A hair under 0.1 s, as the validator's slack makes it (exact decimal times are
        // not exact in binary).
        let s = 0.0999;
        assert!(spacing_allows(&[], 1.0, s, 0));
        assert!(spacing_allows(&[1.0], 1.1, s, 0));
        assert!(!spacing_allows(&[1.0], 1.05, s, 0));
        assert!(
            !spacing_allows(&[1.1], 1.05, s, 0),
            "an earlier shot arriving late"
        );
        assert!(!spacing_allows(&[1.0, 1.2], 1.15, s, 0));
        assert!(spacing_allows(&[1.0, 1.2], 1.1, s, 0));
        // A burst of 2: three shots at once are fine, a fourth is not...
        assert!(spacing_allows(&[1.0, 1.0], 1.0, s, 2));
        assert!(!spacing_allows(&[1.0, 1.0, 1.0], 1.0, s, 2));
        // ...and after the burst the average rate holds: 4 shots need 1 interval.
        assert!(spacing_allows(&[1.0, 1.0, 1.0], 1.1, s, 2));
        assert!(!spacing_allows(&[1.0, 1.0, 1.0], 1.09, s, 2));
    }

    #[test]
    fn the_largest_sequence_window_reaches_its_full_width() {
        let mut w = SequenceWindow::default();
        assert_eq!(w.admit(3000, 1024), Ok(()));
        // 1024 behind shares no bit with the highest: a first use, not a replay.
        assert_eq!(w.admit(3000 - 1024, 1024), Ok(()));
        assert_eq!(w.admit(3000 - 1024, 1024), Err(RejectReason::Replayed));
        assert_eq!(
            w.admit(3000 - 1025, 1024),
            Err(RejectReason::SequenceTooOld)
        );
        assert_eq!(w.admit(3000, 1024), Err(RejectReason::Replayed));
    }

    #[test]
    fn the_shot_memory_keeps_the_newest_in_order_without_growing() {
        let mut fired = FiredShots::default();
        for i in (0..FiredShots::CAPACITY + 10).rev() {
            fired.insert(i as f64);
        }
        // Inserted newest first: once full, each older shot is the one forgotten.
        assert_eq!(fired.held().len(), FiredShots::CAPACITY);
        assert_eq!(fired.held()[0], 10.0);
        fired.insert(1000.0);
        fired.insert(50.5);
        let held = fired.held();
        assert_eq!(held.len(), FiredShots::CAPACITY);
        assert_eq!((held[0], held[held.len() - 1]), (12.0, 1000.0));
        assert!(held.windows(2).all(|w| w[0] <= w[1]), "{held:?}");
        assert!(held.contains(&50.5));
        assert_eq!(fired.since(144.0), [144.0, 145.0, 1000.0]);
    }
}

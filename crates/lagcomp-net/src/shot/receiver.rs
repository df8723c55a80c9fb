//! The server's side of redundant shot sending: telling copies from replays.

use std::collections::BTreeMap;

/// What [`ShotReceiver::accept`] made of a shot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// A sequence number not seen before: validate the shot.
    New,
    /// The exact content already delivered under this sequence number: a redundant copy,
    /// which is transport, not a replay. Drop it silently.
    Copy,
    /// Cannot be a copy of anything delivered: the same sequence number with different
    /// content, or a sequence number older than the receiver remembers (or 0, which is
    /// reserved). Pass it to the validator, which rejects it as replayed.
    Conflict,
}

/// One client's shots as the server received them: which sequence numbers were delivered,
/// with a fingerprint of their content (see [`crate::Fingerprint`]).
///
/// Memory is bounded: the fingerprints of the last `window` sequence numbers delivered are
/// kept (1024 by default). The acknowledgement ([`ShotReceiver::ack`]) is the highest
/// sequence number up to which every shot was delivered or given up on; a gap is given up
/// once `give_up_after` newer sequence numbers (32 by default) have been seen past it,
/// since the client stops repeating a shot after a few packets and the gap would otherwise
/// hold the acknowledgement back for good.
///
/// ```
/// use lagcomp_net::{Delivery, ShotReceiver};
///
/// let mut receiver = ShotReceiver::new();
/// assert_eq!(receiver.accept(1, 0xa), Delivery::New);
/// assert_eq!(receiver.accept(1, 0xa), Delivery::Copy);
/// assert_eq!(receiver.accept(1, 0xb), Delivery::Conflict);
/// assert_eq!(receiver.accept(3, 0xc), Delivery::New);
/// assert_eq!(receiver.ack(), 1); // 2 is missing
/// assert_eq!(receiver.accept(2, 0xd), Delivery::New);
/// assert_eq!(receiver.ack(), 3);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShotReceiver {
    window: usize,
    give_up_after: u32,
    /// Fingerprints of delivered sequence numbers, at most `window` of them.
    delivered: BTreeMap<u32, u64>,
    /// Every sequence number up to this one is settled (delivered or given up); 0 at first.
    settled: u32,
    /// The highest sequence number delivered.
    highest: u32,
}

impl ShotReceiver {
    /// Fingerprints kept by [`ShotReceiver::new`].
    pub const DEFAULT_WINDOW: usize = 1024;
    /// Gap patience of [`ShotReceiver::new`], in sequence numbers.
    pub const DEFAULT_GIVE_UP_AFTER: u32 = 32;

    /// A receiver that has seen nothing, with the default window and gap patience.
    #[must_use]
    pub fn new() -> Self {
        Self::with_limits(Self::DEFAULT_WINDOW, Self::DEFAULT_GIVE_UP_AFTER)
    }

    /// A receiver keeping `window` fingerprints (at least 1) that gives a gap up once
    /// `give_up_after` newer sequence numbers (at least 1) have been delivered past it.
    #[must_use]
    pub fn with_limits(window: usize, give_up_after: u32) -> Self {
        Self {
            window: window.max(1),
            give_up_after: give_up_after.max(1),
            delivered: BTreeMap::new(),
            settled: 0,
            highest: 0,
        }
    }

    /// Classifies shot `seq` whose content hashes to `fingerprint`, and remembers it if it
    /// is new.
    pub fn accept(&mut self, seq: u32, fingerprint: u64) -> Delivery {
        if let Some(&known) = self.delivered.get(&seq) {
            return if known == fingerprint {
                Delivery::Copy
            } else {
                Delivery::Conflict
            };
        }
        if seq <= self.settled {
            // Delivered long ago and forgotten, given up on, or 0.
            return Delivery::Conflict;
        }
        self.delivered.insert(seq, fingerprint);
        if self.delivered.len() > self.window {
            // The oldest fingerprint goes; everything up to it counts as settled, so its
            // sequence number can never come back as new.
            if let Some((oldest, _)) = self.delivered.pop_first() {
                self.settled = self.settled.max(oldest);
            }
        }
        self.highest = self.highest.max(seq);
        // Jump over gaps the client has certainly stopped repeating.
        self.settled = self
            .settled
            .max(self.highest.saturating_sub(self.give_up_after));
        while self.settled < u32::MAX && self.delivered.contains_key(&(self.settled + 1)) {
            self.settled += 1;
        }
        Delivery::New
    }

    /// The acknowledgement to send back: every shot up to this sequence number was delivered
    /// or given up on (0 before anything).
    #[must_use]
    pub fn ack(&self) -> u32 {
        self.settled
    }

    /// The highest sequence number delivered (0 before anything).
    #[must_use]
    pub fn highest(&self) -> u32 {
        self.highest
    }
}

impl Default for ShotReceiver {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_conflicts_and_the_reserved_zero() {
        let mut r = ShotReceiver::new();
        assert_eq!(r.accept(0, 1), Delivery::Conflict);
        assert_eq!(r.accept(2, 20), Delivery::New);
        assert_eq!(r.accept(2, 20), Delivery::Copy);
        assert_eq!(r.accept(2, 21), Delivery::Conflict);
        // A conflict does not overwrite what was delivered.
        assert_eq!(r.accept(2, 20), Delivery::Copy);
        assert_eq!(r.ack(), 0);
        assert_eq!(r.highest(), 2);
    }

    #[test]
    fn gaps_hold_the_ack_until_filled_or_given_up() {
        let mut r = ShotReceiver::with_limits(1024, 4);
        assert_eq!(r.accept(1, 1), Delivery::New);
        assert_eq!(r.accept(3, 3), Delivery::New);
        assert_eq!(r.accept(4, 4), Delivery::New);
        assert_eq!(r.ack(), 1);
        assert_eq!(r.accept(5, 5), Delivery::New);
        assert_eq!(r.ack(), 1);
        // 6 is four past the gap at 2: given up, and the ack runs on through 6.
        assert_eq!(r.accept(6, 6), Delivery::New);
        assert_eq!(r.ack(), 6);
        // The given-up shot arriving now cannot be told from a replay.
        assert_eq!(r.accept(2, 2), Delivery::Conflict);
    }

    #[test]
    fn memory_is_bounded_and_forgotten_seqs_never_come_back_new() {
        let mut r = ShotReceiver::with_limits(8, 1000);
        // Every other sequence number with a patience longer than the run: only the window
        // bounds memory.
        for seq in (1..200).step_by(2) {
            assert_eq!(r.accept(seq, u64::from(seq)), Delivery::New);
            assert!(r.delivered.len() <= 8);
        }
        assert_eq!(r.accept(1, 1), Delivery::Conflict);
        assert_eq!(r.accept(2, 2), Delivery::Conflict, "below the oldest kept");
        assert_eq!(r.accept(199, 199), Delivery::Copy);
        assert_eq!(r.accept(200, 200), Delivery::New);
    }

    #[test]
    fn a_huge_jump_is_cheap_and_the_top_is_safe() {
        let mut r = ShotReceiver::new();
        assert_eq!(r.accept(1, 1), Delivery::New);
        assert_eq!(r.accept(u32::MAX - 1, 7), Delivery::New);
        assert_eq!(r.ack(), u32::MAX - 1 - 32);
        assert_eq!(r.accept(u32::MAX, 8), Delivery::New);
        assert_eq!(r.accept(u32::MAX, 8), Delivery::Copy);
        assert_eq!(r.accept(5, 5), Delivery::Conflict);
    }
}

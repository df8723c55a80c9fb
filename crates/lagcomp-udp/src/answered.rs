//! The server's memory of the shots it answered lately, per connection: a copy of an
//! answered claim (same sequence number, same content) is answered again from here, not
//! validated again and not written again to the recording and the audit log.
//!
//! Why: netcode's shot receiver (`lagcomp_net::ShotReceiver`) drops a redundant copy of a
//! shot it delivered, but a sequence number it no longer remembers (0, or older than its
//! window) can only be passed on as a replay. Without this memory a client repeating one
//! such claim in every input made the server validate and write it every time: 500
//! inputs a second with 8 copies each grew the files at 3.34 MB/s against 0.59 in a
//! clean match. A claim with the same number and other content is new, and validated.
//!
//! What is not here: the cap on verdicts per second (the server's tick), the outbox that
//! repeats verdicts until acknowledged (`lagcomp_wire::verdicts`).

use lagcomp_wire::WireOutcome;

/// What the memory holds for a shot (see [`AnsweredShots::recall`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Recall {
    /// Not among the shots remembered: validate it.
    Unknown,
    /// An exact copy of a shot taken for validation this tick, not yet answered: its
    /// verdict is on its way.
    Pending,
    /// An exact copy of a shot answered with `outcome`, given the outbox's verdict number
    /// `number`.
    Answered {
        /// The verdict.
        outcome: WireOutcome,
        /// Its number in the connection's `VerdictOutbox`.
        number: u32,
    },
}

/// One remembered shot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct AnsweredShot {
    seq: u32,
    /// `lagcomp_game::traffic::fingerprint` of the claim.
    print: u64,
    /// `None` until answered.
    answer: Option<(WireOutcome, u32)>,
}

/// The last [`AnsweredShots::CAPACITY`] shots a connection had validated, oldest forgotten
/// first. Allocates once, when made.
#[derive(Debug, Clone)]
pub(crate) struct AnsweredShots {
    shots: Vec<AnsweredShot>,
    /// Where the next shot goes once full (the oldest).
    next: usize,
}

impl AnsweredShots {
    /// Shots remembered per connection: 6 s of a rifle at its 10 a second, and a
    /// replaying client cycling through more claims than this is held back by the cap
    /// on verdicts a second instead.
    pub(crate) const CAPACITY: usize = 64;

    /// An empty memory.
    pub(crate) fn new() -> Self {
        Self {
            shots: Vec::with_capacity(Self::CAPACITY),
            next: 0,
        }
    }

    /// What is known of shot `seq` whose claim's fingerprint is `print`.
    #[must_use]
    pub(crate) fn recall(&self, seq: u32, print: u64) -> Recall {
        // PERF: a scan of at most 64 entries of 24 bytes, once per shot the receiver did
        // not drop as a copy: cheaper than hashing, and nothing to allocate.
        match self.shots.iter().find(|s| s.seq == seq && s.print == print) {
            None => Recall::Unknown,
            Some(AnsweredShot { answer: None, .. }) => Recall::Pending,
            Some(AnsweredShot {
                answer: Some((outcome, number)),
                ..
            }) => Recall::Answered {
                outcome: *outcome,
                number: *number,
            },
        }
    }

    /// Remembers shot `seq` (`print`) as taken for validation, forgetting the oldest if
    /// full.
    pub(crate) fn take(&mut self, seq: u32, print: u64) {
        let shot = AnsweredShot {
            seq,
            print,
            answer: None,
        };
        if self.shots.len() < Self::CAPACITY {
            self.shots.push(shot);
        } else {
            self.shots[self.next] = shot;
            self.next = (self.next + 1) % Self::CAPACITY;
        }
    }

    /// Shot `seq` (`print`) was answered with `outcome`, verdict number `number` of the
    /// outbox (again, when a copy was answered by resending it). Nothing if it was
    /// forgotten meanwhile.
    pub(crate) fn answer(&mut self, seq: u32, print: u64, outcome: WireOutcome, number: u32) {
        if let Some(shot) = self
            .shots
            .iter_mut()
            .find(|s| s.seq == seq && s.print == print)
        {
            shot.answer = Some((outcome, number));
        }
    }
}

#[cfg(test)]
mod tests {
    use lagcomp_validate::RejectReason;

    use super::*;

    const REPLAYED: WireOutcome = WireOutcome::Rejected(RejectReason::Replayed);

    #[test]
    fn an_exact_copy_is_answered_from_memory_and_a_changed_claim_is_not() {
        let mut memory = AnsweredShots::new();
        assert_eq!(memory.recall(0, 0xa), Recall::Unknown);
        memory.take(0, 0xa);
        // A second copy in the same tick: its verdict is on its way.
        assert_eq!(memory.recall(0, 0xa), Recall::Pending);
        memory.answer(0, 0xa, REPLAYED, 7);
        assert_eq!(
            memory.recall(0, 0xa),
            Recall::Answered {
                outcome: REPLAYED,
                number: 7
            }
        );
        // The same number with other content, or other numbers, are new claims.
        assert_eq!(memory.recall(0, 0xb), Recall::Unknown);
        assert_eq!(memory.recall(1, 0xa), Recall::Unknown);
        // Answered again (resent): the memory follows the newest number.
        memory.answer(0, 0xa, REPLAYED, 9);
        assert_eq!(
            memory.recall(0, 0xa),
            Recall::Answered {
                outcome: REPLAYED,
                number: 9
            }
        );
        // An answer for a shot never taken is ignored.
        memory.answer(5, 0xc, WireOutcome::Miss, 10);
        assert_eq!(memory.recall(5, 0xc), Recall::Unknown);
    }

    #[test]
    fn the_oldest_are_forgotten_first_and_memory_stays_bounded() {
        let mut memory = AnsweredShots::new();
        let n = AnsweredShots::CAPACITY as u32;
        for seq in 0..3 * n {
            memory.take(seq, u64::from(seq) * 3);
            memory.answer(seq, u64::from(seq) * 3, WireOutcome::Miss, seq);
            assert!(memory.shots.len() <= AnsweredShots::CAPACITY);
            assert_eq!(
                memory.shots.capacity(),
                AnsweredShots::CAPACITY,
                "no growth"
            );
        }
        // The last CAPACITY are remembered, everything before is not.
        for seq in 0..3 * n {
            let known = memory.recall(seq, u64::from(seq) * 3) != Recall::Unknown;
            assert_eq!(known, seq >= 2 * n, "seq {seq}");
        }
    }
}

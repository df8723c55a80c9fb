//! The client's side of redundant shot sending.

use std::collections::VecDeque;

/// Shots waiting for the server's acknowledgement, repeated in every packet until acked.
///
/// A shot is small and only useful for a few hundred milliseconds (after that the server
/// cannot rewind far enough), so instead of retransmitting on a timeout the client sends
/// the last `redundancy` unacknowledged shots in every packet: one lost packet costs
/// nothing. Only those `redundancy` shots are kept; an older unacknowledged shot is
/// abandoned when a newer one pushes it out, which bounds memory.
///
/// ```
/// use lagcomp_net::ShotSender;
///
/// let mut sender = ShotSender::new(3);
/// for seq in 1..=4 {
///     sender.fire(seq, format!("shot {seq}"));
/// }
/// // Shot 1 was pushed out; the packet carries 2, 3, 4.
/// let seqs: Vec<u32> = sender.packet().into_iter().map(|(seq, _)| seq).collect();
/// assert_eq!(seqs, [2, 3, 4]);
/// sender.ack(3);
/// assert_eq!(sender.packet(), [(4, "shot 4".to_string())]);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ShotSender<T: Clone> {
    redundancy: usize,
    /// Unacknowledged shots, oldest first, sequence numbers increasing.
    unacked: VecDeque<(u32, T)>,
    newest: u32,
}

impl<T: Clone> ShotSender<T> {
    /// A sender that repeats each shot in up to `redundancy` packets (3 is a good default;
    /// 0 is taken as 1).
    #[must_use]
    pub fn new(redundancy: usize) -> Self {
        let redundancy = redundancy.max(1);
        Self {
            redundancy,
            unacked: VecDeque::with_capacity(redundancy),
            newest: 0,
        }
    }

    /// How many unacknowledged shots a packet carries at most.
    #[must_use]
    pub fn redundancy(&self) -> usize {
        self.redundancy
    }

    /// Queues shot `seq`. Sequence numbers must increase: `seq` 0 (reserved) and a `seq` not
    /// above the newest fired are refused, and the result is `false`.
    pub fn fire(&mut self, seq: u32, shot: T) -> bool {
        if seq == 0 || seq <= self.newest {
            return false;
        }
        self.newest = seq;
        if self.unacked.len() == self.redundancy {
            self.unacked.pop_front();
        }
        self.unacked.push_back((seq, shot));
        true
    }

    /// The shots to put in the next packet: every unacknowledged shot kept, oldest first.
    #[must_use]
    pub fn packet(&self) -> Vec<(u32, T)> {
        self.unacked.iter().cloned().collect()
    }

    /// The unacknowledged shots kept, oldest first, without cloning.
    pub fn pending(&self) -> impl ExactSizeIterator<Item = &(u32, T)> + '_ {
        self.unacked.iter()
    }

    /// The server received every shot up to `up_to_seq` (cumulative): forget them. 0 means
    /// nothing was received and changes nothing.
    pub fn ack(&mut self, up_to_seq: u32) {
        while self
            .unacked
            .front()
            .is_some_and(|(seq, _)| *seq <= up_to_seq)
        {
            self.unacked.pop_front();
        }
    }

    /// The server received shot `seq` (selective): forget it.
    pub fn ack_one(&mut self, seq: u32) {
        if let Ok(i) = self.unacked.binary_search_by_key(&seq, |(s, _)| *s) {
            self.unacked.remove(i);
        }
    }

    /// The newest sequence number fired, 0 before the first shot.
    #[must_use]
    pub fn newest_seq(&self) -> u32 {
        self.newest
    }
}

impl<T: Clone> Default for ShotSender<T> {
    /// A sender with redundancy 3.
    fn default() -> Self {
        Self::new(3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_carry_the_newest_unacked_oldest_first() {
        let mut s = ShotSender::new(3);
        assert!(s.packet().is_empty());
        assert!(s.fire(1, 'a'));
        assert!(s.fire(2, 'b'));
        assert_eq!(s.packet(), [(1, 'a'), (2, 'b')]);
        assert!(s.fire(5, 'c'));
        assert!(s.fire(6, 'd'));
        assert_eq!(s.packet(), [(2, 'b'), (5, 'c'), (6, 'd')]);
        assert_eq!(s.pending().len(), 3);
    }

    #[test]
    fn acks_forget_shots() {
        let mut s = ShotSender::new(4);
        for seq in 1..=4 {
            s.fire(seq, seq * 10);
        }
        s.ack(0);
        assert_eq!(s.packet().len(), 4);
        s.ack_one(3);
        assert_eq!(s.packet(), [(1, 10), (2, 20), (4, 40)]);
        s.ack_one(3);
        s.ack_one(99);
        s.ack(2);
        assert_eq!(s.packet(), [(4, 40)]);
        s.ack(100);
        assert!(s.packet().is_empty());
        // An ack never un-fires: the next shot must still be newer.
        assert!(!s.fire(4, 0));
        assert!(s.fire(5, 50));
    }

    #[test]
    fn reserved_and_old_sequence_numbers_are_refused() {
        let mut s = ShotSender::new(0);
        assert_eq!(s.redundancy(), 1);
        assert!(!s.fire(0, ()));
        assert!(s.fire(7, ()));
        assert!(!s.fire(7, ()));
        assert!(!s.fire(3, ()));
        assert_eq!(s.packet(), [(7, ())]);
        assert_eq!(s.newest_seq(), 7);
    }
}

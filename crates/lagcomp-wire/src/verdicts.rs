//! Shot verdicts delivered by repetition rather than by a reliable channel.
//!
//! The server numbers each client's verdicts 0, 1, 2, ... and keeps the ones the client
//! has not acknowledged in a [`VerdictOutbox`]. Every datagram it sends the client carries
//! the oldest of them as one [`Verdicts`] message, next to the snapshot, until the client
//! says (in its [`crate::Input`], `verdicts_received`) that it has every verdict below
//! some number. A lost datagram costs nothing but a few bytes in the next: the same
//! verdicts are in it. The client's [`VerdictInbox`] hands on each verdict once, in
//! order, and counts what it never got (the server gives up on the oldest only when
//! [`VerdictOutbox::CAPACITY`] are waiting, that is a client that stopped acknowledging).
//!
//! Why not renet's reliable channel: renet packs each channel into packets of its own, so
//! a verdict on a reliable channel cost a datagram of its own beside the snapshot's, and
//! datagrams are what a tick with 200 clients spends its time on. A verdict is 10 to 20
//! bytes; repeating a few of them costs far less than a datagram.
//!
//! Numbers compare as serial numbers (wrapping, within 2^31 of each other), so a
//! connection never runs out of them.
//!
//! ```
//! use lagcomp::{EntityId, HitboxId};
//! use lagcomp_validate::{VerdictOutcome, RejectReason};
//! use lagcomp_wire::{ServerMessage, WireOutcome, WireVerdict, VerdictInbox, VerdictOutbox};
//!
//! // The server: each verdict of this client's shots goes into its outbox...
//! let mut outbox = VerdictOutbox::new();
//! let refused = VerdictOutcome::Rejected { reason: RejectReason::FireRate };
//! outbox.push(WireVerdict { seq: 41, outcome: WireOutcome::from(&refused) });
//! outbox.push(WireVerdict {
//!     seq: 42,
//!     outcome: WireOutcome::Confirmed { target: EntityId::from_bits(5), hitbox: HitboxId(1) },
//! });
//! // ...and every datagram to the client carries the ones not yet acknowledged.
//! let mut bytes = Vec::new();
//! assert!(outbox.encode(&mut bytes)?);
//!
//! // The client hands each on once, however often it arrives.
//! let mut inbox = VerdictInbox::new();
//! let ServerMessage::Verdicts(message) = ServerMessage::decode(&bytes)? else { panic!() };
//! let new: Vec<_> = inbox.receive(&message).iter().map(|r| r.outcome.label()).collect();
//! assert_eq!(new, ["fire_rate", "confirmed"]);
//! assert!(inbox.receive(&message).is_empty(), "a repeat");
//!
//! // Its next input says it has both; the server stops sending them.
//! outbox.acknowledge(inbox.received());
//! assert!(outbox.is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::VecDeque;

use crate::codec::{Reader, Writer, encode_into, kind};
use crate::error::{DecodeError, EncodeError};
use crate::shot_result::WireVerdict;

/// The most verdicts one [`Verdicts`] message carries (the oldest waiting go first; the
/// rest follow once they are acknowledged). At 20 bytes each at most, 32 keep the message
/// well inside one datagram beside a snapshot part.
pub const MAX_VERDICTS_PER_MESSAGE: usize = 32;

/// The fewest bytes a verdict takes: its shot's sequence number and the outcome tag.
const MIN_VERDICT_BYTES: usize = 5;

/// Consecutive verdicts for one client: `results[i]` is verdict number `first + i`
/// (wrapping).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Verdicts {
    /// The number of the first verdict here.
    pub first: u32,
    /// The verdicts, in number order. At most [`MAX_VERDICTS_PER_MESSAGE`].
    pub results: Vec<WireVerdict>,
}

impl Verdicts {
    pub(crate) fn write(&self, w: &mut Writer<'_>) -> Result<(), EncodeError> {
        write_run(w, self.first, self.results.iter())
    }

    pub(crate) fn read(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let first = r.u32("verdicts.first")?;
        let count = r.count_u8(
            "verdicts.count",
            "verdicts",
            MAX_VERDICTS_PER_MESSAGE,
            MIN_VERDICT_BYTES,
        )?;
        let mut results = Vec::with_capacity(count);
        for _ in 0..count {
            results.push(WireVerdict::read(r)?);
        }
        Ok(Self { first, results })
    }
}

/// The body of a verdicts message: first number, count, each verdict.
fn write_run<'a>(
    w: &mut Writer<'_>,
    first: u32,
    results: impl ExactSizeIterator<Item = &'a WireVerdict>,
) -> Result<(), EncodeError> {
    let count = results.len();
    if count > MAX_VERDICTS_PER_MESSAGE {
        return Err(EncodeError::TooMany {
            field: "verdicts",
            count,
            max: MAX_VERDICTS_PER_MESSAGE,
        });
    }
    w.u32(first);
    // The cap is far below 256: one byte.
    w.u8(count as u8);
    for result in results {
        result.write(w)?;
    }
    Ok(())
}

/// The server's side: one client's verdicts not yet acknowledged (see the
/// [module documentation](self)). Allocates only while it grows to the most ever waiting.
#[derive(Debug, Clone, Default)]
pub struct VerdictOutbox {
    /// The number the next verdict pushed gets.
    next: u32,
    /// Verdicts `next - len .. next`, oldest first.
    waiting: VecDeque<WireVerdict>,
    /// Verdicts dropped unacknowledged because [`Self::CAPACITY`] were waiting.
    given_up: u64,
}

impl VerdictOutbox {
    /// The most verdicts kept waiting for one client: 25 s of a rifle at 10 shots a
    /// second. Only a client that stops acknowledging reaches it; the oldest then go.
    pub const CAPACITY: usize = 256;

    /// An empty outbox; the first verdict is number 0.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Numbers the verdict and keeps it until acknowledged (dropping the oldest waiting
    /// if [`Self::CAPACITY`] are).
    pub fn push(&mut self, result: WireVerdict) {
        if self.waiting.len() >= Self::CAPACITY {
            self.waiting.pop_front();
            self.given_up += 1;
        }
        self.waiting.push_back(result);
        self.next = self.next.wrapping_add(1);
    }

    /// The number of the oldest verdict waiting (or of the next one, with none waiting).
    #[must_use]
    pub fn first(&self) -> u32 {
        // At most `CAPACITY` waiting: the cast is exact.
        self.next.wrapping_sub(self.waiting.len() as u32)
    }

    /// Verdicts waiting for the client's acknowledgement.
    #[must_use]
    pub fn len(&self) -> usize {
        self.waiting.len()
    }

    /// Whether none is waiting.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// Verdicts given up on unacknowledged (a client that stopped acknowledging).
    #[must_use]
    pub fn given_up(&self) -> u64 {
        self.given_up
    }

    /// The client has every verdict numbered below `received`: they stop being sent. A
    /// number that acknowledges nothing waiting, or more than was ever sent (an old
    /// input arriving late, or a lying client), changes nothing.
    pub fn acknowledge(&mut self, received: u32) {
        let acknowledged = received.wrapping_sub(self.first()) as usize;
        if acknowledged <= self.waiting.len() {
            self.waiting.drain(..acknowledged);
        }
    }

    /// Appends the oldest verdicts waiting (at most [`MAX_VERDICTS_PER_MESSAGE`]) to `out`
    /// as one whole [`crate::ServerMessage::Verdicts`] message, after whatever `out`
    /// holds; returns whether it wrote one (not with none waiting).
    ///
    /// # Errors
    /// A verdict the client could not decode (a rejection reason newer than
    /// `RejectReason::ALL`); `out` is then as it was.
    pub fn append_message(&self, out: &mut Vec<u8>) -> Result<bool, EncodeError> {
        if self.waiting.is_empty() {
            return Ok(false);
        }
        let start = out.len();
        let mut writer = Writer::append(out, kind::VERDICTS);
        let count = self.waiting.len().min(MAX_VERDICTS_PER_MESSAGE);
        let result = write_run(&mut writer, self.first(), self.waiting.range(..count))
            .and_then(|()| writer.finish());
        match result {
            Ok(()) => Ok(true),
            Err(error) => {
                out.truncate(start);
                Err(error)
            }
        }
    }

    /// The same message into `out` alone (cleared first).
    ///
    /// # Errors
    /// As [`Self::append_message`]; `out` is then empty.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<bool, EncodeError> {
        out.clear();
        if self.waiting.is_empty() {
            return Ok(false);
        }
        let count = self.waiting.len().min(MAX_VERDICTS_PER_MESSAGE);
        encode_into(out, kind::VERDICTS, |w| {
            write_run(w, self.first(), self.waiting.range(..count))
        })
        .map(|()| true)
    }
}

/// The client's side: hands on each verdict once, in order (see the
/// [module documentation](self)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VerdictInbox {
    /// Every verdict numbered below this has been handed on (or skipped).
    next: u32,
    /// Verdicts the server gave up on before this client got them.
    skipped: u64,
    /// Verdicts received again after they were handed on.
    repeated: u64,
}

impl VerdictInbox {
    /// An inbox expecting verdict 0.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The verdicts in `message` not handed on before, in order (a suffix of its
    /// results). A message that starts past the next expected number means the server
    /// gave up on the ones between: they are counted in [`Self::skipped`]. A message
    /// older than what was handed on (reordered, or repeated) yields nothing.
    pub fn receive<'a>(&mut self, message: &'a Verdicts) -> &'a [WireVerdict] {
        let count = message.results.len();
        // Serial number arithmetic: how far the message starts ahead of what is expected
        // (negative: behind).
        let ahead = message.first.wrapping_sub(self.next) as i32;
        let (skip, gap) = if ahead >= 0 {
            (0, ahead.unsigned_abs())
        } else {
            (ahead.unsigned_abs() as usize, 0)
        };
        let skip = skip.min(count);
        self.repeated += skip as u64;
        let new = &message.results[skip..];
        if !new.is_empty() {
            self.skipped += u64::from(gap);
            // At most MAX_VERDICTS_PER_MESSAGE of them: the cast is exact.
            self.next = message
                .first
                .wrapping_add(skip as u32)
                .wrapping_add(new.len() as u32);
        }
        new
    }

    /// What the client acknowledges in its next input: every verdict numbered below this
    /// has been handed on.
    #[must_use]
    pub fn received(&self) -> u32 {
        self.next
    }

    /// Verdicts the server gave up on before this client got them (numbers it never saw).
    #[must_use]
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Verdicts that arrived again after they were handed on (the repetition's cost).
    #[must_use]
    pub fn repeated(&self) -> u64 {
        self.repeated
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ServerMessage;
    use crate::shot_result::WireOutcome;

    fn result(seq: u32) -> WireVerdict {
        WireVerdict {
            seq,
            outcome: WireOutcome::Miss,
        }
    }

    fn sent(outbox: &VerdictOutbox) -> Verdicts {
        let mut bytes = Vec::new();
        assert!(outbox.encode(&mut bytes).expect("encodes"));
        match ServerMessage::decode(&bytes).expect("decodes") {
            ServerMessage::Verdicts(verdicts) => verdicts,
            other => panic!("not verdicts: {other:?}"),
        }
    }

    #[test]
    fn a_verdict_repeats_until_acknowledged_and_is_handed_on_once() {
        let mut outbox = VerdictOutbox::new();
        let mut inbox = VerdictInbox::new();
        let mut bytes = Vec::new();
        assert!(!outbox.encode(&mut bytes).expect("nothing to encode"));
        assert!(bytes.is_empty());
        outbox.push(result(10));
        outbox.push(result(11));
        let first = sent(&outbox);
        assert_eq!(first.first, 0);
        assert_eq!(inbox.receive(&first), &[result(10), result(11)]);
        assert_eq!(inbox.received(), 2);
        // Before the acknowledgement arrives the same two go again, with a third.
        outbox.push(result(12));
        let second = sent(&outbox);
        assert_eq!(second.results.len(), 3);
        assert_eq!(inbox.receive(&second), &[result(12)]);
        assert_eq!(inbox.repeated(), 2);
        // A reordered old message yields nothing.
        assert!(inbox.receive(&first).is_empty());
        outbox.acknowledge(inbox.received());
        assert!(outbox.is_empty());
        assert_eq!(outbox.first(), 3);
        assert!(!outbox.encode(&mut bytes).expect("nothing to encode"));
        assert_eq!(inbox.skipped(), 0);
    }

    #[test]
    fn every_verdict_arrives_once_in_order_through_heavy_loss() {
        // A 30 % lossy link both ways, with datagrams delayed by up to three ticks (so
        // reordered): what the client hands on is exactly what the server pushed.
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut random = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut outbox = VerdictOutbox::new();
        let mut inbox = VerdictInbox::new();
        let mut pushed = Vec::new();
        let mut handed_on = Vec::new();
        let mut down: Vec<(u32, Verdicts)> = Vec::new();
        let mut up: Vec<(u32, u32)> = Vec::new();
        for tick in 0..5_000_u32 {
            if tick < 4_000 && random() % 3 == 0 {
                let seq = pushed.len() as u32;
                outbox.push(result(seq));
                pushed.push(result(seq));
            }
            if !outbox.is_empty() && random() % 10 >= 3 {
                down.push((tick + (random() % 4) as u32, sent(&outbox)));
            }
            for (_, message) in down.extract_if(.., |(at, _)| *at <= tick) {
                handed_on.extend_from_slice(inbox.receive(&message));
            }
            if random() % 10 >= 3 {
                up.push((tick + (random() % 4) as u32, inbox.received()));
            }
            for (_, received) in up.extract_if(.., |(at, _)| *at <= tick) {
                outbox.acknowledge(received);
            }
        }
        assert!(pushed.len() > 1_000);
        assert_eq!(handed_on, pushed);
        assert!(outbox.is_empty());
        assert_eq!(inbox.skipped(), 0);
        assert!(inbox.repeated() > 0);
    }

    #[test]
    fn stale_or_impossible_acknowledgements_change_nothing() {
        let mut outbox = VerdictOutbox::new();
        for seq in 0..5 {
            outbox.push(result(seq));
        }
        outbox.acknowledge(2);
        assert_eq!((outbox.first(), outbox.len()), (2, 3));
        // An older input arriving late.
        outbox.acknowledge(1);
        assert_eq!((outbox.first(), outbox.len()), (2, 3));
        // More than was ever sent.
        outbox.acknowledge(6);
        outbox.acknowledge(u32::MAX);
        assert_eq!((outbox.first(), outbox.len()), (2, 3));
        outbox.acknowledge(5);
        assert!(outbox.is_empty());
    }

    #[test]
    fn a_client_that_never_acknowledges_loses_only_the_oldest() {
        let mut outbox = VerdictOutbox::new();
        let total = VerdictOutbox::CAPACITY as u32 + 40;
        for seq in 0..total {
            outbox.push(result(seq));
        }
        assert_eq!(outbox.len(), VerdictOutbox::CAPACITY);
        assert_eq!(outbox.given_up(), 40);
        let message = sent(&outbox);
        assert_eq!(message.results.len(), MAX_VERDICTS_PER_MESSAGE);
        assert_eq!(message.first, 40);
        let mut inbox = VerdictInbox::new();
        let new = inbox.receive(&message);
        assert_eq!(new.first(), Some(&result(40)));
        assert_eq!(inbox.skipped(), 40);
        assert_eq!(inbox.received(), 40 + MAX_VERDICTS_PER_MESSAGE as u32);
    }

    #[test]
    fn numbers_wrap() {
        let mut outbox = VerdictOutbox {
            next: u32::MAX - 1,
            ..VerdictOutbox::default()
        };
        let mut inbox = VerdictInbox {
            next: u32::MAX - 1,
            ..VerdictInbox::default()
        };
        for seq in 0..4 {
            outbox.push(result(seq));
        }
        let message = sent(&outbox);
        assert_eq!(message.first, u32::MAX - 1);
        assert_eq!(inbox.receive(&message).len(), 4);
        assert_eq!(inbox.received(), 2);
        outbox.acknowledge(inbox.received());
        assert!(outbox.is_empty());
        assert_eq!(outbox.first(), 2);
    }

    #[test]
    fn append_message_keeps_what_the_buffer_held() {
        let mut outbox = VerdictOutbox::new();
        outbox.push(result(7));
        let mut alone = Vec::new();
        assert!(outbox.encode(&mut alone).expect("encodes"));
        let mut out = vec![1, 2, 3];
        assert!(outbox.append_message(&mut out).expect("encodes"));
        assert_eq!(&out[..3], &[1, 2, 3]);
        assert_eq!(&out[3..], &alone[..]);
    }
}

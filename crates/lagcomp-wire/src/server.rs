//! What the server sends: the welcome, snapshot parts, clock-sync answers, round-trip
//! probes, shot acknowledgements and shot verdicts.
//!
//! Snapshots themselves (entities, bones, splitting) live in [`crate::snapshot`]; one
//! shot's verdict ([`crate::WireVerdict`]) in [`crate::shot_result`], and their delivery in
//! [`crate::verdicts`].

use lagcomp::EntityId;
use lagcomp_net::Pong;

use crate::codec::{Reader, Writer, encode_into, kind};
use crate::error::{DecodeError, Direction, EncodeError};
use crate::snapshot::SnapshotPart;
use crate::verdicts::Verdicts;

/// A message from the server to a client.
///
/// The server encodes into a buffer it keeps; the client decodes each message it gets:
///
/// ```
/// use lagcomp::EntityId;
/// use lagcomp_net::Pong;
/// use lagcomp_wire::{ServerMessage, Welcome};
///
/// let welcome = ServerMessage::Welcome(Welcome {
///     you: EntityId::from_bits(3),
///     tick_rate: 64.0,   // ticks per second
///     send_rate: 32.0,   // snapshots per second
///     max_rewind: 0.35,  // seconds
///     bones: 15,
///     arena_half_size: 40.0, // metres
///     arena_walls: 12,
///     arena_seed: 7,
/// });
/// let mut out = Vec::new(); // reused for every message
/// welcome.encode(&mut out)?;
/// assert_eq!(ServerMessage::decode(&out)?, welcome);
///
/// // The answer to a clock-sync ping: its id and three times, seconds.
/// let pong = ServerMessage::Pong(Pong { id: 9, client_send: 4.25, server_receive: 104.27, server_send: 104.27 });
/// pong.encode(&mut out)?;
/// assert_eq!(ServerMessage::decode(&out)?, pong);
/// // A client never decodes its own kind of message as the server's.
/// assert!(lagcomp_wire::ClientMessage::decode(&out).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum ServerMessage {
    /// Sent once when the client connects: who it is and how the match runs.
    Welcome(Welcome),
    /// One part of one tick's snapshot.
    Snapshot(SnapshotPart),
    /// The answer to the client's clock-sync [`lagcomp_net::Ping`].
    Pong(Pong),
    /// A round-trip probe the client answers with a [`crate::ProbeReply`].
    RttProbe(RttProbe),
    /// Every shot up to this sequence number was received or given up on
    /// ([`lagcomp_net::ShotReceiver::ack`]); the client's sender forgets them.
    ShotAck {
        /// The cumulative acknowledgement.
        up_to: u32,
    },
    /// What the server decided about some of the client's shots: its oldest verdicts not
    /// yet acknowledged, numbered ([`crate::verdicts`]).
    Verdicts(Verdicts),
}

impl ServerMessage {
    /// Decodes one message (one renet message payload) received by a client.
    ///
    /// # Errors
    /// Whatever is wrong with the bytes, with where; see [`DecodeError`].
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let (mut reader, kind) = Reader::open(bytes, Direction::ToClient)?;
        let r = &mut reader;
        let message = match kind {
            kind::WELCOME => Self::Welcome(Welcome::read(r)?),
            kind::SNAPSHOT => Self::Snapshot(SnapshotPart::read(r)?),
            kind::PONG => Self::Pong(Pong {
                id: r.u32("pong.id")?,
                client_send: r.f64("pong.client_send")?,
                server_receive: r.f64("pong.server_receive")?,
                server_send: r.f64("pong.server_send")?,
            }),
            kind::PROBE => Self::RttProbe(RttProbe {
                id: r.u32("probe.id")?,
                server_time: r.f64("probe.server_time")?,
            }),
            kind::SHOT_ACK => Self::ShotAck {
                up_to: r.u32("shot_ack.up_to")?,
            },
            kind::VERDICTS => Self::Verdicts(Verdicts::read(r)?),
            // `Reader::open` lets through only this direction's kinds.
            other => return Err(DecodeError::UnknownKind { kind: other }),
        };
        reader.finish()?;
        Ok(message)
    }

    /// Encodes the message into `out` (cleared first; its capacity is reused). A snapshot
    /// part is encoded as given; [`crate::SnapshotEncoder`] splits a whole world.
    ///
    /// # Errors
    /// When the message would not decode: a non-finite number, a part numbered outside its
    /// count, too many bones, too long. `out` is then empty.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        match self {
            Self::Welcome(welcome) => encode_into(out, kind::WELCOME, |w| welcome.write(w)),
            Self::Snapshot(part) => encode_into(out, kind::SNAPSHOT, |w| part.write(w)),
            Self::Pong(pong) => encode_into(out, kind::PONG, |w| {
                w.u32(pong.id);
                w.f64(pong.client_send, "pong.client_send")?;
                w.f64(pong.server_receive, "pong.server_receive")?;
                w.f64(pong.server_send, "pong.server_send")
            }),
            Self::RttProbe(probe) => encode_into(out, kind::PROBE, |w| {
                w.u32(probe.id);
                w.f64(probe.server_time, "probe.server_time")
            }),
            Self::ShotAck { up_to } => encode_into(out, kind::SHOT_ACK, |w| {
                w.u32(*up_to);
                Ok(())
            }),
            Self::Verdicts(verdicts) => encode_into(out, kind::VERDICTS, |w| verdicts.write(w)),
        }
    }
}

/// Who the client is and how the match runs; the first message a client gets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Welcome {
    /// The client's own entity (its shots' shooter; its own entry in snapshots).
    pub you: EntityId,
    /// Server ticks per second.
    pub tick_rate: f64,
    /// Snapshots per second.
    pub send_rate: f64,
    /// How far back the server rewinds, seconds (older claims are rejected).
    pub max_rewind: f64,
    /// Bones in every entity's rig (what a snapshot entity carries).
    pub bones: u16,
    /// The arena: half the side of its square floor, metres.
    pub arena_half_size: f32,
    /// The arena: how many walls.
    pub arena_walls: u16,
    /// The arena: the seed its walls are drawn from. With the size and the count, a
    /// client builds the very walls the server traces shots against.
    pub arena_seed: u64,
}

impl Welcome {
    fn write(&self, w: &mut Writer<'_>) -> Result<(), EncodeError> {
        w.u64(self.you.to_bits());
        w.f64(self.tick_rate, "welcome.tick_rate")?;
        w.f64(self.send_rate, "welcome.send_rate")?;
        w.f64(self.max_rewind, "welcome.max_rewind")?;
        w.u16(self.bones);
        w.f32(self.arena_half_size, "welcome.arena_half_size")?;
        w.u16(self.arena_walls);
        w.u64(self.arena_seed);
        Ok(())
    }

    fn read(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            you: EntityId::from_bits(r.u64("welcome.you")?),
            tick_rate: r.f64("welcome.tick_rate")?,
            send_rate: r.f64("welcome.send_rate")?,
            max_rewind: r.f64("welcome.max_rewind")?,
            bones: r.u16("welcome.bones")?,
            arena_half_size: r.f32("welcome.arena_half_size")?,
            arena_walls: r.u16("welcome.arena_walls")?,
            arena_seed: r.u64("welcome.arena_seed")?,
        })
    }
}

/// The server's round-trip probe: it remembers when it sent `id` and measures the round
/// trip when the client's [`crate::ProbeReply`] comes back.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RttProbe {
    /// Matches the reply to the probe.
    pub id: u32,
    /// The server's clock when it sent the probe, seconds.
    pub server_time: f64,
}

//! Netcode's framing, checked before `renetcode` sees a datagram: the prefix byte (packet
//! type in the low nibble, the sequence number's length in bytes in the high nibble) and
//! the exact length each packet type has on the wire. A datagram that fails is dropped
//! and counted by the caller, never handed on.
//!
//! Why: renetcode 2.0.0 trusts the prefix. Its `read_sequence` (`src/packet.rs`) copies
//! as many sequence bytes as the high nibble says into an 8-byte array, so a prefix of
//! `0x95` (a payload claiming a 9-byte sequence) panics with "range end index 9 out of
//! range for slice of length 8", and `dencrypted_in_place` (`src/crypto.rs`) splits off a
//! 16-byte tag from whatever follows the sequence, which underflows when fewer than 16
//! bytes follow. Both are reached from `NetcodeServer::process_packet` for any datagram
//! from an address the server knows (a connected client, or one that sent a connection
//! request), and from `NetcodeClient::process_packet` for any datagram from the server's
//! address.
//!
//! A third, found by the fuzz target over the server's receive path (`fuzz/`):
//! `ReplayProtection::already_received` (`src/replay_protection.rs`) adds 256 to the
//! packet's sequence number before it is authenticated, which overflows for a sequence
//! within 256 of `u64::MAX`: a panic where overflow is checked (debug and test builds), a
//! wrapped sum and a dropped packet in release builds. No honest sequence comes near it
//! (both ends count up from 0), so such a sequence fails the check here too.
//!
//! Notes for upstream (renetcode 2.0.0):
//! - `Packet::decode` in `src/packet.rs`: check `sequence_len <= 8` and
//!   `buffer.len() >= 1 + sequence_len + NETCODE_MAC_BYTES` before reading. Reproduction,
//!   on a server with a client connected from `addr`:
//!   `server.process_packet(addr, &mut [0x95; 21])` panics.
//! - `ReplayProtection::already_received` in `src/replay_protection.rs`: compare with
//!   `sequence.saturating_add(256)`. Reproduction (debug build), the same server:
//!   `server.process_packet(addr, &mut [[0x85].as_slice(), &[0xff; 8], &[0; 17]].concat())`
//!   panics with "attempt to add with overflow".
//!
//! The lengths below are renetcode's own encoder's (`Packet::write` plus the tag), not
//! only the netcode standard's: renetcode writes a packet numbered 0 with no sequence
//! bytes at all (the high nibble 0; the standard says 1 to 8), and both ends number their
//! first packets from 0, so a length of 0 is accepted.

use renetcode::NETCODE_MAX_PAYLOAD_BYTES;
use thiserror::Error;

/// Bytes of netcode's authentication tag (Poly1305) at the end of every packet but a
/// connection request.
const MAC_BYTES: usize = 16;

/// The shortest datagram renetcode decodes at all (`Packet::decode`'s own first check).
const SHORTEST: usize = 2 + MAC_BYTES;

/// A connection request on the wire: the prefix, the version info (13 bytes), the
/// protocol id and the token's expiry (8 each), the nonce (24) and the encrypted private
/// token (1024).
pub(crate) const REQUEST_BYTES: usize = 1 + 13 + 8 + 8 + 24 + 1024;

/// Where a connection request's token expiry (Unix seconds, little-endian) sits.
pub(crate) const REQUEST_EXPIRY: std::ops::Range<usize> = 1 + 13 + 8..1 + 13 + 8 + 8;

/// The longest datagram netcode sends (`renetcode::NETCODE_MAX_PACKET_BYTES`).
pub(crate) const LONGEST: usize = renetcode::NETCODE_MAX_PACKET_BYTES;

/// Packets renetcode's replay protection remembers (`NETCODE_REPLAY_BUFFER_SIZE`): it adds
/// this to a packet's sequence number.
const REPLAY_WINDOW: u64 = 256;

/// Bytes of a challenge token in a challenge or a response packet.
const CHALLENGE_TOKEN_BYTES: usize = 300;

/// Netcode's packet types, by the low nibble of the prefix byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PacketKind {
    /// A client asks to connect (type 0; the only one sent in the clear).
    Request,
    /// The server refuses (type 1).
    Denied,
    /// The server's challenge (type 2).
    Challenge,
    /// The client's answer to the challenge (type 3).
    Response,
    /// Either side keeps the connection alive (type 4).
    KeepAlive,
    /// Either side's data: renet's packets, the server's datagrams of records (type 5).
    Payload,
    /// Either side leaves (type 6).
    Disconnect,
}

impl PacketKind {
    fn from_nibble(nibble: u8) -> Option<Self> {
        Some(match nibble {
            0 => Self::Request,
            1 => Self::Denied,
            2 => Self::Challenge,
            3 => Self::Response,
            4 => Self::KeepAlive,
            5 => Self::Payload,
            6 => Self::Disconnect,
            _ => return None,
        })
    }

    /// The bytes between the sequence number and the tag: (fewest, most).
    fn body(self) -> (usize, usize) {
        match self {
            Self::Request => (REQUEST_BYTES - 1, REQUEST_BYTES - 1),
            Self::Denied | Self::Disconnect => (0, 0),
            Self::Challenge | Self::Response => {
                (8 + CHALLENGE_TOKEN_BYTES, 8 + CHALLENGE_TOKEN_BYTES)
            }
            Self::KeepAlive => (8, 8),
            Self::Payload => (1, NETCODE_MAX_PAYLOAD_BYTES),
        }
    }
}

/// Which end reads the datagram: each is sent only some of the packet types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    /// A client's datagram, read by the server.
    ToServer,
    /// The server's datagram, read by a client.
    ToClient,
}

impl Direction {
    fn receives(self, kind: PacketKind) -> bool {
        use PacketKind::{Challenge, Denied, Disconnect, KeepAlive, Payload, Request, Response};
        match self {
            Self::ToServer => matches!(kind, Request | Response | KeepAlive | Payload | Disconnect),
            Self::ToClient => matches!(kind, Denied | Challenge | KeepAlive | Payload | Disconnect),
        }
    }
}

/// Why a datagram is not netcode's framing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub(crate) enum FramingError {
    /// Longer than netcode ever sends (or cut short by the read buffer).
    #[error("{0} bytes: longer than any netcode packet")]
    TooLong(usize),
    /// Shorter than any netcode packet.
    #[error("{0} bytes: shorter than any netcode packet")]
    TooShort(usize),
    /// A low nibble that names no packet type.
    #[error("prefix {0:#04x}: no such packet type")]
    UnknownType(u8),
    /// A packet type this end is never sent.
    #[error("a {0:?} packet is never sent this way")]
    WrongWay(PacketKind),
    /// A connection request whose prefix byte is not 0 (its high nibble must be 0).
    #[error("prefix {0:#04x}: a connection request has no sequence number")]
    RequestPrefix(u8),
    /// A sequence number longer than 8 bytes.
    #[error("prefix {0:#04x}: a sequence number of more than 8 bytes")]
    SequenceLength(u8),
    /// A sequence number within [`REPLAY_WINDOW`] of the largest: never sent (both ends
    /// count up from 0), and renetcode's replay check overflows on it.
    #[error("sequence number {0:#x}: within the replay window of the largest")]
    SequenceOverflow(u64),
    /// Not the length its packet type has.
    #[error("a {kind:?} packet of {len} bytes (it takes {fewest} to {most})")]
    Length {
        /// The packet type.
        kind: PacketKind,
        /// The datagram's length.
        len: usize,
        /// The fewest bytes it may have.
        fewest: usize,
        /// The most.
        most: usize,
    },
}

/// Checks that `datagram` is framed as netcode frames a packet sent `direction`: its
/// type, its sequence length and its exact length (the tag included). Pure arithmetic on
/// the first byte and the length: no allocation, no decryption.
///
/// # Errors
/// [`FramingError`]: what is wrong with it.
pub(crate) fn check(datagram: &[u8], direction: Direction) -> Result<PacketKind, FramingError> {
    let len = datagram.len();
    if len > LONGEST {
        return Err(FramingError::TooLong(len));
    }
    let Some(&prefix) = datagram.first() else {
        return Err(FramingError::TooShort(0));
    };
    if len < SHORTEST {
        return Err(FramingError::TooShort(len));
    }
    let kind = PacketKind::from_nibble(prefix & 0x0f).ok_or(FramingError::UnknownType(prefix))?;
    if !direction.receives(kind) {
        return Err(FramingError::WrongWay(kind));
    }
    let sequence = usize::from(prefix >> 4);
    let (body_fewest, body_most) = kind.body();
    let (fewest, most) = if kind == PacketKind::Request {
        if prefix != 0 {
            return Err(FramingError::RequestPrefix(prefix));
        }
        (REQUEST_BYTES, REQUEST_BYTES)
    } else {
        if sequence > 8 {
            return Err(FramingError::SequenceLength(prefix));
        }
        let head = 1 + sequence;
        let mut number = [0_u8; 8];
        if let Some(bytes) = datagram.get(1..head) {
            number[..bytes.len()].copy_from_slice(bytes);
        }
        let number = u64::from_le_bytes(number);
        if number > u64::MAX - REPLAY_WINDOW {
            return Err(FramingError::SequenceOverflow(number));
        }
        (
            (head + body_fewest + MAC_BYTES).max(SHORTEST),
            head + body_most + MAC_BYTES,
        )
    };
    if !(fewest..=most).contains(&len) {
        return Err(FramingError::Length {
            kind,
            len,
            fewest,
            most,
        });
    }
    Ok(kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Direction::{ToClient, ToServer};
    use PacketKind::*;

    /// A datagram of `len` bytes starting with `prefix`.
    fn datagram(prefix: u8, len: usize) -> Vec<u8> {
        let mut bytes = vec![0xa5; len];
        if let Some(first) = bytes.first_mut() {
            *first = prefix;
        }
        bytes
    }

    #[test]
    fn each_packet_type_takes_exactly_its_lengths() {
        // (prefix, direction, shortest accepted, longest accepted), one row per type and
        // sequence length that matters.
        let table: &[(u8, Direction, usize, usize)] = &[
            // A connection request: 1078 bytes, no sequence.
            (0x00, ToServer, 1078, 1078),
            // Denied with a 1-byte sequence: prefix, sequence, tag.
            (0x11, ToClient, 18, 18),
            // Denied numbered 0 (no sequence bytes): 17 bytes, which renetcode itself
            // refuses as too short; so do we.
            (0x01, ToClient, 18, 17),
            // A challenge: sequence 8 bytes, token sequence 8 and token 300, tag.
            (0x82, ToClient, 1 + 8 + 308 + 16, 1 + 8 + 308 + 16),
            // The response, numbered 0 (a client's first packets are).
            (0x03, ToServer, 1 + 308 + 16, 1 + 308 + 16),
            // A keep-alive: client index and max clients, 4 bytes each.
            (0x04, ToServer, 1 + 8 + 16, 1 + 8 + 16),
            (0x24, ToClient, 1 + 2 + 8 + 16, 1 + 2 + 8 + 16),
            // A payload: 1 to 1300 bytes.
            (0x15, ToServer, 1 + 1 + 1 + 16, 1 + 1 + 1300 + 16),
            (0x85, ToClient, 1 + 8 + 1 + 16, 1 + 8 + 1300 + 16),
            // A disconnection: nothing but the tag.
            (0x26, ToServer, 1 + 2 + 16, 1 + 2 + 16),
        ];
        for &(prefix, direction, fewest, most) in table {
            for len in fewest.saturating_sub(2)..=(most + 2).min(LONGEST + 1) {
                let result = check(&datagram(prefix, len), direction);
                assert_eq!(
                    result.is_ok(),
                    (fewest..=most).contains(&len),
                    "prefix {prefix:#04x}, {len} bytes: {result:?}"
                );
            }
        }
    }

    #[test]
    fn a_sequence_of_more_than_eight_bytes_is_refused_for_every_type() {
        // 0x95 and 20 bytes: the datagram that panics renetcode 2.0.0.
        assert_eq!(
            check(&datagram(0x95, 21), ToServer),
            Err(FramingError::SequenceLength(0x95))
        );
        for nibble in 9..=15_u8 {
            for kind in 1..=6_u8 {
                let prefix = nibble << 4 | kind;
                for direction in [ToServer, ToClient] {
                    for len in [18, 21, 60, 400, LONGEST] {
                        assert!(
                            check(&datagram(prefix, len), direction).is_err(),
                            "{prefix:#04x}, {len} bytes"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn a_sequence_number_renetcodes_replay_check_overflows_on_is_refused() {
        // An 8-byte sequence of 2^64 - 1, and one just inside the replay window of it.
        for sequence in [u64::MAX, u64::MAX - 255] {
            let mut bytes = vec![0x85];
            bytes.extend(sequence.to_le_bytes());
            bytes.extend([0; 17]);
            assert_eq!(
                check(&bytes, ToServer),
                Err(FramingError::SequenceOverflow(sequence))
            );
        }
        // The largest accepted.
        let mut bytes = vec![0x85];
        bytes.extend((u64::MAX - 256).to_le_bytes());
        bytes.extend([0; 17]);
        assert_eq!(check(&bytes, ToServer), Ok(Payload));
    }

    #[test]
    fn unknown_types_wrong_ways_and_odd_requests_are_refused() {
        for kind in 7..=15_u8 {
            assert_eq!(
                check(&datagram(0x10 | kind, 40), ToServer),
                Err(FramingError::UnknownType(0x10 | kind))
            );
        }
        // The server is never sent a challenge or a refusal; a client never a request or
        // a response.
        assert_eq!(
            check(&datagram(0x12, 1 + 1 + 308 + 16), ToServer),
            Err(FramingError::WrongWay(Challenge))
        );
        assert_eq!(
            check(&datagram(0x11, 18), ToServer),
            Err(FramingError::WrongWay(Denied))
        );
        assert_eq!(
            check(&datagram(0x00, REQUEST_BYTES), ToClient),
            Err(FramingError::WrongWay(Request))
        );
        assert_eq!(
            check(&datagram(0x13, 1 + 1 + 308 + 16), ToClient),
            Err(FramingError::WrongWay(Response))
        );
        // A request whose high nibble claims a sequence.
        assert_eq!(
            check(&datagram(0x10, REQUEST_BYTES), ToServer),
            Err(FramingError::RequestPrefix(0x10))
        );
        assert_eq!(check(&[], ToServer), Err(FramingError::TooShort(0)));
        assert_eq!(
            check(&datagram(0x15, 17), ToServer),
            Err(FramingError::TooShort(17))
        );
        assert_eq!(
            check(&datagram(0x15, LONGEST + 1), ToClient),
            Err(FramingError::TooLong(LONGEST + 1))
        );
    }

    #[test]
    fn every_packet_renetcode_sends_in_a_handshake_and_a_match_passes() {
        use renetcode::{
            ClientAuthentication, NetcodeClient, NetcodeServer, ServerAuthentication, ServerConfig,
            ServerResult,
        };
        use std::time::Duration;
        let server_addr = "127.0.0.1:5000".parse().expect("an address");
        let client_addr = "127.0.0.1:6000".parse().expect("an address");
        let now = Duration::from_secs(1_800_000_000);
        let mut server = NetcodeServer::new(ServerConfig {
            current_time: now,
            max_clients: 4,
            protocol_id: 7,
            public_addresses: vec![server_addr],
            authentication: ServerAuthentication::Unsecure,
        });
        let mut client = NetcodeClient::new(
            now,
            ClientAuthentication::Unsecure {
                protocol_id: 7,
                client_id: 9,
                server_addr,
                user_data: None,
            },
        )
        .expect("a client");
        let mut seen = Vec::new();
        let step = Duration::from_millis(300);
        for round in 0..12 {
            server.update(step);
            if let Some((packet, _)) = client.update(step) {
                let kind = check(packet, ToServer).expect("the client's packet passes");
                seen.push(kind);
                let mut packet = packet.to_vec();
                let answer = match server.process_packet(client_addr, &mut packet) {
                    ServerResult::PacketToSend { payload, .. }
                    | ServerResult::ClientConnected { payload, .. } => Some(payload.to_vec()),
                    _ => None,
                };
                if let Some(mut answer) = answer {
                    seen.push(check(&answer, ToClient).expect("the server's packet passes"));
                    client.process_packet(&mut answer);
                }
            }
            if client.is_connected() {
                let size = [1, 100, NETCODE_MAX_PAYLOAD_BYTES][round % 3];
                let (_, packet) = client
                    .generate_payload_packet(&vec![3; size])
                    .expect("a payload");
                seen.push(check(packet, ToServer).expect("a client's payload passes"));
                let (_, packet) = server
                    .generate_payload_packet(9, &vec![4; size])
                    .expect("a payload");
                seen.push(check(packet, ToClient).expect("a server's payload passes"));
            }
        }
        assert!(client.is_connected());
        let (_, goodbye) = client.disconnect().expect("a goodbye");
        seen.push(check(goodbye, ToServer).expect("a goodbye passes"));
        for kind in [Request, Challenge, Response, KeepAlive, Payload, Disconnect] {
            assert!(seen.contains(&kind), "{kind:?} never seen: {seen:?}");
        }
    }
}

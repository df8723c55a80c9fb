//! The server's whole receive path (`lagcomp_udp::fuzzing::ServerReceivePath`): the
//! netcode framing check, the connection-request limits, renetcode's server, renet, and
//! the decoding of every message renet yields. Each input runs on a connection made by a real handshake (a
//! client connected with an unsecure token, as `lagcomp bots` makes one), then is read as
//! a script of steps, each `[op, arg, len, bytes...]`: real netcode packets (the client's
//! requests, keep-alives and encrypted payloads of the input's bytes), the same with a
//! byte flipped, or the bytes raw, from the client's address or a stranger's. Nothing may
//! panic: libfuzzer-sys's panic hook aborts at any panic, so one the transport would
//! contain is a crash here too.

#![no_main]

use std::cell::RefCell;
use std::net::SocketAddr;
use std::time::Duration;

use lagcomp_udp::fuzzing::{ClientReceivePath, ServerReceivePath, handshake};
use libfuzzer_sys::fuzz_target;

/// The ends of a connection made once and reused: a handshake per input (random keys,
/// token encryption) made runs 50 times slower. Made again after [`REUSE`] inputs, or
/// when an input ended the connection.
struct Match {
    server: ServerReceivePath,
    client: ClientReceivePath,
    /// A second client's connection request, to replay and mutate.
    request: Vec<u8>,
    inputs: u32,
}

/// Inputs a match serves before it is made again.
const REUSE: u32 = 5_000;

fn player() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 6000))
}

impl Match {
    fn new() -> Self {
        let mut server = ServerReceivePath::new();
        let mut client = ClientReceivePath::new(1);
        assert!(handshake(&mut server, &mut client, player()));
        let mut other = ClientReceivePath::new(2);
        let request = other.advance(Duration::ZERO).expect("a request");
        Self {
            server,
            client,
            request,
            inputs: 0,
        }
    }
}

thread_local! {
    static MATCH: RefCell<Option<Match>> = const { RefCell::new(None) };
}

fuzz_target!(|data: &[u8]| {
    MATCH.with(|cell| {
        let mut slot = cell.borrow_mut();
        let stale = slot.as_ref().is_none_or(|m| {
            m.inputs >= REUSE || !m.client.is_connected() || m.server.clients() == 0
        });
        if stale {
            *slot = Some(Match::new());
        }
        let m = slot.as_mut().expect("made");
        m.inputs += 1;
        run(m, data);
    });
});

fn run(m: &mut Match, data: &[u8]) {
    let Match {
        server,
        client,
        request,
        ..
    } = m;
    let player = player();
    let mut rest = data;
    while let [op, arg, len, tail @ ..] = rest {
        let len = usize::from(*len).min(tail.len());
        let (bytes, next) = tail.split_at(len);
        rest = next;
        let stranger = SocketAddr::from(([127, 0, 0, 2], 7000 + u16::from(*arg)));
        match op % 8 {
            // Time passes on both ends; the client's packet (keep-alive) goes.
            0 => {
                let elapsed = Duration::from_millis(u64::from(*arg) * 8);
                server.advance(elapsed);
                if let Some(packet) = client.advance(elapsed) {
                    server.datagram(player, &packet);
                }
            }
            // A real payload of the input's bytes.
            1 => {
                if let Some(packet) = client.payload(bytes) {
                    server.datagram(player, &packet);
                }
            }
            // The bytes raw, from the player's address.
            2 => {
                server.datagram(player, bytes);
            }
            // The bytes raw, from a stranger.
            3 => {
                server.datagram(stranger, bytes);
            }
            // A real payload with one byte flipped.
            4 => {
                if let Some(mut packet) = client.payload(bytes) {
                    let at = usize::from(*arg) % packet.len();
                    packet[at] ^= bytes.first().copied().unwrap_or(0x80) | 1;
                    server.datagram(player, &packet);
                }
            }
            // The other client's request from a stranger, then its bytes overwritten by
            // the input's from `arg` on.
            5 => {
                let mut packet = request.clone();
                let at = usize::from(*arg).min(packet.len());
                let n = bytes.len().min(packet.len() - at);
                packet[at..at + n].copy_from_slice(&bytes[..n]);
                server.datagram(stranger, &packet);
            }
            // A real payload cut short or lengthened to `arg` bytes.
            6 => {
                if let Some(mut packet) = client.payload(bytes) {
                    packet.resize(usize::from(*arg) * 6, 0);
                    server.datagram(player, &packet);
                }
            }
            // A prefix byte and the bytes after it, from the player.
            _ => {
                let mut packet = vec![*arg];
                packet.extend_from_slice(bytes);
                server.datagram(player, &packet);
            }
        }
        let _ = server.take_sent();
    }
    assert_eq!(server.refused().2, 0, "a panic was contained");
}

//! A client's whole receive path (`lagcomp_udp::fuzzing::ClientReceivePath`, what
//! `lagcomp bots` runs for each datagram from the server's address): the netcode framing
//! check, renetcode's client, the datagram of records taken apart, renet, and the
//! decoding of every server message. Each input runs on a connection made by a real handshake with a real
//! server, then is read as a script of steps, each `[op, arg, len, bytes...]`: the
//! server's encrypted payloads of the input's bytes (as datagrams of records or as renet
//! packets), the same with a byte flipped or cut, keep-alives, or the bytes raw. Nothing
//! may panic (a contained panic counts as a failure too).

#![no_main]

use std::cell::RefCell;
use std::net::SocketAddr;
use std::time::Duration;

use lagcomp_udp::fuzzing::{ClientReceivePath, ServerReceivePath, handshake};
use lagcomp_wire::datagram::DATAGRAM_TAG;
use libfuzzer_sys::fuzz_target;

/// The ends of a connection made once and reused: a handshake per input (random keys,
/// token encryption) made runs 50 times slower. Made again after [`REUSE`] inputs, or
/// when an input ended the connection.
struct Match {
    server: ServerReceivePath,
    client: ClientReceivePath,
    inputs: u32,
}

/// Inputs a match serves before it is made again.
const REUSE: u32 = 5_000;

impl Match {
    fn new() -> Self {
        let mut server = ServerReceivePath::new();
        let mut client = ClientReceivePath::new(1);
        let player = SocketAddr::from(([127, 0, 0, 1], 6000));
        assert!(handshake(&mut server, &mut client, player));
        Self {
            server,
            client,
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
    let Match { server, client, .. } = m;
    let mut rest = data;
    while let [op, arg, len, tail @ ..] = rest {
        let len = usize::from(*len).min(tail.len());
        let (bytes, next) = tail.split_at(len);
        rest = next;
        match op % 6 {
            // A real payload of the input's bytes (renet's packets, as the server sends).
            0 => {
                if let Some(packet) = server.payload_to(1, bytes) {
                    client.datagram(&packet);
                }
            }
            // A real datagram of records: the tag, then the input's bytes.
            1 => {
                let mut payload = vec![DATAGRAM_TAG];
                payload.extend_from_slice(bytes);
                if let Some(packet) = server.payload_to(1, &payload) {
                    client.datagram(&packet);
                }
            }
            // The bytes raw, as if from the server's address.
            2 => client.datagram(bytes),
            // A real payload with one byte flipped.
            3 => {
                if let Some(mut packet) = server.payload_to(1, bytes) {
                    let at = usize::from(*arg) % packet.len();
                    packet[at] ^= bytes.first().copied().unwrap_or(0x80) | 1;
                    client.datagram(&packet);
                }
            }
            // Time passes; the server's keep-alives and the rest go to the client.
            4 => {
                let elapsed = Duration::from_millis(u64::from(*arg) * 8);
                server.advance(elapsed);
                let _ = client.advance(elapsed);
                for (_, packet) in server.take_sent() {
                    client.datagram(&packet);
                }
            }
            // A prefix byte and the bytes after it.
            _ => {
                let mut packet = vec![*arg];
                packet.extend_from_slice(bytes);
                client.datagram(&packet);
            }
        }
    }
}

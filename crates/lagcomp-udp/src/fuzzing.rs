//! The receive paths of `lagcomp serve` and of its clients without their sockets, for the
//! cargo-fuzz targets in `fuzz/` (`server_receive`, `client_receive`). Not an API: hidden
//! from the documentation, and it may change with the targets.
//!
//! [`ServerReceivePath`] is what the server does with one datagram: the framing check,
//! the connection-request limits, netcode (decryption, handshakes), renet, and the
//! decoding of each message renet yields, as `lagcomp serve` reads them. The
//! [`ClientReceivePath`] is a client's: the framing check, netcode, the datagram of
//! records taken apart, renet. Both come with what a harness needs to speak real netcode
//! to them: a client that makes connection requests, responses, keep-alives and payloads
//! with the keys of a real handshake, and a server that answers it.

use std::net::SocketAddr;
use std::time::Duration;

use lagcomp_wire::ClientMessage;
use renet::{RenetClient, RenetServer};
use renetcode::{
    ClientAuthentication, NetcodeClient, NetcodeServer, ServerAuthentication, ServerConfig,
};

use crate::channel::{PROTOCOL_ID, UNRELIABLE, connection_config, unsecure_token};
use crate::client::{Messages, take_datagram};
use crate::transport::Gate;

/// The server's address in these harnesses.
#[must_use]
pub fn server_addr() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 5000))
}

/// The time both ends start at: Unix seconds.
const START: Duration = Duration::from_secs(1_800_000_000);

/// The server's receive path (see the [module documentation](self)).
pub struct ServerReceivePath {
    gate: Gate,
    netcode: NetcodeServer,
    renet: RenetServer,
    sent: Vec<(SocketAddr, Vec<u8>)>,
    /// Messages renet handed on that decoded, and that did not.
    decoded: u64,
    undecoded: u64,
}

impl std::fmt::Debug for ServerReceivePath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerReceivePath").finish_non_exhaustive()
    }
}

impl Default for ServerReceivePath {
    fn default() -> Self {
        Self::new()
    }
}

impl ServerReceivePath {
    /// An unsecure server for up to 4 clients at [`server_addr`].
    #[must_use]
    pub fn new() -> Self {
        Self {
            gate: Gate::new(true, START.as_secs_f64()),
            netcode: NetcodeServer::new(ServerConfig {
                current_time: START,
                max_clients: 4,
                protocol_id: PROTOCOL_ID,
                public_addresses: vec![server_addr()],
                authentication: ServerAuthentication::Unsecure,
            }),
            renet: RenetServer::new(connection_config()),
            sent: Vec::new(),
            decoded: 0,
            undecoded: 0,
        }
    }

    /// One datagram from `from`, as the server takes it; then every message renet has
    /// from its client, decoded. The client whose payload it was, if any.
    pub fn datagram(&mut self, from: SocketAddr, bytes: &[u8]) -> Option<u64> {
        let mut bytes = bytes.to_vec();
        let sent = &mut self.sent;
        let heard = self.gate.process(
            &mut self.netcode,
            &mut self.renet,
            from,
            &mut bytes,
            &mut |payload, addr| sent.push((addr, payload.to_vec())),
        );
        while self.renet.get_event().is_some() {}
        if let Some(client) = heard {
            while let Some(message) = self.renet.receive_message(client, UNRELIABLE) {
                match ClientMessage::decode(&message) {
                    Ok(_) => self.decoded += 1,
                    Err(_) => self.undecoded += 1,
                }
            }
        }
        heard
    }

    /// Time passes: netcode's and renet's clocks, keep-alives and time-outs.
    pub fn advance(&mut self, elapsed: Duration) {
        self.netcode.update(elapsed);
        self.renet.update(elapsed);
        let sent = &mut self.sent;
        for client in self.netcode.clients_id() {
            let result = self.netcode.update_client(client);
            crate::transport::handle(result, &mut self.renet, &mut |payload, addr| {
                sent.push((addr, payload.to_vec()));
            });
        }
    }

    /// `payload` to `client` in a netcode packet, as the server would send it.
    pub fn payload_to(&mut self, client: u64, payload: &[u8]) -> Option<Vec<u8>> {
        self.netcode
            .generate_payload_packet(client, payload)
            .ok()
            .map(|(_, packet)| packet.to_vec())
    }

    /// The datagrams the server sent since the last call, with where they went.
    pub fn take_sent(&mut self) -> Vec<(SocketAddr, Vec<u8>)> {
        std::mem::take(&mut self.sent)
    }

    /// Connected clients.
    #[must_use]
    pub fn clients(&self) -> usize {
        self.netcode.connected_clients()
    }

    /// Datagrams refused by framing, connection requests refused, panics contained.
    #[must_use]
    pub fn refused(&self) -> (u64, u64, u64) {
        let refused = self.gate.refused();
        (refused.framing, refused.requests, refused.panics)
    }

    /// Messages decoded, and not.
    #[must_use]
    pub fn messages(&self) -> (u64, u64) {
        (self.decoded, self.undecoded)
    }
}

/// A netcode client as `lagcomp bots` makes one (an unsecure token of its own), without a
/// socket: what it would send, and its receive path (see the
/// [module documentation](self)).
pub struct ClientReceivePath {
    netcode: NetcodeClient,
    renet: RenetClient,
    inbox: Messages,
    malformed: u64,
    refused: u64,
}

impl std::fmt::Debug for ClientReceivePath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientReceivePath").finish_non_exhaustive()
    }
}

impl ClientReceivePath {
    /// Client `id` of [`server_addr`].
    ///
    /// # Panics
    /// If netcode cannot make its token (it always can).
    #[must_use]
    pub fn new(id: u64) -> Self {
        let token = unsecure_token(id, server_addr(), START).expect("a token");
        Self {
            netcode: NetcodeClient::new(
                START,
                ClientAuthentication::Secure {
                    connect_token: token,
                },
            )
            .expect("a client"),
            renet: RenetClient::new(connection_config()),
            inbox: Messages::default(),
            malformed: 0,
            refused: 0,
        }
    }

    /// Time passes; what netcode sends now (a request, a response, a keep-alive).
    pub fn advance(&mut self, elapsed: Duration) -> Option<Vec<u8>> {
        self.renet.update(elapsed);
        self.netcode
            .update(elapsed)
            .map(|(packet, _)| packet.to_vec())
    }

    /// `payload` in a netcode packet to the server, once connected.
    pub fn payload(&mut self, payload: &[u8]) -> Option<Vec<u8>> {
        self.netcode
            .generate_payload_packet(payload)
            .ok()
            .map(|(_, packet)| packet.to_vec())
    }

    /// One datagram from the server's address, as the client takes it; the wire messages
    /// it carried go through the server-message decoder.
    pub fn datagram(&mut self, bytes: &[u8]) {
        let mut bytes = bytes.to_vec();
        take_datagram(
            &mut self.netcode,
            &mut self.renet,
            &mut bytes,
            &mut self.inbox,
            &mut self.malformed,
            &mut self.refused,
        );
        for message in self.inbox.iter() {
            let _ = lagcomp_wire::ServerMessage::decode(message);
        }
        self.inbox.clear();
        for channel in [UNRELIABLE, crate::channel::WELCOME] {
            while self.renet.receive_message(channel).is_some() {}
        }
    }

    /// Whether netcode's handshake is done.
    #[must_use]
    pub fn is_connected(&self) -> bool {
        self.netcode.is_connected()
    }

    /// Datagrams refused (framing or a contained panic).
    #[must_use]
    pub fn refused(&self) -> u64 {
        self.refused
    }
}

/// Runs the handshake between `client` (at `from`) and `server`: whether it connected.
pub fn handshake(
    server: &mut ServerReceivePath,
    client: &mut ClientReceivePath,
    from: SocketAddr,
) -> bool {
    for _ in 0..8 {
        server.advance(Duration::from_millis(300));
        if let Some(packet) = client.advance(Duration::from_millis(300)) {
            server.datagram(from, &packet);
        }
        for (to, answer) in server.take_sent() {
            if to == from {
                client.datagram(&answer);
            }
        }
        if client.is_connected() && server.clients() > 0 {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_harness_connects_and_carries_payloads_both_ways() {
        let mut server = ServerReceivePath::new();
        let mut client = ClientReceivePath::new(1);
        let from = SocketAddr::from(([127, 0, 0, 1], 6000));
        assert!(handshake(&mut server, &mut client, from));
        let mut renet = RenetClient::new(connection_config());
        renet.set_connected();
        let mut input = Vec::new();
        ClientMessage::Input(lagcomp_wire::Input {
            frame: 1,
            ping: None,
            probe_reply: None,
            aim: lagcomp::Quat::IDENTITY,
            interp_delay: 0.1,
            newest_tick: None,
            verdicts_received: None,
            shots: Vec::new(),
            weapon_shots: Vec::new(),
        })
        .encode(&mut input)
        .expect("an input encodes");
        renet.send_message(UNRELIABLE, input);
        for packet in renet.get_packets_to_send() {
            let datagram = client.payload(&packet).expect("connected");
            assert_eq!(server.datagram(from, &datagram), Some(1));
        }
        let reply = server.payload_to(1, &[4; 20]).expect("connected");
        client.datagram(&reply);
        assert_eq!(client.refused(), 0);
        client.datagram(&[0x95; 21]);
        assert_eq!(client.refused(), 1);
        assert_eq!(server.datagram(from, &[0x95; 21]), None);
        assert_eq!(server.refused(), (1, 0, 0));
        assert_eq!(server.messages(), (1, 0));
    }
}

//! The client's end of netcode on its UDP socket, for `lagcomp bots` and any other client
//! of `lagcomp serve`: what `renet_netcode`'s client transport does (handshake,
//! keep-alives, encryption, renet's packets both ways), and the server's datagrams of
//! records ([`lagcomp_wire::datagram`]) taken apart: their wire messages are kept for the
//! client to decode ([`ClientTransport::take_messages`]), their renet packets go to renet.
//!
//! `lagcomp serve` sends a client's tick (snapshot part, verdicts, shot acknowledgement,
//! probe, and now and then renet's acknowledgement) as one such datagram; a plain renet
//! client would take it for a malformed renet packet and disconnect.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::ops::Range;
use std::time::Duration;

use lagcomp_wire::datagram::{self, DatagramRecord};
use renet::RenetClient;
use renet_netcode::NetcodeTransportError;
use renetcode::{
    ClientAuthentication, DisconnectReason, NETCODE_MAX_PACKET_BYTES, NetcodeClient, NetcodeError,
};

use crate::framing::{self, Direction};

/// Wire messages received in datagrams of records, in order, back to back in one buffer
/// (kept and reused: reading them allocates nothing once it has grown).
#[derive(Debug, Clone, Default)]
pub struct Messages {
    bytes: Vec<u8>,
    bounds: Vec<Range<usize>>,
}

impl Messages {
    /// The messages, in the order they arrived.
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> {
        self.bounds.iter().map(|range| &self.bytes[range.clone()])
    }

    /// How many.
    #[must_use]
    pub fn len(&self) -> usize {
        self.bounds.len()
    }

    /// Whether there are none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.bounds.is_empty()
    }

    /// Forgets them (keeping the memory).
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.bounds.clear();
    }

    fn push(&mut self, message: &[u8]) {
        let begin = self.bytes.len();
        self.bytes.extend_from_slice(message);
        self.bounds.push(begin..self.bytes.len());
    }
}

/// A datagram `bytes` from the server's address: its framing checked
/// ([`crate::framing`]: renetcode 2.0.0 panics on some datagrams whose framing is wrong,
/// and anyone can forge the server's address), then netcode's, then renet's (`client`)
/// or kept as wire messages (`inbox`; datagrams of records that do not decode counted in
/// `malformed`). A panic in netcode or renet (none is known) is contained: the datagram
/// is dropped and counted in `refused`, as a framing failure is, and the client plays on.
pub(crate) fn take_datagram(
    netcode: &mut NetcodeClient,
    client: &mut RenetClient,
    bytes: &mut [u8],
    inbox: &mut Messages,
    malformed: &mut u64,
    refused: &mut u64,
) {
    if framing::check(bytes, Direction::ToClient).is_err() {
        *refused += 1;
        return;
    }
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let Some(payload) = netcode.process_packet(bytes) else {
            return;
        };
        if !datagram::is_datagram(payload) {
            client.process_packet(payload);
            return;
        }
        for record in datagram::records(payload) {
            match record {
                Ok(DatagramRecord::Message(bytes)) => inbox.push(bytes),
                Ok(DatagramRecord::Transport(packet)) => client.process_packet(packet),
                Err(_) => *malformed += 1,
            }
        }
    }));
    if outcome.is_err() {
        *refused += 1;
        tracing::error!(
            server = %netcode.server_addr(),
            "a datagram from the server's address panicked netcode or renet; dropped it"
        );
    }
}

/// Netcode on a client's socket (see the [module documentation](self)).
pub struct ClientTransport {
    socket: UdpSocket,
    netcode: NetcodeClient,
    buffer: Box<[u8; NETCODE_MAX_PACKET_BYTES]>,
    /// Wire messages from datagrams of records, not yet taken.
    inbox: Messages,
    /// Datagrams of records that did not decode.
    malformed: u64,
    /// Datagrams from the server's address that were not netcode's framing, or whose
    /// processing panicked (see [`Self::refused`]).
    refused: u64,
}

impl std::fmt::Debug for ClientTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientTransport")
            .field("socket", &self.socket)
            .field("server", &self.netcode.server_addr())
            .finish_non_exhaustive()
    }
}

impl ClientTransport {
    /// Netcode on `socket` (made non-blocking), connecting as `authentication` says;
    /// `current_time` is the time since the Unix epoch (netcode's connect tokens expire).
    ///
    /// # Errors
    /// Netcode's, for a token it cannot make; the socket's.
    pub fn new(
        current_time: Duration,
        authentication: ClientAuthentication,
        socket: UdpSocket,
    ) -> Result<Self, NetcodeError> {
        socket.set_nonblocking(true)?;
        Ok(Self {
            socket,
            netcode: NetcodeClient::new(current_time, authentication)?,
            buffer: Box::new([0; NETCODE_MAX_PACKET_BYTES]),
            inbox: Messages::default(),
            malformed: 0,
            refused: 0,
        })
    }

    /// Advances netcode's clock by `duration` and reads every datagram waiting: renet's
    /// packets go to `client`, the wire messages of datagrams of records are kept (after
    /// those not yet taken: see [`Self::take_messages`]).
    ///
    /// # Errors
    /// The connection is over (netcode's reason, or renet's, which is then told to the
    /// server), or the socket failed.
    pub fn update(
        &mut self,
        duration: Duration,
        client: &mut RenetClient,
    ) -> Result<(), NetcodeTransportError> {
        if let Some(reason) = self.netcode.disconnect_reason() {
            client.disconnect_due_to_transport();
            return Err(NetcodeError::Disconnected(reason).into());
        }
        if let Some(error) = client.disconnect_reason() {
            let (addr, packet) = self.netcode.disconnect()?;
            self.socket.send_to(packet, addr)?;
            return Err(error.into());
        }
        if self.netcode.is_connected() {
            client.set_connected();
        } else if self.netcode.is_connecting() {
            client.set_connecting();
        }
        loop {
            let len = match self.socket.recv_from(&mut self.buffer[..]) {
                Ok((len, addr)) if addr == self.netcode.server_addr() => len,
                // Not from the server: not ours to read.
                Ok(_) => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => break,
                Err(e) => return Err(NetcodeTransportError::IO(e)),
            };
            self.take_datagram(len, client);
        }
        if let Some((packet, addr)) = self.netcode.update(duration) {
            self.socket.send_to(packet, addr)?;
        }
        Ok(())
    }

    /// The first `len` bytes of the buffer, a datagram from the server's address
    /// ([`take_datagram`]).
    fn take_datagram(&mut self, len: usize, client: &mut RenetClient) {
        let Some(bytes) = self.buffer.get_mut(..len) else {
            return;
        };
        take_datagram(
            &mut self.netcode,
            client,
            bytes,
            &mut self.inbox,
            &mut self.malformed,
            &mut self.refused,
        );
    }

    /// Datagrams from the server's address dropped before netcode because they were not
    /// netcode's framing, and those whose processing panicked (contained).
    #[must_use]
    pub fn refused(&self) -> u64 {
        self.refused
    }

    /// Hands over the wire messages received since the last call, in `into` (whatever it
    /// held is forgotten; its memory is used for the next ones), so the caller can read
    /// them while it uses the transport.
    pub fn take_messages(&mut self, into: &mut Messages) {
        into.clear();
        std::mem::swap(&mut self.inbox, into);
    }

    /// Datagrams of records that did not decode (the records before the fault were kept).
    #[must_use]
    pub fn malformed(&self) -> u64 {
        self.malformed
    }

    /// Encrypts and sends what renet has queued for the server.
    ///
    /// # Errors
    /// The connection is over, or the socket failed.
    pub fn send_packets(&mut self, client: &mut RenetClient) -> Result<(), NetcodeTransportError> {
        if let Some(reason) = self.netcode.disconnect_reason() {
            return Err(NetcodeError::Disconnected(reason).into());
        }
        for packet in client.get_packets_to_send() {
            let (addr, payload) = self.netcode.generate_payload_packet(&packet)?;
            self.socket.send_to(payload, addr)?;
        }
        Ok(())
    }

    /// Tells the server goodbye at once (a client leaving).
    pub fn disconnect(&mut self) {
        if self.netcode.is_disconnected() {
            return;
        }
        if let Ok((addr, packet)) = self.netcode.disconnect() {
            // Lost or not, the server times the connection out.
            let _ = self.socket.send_to(packet, addr);
        }
    }

    /// Why netcode's connection ended, if it has.
    #[must_use]
    pub fn disconnect_reason(&self) -> Option<DisconnectReason> {
        self.netcode.disconnect_reason()
    }

    /// The server's address.
    #[must_use]
    pub fn server_addr(&self) -> SocketAddr {
        self.netcode.server_addr()
    }
}

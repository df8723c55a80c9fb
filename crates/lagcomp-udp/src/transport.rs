//! The server's end of netcode over one UDP socket: handshakes, decryption and
//! encryption (`renetcode`), with renet's connections above it.
//!
//! Why not `renet_netcode`'s server transport: it sends by generating every client's
//! packets at once, and renet adds an acknowledgement packet for every client that sent
//! anything since. A server that reads its socket many times a tick, and answers each
//! clock-sync ping at once, then sent every client an acknowledgement at every read: at
//! 200 clients, about 65,000 datagrams a second where snapshots need about 25,000
//! (counted with `perf stat -e syscalls:sys_enter_sendto`). Here the server says which
//! client to send to ([`ServerTransport::send_to_client`]): a ping's answer goes to its
//! client alone, and at the end of a tick each client sent something gets it all.
//!
//! Most of what a tick sends does not go through renet at all: the server writes each
//! client's tick as one datagram of records (`lagcomp_wire::datagram`) and hands it to
//! [`ServerTransport::send_payload`], which only encrypts and sends it; renet's packets
//! for the client ([`ServerTransport::renet_packets`]) ride in it as records now and then.
//!
//! Renet answers every packet it receives with acknowledgements, in a packet of their own
//! each time it sends: a third of the server's datagrams at 200 clients. They serve
//! renet's reliable channels and its statistics, and clients of `lagcomp serve` send
//! nothing reliable (inputs repeat their shots until the server's own shot
//! acknowledgement; the server repeats its verdicts until the client's). So the server lets through an acknowledgement-only packet when it
//! says so ([`Acks`]): a few times a second, which keeps renet's statistics and
//! bookkeeping alive, not with every snapshot.
//!
//! Handing a datagram to the socket is the largest single cost of a tick (on loopback the
//! kernel delivers it to the receiver inside `sendto`: about 40 % of the tick with 200
//! clients, against about 22 % for netcode's encryption and 16 % for renet's packing). With
//! a send thread ([`ServerTransport::with_send_thread`], off by default: see
//! `ServeConfig::send_thread` for why) the tick's datagrams go to a
//! second thread in batches as they are encrypted, so the kernel's share runs on the other
//! core while this thread packs and encrypts the next clients';
//! [`ServerTransport::flush`] waits until every one of them is handed to the socket, so a
//! tick still ends with its last packet sent. Renet and netcode stay on the server's
//! thread (neither can be shared); only finished datagrams cross.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::ops::Range;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;
use std::time::Duration;

use renet::{ClientId, RenetServer};
use renetcode::{NETCODE_MAX_PACKET_BYTES, NetcodeServer, ServerConfig, ServerResult};

use crate::admission::Admission;
use crate::arrival::{self, stamp_arrivals};
use crate::framing::{self, Direction, PacketKind};

/// The first byte of renet 2's acknowledgement packet (`Packet::Ack`). Checked by this
/// module's tests against renet itself: they fail if an update of renet changes it.
const RENET_ACK: u8 = 4;

/// Whether a send lets renet's acknowledgement-only packets through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Acks {
    /// Send them.
    Send,
    /// Drop them (the next send that lets them through carries the same ranges, and more).
    Hold,
}

/// Whether a renet packet is an acknowledgement and nothing else.
fn is_ack(packet: &[u8]) -> bool {
    packet.first() == Some(&RENET_ACK)
}

/// Datagrams queued for the send thread: their bytes back to back and where each goes.
#[derive(Debug, Default)]
struct Batch {
    bytes: Vec<u8>,
    datagrams: Vec<(SocketAddr, Range<usize>)>,
}

impl Batch {
    fn clear(&mut self) {
        self.bytes.clear();
        self.datagrams.clear();
    }

    fn push(&mut self, payload: &[u8], addr: SocketAddr) {
        let begin = self.bytes.len();
        self.bytes.extend_from_slice(payload);
        self.datagrams.push((addr, begin..self.bytes.len()));
    }
}

/// Datagrams handed to the kernel in one `sendmmsg(2)`: the tick's datagrams go in
/// batches of this many rather than one system call each.
const SEND_BATCH: usize = 32;

/// Sends a batch's datagrams in order, [`SEND_BATCH`] to a system call. A datagram the
/// socket refuses is dropped, as the network might (renet resends what is reliable).
fn send_batch(socket: &UdpSocket, batch: &Batch) {
    #[cfg(target_os = "linux")]
    for chunk in batch.datagrams.chunks(SEND_BATCH) {
        use rustix::net::addr::SocketAddrArg;
        use rustix::net::{MMsgHdr, SendAncillaryBuffer, SendFlags, sendmmsg};
        // Everything on the stack: a tick's sending allocates nothing. The slots past the
        // chunk's end are filled but never passed to the kernel.
        let addrs: [_; SEND_BATCH] =
            std::array::from_fn(|i| chunk.get(i).unwrap_or(&chunk[0]).0.as_any());
        let iovs: [[io::IoSlice<'_>; 1]; SEND_BATCH] = std::array::from_fn(|i| {
            [io::IoSlice::new(
                chunk
                    .get(i)
                    .map_or(&[][..], |(_, range)| &batch.bytes[range.clone()]),
            )]
        });
        let mut controls: [SendAncillaryBuffer<'_, '_, '_>; SEND_BATCH] =
            std::array::from_fn(|_| SendAncillaryBuffer::default());
        let mut i = 0;
        let mut messages = controls.each_mut().map(|control| {
            let message = MMsgHdr::new_with_addr(&addrs[i], &iovs[i], control);
            i += 1;
            message
        });
        let mut next = 0;
        while next < chunk.len() {
            match sendmmsg(socket, &mut messages[next..chunk.len()], SendFlags::empty()) {
                Ok(0) => break,
                Ok(sent) => next += sent,
                Err(rustix::io::Errno::INTR) => {}
                // The first of the rest refused (a full send buffer): dropped.
                Err(_) => next += 1,
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    for (addr, range) in &batch.datagrams {
        let _ = send(socket, &batch.bytes[range.clone()], *addr);
    }
}

/// What the server's thread asks of the send thread.
enum Job {
    /// Send these, then give the batch back.
    Send(Batch),
    /// Say when everything asked before is sent.
    Flush,
}

/// What the send thread answers.
enum Done {
    /// A batch sent, emptied for reuse.
    Spent(Batch),
    /// Everything before the flush is handed to the socket; the thread's CPU time since
    /// the previous flush, seconds (`None` without a thread CPU clock).
    Flushed(Option<f64>),
}

/// Datagrams handed to a batch before it goes to the send thread: small enough that the
/// thread starts sending while the first clients' packets are still being encrypted, big
/// enough that waking it is rare (a few times a tick).
const BATCH_DATAGRAMS: usize = 16;

/// Batches in flight either way at most (the channels are bounded so that neither
/// allocates per message; the server's thread waits if the send thread falls this far
/// behind).
const BATCHES_IN_FLIGHT: usize = 64;

/// The send thread and the batches that go to it and come back.
struct SendThread {
    jobs: Option<SyncSender<Job>>,
    done: Receiver<Done>,
    /// The batch being filled.
    filling: Batch,
    /// Emptied batches to fill next.
    spare: Vec<Batch>,
    thread: Option<JoinHandle<()>>,
}

impl SendThread {
    fn spawn(socket: UdpSocket) -> io::Result<Self> {
        let (jobs, inbox) = sync_channel::<Job>(BATCHES_IN_FLIGHT);
        let (outbox, done) = sync_channel::<Done>(BATCHES_IN_FLIGHT + 1);
        let thread = std::thread::Builder::new()
            .name("lagcomp-send".to_owned())
            .spawn(move || send_loop(&socket, &inbox, &outbox))?;
        Ok(Self {
            jobs: Some(jobs),
            done,
            filling: Batch::default(),
            spare: Vec::new(),
            thread: Some(thread),
        })
    }

    /// Queues one datagram; hands the batch over when it is full.
    fn push(&mut self, payload: &[u8], addr: SocketAddr) {
        self.filling.push(payload, addr);
        if self.filling.datagrams.len() >= BATCH_DATAGRAMS {
            self.hand_over();
        }
    }

    /// Sends the batch being filled to the thread (if it holds anything) and starts
    /// another from a spare one.
    fn hand_over(&mut self) {
        if self.filling.datagrams.is_empty() {
            return;
        }
        // Batches the thread has finished with, without waiting for any (a flush's answer
        // never waits here: `flush` reads until it has it).
        while let Ok(Done::Spent(batch)) = self.done.try_recv() {
            self.spare.push(batch);
        }
        let next = self.spare.pop().unwrap_or_default();
        let full = std::mem::replace(&mut self.filling, next);
        if let Some(jobs) = &self.jobs {
            // An error means the thread is gone (it never panics on its own; see
            // `send_loop`): the datagrams are lost, as the network might lose them.
            let _ = jobs.send(Job::Send(full));
        }
    }

    /// Waits until everything queued is handed to the socket; the send thread's CPU time
    /// for it.
    fn flush(&mut self) -> Option<f64> {
        self.hand_over();
        let jobs = self.jobs.as_ref()?;
        jobs.send(Job::Flush).ok()?;
        loop {
            match self.done.recv() {
                Ok(Done::Spent(batch)) => self.spare.push(batch),
                Ok(Done::Flushed(cpu)) => return cpu,
                Err(_) => return None,
            }
        }
    }
}

impl Drop for SendThread {
    fn drop(&mut self) {
        // Closing the jobs channel ends the thread's loop.
        self.jobs = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The send thread: sends each batch's datagrams in order and returns the batch; answers
/// a flush once everything before it is sent. A datagram the socket refuses is dropped,
/// as the network might (renet resends what is reliable).
fn send_loop(socket: &UdpSocket, inbox: &Receiver<Job>, outbox: &SyncSender<Done>) {
    let mut since = crate::stats::thread_cpu_time();
    while let Ok(job) = inbox.recv() {
        let reply = match job {
            Job::Send(mut batch) => {
                send_batch(socket, &batch);
                batch.clear();
                Done::Spent(batch)
            }
            Job::Flush => {
                let now = crate::stats::thread_cpu_time();
                let cpu = now.zip(since).map(|(now, since)| now - since);
                since = now;
                Done::Flushed(cpu)
            }
        };
        if outbox.send(reply).is_err() {
            return;
        }
    }
}

/// Where a payload goes now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// Straight to the socket, on this thread (an answer that must leave at once).
    Now,
    /// With the tick's datagrams: to the send thread if there is one, which
    /// [`ServerTransport::flush`] waits for.
    Tick,
}

/// [`ServerTransport::maintain`] updates one client in this many per call.
const MAINTAIN_TURNS: usize = 4;

/// Netcode on a socket (see the [module documentation](self)).
pub(crate) struct ServerTransport {
    socket: UdpSocket,
    /// The tick's datagrams go through it, when there is one.
    sender: Option<SendThread>,
    /// Without one, the tick's datagrams not yet handed to the socket (at most
    /// [`SEND_BATCH`]).
    pending: Batch,
    /// Datagrams handed to the socket or the send thread.
    sent: u64,
    /// Their bytes, with every datagram sent outside the ticks (handshakes, keep-alives,
    /// clock-sync answers, goodbyes).
    sent_bytes: u64,
    /// Bytes of every datagram read, refused or not.
    received_bytes: u64,
    netcode: NetcodeServer,
    buffer: Box<[u8; NETCODE_MAX_PACKET_BYTES]>,
    /// Scratch: the clients to send to.
    clients: Vec<ClientId>,
    /// Which quarter of the clients [`ServerTransport::maintain`] updates next.
    maintain_turn: usize,
    /// What goes through to netcode, and what was refused.
    gate: Gate,
    /// A datagram read but left for a later read (it arrived after the read's limit); its
    /// bytes are in `buffer`.
    kept: Option<arrival::Datagram>,
}

impl std::fmt::Debug for ServerTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerTransport")
            .field("socket", &self.socket)
            .finish_non_exhaustive()
    }
}

impl ServerTransport {
    /// Netcode on `socket` (made non-blocking).
    /// The kernel stamps each datagram's arrival where it can ([`arrival`]).
    pub(crate) fn new(config: ServerConfig, socket: UdpSocket) -> io::Result<Self> {
        socket.set_nonblocking(true)?;
        stamp_arrivals(&socket);
        let unsecure = matches!(
            config.authentication,
            renetcode::ServerAuthentication::Unsecure
        );
        let gate = Gate::new(unsecure, config.current_time.as_secs_f64());
        Ok(Self {
            socket,
            sender: None,
            pending: Batch::default(),
            sent: 0,
            sent_bytes: 0,
            received_bytes: 0,
            netcode: NetcodeServer::new(config),
            buffer: Box::new([0; NETCODE_MAX_PACKET_BYTES]),
            clients: Vec::new(),
            maintain_turn: 0,
            gate,
            kept: None,
        })
    }

    /// With a thread that hands the tick's datagrams to the socket (see the
    /// [module documentation](self)).
    pub(crate) fn with_send_thread(mut self) -> io::Result<Self> {
        let socket = self.socket.try_clone()?;
        self.sender = Some(SendThread::spawn(socket)?);
        Ok(self)
    }

    /// Waits until every datagram of the tick is handed to the socket (at once without a
    /// send thread); the send thread's CPU time for them, seconds, if it has a clock.
    pub(crate) fn flush(&mut self) -> Option<f64> {
        self.send_pending();
        self.sender.as_mut().and_then(SendThread::flush)
    }

    /// Hands the queued datagrams to the socket.
    fn send_pending(&mut self) {
        if !self.pending.datagrams.is_empty() {
            send_batch(&self.socket, &self.pending);
            self.pending.clear();
        }
    }

    /// Datagrams sent so far (the tick's counted when queued for the send thread).
    pub(crate) fn datagrams(&self) -> u64 {
        self.sent
    }

    /// Bytes (UDP payloads) sent and received so far.
    pub(crate) fn bytes(&self) -> (u64, u64) {
        (self.sent_bytes, self.received_bytes)
    }

    /// Advances netcode's clock by `elapsed`, before a read of the socket
    /// ([`Self::next_payload`] until it says there is nothing more, then
    /// [`Self::end_receive`]).
    pub(crate) fn begin_receive(&mut self, elapsed: Duration) {
        self.netcode.update(elapsed);
    }

    /// Reads datagrams until one hands renet a payload: handshakes are answered,
    /// connections and disconnections reach `renet` on the way. The client the payload
    /// came from and the datagram's arrival stamp (time since the Unix epoch, the
    /// kernel's: `None` where there is none), so its messages can be read with the time
    /// it arrived before the next datagram is; `None` once nothing is waiting that arrived
    /// by `until` (wall-clock time since the Unix epoch): the first datagram stamped later
    /// is kept, unread, for the next call.
    ///
    /// Every datagram is checked ([`framing`], and connection requests by [`Admission`])
    /// before netcode sees it; what fails is dropped and counted ([`Self::take_refused`]).
    ///
    /// # Errors
    /// The socket's, other than "nothing more to read" and a refused earlier send.
    pub(crate) fn next_payload(
        &mut self,
        renet: &mut RenetServer,
        until: Duration,
    ) -> io::Result<Option<(ClientId, Option<Duration>)>> {
        loop {
            let datagram = match self.kept.take() {
                Some(kept) => kept,
                None => match arrival::receive(&self.socket, &mut self.buffer[..]) {
                    Ok(datagram) => {
                        self.received_bytes += datagram.len as u64;
                        datagram
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(None),
                    // An ICMP "port unreachable" for an earlier datagram: not this read's.
                    Err(e) if e.kind() == io::ErrorKind::ConnectionReset => continue,
                    Err(e) => return Err(e),
                },
            };
            if datagram.stamp.is_some_and(|stamp| stamp > until) {
                // Its bytes stay in the buffer until it is read.
                self.kept = Some(datagram);
                return Ok(None);
            }
            let len = if datagram.truncated {
                // Longer than any netcode packet: framing refuses it by its length.
                NETCODE_MAX_PACKET_BYTES + 1
            } else {
                datagram.len
            };
            let socket = &self.socket;
            let sent_bytes = &mut self.sent_bytes;
            let heard = self.gate.process(
                &mut self.netcode,
                renet,
                datagram.from,
                self.buffer.get_mut(..len).unwrap_or(&mut []),
                &mut |payload, addr| {
                    *sent_bytes += payload.len() as u64;
                    let _ = send(socket, payload, addr);
                },
            );
            if let Some(client) = heard {
                return Ok(Some((client, datagram.stamp)));
            }
        }
    }

    /// Whether a datagram was read but kept for a later read ([`Self::next_payload`]).
    pub(crate) fn has_kept(&self) -> bool {
        self.kept.is_some()
    }

    /// After a read of the socket: the clients renet disconnected are told so.
    pub(crate) fn end_receive(&mut self, renet: &mut RenetServer) {
        for client in renet.disconnections_id_iter().collect::<Vec<_>>() {
            let result = self.netcode.disconnect(client);
            handle(result, renet, &mut |payload, addr| {
                self.sent_bytes += payload.len() as u64;
                let _ = send(&self.socket, payload, addr);
            });
        }
    }

    /// What was refused or contained since the previous call.
    pub(crate) fn take_refused(&mut self) -> Refused {
        std::mem::take(&mut self.gate.refused)
    }

    /// Netcode's keep-alives and time-outs, for a quarter of the clients in turn: each is
    /// seen every fourth call (keep-alives go out after 250 ms without other packets;
    /// time-outs are seconds). Netcode finds a client by scanning all of them, so updating
    /// every client every tick was quadratic: 1.3 % of a tick's samples with 200 clients.
    pub(crate) fn maintain(&mut self, renet: &mut RenetServer) {
        self.clients.clear();
        self.clients.extend(self.netcode.clients_id_iter());
        let turn = self.maintain_turn;
        self.maintain_turn = (turn + 1) % MAINTAIN_TURNS;
        for &client in self.clients.iter().skip(turn).step_by(MAINTAIN_TURNS) {
            let result = self.netcode.update_client(client);
            handle(result, renet, &mut |payload, addr| {
                self.sent_bytes += payload.len() as u64;
                let _ = send(&self.socket, payload, addr);
            });
        }
    }

    /// Encrypts and sends what renet has queued for `client` (by `route`), and renet's
    /// acknowledgement of what it received from it if `acks` says so.
    pub(crate) fn send_to_client(
        &mut self,
        renet: &mut RenetServer,
        client: ClientId,
        acks: Acks,
        route: Route,
    ) {
        let Ok(packets) = renet.get_packets_to_send(client) else {
            return;
        };
        for packet in packets {
            if acks == Acks::Hold && is_ack(&packet) {
                continue;
            }
            match self.netcode.generate_payload_packet(client, &packet) {
                Ok((addr, payload)) => {
                    self.sent += 1;
                    self.sent_bytes += payload.len() as u64;
                    let (sender, pending) = (&mut self.sender, &mut self.pending);
                    if !dispatch(sender, pending, &self.socket, payload, addr, route) {
                        // The rest would fail the same way; renet resends what is reliable.
                        return;
                    }
                }
                // The client left netcode already: renet hears of it on the next read.
                Err(_) => return,
            }
        }
    }

    /// Encrypts `payload` (a datagram of records, `lagcomp_wire::datagram`, at most
    /// [`renetcode::NETCODE_MAX_PAYLOAD_BYTES`]) for `client` and sends it by `route`,
    /// beside renet. Whether it went (not to a client netcode no longer has, nor when the
    /// socket refused it).
    pub(crate) fn send_payload(&mut self, client: ClientId, payload: &[u8], route: Route) -> bool {
        match self.netcode.generate_payload_packet(client, payload) {
            Ok((addr, packet)) => {
                self.sent += 1;
                self.sent_bytes += packet.len() as u64;
                let (sender, pending) = (&mut self.sender, &mut self.pending);
                dispatch(sender, pending, &self.socket, packet, addr, route)
            }
            Err(_) => false,
        }
    }

    /// Renet's packets for `client` into `out` (cleared first), without its
    /// acknowledgement-only packet if `acks` says so, for the caller to send as records of
    /// its own datagram.
    pub(crate) fn renet_packets(
        renet: &mut RenetServer,
        client: ClientId,
        acks: Acks,
        out: &mut Vec<Vec<u8>>,
    ) {
        out.clear();
        if let Ok(packets) = renet.get_packets_to_send(client) {
            out.extend(
                packets
                    .into_iter()
                    .filter(|packet| acks == Acks::Send || !is_ack(packet)),
            );
        }
    }

    /// Tells every client goodbye at once (a server stopping).
    pub(crate) fn disconnect_all(&mut self, renet: &mut RenetServer) {
        for client in self.netcode.clients_id() {
            let result = self.netcode.disconnect(client);
            handle(result, renet, &mut |payload, addr| {
                self.sent_bytes += payload.len() as u64;
                let _ = send(&self.socket, payload, addr);
            });
        }
    }
}

/// Queues a datagram of the tick: to the send thread if there is one, else into the next
/// `sendmmsg(2)` (sent when [`SEND_BATCH`] are waiting, or at the tick's flush).
fn queue(
    sender: &mut Option<SendThread>,
    pending: &mut Batch,
    socket: &UdpSocket,
    payload: &[u8],
    addr: SocketAddr,
) {
    match sender {
        Some(sender) => sender.push(payload, addr),
        None => {
            pending.push(payload, addr);
            if pending.datagrams.len() >= SEND_BATCH {
                send_batch(socket, pending);
                pending.clear();
            }
        }
    }
}

/// Hands an encrypted datagram on by `route`: into the tick's batch ([`queue`]) or to
/// the socket at once. Whether it went (a queued datagram always does).
fn dispatch(
    sender: &mut Option<SendThread>,
    pending: &mut Batch,
    socket: &UdpSocket,
    packet: &[u8],
    addr: SocketAddr,
    route: Route,
) -> bool {
    match route {
        Route::Tick => {
            queue(sender, pending, socket, packet, addr);
            true
        }
        Route::Now => send(socket, packet, addr).is_ok(),
    }
}

/// One datagram out. A full send buffer drops it, as the network might: what matters is
/// resent by renet.
fn send(socket: &UdpSocket, payload: &[u8], addr: SocketAddr) -> io::Result<()> {
    socket.send_to(payload, addr).map(drop)
}

/// What netcode made of a datagram or an update: a packet to send back (by `send`), a
/// payload for renet, a connection or a disconnection.
pub(crate) fn handle(
    result: ServerResult<'_, '_>,
    renet: &mut RenetServer,
    send: &mut dyn FnMut(&[u8], SocketAddr),
) {
    match result {
        ServerResult::None => {}
        ServerResult::PacketToSend { payload, addr } => send(payload, addr),
        ServerResult::Payload { client_id, payload } => {
            // From a client renet does not know (it just left): nothing to do with it.
            let _ = renet.process_packet_from(payload, client_id);
        }
        ServerResult::ClientConnected {
            client_id,
            addr,
            payload,
            ..
        } => {
            renet.add_connection(client_id);
            send(payload, addr);
        }
        ServerResult::ClientDisconnected {
            client_id,
            addr,
            payload,
        } => {
            renet.remove_connection(client_id);
            if let Some(payload) = payload {
                send(payload, addr);
            }
        }
    }
}

/// Datagrams the server refused before netcode, or whose processing panicked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Refused {
    /// Not netcode's framing ([`framing::check`]).
    pub(crate) framing: u64,
    /// Connection requests over the rate limits, or (unsecure mode) with a token that
    /// expires too far ahead ([`Admission`]).
    pub(crate) requests: u64,
    /// Datagrams whose processing panicked (contained: see [`Gate::process`]).
    pub(crate) panics: u64,
}

/// The checks in front of netcode and the containment around it, for one datagram at a
/// time: the whole of the server's receive path below renet.
#[derive(Debug)]
pub(crate) struct Gate {
    admission: Admission,
    refused: Refused,
    /// Tests only: panic inside the contained processing of datagrams of this type, to
    /// see the containment work (no real datagram is known to panic any more).
    #[cfg(test)]
    fault: Option<PacketKind>,
}

impl Gate {
    /// For a server in unsecure mode or not, its netcode clock at `unix_secs`.
    pub(crate) fn new(unsecure: bool, unix_secs: f64) -> Self {
        Self {
            admission: Admission::new(unsecure, unix_secs),
            refused: Refused::default(),
            #[cfg(test)]
            fault: None,
        }
    }

    /// What was refused or contained so far.
    pub(crate) fn refused(&self) -> Refused {
        self.refused
    }

    /// One datagram `bytes` from `from`: checked, then netcode's and renet's. Answers go
    /// out by `send`. The client whose payload renet was handed, if any.
    ///
    /// A panic inside netcode or renet (none is known: the framing check stops the ones
    /// found, see [`framing`]) is contained: the datagram is dropped, its sender
    /// disconnected if it is a client, the panic counted and logged with the sender.
    pub(crate) fn process(
        &mut self,
        netcode: &mut NetcodeServer,
        renet: &mut RenetServer,
        from: SocketAddr,
        bytes: &mut [u8],
        send: &mut dyn FnMut(&[u8], SocketAddr),
    ) -> Option<ClientId> {
        let kind = match framing::check(bytes, Direction::ToServer) {
            Ok(kind) => kind,
            Err(_) => {
                self.refused.framing += 1;
                return None;
            }
        };
        if kind == PacketKind::Request {
            let clock = netcode.current_time();
            if self
                .admission
                .admit(from.ip(), bytes, clock.as_secs_f64(), clock.as_secs())
                .is_err()
            {
                self.refused.requests += 1;
                return None;
            }
        }
        #[cfg(test)]
        let fault = self.fault == Some(kind);
        // Containment needs panics to unwind: the workspace's profiles do (none sets
        // `panic = "abort"`); a build that aborts ends the process here as before.
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            #[cfg(test)]
            assert!(!fault, "a fault planted for {kind:?}");
            let result = netcode.process_packet(from, bytes);
            let heard = match result {
                ServerResult::Payload { client_id, .. } => Some(client_id),
                _ => None,
            };
            handle(result, renet, send);
            heard
        }));
        match outcome {
            Ok(heard) => heard,
            Err(panic) => {
                self.refused.panics += 1;
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                let client = netcode
                    .clients_id_iter()
                    .find(|&id| netcode.client_addr(id) == Some(from));
                tracing::error!(
                    sender = %from,
                    client = ?client,
                    "a datagram's processing panicked ({what}); dropped it{}",
                    if client.is_some() { " and disconnected its client" } else { "" }
                );
                if let Some(client) = client {
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        let result = netcode.disconnect(client);
                        handle(result, renet, send);
                    }));
                }
                None
            }
        }
    }
}

#[cfg(test)]
mod tests;

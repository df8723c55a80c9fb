//! What the server's integration tests share: a raw netcode client, and a client that
//! floods the server with inputs carrying replayed claims.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use lagcomp_udp::channel::{UNRELIABLE, connection_config, unsecure_token};
use lagcomp_udp::client::ClientTransport;
use renet::RenetClient;
use renet_netcode::ClientAuthentication;

/// Raw clients made so far by this test binary.
static CLIENTS: AtomicU64 = AtomicU64::new(0);

/// A netcode client of `server` on a socket of its own, not yet connected.
pub(crate) fn raw_client(server: SocketAddr) -> (ClientTransport, RenetClient) {
    let (transport, client, _) = raw_client_on_socket(server);
    (transport, client)
}

/// The same, with a handle on its socket (to send from the client's address). Its token
/// is the short one this crate's clients make (`unsecure_token`): the server refuses
/// unsecure tokens that expire far ahead.
pub(crate) fn raw_client_on_socket(
    server: SocketAddr,
) -> (ClientTransport, RenetClient, UdpSocket) {
    let socket = UdpSocket::bind("127.0.0.1:0").expect("a socket");
    let handle = socket.try_clone().expect("a handle");
    let epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970");
    // Unique among the clients a test starts at the same moment.
    let client_id = (u64::from(std::process::id()) << 32
        | u64::from(epoch.subsec_micros() & 0xffff) << 16)
        + CLIENTS.fetch_add(1, Ordering::Relaxed);
    let transport = ClientTransport::new(
        epoch,
        ClientAuthentication::Secure {
            connect_token: unsecure_token(client_id, server, epoch).expect("a token"),
        },
        socket,
    )
    .expect("a client transport");
    (transport, RenetClient::new(connection_config()), handle)
}

/// What a flooding client did.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Flood {
    /// Inputs sent while connected.
    pub(crate) inputs: u64,
    /// Whether it was connected, and then disconnected by the server.
    pub(crate) kicked: bool,
}

/// Inputs a second a flooding client sends.
pub(crate) const FLOOD_RATE: f64 = 500.0;

/// A client of `server` that, once connected, sends [`FLOOD_RATE`] inputs a second for
/// `seconds`, each with `copies` copies of a claim whose sequence number the server can
/// only take for a replay (0): the same claim every time, or with `vary` a new one in every
/// input (a changed claim under the old number). Bounded: it gives up 15 s past `seconds`.
pub(crate) fn flood(server: SocketAddr, seconds: f64, copies: usize, vary: bool) -> Flood {
    use lagcomp::{Quat, Vec3};
    use lagcomp_validate::{RenderTime, ShotClaim, WeaponId};
    use lagcomp_wire::{ClientMessage, Input};

    let (mut transport, mut client) = raw_client(server);
    let mut messages = lagcomp_udp::client::Messages::default();
    let start = Instant::now();
    let mut last = start;
    let mut flooding_since: Option<Instant> = None;
    let mut flood = Flood::default();
    let mut bytes = Vec::new();
    let mut was_connected = false;
    while start.elapsed().as_secs_f64() < seconds + 15.0 {
        let now = Instant::now();
        client.update(now - last);
        if transport.update(now - last, &mut client).is_err() {
            break;
        }
        last = now;
        transport.take_messages(&mut messages);
        if client.is_disconnected() || transport.disconnect_reason().is_some() {
            break;
        }
        if client.is_connected() {
            was_connected = true;
            let since = *flooding_since.get_or_insert(now);
            let elapsed = now.duration_since(since).as_secs_f64();
            if elapsed >= seconds {
                break;
            }
            while (flood.inputs as f64) < elapsed * FLOOD_RATE {
                let frame = flood.inputs as u32 + 1;
                let claim = ShotClaim {
                    shooter: lagcomp::EntityId::from_bits(0),
                    weapon: WeaponId(1),
                    seq: 0,
                    render_time: RenderTime::Time(if vary { f64::from(frame) * 1e-3 } else { 0.5 }),
                    origin: Vec3::new(0.0, 1.6, 0.0),
                    direction: Vec3::Z,
                    hit: None,
                };
                let input = ClientMessage::Input(Input {
                    frame,
                    ping: None,
                    probe_reply: None,
                    aim: Quat::IDENTITY,
                    interp_delay: 0.1,
                    newest_tick: None,
                    verdicts_received: None,
                    shots: vec![(0, claim); copies],
                    weapon_shots: Vec::new(),
                });
                input.encode(&mut bytes).expect("an input encodes");
                client.send_message(UNRELIABLE, bytes.clone());
                flood.inputs += 1;
            }
        }
        if transport.send_packets(&mut client).is_err() {
            break;
        }
        thread::sleep(Duration::from_millis(1));
    }
    flood.kicked =
        was_connected && (client.is_disconnected() || transport.disconnect_reason().is_some());
    transport.disconnect();
    flood
}

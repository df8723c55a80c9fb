//! What `lagcomp serve` and `lagcomp bots` agree on below the wire protocol: the netcode
//! protocol id, renet's channels and their limits, and waiting on sockets.
//!
//! Connections are netcode's *secure* mode when the server is given a private key
//! ([`NetcodeKey`]): a client then joins only with a connect token minted with that key
//! ([`connect_token`], what a matchmaker hands out; `lagcomp bots` given the same key mints
//! its own), naming this server's address, unexpired, and each connection's packets are
//! encrypted with keys the token carries. Without a key the server runs netcode's
//! *unsecure* mode: a client makes up its own token with the fixed [`PROTOCOL_ID`], so
//! anyone who can reach the port can join, take a player's slot and send whatever a
//! client may send; packets are "encrypted" with keys anyone can read from the request,
//! so anyone on the path can read and forge them. That is fine for a test server and bots
//! on one machine or a lab network, not for a game on the internet. Its tokens must
//! expire within [`UNSECURE_EXPIRY_LIMIT_SECS`] (this crate's clients
//! make them for [`UNSECURE_TOKEN_EXPIRY_SECS`]: [`unsecure_token`]); renet's own
//! unsecure clients make them for 300 s and are refused.

use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

use renet::{ChannelConfig, ConnectionConfig, SendType};
use renetcode::{ConnectToken, NETCODE_KEY_BYTES};
use rustix::event::{PollFd, PollFlags, Timespec};
use thiserror::Error;

/// Netcode's protocol id: `"lagcomp"` and the wire protocol's version in the low byte, so
/// a client of another version is refused during the handshake.
pub const PROTOCOL_ID: u64 = 0x6c61_6763_6f6d_7000 | lagcomp_wire::PROTOCOL_VERSION as u64;

/// Netcode's private key: shared by the server and whoever mints connect tokens, never
/// sent to a client.
pub type NetcodeKey = [u8; NETCODE_KEY_BYTES];

/// How long a minted connect token may be used to connect, seconds.
pub const TOKEN_EXPIRY_SECS: u64 = 60;

/// Seconds without a packet after which either side drops a connection made with a
/// minted token: netcode's default, the same as an unsecure connection's.
pub const CONNECTION_TIMEOUT_SECS: i32 = 15;

/// A fresh private key from the operating system's random source.
#[must_use]
pub fn new_key() -> NetcodeKey {
    renetcode::generate_random_bytes()
}

/// A key as text: 64 lowercase hexadecimal digits.
#[must_use]
pub fn key_to_hex(key: &NetcodeKey) -> String {
    key.iter().map(|b| format!("{b:02x}")).collect()
}

/// Why text is not a key.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum KeyError {
    /// Not 64 hexadecimal digits (surrounding white space is ignored).
    #[error("a netcode key is 64 hexadecimal digits, got {0} characters")]
    Length(usize),
    /// A character that is not a hexadecimal digit.
    #[error("a netcode key is hexadecimal; found {0:?}")]
    Digit(char),
}

/// Reads a key written by [`key_to_hex`] (either case, surrounding white space ignored).
///
/// # Errors
/// [`KeyError`] when the text is not 64 hexadecimal digits.
pub fn parse_key(text: &str) -> Result<NetcodeKey, KeyError> {
    let text = text.trim();
    let chars = text.chars().count();
    if chars != 2 * NETCODE_KEY_BYTES {
        return Err(KeyError::Length(chars));
    }
    let mut key = [0_u8; NETCODE_KEY_BYTES];
    let mut digits = text.chars();
    for byte in &mut key {
        let mut next = || {
            let c = digits.next().unwrap_or('?');
            c.to_digit(16).map(|d| d as u8).ok_or(KeyError::Digit(c))
        };
        *byte = next()? << 4 | next()?;
    }
    Ok(key)
}

/// Mints the connect token a matchmaker would hand the player `client_id` for `server`
/// (the address the server was told is its own), valid for [`TOKEN_EXPIRY_SECS`] from
/// `now` (time since the Unix epoch).
///
/// # Errors
/// netcode's, if the token cannot be encrypted.
pub fn connect_token(
    key: &NetcodeKey,
    client_id: u64,
    server: SocketAddr,
    now: Duration,
) -> Result<ConnectToken, renetcode::TokenGenerationError> {
    token(key, TOKEN_EXPIRY_SECS, client_id, server, now)
}

/// A token of this protocol for `client_id` and `server`, encrypted with `key`, usable to
/// connect for `expiry` seconds from `now`.
fn token(
    key: &NetcodeKey,
    expiry: u64,
    client_id: u64,
    server: SocketAddr,
    now: Duration,
) -> Result<ConnectToken, renetcode::TokenGenerationError> {
    ConnectToken::generate(
        now,
        PROTOCOL_ID,
        expiry,
        client_id,
        CONNECTION_TIMEOUT_SECS,
        vec![server],
        None,
        key,
    )
}

/// In unsecure mode, the furthest ahead of the server's clock a connection request's token
/// may expire, seconds: requests with later ones are refused before netcode (which would
/// keep their half-open connections that long). This crate's clients make theirs for
/// [`UNSECURE_TOKEN_EXPIRY_SECS`]; a client clock a little ahead is allowed for.
pub const UNSECURE_EXPIRY_LIMIT_SECS: u64 = 45;

/// How long an unsecure client's own token may be used to connect, seconds: netcode keeps
/// a half-open connection until its token expires, and in unsecure mode anyone makes
/// tokens, so the server refuses those that expire far ahead
/// ([`UNSECURE_EXPIRY_LIMIT_SECS`]).
pub const UNSECURE_TOKEN_EXPIRY_SECS: u64 = 30;

/// The token a client makes for itself to join `server` in unsecure mode as `client_id`,
/// valid for [`UNSECURE_TOKEN_EXPIRY_SECS`] from `now` (time since the Unix epoch); a
/// client connects with it as with a minted one (`ClientAuthentication::Secure`).
///
/// # Errors
/// netcode's, if the token cannot be encrypted.
pub fn unsecure_token(
    client_id: u64,
    server: SocketAddr,
    now: Duration,
) -> Result<ConnectToken, renetcode::TokenGenerationError> {
    // The key of netcode's unsecure mode.
    token(
        &[0; NETCODE_KEY_BYTES],
        UNSECURE_TOKEN_EXPIRY_SECS,
        client_id,
        server,
        now,
    )
}

/// Unreliable, both ways: inputs up; snapshot parts, pongs, probes and shot
/// acknowledgements down (each superseded by the next), and shot verdicts, which the
/// server repeats until the client acknowledges them (`lagcomp_wire::verdicts`: that
/// puts them in the snapshot's datagram, where renet's reliable channel packed them into
/// a datagram of their own).
pub const UNRELIABLE: u8 = 0;

/// Reliable and ordered, server to client: the welcome, needed before anything else.
pub const WELCOME: u8 = 1;

/// How much a channel may hold before renet drops (unreliable) or disconnects (reliable).
const CHANNEL_MEMORY: usize = 8 * 1024 * 1024;

/// The connection settings of both ends (renet requires them to match).
#[must_use]
pub fn connection_config() -> ConnectionConfig {
    ConnectionConfig {
        // Per call of renet's packet generation, which both ends make at least once a
        // tick: room for a few hundred players' snapshot parts.
        available_bytes_per_tick: 4 * 1024 * 1024,
        server_channels_config: vec![
            ChannelConfig {
                channel_id: UNRELIABLE,
                max_memory_usage_bytes: CHANNEL_MEMORY,
                send_type: SendType::Unreliable,
            },
            ChannelConfig {
                channel_id: WELCOME,
                max_memory_usage_bytes: CHANNEL_MEMORY,
                // Resent more than 250 ms apart: the welcome is all a new client is sent
                // until it answers, and netcode finishes a handshake whose keep-alive was
                // lost only by sending another, after 250 ms without other packets.
                send_type: SendType::ReliableOrdered {
                    resend_time: Duration::from_millis(400),
                },
            },
        ],
        client_channels_config: vec![ChannelConfig {
            channel_id: UNRELIABLE,
            max_memory_usage_bytes: CHANNEL_MEMORY,
            send_type: SendType::Unreliable,
        }],
    }
}

/// Waits until one of `sockets` has a datagram or `timeout` has passed, and says which
/// have one (`ready` is cleared first, then one flag per socket). An interrupted wait
/// returns with none ready.
///
/// # Errors
/// The system's error if waiting fails.
pub fn wait_readable(
    sockets: &[UdpSocket],
    timeout: Duration,
    ready: &mut Vec<bool>,
) -> std::io::Result<()> {
    // A server waits on one socket thousands of times a second: its set lives on the
    // stack. Many sockets (the bots' process) get a vector.
    if let [socket] = sockets {
        return poll_into(&mut [PollFd::new(socket, PollFlags::IN)], timeout, ready);
    }
    let mut set: Vec<PollFd<'_>> = sockets
        .iter()
        .map(|s| PollFd::new(s, PollFlags::IN))
        .collect();
    poll_into(&mut set, timeout, ready)
}

/// Polls `set` for up to `timeout` and writes which entries became readable to `ready`
/// (all `false` when a signal interrupted the wait).
fn poll_into(
    set: &mut [PollFd<'_>],
    timeout: Duration,
    ready: &mut Vec<bool>,
) -> std::io::Result<()> {
    let timeout = Timespec {
        tv_sec: i64::try_from(timeout.as_secs()).unwrap_or(i64::MAX),
        tv_nsec: i64::from(timeout.subsec_nanos()),
    };
    ready.clear();
    match rustix::event::poll(set, Some(&timeout)) {
        Ok(_) => ready.extend(set.iter().map(|fd| !fd.revents().is_empty())),
        Err(rustix::io::Errno::INTR) => ready.resize(set.len(), false),
        Err(error) => return Err(error.into()),
    }
    Ok(())
}

/// Lets the calling thread's sleeps end on time (Linux's default timer slack wakes a
/// thread up to 50 µs late); the old slack is put back when this is dropped.
#[derive(Debug)]
pub(crate) struct TightTimers(#[cfg(target_os = "linux")] Option<u64>);

impl TightTimers {
    pub(crate) fn new() -> Self {
        #[cfg(target_os = "linux")]
        {
            let old = rustix::thread::current_timer_slack().ok();
            let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1));
            Self(old)
        }
        #[cfg(not(target_os = "linux"))]
        Self()
    }
}

impl Drop for TightTimers {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        if let Some(old) = self.0 {
            let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(old));
        }
    }
}

/// A socket's receive buffer widened to 1 MiB where the system allows, so a burst of
/// snapshot parts is not dropped while the thread is busy.
pub(crate) fn widen_receive_buffer(socket: &UdpSocket) {
    let _ = rustix::net::sockopt::set_socket_recv_buffer_size(socket, 1 << 20);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bound() -> UdpSocket {
        UdpSocket::bind("127.0.0.1:0").expect("a loopback socket")
    }

    #[test]
    fn keys_read_back_what_was_written_and_nothing_else() {
        let key = new_key();
        assert_ne!(key, new_key(), "two fresh keys should differ");
        assert_eq!(parse_key(&key_to_hex(&key)), Ok(key));
        assert_eq!(
            parse_key(&format!("  {}\n", key_to_hex(&key).to_uppercase())),
            Ok(key)
        );
        assert_eq!(parse_key("abc"), Err(KeyError::Length(3)));
        let bad = format!("{}g", &key_to_hex(&key)[1..]);
        assert_eq!(parse_key(&bad), Err(KeyError::Digit('g')));
        // A multi-byte character counts as one, and is refused, not sliced through.
        let wide = format!("é{}", &key_to_hex(&key)[1..]);
        assert_eq!(parse_key(&wide), Err(KeyError::Digit('é')));
    }

    #[test]
    fn says_which_sockets_have_a_datagram() {
        let sender = bound();
        let mut ready = vec![true; 5];
        // One socket (the server's stack-held set): nothing yet, then a datagram.
        let one = [bound()];
        wait_readable(&one, Duration::from_millis(1), &mut ready).expect("poll");
        assert_eq!(ready, [false]);
        sender
            .send_to(b"x", one[0].local_addr().expect("address"))
            .expect("send");
        wait_readable(&one, Duration::from_secs(5), &mut ready).expect("poll");
        assert_eq!(ready, [true]);
        // Several: only the one sent to.
        let three = [bound(), bound(), bound()];
        sender
            .send_to(b"y", three[1].local_addr().expect("address"))
            .expect("send");
        wait_readable(&three, Duration::from_secs(5), &mut ready).expect("poll");
        assert_eq!(ready, [false, true, false]);
    }
}

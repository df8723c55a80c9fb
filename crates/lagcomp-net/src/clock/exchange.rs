//! The four-timestamp exchange behind clock sync: what the client sends and what the server
//! answers.

/// A client's clock probe: its id and the client time it was sent at (`t0`).
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Ping {
    /// Matches the answer to the probe; increases by one per ping (wrapping).
    pub id: u32,
    /// Client time at sending, seconds (`t0`).
    pub client_send: f64,
}

/// The server's answer to a [`Ping`]: the ping echoed with the server time it arrived
/// (`t1`) and the server time the answer left (`t2`).
///
/// The server should stamp `server_send` as late as it can (just before the write), so
/// time the answer spent queued on the server does not count as network delay.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Pong {
    /// The ping's id.
    pub id: u32,
    /// The ping's client send time, echoed (`t0`).
    pub client_send: f64,
    /// Server time the ping arrived, seconds (`t1`).
    pub server_receive: f64,
    /// Server time this answer was sent, seconds (`t2`).
    pub server_send: f64,
}

impl Pong {
    /// The server's answer to `ping`, received at server time `server_receive` and sent at
    /// `server_send`.
    #[must_use]
    pub const fn answer(ping: Ping, server_receive: f64, server_send: f64) -> Pong {
        Pong {
            id: ping.id,
            client_send: ping.client_send,
            server_receive,
            server_send,
        }
    }
}

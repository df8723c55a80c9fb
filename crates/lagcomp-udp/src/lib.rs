//! lagcomp over real UDP sockets: programs that run as separate processes and talk through
//! the loopback interface or a real network.
//!
//! - [`proxy`]: [`Proxy`], a UDP proxy that puts real datagrams between a client and a
//!   server through the link conditioner of `lagcomp-net` (latency, jitter, loss,
//!   duplication, reordering, per direction, seeded), with one upstream socket per client,
//!   counters and a measured scheduling error. The engine of `lagcomp proxy`.
//! - [`server`]: [`GameServer`], the simulator's server on a fixed tick over renet and
//!   netcode: snapshots of the bodies near each client (interest management), clock sync,
//!   probes, shot validation, audit log and match recording. The engine of `lagcomp
//!   serve`.
//! - [`bots`]: many clients in one process running the simulator's client logic against
//!   the real clock, and their agreement tally. The engine of `lagcomp bots`.
//! - [`channel`]: the protocol id, renet channels, socket waiting and the netcode keys and
//!   connect tokens both sides share.
//! - [`client`]: a client's end of netcode on its socket ([`client::ClientTransport`]),
//!   which takes apart the server's datagrams of records.
//! - [`stats`]: the tick-time histogram.
//! - `stance`: the humanoid's stance between the simulator and the wire (what the server
//!   sends instead of bones, and the client's rebuild of the bones from it).
//! - `transport`: the server's end of netcode on its socket, sending once a tick;
//!   `framing` checks every datagram's netcode framing before netcode sees it,
//!   `admission` rate-limits connection requests, `arrival` takes each datagram's
//!   arrival time from the kernel.
//! - `answered`: the server's memory of the shots it answered lately, per connection, so a
//!   copy of one is answered again rather than validated and written again.
//!
//! # Example
//!
//! A server behind a proxy that adds 100/25/2% (ping, jitter, loss) to everything.
//!
//! ```
//! use std::net::UdpSocket;
//! use lagcomp_udp::proxy::{Proxy, ProxyConfig};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = UdpSocket::bind("127.0.0.1:0")?;
//! let (up, down) = lagcomp_net::preset("100/25/2%").expect("a built-in preset").links();
//! let mut config = ProxyConfig::new("127.0.0.1:0".parse()?, server.local_addr()?)
//!     .with_links(up, down);
//! config.seed = 42;
//! let proxy = Proxy::bind(config)?;
//! println!("clients send to {}", proxy.local_addr());
//! let (stop, stats) = (proxy.stop_handle(), proxy.stats());
//! let running = proxy.spawn(None)?;
//! // ... clients and server talk through the proxy ...
//! stop.stop();
//! running.join().expect("the proxy thread")?;
//! assert_eq!(stats.snapshot().up.packets_in, 0);
//! # Ok(())
//! # }
//! ```

mod admission;
mod answered;
mod arrival;
pub mod bots;
pub mod channel;
pub mod client;
mod framing;
#[doc(hidden)]
pub mod fuzzing;
pub mod proxy;
pub mod server;
mod stance;
pub mod stats;
mod transport;

pub use bots::{BotsConfig, BotsError, BotsReport};
pub use proxy::{Proxy, ProxyConfig, ProxyError, ProxyStats, StopHandle};
pub use server::{GameServer, ServeConfig, ServeError, Status, Summary};

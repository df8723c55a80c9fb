//! A deterministic match simulator for lagcomp, and the game logic that `lagcomp serve`
//! and `lagcomp bots` run over real sockets.
//!
//! - [`body`]: the humanoid rig, how bodies move, the arena.
//! - [`cheat`]: the cheat classes.
//! - [`client`]: [`client::BotBrain`], a bot's client logic, clock- and transport-agnostic.
//! - [`echo`]: the round trip measured from snapshot acknowledgements, which caps the one
//!   measured from probes (the fake-latency defence).
//! - [`server`]: [`server::ServerCore`], the server's game state and per-tick logic.
//! - [`interest`]: which entities each player is sent (near it, with hysteresis).
//! - [`skirmish`]: one simulated match: both of the above over emulated links.
//! - [`scenario`]: what a `lagcomp simulate` run plays.
//! - [`result`]: what a run measured (table, JSON, report).
//! - [`report`]: the HTML report with SVG charts.

pub mod body;
pub mod cheat;
pub mod client;
pub mod echo;
pub mod interest;
pub mod report;
pub mod result;
pub mod scenario;
pub mod server;
pub mod skirmish;
mod traffic;

pub use result::{
    CheatResult, ErrorStats, Mode, ModeResult, Outline, PresetRun, ShotPicture, SimResult,
};

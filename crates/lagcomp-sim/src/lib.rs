//! A deterministic match simulator for lagcomp: bots behind emulated networks, measuring
//! how often the server agrees with honest clients and how many cheats get through, and
//! the HTML report of what it measured. The game it plays (bodies, the bot brain, the
//! server core) is `lagcomp-game`'s, the same one `lagcomp serve` and `lagcomp bots` run
//! over real sockets.
//!
//! - [`skirmish`]: one simulated match: the game's server and bots over emulated links.
//! - [`scenario`]: what a `lagcomp simulate` run plays.
//! - [`result`]: what a run measured (table, JSON, report).
//! - [`report`]: the HTML report with SVG charts.

pub mod report;
pub mod result;
pub mod scenario;
pub mod skirmish;

// A run's counts per mode and per cheat class are the game's scorecards; they are fields
// of `SimResult`, so they are named here too.
pub use lagcomp_game::scorecard::{CheatResult, ModeResult};
pub use result::{
    DistanceStats, ExtrapolatedShots, Mode, Outline, PresetRun, RewindStats, ShotPicture, SimResult,
};

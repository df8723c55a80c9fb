//! The client half of lag compensation.
//!
//! The server core (`lagcomp`) rewinds its hitboxes to the moment a shooter saw. This crate
//! is what the shooter's side needs for that moment to be known exactly: a clock that
//! agrees with the server's, remote entities drawn a measured delay in the past with the
//! very arithmetic the server uses to rebuild them, shots stamped with what was on screen
//! and sent redundantly, and a seeded link conditioner to test all of it over bad networks.
//!
//! No I/O and no clocks: every call that needs "now" takes it as an `f64` of seconds.
//!
//! - [`clock`]: [`ClockSync`] (server time from ping/pong samples: filtered, slewed,
//!   monotonic) and [`RttEstimator`].
//! - [`interp`]: [`SnapshotBuffer`] (interpolation bit-identical to the server's
//!   rebuild, bounded extrapolation) and [`InterpolationDelay`] (adaptive).
//! - [`shot`]: [`Stamp`]s from views, [`ShotSender`] (redundant sending) and
//!   [`ShotReceiver`] (copies versus replays), [`Fingerprint`].
//! - [`conditioner`]: [`LinkConditioner`] (latency, jitter, loss, bursts, duplication,
//!   reordering), [`PRESETS`].

pub mod clock;
pub mod conditioner;
pub mod interp;
pub mod shot;

pub use clock::{ClockConfig, ClockSync, Ping, Pong, PongOutcome, RttEstimator};
pub use conditioner::{
    GilbertElliott, LinkConditioner, LinkConfig, LinkStats, PRESETS, Preset, preset,
};
pub use interp::{
    DEFAULT_MAX_EXTRAPOLATION, InterpolationConfig, InterpolationDelay, Pushed, Snapshot,
    SnapshotBuffer, View,
};
pub use shot::{Delivery, Fingerprint, ShotReceiver, ShotSender, Stamp, stamp};

/// Times (seconds) beyond this magnitude are treated as corrupt, as the server core treats
/// them: 30,000 years is no clock's reading, and keeping every time below it keeps every
/// sum and difference of times finite.
pub const MAX_TIME: f64 = 1.0e12;

/// Whether `t` is usable as a time: finite and within [`MAX_TIME`].
#[inline]
pub(crate) fn is_time(t: f64) -> bool {
    t.abs() <= MAX_TIME
}

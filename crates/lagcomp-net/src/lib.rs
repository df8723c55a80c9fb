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
//!
//! # Example
//!
//! A client drawing a remote player over a 100 ms link, and the server rebuilding exactly
//! what it drew.
//!
//! ```
//! use std::sync::Arc;
//! use lagcomp::{
//!     BoneTransform, EntityState, History, HistoryConfig, Hitbox, Rig, Shape, Tick, Vec3,
//!     WindowPolicy, Zone,
//! };
//! use lagcomp_net::{
//!     ClockConfig, ClockSync, InterpolationDelay, LinkConditioner, Pong, Snapshot,
//!     SnapshotBuffer, stamp,
//! };
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! const RATE: f64 = 64.0;
//! let mut history = History::new(HistoryConfig { tick_rate: RATE, max_rewind: 1.0 })?;
//! let rig = Arc::new(Rig::rigid(vec![Hitbox::new(
//!     0, "body", Zone::Torso, 0, Shape::cuboid(Vec3::splat(0.5)),
//! )])?);
//! let target = history.spawn(rig);
//!
//! let (up, down) = lagcomp_net::preset("100/25/2%").unwrap().links();
//! let mut to_server = LinkConditioner::new(up, 1);
//! let mut to_client = LinkConditioner::new(down, 2);
//! // The client's clock started 42 s after the server's.
//! let client_time = |server_time: f64| server_time - 42.0;
//!
//! let mut clock = ClockSync::new(ClockConfig::default());
//! let mut delay = InterpolationDelay::default();
//! let mut buffer = SnapshotBuffer::default();
//! let mut bones = Vec::new();
//! let mut last_view = None;
//! for tick in 0..(3 * 64_u32) {
//!     let now = f64::from(tick) / RATE; // server time
//!     // The server records the target strafing, and sends it in every third tick.
//!     let pose = BoneTransform::from_translation(Vec3::new(0.1 * tick as f32, 0.0, 0.0));
//!     history.begin_frame(Tick(tick), now)?.record_rigid(target, pose, EntityState::default())?;
//!     if tick % 3 == 0 {
//!         let snapshot = Snapshot {
//!             tick: Tick(tick), time: now, bones: vec![pose],
//!             velocity: Vec3::new(6.4, 0.0, 0.0), teleport: false,
//!         };
//!         to_client.send(now, Err(snapshot));
//!     }
//!     // The client pings; the server answers as pings arrive.
//!     if clock.ping_due(client_time(now)) {
//!         to_server.send(now, clock.ping(client_time(now)));
//!     }
//!     while let Some(ping) = to_server.poll(now) {
//!         to_client.send(now, Ok(Pong::answer(ping, now, now)));
//!     }
//!     while let Some(message) = to_client.poll(now) {
//!         match message {
//!             Ok(pong) => { clock.on_pong(pong, client_time(now)); }
//!             Err(snapshot) => {
//!                 delay.on_snapshot(client_time(now), snapshot.time);
//!                 buffer.push(snapshot);
//!             }
//!         }
//!     }
//!     // The client draws the target a little in the past.
//!     if let Some(server_now) = clock.server_time(client_time(now)) {
//!         let render_time = delay.render_time(server_now).unwrap();
//!         last_view = buffer.sample(render_time, 0.25, &mut bones);
//!     }
//! }
//!
//! // A shot fired now claims the view on screen; the server rebuilds the same bones.
//! let claim = stamp(&last_view.expect("synced and drawing"));
//! let rebuilt = history
//!     .entity_at(target, claim.rewind_target().unwrap(), WindowPolicy::Reject)?
//!     .expect("recorded then");
//! assert_eq!(rebuilt.bone(0), Some(bones[0]));
//! # Ok(())
//! # }
//! ```

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
    SnapshotBuffer, View, teleported_since,
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

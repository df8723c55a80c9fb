//! Concurrent rewound queries and shot validation over a [`lagcomp`] history.
//!
//! A game server records one frame per tick on its game thread; hit registration wants
//! to run elsewhere, on every core, without stopping the recording and without ever seeing
//! half a frame. This crate gives it two ways:
//!
//! - [`QueryService`]: worker threads answering rewound queries ([`RewoundRequest`]) and
//!   judging shot claims ([`lagcomp_validate::ShotClaim`]) submitted from any thread.
//!   Each submission returns a [`Pending`]: a `std` future that needs no particular async
//!   runtime, or a blocking [`Pending::wait`]. A bounded queue refuses work beyond its
//!   capacity ([`SubmitError::QueueFull`]); dropping the service answers what is still
//!   queued with [`ServiceError::ShutDown`] and joins the workers.
//! - [`batch`]: a slice of rays, queries or claims against one history at once, in
//!   parallel on rayon's threads, answers in input order.
//!
//! Answers are exactly those of the synchronous API ([`lagcomp::History::query`],
//! [`lagcomp_validate::Validator::validate`] with each shooter's claims in submission
//! order) on the history as it was when they were computed, which each answer names
//! ([`AsOf`]).
//!
//! - [`shared`]: [`SharedHistory`], the history behind a lock, and [`AsOf`].
//! - [`service`]: the worker threads, their queue, and claim ordering.
//! - [`pending`]: the one-shot future.
//! - [`request`]: queries as values ([`RewoundRequest`], [`Probe`], [`Line`], [`Found`]).
//! - [`batch`]: the parallel batch API.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use lagcomp::{
//!     BoneTransform, EntityState, History, HistoryConfig, Hitbox, Rig, RewindTarget, Shape,
//!     Tick, Vec3, Zone,
//! };
//! use lagcomp_service::{Line, Probe, QueryService, RewoundRequest, ServiceConfig, SharedHistory};
//! use lagcomp_validate::{RuleSet, Validator};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut history = History::new(HistoryConfig { tick_rate: 64.0, max_rewind: 0.5 })?;
//! let rig = Arc::new(Rig::rigid(vec![
//!     Hitbox::new(0, "body", Zone::Torso, 0, Shape::cuboid(Vec3::new(0.3, 0.9, 0.3))),
//! ])?);
//! let target = history.spawn(rig);
//! let shared = Arc::new(SharedHistory::new(history));
//! let rules = RuleSet { policy: Default::default(), weapons: Default::default() };
//! let service = QueryService::new(
//!     Arc::clone(&shared),
//!     Validator::new(rules),
//!     ServiceConfig { workers: 2, queue_capacity: 256 },
//! )?;
//!
//! // The game thread records; the target walks along +x at 5 m/s.
//! for tick in 0..32_u32 {
//!     let time = f64::from(tick) / 64.0;
//!     let at = BoneTransform::from_translation(Vec3::new(5.0 * time as f32, 0.0, 0.0));
//!     shared.record(Tick(tick), time, |frame| {
//!         frame.record_rigid(target, at, EntityState::default())
//!     })??;
//! }
//!
//! // Any thread asks where a shot 10 m in front of tick 20's position would have landed.
//! let x = 5.0 * 20.0 / 64.0;
//! let line = Line::new(Vec3::new(x, 0.5, -10.0), Vec3::Z, 100.0);
//! let query = RewoundRequest::new(RewindTarget::between(Tick(20), Tick(20), 0.0), Probe::Ray(line));
//! let answer = service.submit(query)?.wait()?;
//! assert_eq!(answer.as_of.newest_tick(), Some(Tick(31)));
//! let found = answer.value?;
//! assert_eq!(found.hit().map(|hit| hit.entity), Some(target));
//! # Ok(())
//! # }
//! ```

pub mod batch;
pub mod pending;
pub mod request;
pub mod service;
pub mod shared;

pub use pending::{Pending, ServiceError};
pub use request::{Found, Line, Probe, RewoundRequest};
pub use service::{
    Answer, ClaimRequest, QueryAnswer, QueryService, ServiceConfig, StartError, SubmitError,
    VerdictAnswer,
};
pub use shared::{AsOf, HistoryReader, HistoryWriter, SharedHistory};

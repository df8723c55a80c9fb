//! Server-side rewind for fair hit registration.
//!
//! A player shoots at what their screen showed: remote players drawn about 100 ms in the
//! past, and a shot that reaches the server half a round trip later. `lagcomp` keeps a short
//! history of every entity's hitboxes, rebuilds them at the moment the shooter saw, and
//! traces the shot against that past, without ever moving the live world.
//!
//! This crate is the core: no I/O, no clocks (every call that needs "now" takes it).
//!
//! - [`rig`]: hitboxes (sphere, box, capsule) on the bones of an entity.
//! - [`history`]: the ring buffer of recorded frames; spawning, recording.
//! - [`world`]: the level's static geometry (walls, floors) that blocks traces.
//! - [`time`]: ticks and rewind targets (a time, a pair of ticks and a fraction, a latency).
//! - [`query`]: rewound rays, sphere sweeps and overlaps, with their hits and debug output.
//! - [`narrow`]: the exact per-shape geometry, usable on its own.
//! - [`math`]: transforms, bounds and interpolation.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use lagcomp::{
//!     BoneTransform, EntityState, History, HistoryConfig, Hitbox, HitboxId, Ray, RewindTarget,
//!     Rig, Shape, Tick, Vec3, Zone,
//! };
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut history = History::new(HistoryConfig { tick_rate: 64.0, max_rewind: 0.5 })?;
//! let rig = Arc::new(Rig::rigid(vec![
//!     Hitbox::on_bone(0, HitboxId(0), "body", Zone::Torso, Shape::cuboid(Vec3::new(0.3, 0.9, 0.3))),
//!     Hitbox::on_bone(0, HitboxId(1), "head", Zone::Head, Shape::sphere(0.15)).offset_by(Vec3::Y * 1.1),
//! ])?);
//! let target = history.spawn(rig);
//!
//! // The target strafes along +x at 5 m/s; the server records every tick.
//! for tick in 0..32_u32 {
//!     let time = f64::from(tick) / 64.0;
//!     let x = 5.0 * time as f32;
//!     let mut frame = history.begin_frame(Tick(tick), time)?;
//!     frame.record_rigid(target, BoneTransform::from_translation(Vec3::new(x, 0.0, 0.0)), EntityState::default())?;
//! }
//!
//! // A client drew tick 20 and shot at its head from 10 m away. In the present the target
//! // has moved on by 0.86 m, but at the rewound time the shot lands.
//! let head_then = Vec3::new(5.0 * 20.0 / 64.0, 1.1, 0.0);
//! let ray = Ray::new(Vec3::new(head_then.x, 1.1, -10.0), Vec3::Z, 100.0)?;
//! let trace = history.query(RewindTarget::between(Tick(20), Tick(21), 0.0)).ray(&ray)?;
//! let hit = trace.hit.expect("the head was there");
//! assert_eq!(hit.zone, Zone::Head);
//! assert!((hit.distance - (10.0 - 0.15)).abs() < 1e-4);
//!
//! // The same shot against the present misses.
//! let now = history.query(RewindTarget::at(31.0 / 64.0)).ray(&ray)?;
//! assert!(now.hit.is_none());
//! # Ok(())
//! # }
//! ```

pub mod history;
pub mod math;
pub mod narrow;
pub mod projectile;
pub mod query;
pub mod rig;
pub mod spread;
pub mod time;
pub mod world;

mod bvh;
mod simd;

pub use glam::{Quat, Vec3};
pub use history::{
    ConfigError, DEFAULT_MAX_REWIND, EntityError, EntityId, EntityRole, EntityState, FrameRecorder,
    History, HistoryConfig, NearestReason, RecordError, Sample, SampleKind,
};
pub use math::{Aabb, BoneTransform, Pose, TransformError};
pub use narrow::{Obb, PlacedShape};
pub use narrow::{SweepContact, Swing, SwingError};
pub use query::observer::{BroadphaseDecision, NoObserver, QueryLog, QueryObserver};
pub use query::{
    Blocker, EntityAt, EntityBlock, Hit, Overlap, Query, QueryError, Ray, RayError, Rewind,
    StaticHit, SurfacePoint, Trace,
};
pub use query::{ShapeSweep, ShapeSweepError, SweepPath};
pub use rig::{Axis, Hitbox, HitboxId, Rig, RigError, Shape, ShapeError, Zone};
pub use time::{RewindError, RewindTarget, Tick, WindowPolicy, WindowSide};
pub use world::{
    Level, LevelError, LevelPiece, MaterialId, PieceError, StaticCollider, StaticError, StaticId,
    StaticWorld, WorldHit,
};

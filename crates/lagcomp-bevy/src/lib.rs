//! A Bevy plugin for [`lagcomp`]: rewound hitboxes and validated shots for Bevy game
//! servers.
//!
//! Add [`LagCompPlugin`], put [`Hitboxes`] on whatever can be hit and [`Shooter`] on
//! whatever fires. Every fixed tick the plugin records each entity's hitboxes as the tick
//! left them; any system can then trace rays, sweeps and overlaps against the past with
//! [`RewoundHitboxes`], and shots written as [`ShotFired`] messages come back judged as
//! [`ShotJudged`] (an event on the shooter and a message).
//!
//! - [`plugin`]: the plugin, its resources and system sets, the tick.
//! - [`hitboxes`]: the components on hittable entities.
//! - [`entities`]: the map between Bevy entities and lagcomp's.
//! - [`record`]: recording each tick from the transform hierarchy.
//! - [`query`]: rewound queries answering in Bevy entities.
//! - [`shots`]: shot claims in, verdicts out.
//! - `debug_draw` (feature `debug-draw`): the last judged shots as line segments to draw.
//!
//! Only Bevy's sub-crates are needed (`bevy_app`, `bevy_ecs`, `bevy_transform`,
//! `bevy_math`), and no window or GPU: the plugin suits a headless server.
//!
//! # Example
//!
//! ```
//! use bevy_app::{App, FixedMain};
//! use bevy_ecs::prelude::*;
//! use bevy_transform::components::Transform;
//! use lagcomp::{Hitbox, Ray, RewindTarget, Shape, Vec3, Zone};
//! use lagcomp_bevy::{Hitboxes, LagCompPlugin, RewoundHitboxes};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut app = App::new();
//! app.add_plugins(LagCompPlugin::new(64.0, 0.5)?);
//! let body = Hitbox::new(0, "body", Zone::Torso, 0, Shape::cuboid(Vec3::new(0.3, 0.9, 0.3)));
//! let target = app
//!     .world_mut()
//!     .spawn((Transform::from_xyz(0.0, 0.0, 0.0), Hitboxes::rigid(vec![body])?))
//!     .id();
//!
//! // The target walks along +x at 4 m/s; every fixed tick is recorded.
//! for tick in 0..20 {
//!     app.world_mut().get_mut::<Transform>(target).unwrap().translation.x = tick as f32 / 16.0;
//!     app.world_mut().run_schedule(FixedMain);
//! }
//!
//! // A shot at where the target stood at tick 4 hits it then, and misses it now.
//! let ray = Ray::new(Vec3::new(0.25, 0.0, -10.0), Vec3::Z, 100.0)?;
//! let mut state = bevy_ecs::system::SystemState::<RewoundHitboxes>::new(app.world_mut());
//! let rewound = state.get(app.world()).expect("the plugin's resources");
//! let then = rewound.at(RewindTarget::at(4.0 / 64.0)).ray(&ray)?;
//! assert_eq!(then.hit.map(|hit| hit.entity), Some(target));
//! let now = rewound.at(RewindTarget::at(19.0 / 64.0)).ray(&ray)?;
//! assert!(now.hit.is_none());
//! # Ok(())
//! # }
//! ```

#[cfg(feature = "debug-draw")]
pub mod debug_draw;
pub mod entities;
pub mod hitboxes;
pub mod plugin;
pub mod query;
pub mod record;
pub mod shots;

#[cfg(feature = "debug-draw")]
pub use debug_draw::{ShotSketch, ShotSketches, SketchLine, SketchPart};
pub use entities::HitboxEntities;
pub use hitboxes::{HitboxState, Hitboxes, HitboxesError, Teleported};
pub use plugin::{
    LagCompClock, LagCompHistory, LagCompPlugin, LagCompSystems, LagCompValidator, ServerTick,
};
pub use query::{
    MAX_IGNORED, RewoundBlock, RewoundHit, RewoundHitboxes, RewoundOverlap, RewoundQuery,
    RewoundQueryError, RewoundTrace,
};
pub use record::{RecordReport, SkeletonJoints};
pub use shots::{ClaimedTarget, Shooter, ShotFired, ShotJudged};

//! 3D pictures of lagcomp verdicts: glTF 2.0 binary (`.glb`) scenes that open in any
//! glTF viewer, in Blender, Unity and Unreal.
//!
//! A scene shows one shot: the target's hitboxes in the present (blue) and at the rewound
//! time the server traced (orange), both translucent; the ray, or the sweep with its
//! radius (yellow); the walls it met (grey); where the server found the hit (green) and
//! where the client claimed it (magenta); and the verdict's facts (outcome, reason,
//! times, shooter, target, seq) in the scene's `extras`.
//!
//! - [`VerdictScene`] (in `scene`): what a picture shows; build one by hand, or
//! - [`scene_of_shot`] (in `replay`): from a match recording, re-validated up to the
//!   chosen claim (`lagcomp validate REC --scene SEQ --gltf out.glb` calls it);
//!   [`scene_of_claim`] for claims picked during your own
//!   [`revalidate_until`](lagcomp_validate::recording::revalidate_until);
//!   [`scene_of_verdict`] for a shot your server has just judged live.
//! - [`SceneError`]: bad numbers, a claim that is not there, a recording that fails.
//!
//! **Axes and units.** lagcomp's world space is glTF's: metres, +Y up, right-handed, so
//! coordinates are written as they are. Vertices are in world space (each node has no
//! transform of its own). The same scene always gives the same bytes.
//!
//! # Example
//!
//! ```
//! use lagcomp::{PlacedShape, Pose, Quat, Shape, Vec3};
//! use lagcomp_gltf::{SceneHitbox, SceneShot, VerdictScene};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // A head where the shooter saw it, and where it is now, 0.4 m to the right.
//! let head_then = PlacedShape::new(Pose::new(Vec3::new(0.0, 1.6, 0.0), Quat::IDENTITY), Shape::sphere(0.15));
//! let head_now = PlacedShape::new(Pose::new(Vec3::new(0.4, 1.6, 0.0), Quat::IDENTITY), Shape::sphere(0.15));
//! let shot = SceneShot { origin: Vec3::new(0.0, 1.6, -10.0), direction: Vec3::Z, length: 9.85, radius: 0.0 };
//!
//! let mut scene = VerdictScene::new("head shot", shot);
//! scene.rewound.push(SceneHitbox::new("head", head_then));
//! scene.present.push(SceneHitbox::new("head", head_now));
//! scene.extras.insert("outcome".into(), "confirmed".into());
//!
//! let glb = scene.to_glb()?;
//! assert_eq!(&glb[..4], b"glTF");
//! std::fs::write(std::env::temp_dir().join("lagcomp-head-shot.glb"), &glb)?;
//!
//! // Numbers that cannot be drawn are an error, not a broken file.
//! scene.shot.direction = Vec3::NAN;
//! assert!(scene.to_glb().is_err());
//! # Ok(())
//! # }
//! ```

mod error;
mod glb;
mod mesh;
mod replay;
mod scene;

pub use error::SceneError;
pub use replay::{scene_of_claim, scene_of_shot, scene_of_verdict, verdict_extras};
pub use scene::{
    Marker, MarkerKind, RAY_THICKNESS, SceneHitbox, SceneShot, SceneWall, VerdictScene,
};

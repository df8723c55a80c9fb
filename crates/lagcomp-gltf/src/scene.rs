//! [`VerdictScene`]: what one picture of a verdict shows, before it becomes glTF.

use lagcomp::{PlacedShape, StaticId, Vec3};
use serde_json::{Map, Value};

use crate::error::SceneError;

/// The radius of the tube a shot's line is drawn as, metres: a ray has no thickness, but
/// a viewer needs triangles to show it. A sweep whose radius is larger also gets a
/// translucent tube of its own radius.
pub const RAY_THICKNESS: f32 = 0.01;

/// One hitbox where it was (scaled by its bone, in world space).
#[derive(Debug, Clone, PartialEq)]
pub struct SceneHitbox {
    /// Its name in the rig ("head"); the glTF node is named after it.
    pub name: String,
    /// Its world pose and shape.
    pub placed: PlacedShape,
}

impl SceneHitbox {
    /// A hitbox named `name` at `placed`.
    #[must_use]
    pub fn new(name: impl Into<String>, placed: PlacedShape) -> Self {
        Self {
            name: name.into(),
            placed,
        }
    }
}

/// The shot: a ray (`radius` 0) or a sphere sweep, from `origin` along `direction` for
/// `length` metres.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SceneShot {
    /// Where it started, world space, metres.
    pub origin: Vec3,
    /// Where it went (any length but zero; drawn normalised).
    pub direction: Vec3,
    /// How far it is drawn, metres: to the hit or the wall that stopped it, or as far as
    /// it is useful to see.
    pub length: f32,
    /// The sweep's radius, metres; 0 for a ray.
    pub radius: f32,
}

/// A wall or other static geometry the shot met, with the distance along the shot where
/// it did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SceneWall {
    /// The wall's id in the history.
    pub id: StaticId,
    /// Where it stands.
    pub placed: PlacedShape,
    /// Distance along the shot to where it was met, metres.
    pub distance: f32,
}

/// A point worth marking: where the server's trace hit, where the client claimed it hit.
#[derive(Debug, Clone, PartialEq)]
pub struct Marker {
    /// What it is ("hit point").
    pub name: String,
    /// Where, world space.
    pub point: Vec3,
    /// Which colour it is drawn in.
    pub kind: MarkerKind,
}

/// What a [`Marker`] marks, which sets its colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerKind {
    /// Where the server found the hit (green).
    Hit,
    /// Where the client said it hit (magenta).
    Claimed,
}

/// One verdict as a 3D scene: the target's hitboxes now and at the rewound time, the
/// shot, the walls it met, marked points, and the verdict's facts.
///
/// Coordinates are lagcomp's world space, in metres, +Y up; glTF's axes are the same
/// (+Y up, metres, right-handed), so nothing is converted. Write it with
/// [`VerdictScene::to_glb`].
#[derive(Debug, Clone, PartialEq)]
pub struct VerdictScene {
    /// The scene's name (shown by viewers that list scenes).
    pub name: String,
    /// The target's hitboxes in the newest frame when the claim arrived (blue,
    /// translucent).
    pub present: Vec<SceneHitbox>,
    /// The target's hitboxes at the time the trace used (orange, translucent).
    pub rewound: Vec<SceneHitbox>,
    /// The shot (yellow; a sweep's radius as a translucent capsule around it).
    pub shot: SceneShot,
    /// Walls the shot met (grey, translucent).
    pub walls: Vec<SceneWall>,
    /// Points worth marking (small spheres).
    pub markers: Vec<Marker>,
    /// Facts about the verdict, written as the glTF scene's `extras` (a JSON object that
    /// viewers show as custom properties: Blender does).
    pub extras: Map<String, Value>,
}

impl VerdictScene {
    /// A scene with the shot alone.
    #[must_use]
    pub fn new(name: impl Into<String>, shot: SceneShot) -> Self {
        Self {
            name: name.into(),
            present: Vec::new(),
            rewound: Vec::new(),
            shot,
            walls: Vec::new(),
            markers: Vec::new(),
            extras: Map::new(),
        }
    }

    /// Checks every number the geometry is built from: finite poses with unit rotations,
    /// shapes within lagcomp's sizes, a finite shot with a direction, a length and a
    /// radius that are not negative, finite markers.
    ///
    /// # Errors
    /// The first problem found, naming the object.
    pub fn check(&self) -> Result<(), SceneError> {
        let placed = |what: String, p: &PlacedShape| {
            p.pose.validate().map_err(|error| SceneError::Pose {
                what: what.clone(),
                error,
            })?;
            p.shape
                .validate()
                .map_err(|error| SceneError::Shape { what, error })
        };
        for h in &self.present {
            placed(format!("present hitbox {}", h.name), &h.placed)?;
        }
        for h in &self.rewound {
            placed(format!("rewound hitbox {}", h.name), &h.placed)?;
        }
        for w in &self.walls {
            placed(format!("wall {}", w.id.0), &w.placed)?;
        }
        let number = |what: &str, why| SceneError::Number {
            what: what.to_owned(),
            why,
        };
        let shot = &self.shot;
        if !shot.origin.is_finite() {
            return Err(number("shot origin", "not finite"));
        }
        if !shot.direction.is_finite() {
            return Err(number("shot direction", "not finite"));
        }
        if shot.direction.normalize_or_zero() == Vec3::ZERO {
            return Err(number("shot direction", "of zero length"));
        }
        for (what, value) in [("shot length", shot.length), ("shot radius", shot.radius)] {
            if !value.is_finite() {
                return Err(number(what, "not finite"));
            }
            if value < 0.0 {
                return Err(number(what, "negative"));
            }
        }
        if !(shot.origin + shot.direction.normalize() * shot.length).is_finite() {
            return Err(number("shot end", "not finite"));
        }
        for m in &self.markers {
            if !m.point.is_finite() {
                return Err(number(&format!("marker {}", m.name), "not finite"));
            }
        }
        Ok(())
    }

    /// The scene as a glTF 2.0 binary (`.glb`): one node and mesh per object, named
    /// ("rewound: head", "shot", "wall 3"), its material's colour telling what it is,
    /// the hitboxes, walls and a sweep's radius translucent (`alphaMode` `BLEND`), and
    /// [`VerdictScene::extras`] as the scene's `extras`. Vertices are in world space and
    /// carry normals; the same scene always gives the same bytes.
    ///
    /// # Errors
    /// [`VerdictScene::check`]'s, and [`SceneError::TooLarge`].
    pub fn to_glb(&self) -> Result<Vec<u8>, SceneError> {
        self.check()?;
        crate::glb::write(self)
    }
}

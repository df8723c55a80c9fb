//! [`SceneError`]: why a scene could not be built or written.

use lagcomp::{EntityId, ShapeError, TransformError};
use lagcomp_validate::recording::RecordingError;

/// Why a scene could not be built or written. Nothing is written when one is returned.
#[derive(Debug, thiserror::Error)]
pub enum SceneError {
    /// A shape's dimensions are not finite or out of lagcomp's range.
    #[error("{what}: {error}")]
    Shape {
        /// Which object ("rewound hitbox head", "wall 3").
        what: String,
        /// What is wrong with it.
        error: ShapeError,
    },
    /// A pose is not finite, too far out, or its rotation is not a unit quaternion.
    #[error("{what}: {error}")]
    Pose {
        /// Which object.
        what: String,
        /// What is wrong with it.
        error: TransformError,
    },
    /// A point, direction, length or radius of the shot or of a marker is not usable
    /// (not finite, a zero direction, a negative length).
    #[error("{what} is {why}")]
    Number {
        /// Which value ("shot direction", "marker hit point").
        what: String,
        /// What is wrong with it ("not finite", "of zero length").
        why: &'static str,
    },
    /// The scene's geometry would not fit in one glTF binary chunk (4 GiB).
    #[error("the scene's geometry exceeds the 4 GiB a .glb can hold")]
    TooLarge,
    /// The recording could not be read or re-validated.
    #[error(transparent)]
    Recording(#[from] RecordingError),
    /// No claim in the recording has this sequence number (from this shooter).
    #[error("no claim with seq {seq}{}", shooter.map_or(String::new(), |s| format!(" from {s}")))]
    NoSuchShot {
        /// The sequence number asked for.
        seq: u32,
        /// The shooter asked for, if one was.
        shooter: Option<EntityId>,
    },
    /// Several shooters sent a claim with this sequence number (it counts per shooter):
    /// say which one.
    #[error("seq {seq} was sent by {} shooters ({}): name the shooter", shooters.len(), list(shooters))]
    AmbiguousShot {
        /// The sequence number asked for.
        seq: u32,
        /// Every shooter that used it, in the recording's numbering.
        shooters: Vec<EntityId>,
    },
}

fn list(shooters: &[EntityId]) -> String {
    shooters
        .iter()
        .map(|s| format!("{s} = {}", s.to_bits()))
        .collect::<Vec<_>>()
        .join(", ")
}

//! Match recordings: everything a server's history and validator were given during a
//! match, and the verdicts they gave, as JSON Lines that tools in any language can write
//! and read, and offline re-validation of those claims under the same or other rules.
//!
//! The format is specified in `docs/FORMAT.md`; [`FORMAT_VERSION`] names its version.
//!
//! - [`RecordingEntry`] (in `record`): one line as the library sees it, and [`RecordType`].
//! - [`RecordingWriter`] (in `write`): what a live server calls next to its own calls.
//! - [`Recording`] (in `read`): a whole recording, read and checked before anything is
//!   applied.
//! - [`revalidate`] (in `replay`): the recording's calls made again on a fresh history and
//!   validator; [`Revalidated`] pairs each new verdict with the recorded one;
//!   [`revalidate_until`] stops at a chosen claim and shows it with the history it was
//!   judged against ([`ReplayedClaim`]).
//! - [`RecordingError`]: what is wrong, and on which line.
//! - [`limits`]: the sizes a recording may not exceed.
//!
//! Privately, `wire` holds the JSON shape of each line and `check` the rules a sequence of
//! lines must follow (shared by the reader, the writer and the replay).
//!
//! ```
//! use lagcomp::{BoneTransform, EntityState, History, HistoryConfig, Hitbox, Rig, Shape, Tick, Zone};
//! use lagcomp_validate::recording::{Recording, RecordingWriter, revalidate};
//! use lagcomp_validate::Participant;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let config = HistoryConfig::default();
//! let mut history = History::new(config)?;
//! let mut out = RecordingWriter::new(Vec::new(), &config)?;
//! let rig = std::sync::Arc::new(Rig::rigid(vec![Hitbox::new(0, "body", Zone::Torso, 0, Shape::sphere(0.5))])?);
//! let target = history.spawn(rig.clone());
//! out.spawn(target, &rig, &Participant::default())?;
//! let bones = [BoneTransform::IDENTITY];
//! history.begin_frame(Tick(1), 1.0 / 64.0)?.record(target, &bones, EntityState::default())?;
//! out.frame(Tick(1), 1.0 / 64.0, &[(target, EntityState::default(), &bones)])?;
//! let bytes = out.finish()?;
//!
//! let recording = Recording::read(&bytes[..])?;
//! assert_eq!(recording.records.len(), 3);
//! assert!(revalidate(&recording, None, |_, _| {})?.is_empty(), "no claims");
//! # Ok(())
//! # }
//! ```

mod check;
mod error;
pub mod limits;
mod read;
mod record;
mod replay;
mod wire;
mod write;

pub use error::{RecordingError, RecordingErrorKind};
pub use read::Recording;
pub use record::{FrameEntity, RecordType, RecordedFrame, RecordingEntry};
pub use replay::{
    ReplayedClaim, Revalidated, RevalidatedAny, revalidate, revalidate_any, revalidate_until,
};
pub use write::RecordingWriter;

/// The version of the recording format this crate reads and writes. It changes whenever
/// a reader of the previous version could not read the new files, or would read them
/// differently (see `docs/FORMAT.md`).
///
/// Version 2 added level geometry (`level`, `level_add`, `level_remove`: triangle meshes,
/// heightfields, pieces with lifetimes); version 1 files still read and re-validate the
/// same. Version 3 added entity roles and weapon layers; version 4 entity velocities in
/// frames, extrapolated render times, the entity states `invulnerable` and `evasive` and
/// the `refused` verdict. Version 5 added claims and verdicts of every weapon kind
/// (`weapon_claim`, `weapon_verdict`: projectiles, pellets, melee, splash).
pub const FORMAT_VERSION: u32 = 5;

/// The versions this crate reads: every version up to [`FORMAT_VERSION`].
pub const READS_VERSIONS: std::ops::RangeInclusive<u64> = 1..=FORMAT_VERSION as u64;

/// The header's `"format"`: what tells a recording from other JSON Lines.
pub const FORMAT_NAME: &str = "lagcomp-recording";

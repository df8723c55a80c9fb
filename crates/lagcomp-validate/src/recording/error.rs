//! What can be wrong with a recording, and on which line.

use std::fmt;
use std::io;

use lagcomp::{ConfigError, LevelError, RigError, StaticError, TransformError};

use super::RecordType;
use crate::rules::RulesError;

/// A recording that cannot be read, written or replayed, and the line at fault.
///
/// Lines are numbered from 1, as a text editor shows them. Line 0 means the problem is
/// not on any one line (rules given to [`super::revalidate`] that fail their checks).
#[derive(Debug)]
pub struct RecordingError {
    /// The 1-based line the problem was found on (0: not tied to a line).
    pub line: usize,
    /// What is wrong.
    pub kind: RecordingErrorKind,
}

impl RecordingError {
    /// An error on `line`.
    #[must_use]
    pub fn new(line: usize, kind: RecordingErrorKind) -> Self {
        Self { line, kind }
    }
}

impl fmt::Display for RecordingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.kind)
        } else {
            write!(f, "line {}: {}", self.line, self.kind)
        }
    }
}

impl std::error::Error for RecordingError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.kind)
    }
}

impl From<RecordingError> for io::Error {
    /// For the writer, whose methods return `io::Result`: a record it refuses is
    /// [`io::ErrorKind::InvalidInput`]; a failed write keeps its own kind.
    fn from(error: RecordingError) -> Self {
        match error.kind {
            RecordingErrorKind::Io(inner) => inner,
            _ => io::Error::new(io::ErrorKind::InvalidInput, error),
        }
    }
}

/// What is wrong with a recording. Entities are named by the number the recording uses
/// for them.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordingErrorKind {
    /// Reading or writing failed.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The input holds no line at all.
    #[error("empty recording: expected a header line")]
    Empty,
    /// A line is longer than [`super::limits::MAX_LINE_BYTES`].
    #[error("line is longer than the limit of {limit} bytes")]
    LineTooLong {
        /// The limit.
        limit: usize,
    },
    /// A line is not valid UTF-8.
    #[error("not UTF-8 at byte {offset} of the line")]
    NotUtf8 {
        /// Byte offset within the line of the first invalid byte.
        offset: usize,
    },
    /// A line with nothing on it.
    #[error("empty line: every line holds exactly one record")]
    EmptyLine,
    /// Not valid JSON.
    #[error("malformed JSON at column {column}: {message}")]
    Json {
        /// 1-based column (in bytes) where the parser stopped.
        column: usize,
        /// What the parser found.
        message: String,
    },
    /// Valid JSON but not an object.
    #[error("not a JSON object: every line is one object with a \"type\" member")]
    NotAnObject,
    /// An object without a `"type"` member.
    #[error("the record has no \"type\" member")]
    MissingType,
    /// A `"type"` this version of the format does not have.
    #[error("unknown record type {0:?}")]
    UnknownType(String),
    /// A record of a known type with a missing, unknown or mistyped member.
    #[error("invalid {kind} record at column {column}: {message}")]
    Invalid {
        /// The record type.
        kind: RecordType,
        /// 1-based column (in bytes) where the parser stopped.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// The first line is not a header.
    #[error("expected a header record first, found a {found} record")]
    MissingHeader {
        /// What the first line holds.
        found: RecordType,
    },
    /// The header names another format.
    #[error("not a lagcomp recording: format {0:?}, expected \"lagcomp-recording\"")]
    WrongFormat(String),
    /// The header's version is not one this reader understands.
    #[error("unsupported format version {found} (this reader supports versions 1 to {supported})")]
    UnsupportedVersion {
        /// The version in the file.
        found: u64,
        /// The version this reader supports.
        supported: u32,
    },
    /// A record type newer than the header's format version.
    #[error("a {kind} record needs format version {needs} or later; the header says {version}")]
    NotInVersion {
        /// The record type.
        kind: RecordType,
        /// The first version that has it.
        needs: u32,
        /// The header's version.
        version: u64,
    },
    /// A member newer than the header's format version (a spawn's `role`, a weapon's
    /// layer masks, a verdict blocked by an entity: format 3).
    #[error("{member} needs format version {needs} or later; the header says {version}")]
    MemberNotInVersion {
        /// The member, as `record.member`.
        member: &'static str,
        /// The first version that has it.
        needs: u32,
        /// The header's version.
        version: u64,
    },
    /// A piece of level geometry that loading would refuse (a non-finite vertex, an index
    /// past the last vertex, a degenerate triangle, a piece too large...); nothing of its
    /// record is loaded.
    #[error(transparent)]
    Level(#[from] LevelError),
    /// A removal of a piece that does not exist (yet), was removed already, or at a time
    /// that is not finite or comes before the piece was added.
    #[error("level_remove: {0}")]
    LevelRemove(StaticError),
    /// A header record after the first line.
    #[error("a second header record (the header is line 1 only)")]
    DuplicateHeader,
    /// The header's tick rate or rewind window is unusable.
    #[error("history configuration: {0}")]
    Config(#[from] ConfigError),
    /// The rules fail their checks.
    #[error("rules: {0}")]
    Rules(#[from] RulesError),
    /// A second rules record.
    #[error("a second rules record (the first is on line {first})")]
    RulesTwice {
        /// The line of the first.
        first: usize,
    },
    /// A rules record after a claim.
    #[error("rules after the claim on line {claim}: rules must come before every claim")]
    RulesAfterClaim {
        /// The first claim's line.
        claim: usize,
    },
    /// Claims to revalidate, and no rules to do it with.
    #[error("claims need rules: the recording has no rules record and none were given")]
    NoRules,
    /// A static collider's shape or pose is invalid.
    #[error("static geometry: {0}")]
    Static(#[from] StaticError),
    /// A spawn's rig is invalid.
    #[error("rig of entity {entity}: {error}")]
    Rig {
        /// The entity spawned.
        entity: u64,
        /// What is wrong with its rig.
        error: RigError,
    },
    /// A frame's tick is not after the previous frame's.
    #[error("frames out of order: tick {tick} after tick {previous}")]
    TickOutOfOrder {
        /// This frame's tick.
        tick: u32,
        /// The previous frame's tick.
        previous: u32,
    },
    /// A frame's time is not after the previous frame's.
    #[error("frames out of order: time {time} s after time {previous} s")]
    TimeOutOfOrder {
        /// This frame's time.
        time: f64,
        /// The previous frame's time.
        previous: f64,
    },
    /// A frame time that is not a plausible server time.
    #[error("frame time {0} is not a finite server time within ±1e12 s")]
    BadTime(f64),
    /// An entity that was never spawned.
    #[error("{role} names entity {entity}, which was never spawned")]
    UnknownEntity {
        /// The entity number.
        entity: u64,
        /// Where it was named (`frame`, `despawn`, `timing`, ...).
        role: &'static str,
    },
    /// An entity used after its despawn.
    #[error("{role} names entity {entity}, which was despawned on line {despawned}")]
    Despawned {
        /// The entity number.
        entity: u64,
        /// Where it was named.
        role: &'static str,
        /// The despawn's line.
        despawned: usize,
    },
    /// A second spawn of one entity number.
    #[error(
        "entity {entity} is spawned again (first on line {first}); entity numbers are never reused"
    )]
    SpawnedTwice {
        /// The entity number.
        entity: u64,
        /// The first spawn's line.
        first: usize,
    },
    /// An entity listed twice in one frame.
    #[error("entity {entity} appears twice in one frame")]
    RecordedTwice {
        /// The entity number.
        entity: u64,
    },
    /// A frame gives an entity more or fewer bones than its rig has.
    #[error("entity {entity} has {expected} bones, the frame gives {got}")]
    BoneCount {
        /// The entity number.
        entity: u64,
        /// Bones in its rig.
        expected: u16,
        /// Bone transforms in the frame.
        got: usize,
    },
    /// An invalid bone transform.
    #[error("entity {entity} bone {bone}: {error}")]
    Transform {
        /// The entity number.
        entity: u64,
        /// The bone's index.
        bone: usize,
        /// What is wrong with it.
        error: TransformError,
    },
    /// An entity velocity in a frame that is not finite or beyond the world's range
    /// (format 4).
    #[error("entity {entity} velocity {velocity} is not a finite velocity")]
    BadVelocity {
        /// The entity number.
        entity: u64,
        /// The velocity recorded, units per second.
        velocity: lagcomp::Vec3,
    },
    /// A number that must be finite is not (JSON cannot hold it).
    #[error("{what} is not a finite number")]
    NonFinite {
        /// Which number.
        what: &'static str,
    },
    /// Something is larger than the format's limits allow.
    #[error("too large: {what} is {got}, the limit is {limit}")]
    TooLarge {
        /// What is too large.
        what: &'static str,
        /// Its size.
        got: u64,
        /// The limit (see [`super::limits`]).
        limit: u64,
    },
    /// A verdict record that does not directly follow a claim record.
    #[error("a verdict must directly follow its claim; the record before it is not a claim")]
    VerdictWithoutClaim,
    /// A verdict for another shot than the claim before it.
    #[error(
        "the verdict (shooter {shooter}, seq {seq}, weapon {weapon}) is not for the claim before it \
         (shooter {claim_shooter}, seq {claim_seq}, weapon {claim_weapon})"
    )]
    VerdictMismatch {
        /// The verdict's shooter.
        shooter: u64,
        /// The verdict's sequence number.
        seq: u32,
        /// The verdict's weapon.
        weapon: u16,
        /// The claim's shooter.
        claim_shooter: u64,
        /// The claim's sequence number.
        claim_seq: u32,
        /// The claim's weapon.
        claim_weapon: u16,
    },
    /// A verdict of another weapon kind than the claim before it (a `verdict` line after
    /// a pellet claim, a melee verdict after a splash claim).
    #[error("a {verdict} verdict follows a {claim} claim")]
    VerdictKindMismatch {
        /// The verdict's kind: `hitscan`, `projectile`, `pellets`, `melee`, `splash`.
        verdict: &'static str,
        /// The claim's kind.
        claim: &'static str,
    },
    /// A claim or verdict of a weapon kind with a number that is NaN or infinite, which
    /// JSON cannot hold and the reader would refuse (a hitscan claim's are written as
    /// `null`; other kinds are checked finite on the wire before they are judged).
    #[error("{what} is not finite")]
    NotWritable {
        /// What holds it.
        what: &'static str,
    },
    /// A verdict whose members do not fit its outcome.
    #[error("invalid verdict: {0}")]
    Verdict(String),
    /// The `config` or `rules` of a [`super::Recording`] differ from its header or rules
    /// record.
    #[error("the recording's {0} does not match its records")]
    Inconsistent(&'static str),
    /// The history refused a record while replaying (a recording that passed its checks
    /// should never see this).
    #[error("replay refused the record: {0}")]
    Replay(String),
}

impl RecordingErrorKind {
    /// Whether the line is not even JSON (what a last line cut short looks like: see
    /// [`crate::TornTail`]).
    pub(super) fn is_syntax(&self) -> bool {
        matches!(self, Self::Json { .. } | Self::NotAnObject)
    }
}

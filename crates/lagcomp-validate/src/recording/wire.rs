//! The JSON shape of every line: one struct per record type, exactly as written and read.
//!
//! A line is parsed in two passes. The first reads only its `"type"` (skipping every other
//! value without converting it); the second parses the whole line as that type's struct,
//! which refuses unknown members. Two passes cost less than buffering a frame's every
//! number into an intermediate tree, and they do not depend on the order of members, which
//! many JSON libraries do not keep.
//!
//! Entities are written as the `u64` of [`lagcomp::EntityId::to_bits`], and the claim's
//! numbers as [`Num32`]/[`Num64`], which write a non-finite value as `null`.

use std::borrow::Cow;

use lagcomp::{BoneTransform, EntityRole, EntityState, Hitbox, Pose, Shape, Vec3, Zone};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::RecordType;
use super::error::RecordingErrorKind;
use crate::any::{WeaponClaim, WeaponVerdict};
use crate::evasion::Refusal;
use crate::rules::RuleSet;
use crate::verdict::{Basis, RejectReason};

/// One parsed or to-be-written line.
#[derive(Debug)]
#[allow(
    clippy::large_enum_variant,
    reason = "a line lives on the stack one at a time while it is written or checked; the records a recording keeps box their weapon claims and verdicts"
)]
pub(super) enum Line<'a> {
    Header(HeaderLine<'a>),
    Rules(RulesLine<'a>),
    Static(StaticLine),
    Level(LevelLine<'a>),
    LevelAdd(LevelAddLine<'a>),
    LevelRemove(LevelRemoveLine),
    Spawn(SpawnLine<'a>),
    Register(RegisterLine),
    Forget(EntityLine),
    Despawn(EntityLine),
    Frame(FrameLine<'a>),
    Timing(TimingLine),
    Claim(ClaimLine),
    Verdict(VerdictLine),
    WeaponClaim(WeaponClaimLine),
    WeaponVerdict(WeaponVerdictLine),
}

impl Line<'_> {
    pub(super) fn kind(&self) -> RecordType {
        match self {
            Self::Header(_) => RecordType::Header,
            Self::Rules(_) => RecordType::Rules,
            Self::Static(_) => RecordType::Static,
            Self::Level(_) => RecordType::Level,
            Self::LevelAdd(_) => RecordType::LevelAdd,
            Self::LevelRemove(_) => RecordType::LevelRemove,
            Self::Spawn(_) => RecordType::Spawn,
            Self::Register(_) => RecordType::Register,
            Self::Forget(_) => RecordType::Forget,
            Self::Despawn(_) => RecordType::Despawn,
            Self::Frame(_) => RecordType::Frame,
            Self::Timing(_) => RecordType::Timing,
            Self::Claim(_) => RecordType::Claim,
            Self::Verdict(_) => RecordType::Verdict,
            Self::WeaponClaim(_) => RecordType::WeaponClaim,
            Self::WeaponVerdict(_) => RecordType::WeaponVerdict,
        }
    }
}

impl Serialize for Line<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Header(l) => l.serialize(s),
            Self::Rules(l) => l.serialize(s),
            Self::Static(l) => l.serialize(s),
            Self::Level(l) => l.serialize(s),
            Self::LevelAdd(l) => l.serialize(s),
            Self::LevelRemove(l) => l.serialize(s),
            Self::Spawn(l) => l.serialize(s),
            Self::Register(l) => l.serialize(s),
            Self::Forget(l) | Self::Despawn(l) => l.serialize(s),
            Self::Frame(l) => l.serialize(s),
            Self::Timing(l) => l.serialize(s),
            Self::Claim(l) => l.serialize(s),
            Self::Verdict(l) => l.serialize(s),
            Self::WeaponClaim(l) => l.serialize(s),
            Self::WeaponVerdict(l) => l.serialize(s),
        }
    }
}

/// The first pass: only the type.
#[derive(Deserialize)]
struct Peek {
    #[serde(rename = "type", default)]
    kind: Option<String>,
}

/// What the header is checked for before its other members, so a file of another format
/// or version says so rather than "missing field".
#[derive(Deserialize)]
struct HeaderPeek {
    #[serde(default)]
    format: Option<serde_json::Value>,
    #[serde(default)]
    version: Option<serde_json::Value>,
}

/// Parses one line (without its newline).
pub(super) fn parse(text: &str) -> Result<Line<'static>, RecordingErrorKind> {
    let trimmed = text.trim_start();
    if trimmed.is_empty() {
        return Err(RecordingErrorKind::EmptyLine);
    }
    if !trimmed.starts_with('{') {
        // Say "malformed" for what is not JSON at all, "not an object" for other JSON.
        return Err(match serde_json::from_str::<serde::de::IgnoredAny>(text) {
            Ok(_) => RecordingErrorKind::NotAnObject,
            Err(e) => json_error(&e),
        });
    }
    let peek: Peek = serde_json::from_str(text).map_err(|e| json_error(&e))?;
    let name = peek.kind.ok_or(RecordingErrorKind::MissingType)?;
    let kind = RecordType::from_name(&name).ok_or(RecordingErrorKind::UnknownType(name))?;
    let invalid = |e: serde_json::Error| RecordingErrorKind::Invalid {
        kind,
        column: e.column(),
        message: message_of(&e),
    };
    Ok(match kind {
        RecordType::Header => {
            let peek: HeaderPeek = serde_json::from_str(text).map_err(invalid)?;
            check_header_identity(peek.format.as_ref(), peek.version.as_ref())?;
            Line::Header(serde_json::from_str(text).map_err(invalid)?)
        }
        RecordType::Rules => Line::Rules(serde_json::from_str(text).map_err(invalid)?),
        RecordType::Static => Line::Static(serde_json::from_str(text).map_err(invalid)?),
        RecordType::Level => Line::Level(serde_json::from_str(text).map_err(invalid)?),
        RecordType::LevelAdd => Line::LevelAdd(serde_json::from_str(text).map_err(invalid)?),
        RecordType::LevelRemove => Line::LevelRemove(serde_json::from_str(text).map_err(invalid)?),
        RecordType::Spawn => Line::Spawn(serde_json::from_str(text).map_err(invalid)?),
        RecordType::Register => Line::Register(serde_json::from_str(text).map_err(invalid)?),
        RecordType::Forget => Line::Forget(serde_json::from_str(text).map_err(invalid)?),
        RecordType::Despawn => Line::Despawn(serde_json::from_str(text).map_err(invalid)?),
        RecordType::Frame => Line::Frame(serde_json::from_str(text).map_err(invalid)?),
        RecordType::Timing => Line::Timing(serde_json::from_str(text).map_err(invalid)?),
        RecordType::Claim => Line::Claim(serde_json::from_str(text).map_err(invalid)?),
        RecordType::Verdict => Line::Verdict(serde_json::from_str(text).map_err(invalid)?),
        RecordType::WeaponClaim => Line::WeaponClaim(serde_json::from_str(text).map_err(invalid)?),
        RecordType::WeaponVerdict => {
            Line::WeaponVerdict(serde_json::from_str(text).map_err(invalid)?)
        }
    })
}

fn check_header_identity(
    format: Option<&serde_json::Value>,
    version: Option<&serde_json::Value>,
) -> Result<(), RecordingErrorKind> {
    if let Some(format) = format {
        let name = format
            .as_str()
            .map_or_else(|| format.to_string(), str::to_owned);
        if name != super::FORMAT_NAME {
            return Err(RecordingErrorKind::WrongFormat(name));
        }
    }
    if let Some(found) = version.and_then(serde_json::Value::as_u64)
        && !super::READS_VERSIONS.contains(&found)
    {
        return Err(RecordingErrorKind::UnsupportedVersion {
            found,
            supported: super::FORMAT_VERSION,
        });
    }
    // Missing or mistyped members are reported by the full parse.
    Ok(())
}

fn json_error(e: &serde_json::Error) -> RecordingErrorKind {
    RecordingErrorKind::Json {
        column: e.column(),
        message: message_of(e),
    }
}

/// The parser's message without its " at line 1 column N" (the line is ours to number).
fn message_of(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(at) => text[..at].to_owned(),
        None => text,
    }
}

/// An `f32` of a claim: a JSON number, or `null` for NaN or an infinity (JSON has
/// neither, and a cheating client may send them).
#[derive(Debug, Clone, Copy)]
pub(super) struct Num32(pub(super) f32);

impl Serialize for Num32 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.0.is_finite() {
            s.serialize_f32(self.0)
        } else {
            s.serialize_none()
        }
    }
}

impl<'de> Deserialize<'de> for Num32 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Self(Option::<f32>::deserialize(d)?.unwrap_or(f32::NAN)))
    }
}

/// An `f64` of a claim, as [`Num32`].
#[derive(Debug, Clone, Copy)]
pub(super) struct Num64(pub(super) f64);

impl Serialize for Num64 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.0.is_finite() {
            s.serialize_f64(self.0)
        } else {
            s.serialize_none()
        }
    }
}

impl<'de> Deserialize<'de> for Num64 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Self(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN)))
    }
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct HeaderLine<'a> {
    #[serde(rename = "type")]
    pub(super) kind: RecordType,
    pub(super) format: Cow<'a, str>,
    pub(super) version: u64,
    pub(super) tick_rate: f64,
    pub(super) max_rewind: f64,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RulesLine<'a> {
    #[serde(rename = "type")]
    pub(super) kind: RecordType,
    pub(super) rules: Cow<'a, RuleSet>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct StaticLine {
    #[serde(rename = "type")]
    pub(super) kind: RecordType,
    pub(super) shape: Shape,
    pub(super) pose: Pose,
    pub(super) layers: u32,
}

/// One piece of level geometry, as [`lagcomp::LevelPiece`]: `{"mesh": {...}}` and so on
/// (tagged outside, so a mesh's numbers are read straight into their vectors).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub(super) enum PieceLine<'a> {
    Primitive {
        shape: Shape,
        pose: Pose,
        layers: u32,
    },
    Mesh {
        vertices: Cow<'a, [Vec3]>,
        triangles: Cow<'a, [[u32; 3]]>,
        layers: u32,
    },
    HeightField {
        heights: Cow<'a, [f32]>,
        /// Wider than the piece's `usize`, so a file reads the same on every platform.
        rows: u64,
        columns: u64,
        size: Vec3,
        pose: Pose,
        layers: u32,
    },
}

/// [`lagcomp::History::load_level`]: pieces that exist from the start of time.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct LevelLine<'a> {
    #[serde(rename = "type")]
    pub(super) kind: RecordType,
    pub(super) pieces: Vec<PieceLine<'a>>,
}

/// [`lagcomp::History::add_pieces_at`].
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct LevelAddLine<'a> {
    #[serde(rename = "type")]
    pub(super) kind: RecordType,
    pub(super) time: f64,
    pub(super) pieces: Vec<PieceLine<'a>>,
}

/// [`lagcomp::History::remove_static`].
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct LevelRemoveLine {
    #[serde(rename = "type")]
    pub(super) kind: RecordType,
    pub(super) piece: u64,
    pub(super) time: f64,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ParticipantLine {
    pub(super) team: u16,
    pub(super) aim_bone: u16,
    pub(super) aim_forward: Vec3,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SpawnLine<'a> {
    #[serde(rename = "type")]
    pub(super) kind: RecordType,
    pub(super) entity: u64,
    /// Wider than a rig's `u16` so an absurd count is reported as too large, not as a
    /// type error.
    pub(super) bone_count: u64,
    pub(super) hitboxes: Cow<'a, [Hitbox]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) participant: Option<ParticipantLine>,
    /// Format 3; a target when absent.
    #[serde(default, skip_serializing_if = "is_target")]
    pub(super) role: EntityRole,
}

/// Whether a spawn's role is the default, left out when written.
fn is_target(role: &EntityRole) -> bool {
    *role == EntityRole::Target
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RegisterLine {
    #[serde(rename = "type")]
    pub(super) kind: RecordType,
    pub(super) entity: u64,
    pub(super) participant: ParticipantLine,
}

/// `forget` and `despawn`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct EntityLine {
    #[serde(rename = "type")]
    pub(super) kind: RecordType,
    pub(super) entity: u64,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FrameLine<'a> {
    #[serde(rename = "type")]
    pub(super) kind: RecordType,
    pub(super) tick: u32,
    pub(super) time: f64,
    pub(super) entities: Vec<FrameEntityLine<'a>>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FrameEntityLine<'a> {
    pub(super) entity: u64,
    pub(super) state: EntityState,
    pub(super) bones: Cow<'a, [BoneTransform]>,
    /// Format 4.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) velocity: Option<Vec3>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TimingLine {
    #[serde(rename = "type")]
    pub(super) kind: RecordType,
    pub(super) shooter: u64,
    pub(super) srtt: f64,
    pub(super) rttvar: f64,
    pub(super) interp_delay: f64,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ClaimLine {
    #[serde(rename = "type")]
    pub(super) kind: RecordType,
    pub(super) received_at: f64,
    pub(super) shooter: u64,
    pub(super) weapon: u16,
    pub(super) seq: u32,
    pub(super) render_time: RenderTimeLine,
    pub(super) origin: [Num32; 3],
    pub(super) direction: [Num32; 3],
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) hit: Option<HitLine>,
}

/// The same shape as [`crate::RenderTime`]'s own serialization.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub(super) enum RenderTimeLine {
    Ticks {
        from: u32,
        to: u32,
        fraction: Num32,
    },
    Time(Num64),
    /// Format 4.
    Extrapolated {
        from: u32,
        by: Num64,
    },
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct HitLine {
    pub(super) target: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) hitbox: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) point: Option<[Num32; 3]>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum OutcomeLabel {
    Confirmed,
    Miss,
    Blocked,
    Rejected,
    /// Format 4.
    Refused,
}

/// A verdict, flat: the members after `outcome` depend on it (as in the audit log).
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct VerdictLine {
    #[serde(rename = "type")]
    pub(super) kind: RecordType,
    pub(super) shooter: u64,
    pub(super) seq: u32,
    pub(super) weapon: u16,
    pub(super) outcome: OutcomeLabel,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) target: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) hitbox: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) zone: Option<Zone>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) damage_multiplier: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) wall: Option<u64>,
    /// The blocker entity of a `blocked` verdict (format 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) entity: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) distance: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) point: Option<Vec3>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) by_leeway: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) reason: Option<RejectReason>,
    /// Why a `refused` verdict's hit did no damage (format 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) refusal: Option<Refusal>,
    pub(super) basis: Basis,
}

/// A claim of any kind (format 5): the claim as [`WeaponClaim`] serializes it, its kind in
/// its `"kind"` member. Entities inside it are written as the library's JSON writes an
/// [`lagcomp::EntityId`], `{"index": .., "generation": ..}`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct WeaponClaimLine {
    #[serde(rename = "type")]
    pub(super) kind: RecordType,
    pub(super) received_at: f64,
    pub(super) claim: WeaponClaim,
}

/// The verdict of the `weapon_claim` before it (format 5), with the kind's breakdown, as
/// [`WeaponVerdict`] serializes it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct WeaponVerdictLine {
    #[serde(rename = "type")]
    pub(super) kind: RecordType,
    pub(super) verdict: WeaponVerdict,
}

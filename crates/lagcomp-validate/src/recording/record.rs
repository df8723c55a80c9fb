//! [`RecordingEntry`], one line of a recording as the library sees it, and its conversion to and
//! from the line's JSON shape in [`super::wire`].

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use lagcomp::{
    Blocker, BoneTransform, EntityId, EntityRole, EntityState, HistoryConfig, HitboxId, LevelPiece,
    Pose, Rig, Shape, StaticId, Tick, Vec3,
};
use serde::{Deserialize, Serialize, Serializer};

use super::error::RecordingErrorKind;
use super::limits;
use super::wire::{
    ClaimLine, EntityLine, FrameEntityLine, FrameLine, HeaderLine, HitLine, LevelAddLine,
    LevelLine, LevelRemoveLine, Line, Num32, Num64, OutcomeLabel, ParticipantLine, PieceLine,
    RegisterLine, RenderTimeLine, RulesLine, SpawnLine, StaticLine, TimingLine, VerdictLine,
    WeaponClaimLine, WeaponVerdictLine,
};
use crate::any::{WeaponClaim, WeaponVerdict};
use crate::claim::{ClaimedHit, ClientTiming, RenderTime, ShotClaim, WeaponId};
use crate::rules::RuleSet;
use crate::validator::Participant;
use crate::verdict::{Confirmed, Verdict, VerdictOutcome};

/// The `"type"` of a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordType {
    /// The first line: format, version and history configuration.
    Header,
    /// The weapon rules and policy.
    Rules,
    /// A piece of static world geometry.
    Static,
    /// Level geometry loaded in one batch (format version 2).
    Level,
    /// Level geometry that appears at a time (format version 2).
    LevelAdd,
    /// A piece of level geometry removed at a time (format version 2).
    LevelRemove,
    /// An entity enters the history (and, with a participant, the validator).
    Spawn,
    /// An entity's team or aim bone changes in the validator.
    Register,
    /// The validator forgets an entity.
    Forget,
    /// An entity leaves the history.
    Despawn,
    /// One server tick of bone transforms.
    Frame,
    /// A shooter's measured connection timing.
    Timing,
    /// A shot claim as it arrived.
    Claim,
    /// The verdict the claim before it was given.
    Verdict,
    /// A claim of any weapon kind as it arrived (format version 5).
    WeaponClaim,
    /// The verdict the `weapon_claim` before it was given, with its kind's breakdown
    /// (format version 5).
    WeaponVerdict,
}

impl RecordType {
    /// Every type, in the order the format document lists them.
    pub const ALL: [Self; 16] = [
        Self::Header,
        Self::Rules,
        Self::Static,
        Self::Level,
        Self::LevelAdd,
        Self::LevelRemove,
        Self::Spawn,
        Self::Register,
        Self::Forget,
        Self::Despawn,
        Self::Frame,
        Self::Timing,
        Self::Claim,
        Self::Verdict,
        Self::WeaponClaim,
        Self::WeaponVerdict,
    ];

    /// The `"type"` string.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Header => "header",
            Self::Rules => "rules",
            Self::Static => "static",
            Self::Level => "level",
            Self::LevelAdd => "level_add",
            Self::LevelRemove => "level_remove",
            Self::Spawn => "spawn",
            Self::Register => "register",
            Self::Forget => "forget",
            Self::Despawn => "despawn",
            Self::Frame => "frame",
            Self::Timing => "timing",
            Self::Claim => "claim",
            Self::Verdict => "verdict",
            Self::WeaponClaim => "weapon_claim",
            Self::WeaponVerdict => "weapon_verdict",
        }
    }

    /// The type with this `"type"` string.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }
}

impl fmt::Display for RecordType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One line of a recording. Entities are the server's ids as recorded (the file's
/// numbers through [`EntityId::from_bits`]), not ids of any history in this process.
#[derive(Debug, Clone, PartialEq)]
pub enum RecordingEntry {
    /// The history's configuration (the header's format and version are implied).
    Header(HistoryConfig),
    /// The rules in force.
    Rules(RuleSet),
    /// [`lagcomp::History::add_static`].
    Static {
        /// The shape.
        shape: Shape,
        /// Where it stands.
        pose: Pose,
        /// Its collision layers.
        layers: u32,
    },
    /// [`lagcomp::History::spawn_as`], then [`crate::Validator::register`] with the
    /// participant if there is one.
    Spawn {
        /// The entity, as the server's history numbered it.
        entity: EntityId,
        /// Its rig.
        rig: Arc<Rig>,
        /// Its registration with the validator, if it was registered at spawn.
        participant: Option<Participant>,
        /// Its role (format 3; a target in older files).
        role: EntityRole,
    },
    /// [`lagcomp::History::load_level`] (format version 2).
    Level {
        /// The pieces, in order: they get consecutive ids.
        pieces: Vec<LevelPiece>,
    },
    /// [`lagcomp::History::add_pieces_at`] (format version 2).
    LevelAdd {
        /// When they appear, seconds on the history's clock.
        time: f64,
        /// The pieces, in order: they get consecutive ids.
        pieces: Vec<LevelPiece>,
    },
    /// [`lagcomp::History::remove_static`] (format version 2).
    LevelRemove {
        /// The piece, as the server's history numbered it (the same on replay: pieces are
        /// numbered in the order they were added).
        piece: StaticId,
        /// When it is gone, seconds on the history's clock.
        time: f64,
    },
    /// [`crate::Validator::register`] of an entity already spawned.
    Register {
        /// The entity.
        entity: EntityId,
        /// Its new registration.
        participant: Participant,
    },
    /// [`crate::Validator::forget`].
    Forget {
        /// The entity.
        entity: EntityId,
    },
    /// [`lagcomp::History::despawn`].
    Despawn {
        /// The entity.
        entity: EntityId,
    },
    /// One recorded frame.
    Frame(RecordedFrame),
    /// [`crate::Validator::set_timing`].
    Timing {
        /// The shooter.
        shooter: EntityId,
        /// What the server measured.
        timing: ClientTiming,
    },
    /// [`crate::Validator::validate`] of a claim that arrived at `received_at`.
    Claim {
        /// Server time of arrival, seconds.
        received_at: f64,
        /// The claim. Numbers that were NaN or infinite on the wire read back as NaN.
        claim: ShotClaim,
    },
    /// The verdict the claim on the previous line was given.
    Verdict(Verdict),
    /// [`crate::Validator::validate_any`] of a claim of any kind that arrived at
    /// `received_at` (format 5). Boxed: a pellet claim is about 1 KB, and a recording
    /// holds mostly frames.
    WeaponClaim {
        /// Server time of arrival, seconds.
        received_at: f64,
        /// The claim.
        claim: Box<WeaponClaim>,
    },
    /// The verdict the `weapon_claim` on the previous line was given (format 5).
    WeaponVerdict(Box<WeaponVerdict>),
}

/// One server tick: [`lagcomp::History::begin_frame`], a
/// [`lagcomp::FrameRecorder::record`] per entity in order, and the frame's finish.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedFrame {
    /// The tick.
    pub tick: Tick,
    /// Its server time, seconds.
    pub time: f64,
    /// The entities recorded in it.
    pub entities: Vec<FrameEntity>,
}

/// One entity's record in a frame.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameEntity {
    /// The entity.
    pub entity: EntityId,
    /// Its state.
    pub state: EntityState,
    /// One world transform per bone of its rig, in bone order.
    pub bones: Vec<BoneTransform>,
    /// Its linear velocity, units per second, as the tick's snapshot sent it
    /// ([`lagcomp::FrameRecorder::record_velocity`]; format 4): what extrapolated claims are
    /// rebuilt with. `None`: not recorded (extrapolated as standing still).
    pub velocity: Option<Vec3>,
}

impl RecordingEntry {
    /// The line's type.
    #[must_use]
    pub fn kind(&self) -> RecordType {
        match self {
            Self::Header(_) => RecordType::Header,
            Self::Rules(_) => RecordType::Rules,
            Self::Static { .. } => RecordType::Static,
            Self::Level { .. } => RecordType::Level,
            Self::LevelAdd { .. } => RecordType::LevelAdd,
            Self::LevelRemove { .. } => RecordType::LevelRemove,
            Self::Spawn { .. } => RecordType::Spawn,
            Self::Register { .. } => RecordType::Register,
            Self::Forget { .. } => RecordType::Forget,
            Self::Despawn { .. } => RecordType::Despawn,
            Self::Frame(_) => RecordType::Frame,
            Self::Timing { .. } => RecordType::Timing,
            Self::Claim { .. } => RecordType::Claim,
            Self::Verdict(_) => RecordType::Verdict,
            Self::WeaponClaim { .. } => RecordType::WeaponClaim,
            Self::WeaponVerdict(_) => RecordType::WeaponVerdict,
        }
    }

    /// Parses one line (without its newline) on its own: its JSON, its members and the
    /// checks that need no other line (a rig's sizes and validity). Where it may stand in
    /// a recording is checked by [`super::Recording::read`].
    ///
    /// # Errors
    /// [`RecordingErrorKind`] saying what is wrong.
    pub fn parse(text: &str) -> Result<Self, RecordingErrorKind> {
        Self::from_line(super::wire::parse(text)?)
    }

    /// The line as written (no newline).
    #[must_use]
    pub fn to_json(&self) -> String {
        serde_json::to_string(&self.line()).expect("records always serialize")
    }

    /// The JSON shape of this record, borrowing its data.
    pub(super) fn line(&self) -> Line<'_> {
        match self {
            Self::Header(config) => Line::Header(header_line(config)),
            Self::Rules(rules) => Line::Rules(RulesLine {
                kind: RecordType::Rules,
                rules: Cow::Borrowed(rules),
            }),
            Self::Static {
                shape,
                pose,
                layers,
            } => Line::Static(StaticLine {
                kind: RecordType::Static,
                shape: *shape,
                pose: *pose,
                layers: *layers,
            }),
            Self::Level { pieces } => Line::Level(level_line(pieces)),
            Self::LevelAdd { time, pieces } => Line::LevelAdd(level_add_line(*time, pieces)),
            Self::LevelRemove { piece, time } => {
                Line::LevelRemove(level_remove_line(*piece, *time))
            }
            Self::Spawn {
                entity,
                rig,
                participant,
                role,
            } => Line::Spawn(spawn_line(*entity, rig, participant.as_ref(), *role)),
            Self::Register {
                entity,
                participant,
            } => Line::Register(RegisterLine {
                kind: RecordType::Register,
                entity: entity.to_bits(),
                participant: participant_line(participant),
            }),
            Self::Forget { entity } => Line::Forget(entity_line(RecordType::Forget, *entity)),
            Self::Despawn { entity } => Line::Despawn(entity_line(RecordType::Despawn, *entity)),
            Self::Frame(frame) => Line::Frame(FrameLine {
                kind: RecordType::Frame,
                tick: frame.tick.0,
                time: frame.time,
                entities: frame
                    .entities
                    .iter()
                    .map(|e| FrameEntityLine {
                        entity: e.entity.to_bits(),
                        state: e.state,
                        bones: Cow::Borrowed(&e.bones),
                        velocity: e.velocity,
                    })
                    .collect(),
            }),
            Self::Timing { shooter, timing } => Line::Timing(timing_line(*shooter, timing)),
            Self::Claim { received_at, claim } => Line::Claim(claim_line(*received_at, claim)),
            Self::Verdict(verdict) => Line::Verdict(verdict_line(verdict)),
            Self::WeaponClaim { received_at, claim } => {
                Line::WeaponClaim(weapon_claim_line(*received_at, claim))
            }
            Self::WeaponVerdict(verdict) => Line::WeaponVerdict(weapon_verdict_line(verdict)),
        }
    }

    /// The record a parsed line holds. Builds the rig (after checking its sizes, since
    /// building compares every pair of hitboxes).
    pub(super) fn from_line(line: Line<'static>) -> Result<Self, RecordingErrorKind> {
        Ok(match line {
            Line::Header(h) => Self::Header(HistoryConfig {
                tick_rate: h.tick_rate,
                max_rewind: h.max_rewind,
            }),
            Line::Rules(r) => Self::Rules(r.rules.into_owned()),
            Line::Static(s) => Self::Static {
                shape: s.shape,
                pose: s.pose,
                layers: s.layers,
            },
            Line::Level(l) => Self::Level {
                pieces: l.pieces.into_iter().map(level_piece).collect(),
            },
            Line::LevelAdd(l) => Self::LevelAdd {
                time: l.time,
                pieces: l.pieces.into_iter().map(level_piece).collect(),
            },
            Line::LevelRemove(l) => Self::LevelRemove {
                piece: StaticId(l.piece),
                time: l.time,
            },
            Line::Spawn(s) => {
                check_rig_size(s.bone_count, s.hitboxes.len())?;
                let rig =
                    Rig::new(s.bone_count as u16, s.hitboxes.into_owned()).map_err(|error| {
                        RecordingErrorKind::Rig {
                            entity: s.entity,
                            error,
                        }
                    })?;
                Self::Spawn {
                    entity: EntityId::from_bits(s.entity),
                    rig: Arc::new(rig),
                    participant: s.participant.as_ref().map(participant_of),
                    role: s.role,
                }
            }
            Line::Register(r) => Self::Register {
                entity: EntityId::from_bits(r.entity),
                participant: participant_of(&r.participant),
            },
            Line::Forget(e) => Self::Forget {
                entity: EntityId::from_bits(e.entity),
            },
            Line::Despawn(e) => Self::Despawn {
                entity: EntityId::from_bits(e.entity),
            },
            Line::Frame(f) => Self::Frame(RecordedFrame {
                tick: Tick(f.tick),
                time: f.time,
                entities: f
                    .entities
                    .into_iter()
                    .map(|e| FrameEntity {
                        entity: EntityId::from_bits(e.entity),
                        state: e.state,
                        bones: e.bones.into_owned(),
                        velocity: e.velocity,
                    })
                    .collect(),
            }),
            Line::Timing(t) => Self::Timing {
                shooter: EntityId::from_bits(t.shooter),
                timing: ClientTiming {
                    srtt: t.srtt,
                    rttvar: t.rttvar,
                    interp_delay: t.interp_delay,
                },
            },
            Line::Claim(c) => Self::Claim {
                received_at: c.received_at,
                claim: claim_of(&c),
            },
            Line::Verdict(v) => Self::Verdict(verdict_of(&v)?),
            Line::WeaponClaim(c) => Self::WeaponClaim {
                received_at: c.received_at,
                claim: Box::new(c.claim),
            },
            Line::WeaponVerdict(v) => Self::WeaponVerdict(Box::new(v.verdict)),
        })
    }
}

impl Serialize for RecordingEntry {
    /// The record's line, exactly as a recording holds it.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.line().serialize(s)
    }
}

/// The sizes checked before a rig is built.
pub(super) fn check_rig_size(bone_count: u64, hitboxes: usize) -> Result<(), RecordingErrorKind> {
    if bone_count > u64::from(limits::MAX_BONES) {
        return Err(RecordingErrorKind::TooLarge {
            what: "a rig's bone count",
            got: bone_count,
            limit: limits::MAX_BONES.into(),
        });
    }
    if hitboxes > limits::MAX_HITBOXES {
        return Err(RecordingErrorKind::TooLarge {
            what: "a rig's hitbox count",
            got: hitboxes as u64,
            limit: limits::MAX_HITBOXES as u64,
        });
    }
    Ok(())
}

pub(super) fn header_line(config: &HistoryConfig) -> HeaderLine<'static> {
    HeaderLine {
        kind: RecordType::Header,
        format: Cow::Borrowed(super::FORMAT_NAME),
        version: u64::from(super::FORMAT_VERSION),
        tick_rate: config.tick_rate,
        max_rewind: config.max_rewind,
    }
}

pub(super) fn level_line(pieces: &[LevelPiece]) -> LevelLine<'_> {
    LevelLine {
        kind: RecordType::Level,
        pieces: pieces.iter().map(piece_line).collect(),
    }
}

pub(super) fn level_add_line(time: f64, pieces: &[LevelPiece]) -> LevelAddLine<'_> {
    LevelAddLine {
        kind: RecordType::LevelAdd,
        time,
        pieces: pieces.iter().map(piece_line).collect(),
    }
}

pub(super) fn level_remove_line(piece: StaticId, time: f64) -> LevelRemoveLine {
    LevelRemoveLine {
        kind: RecordType::LevelRemove,
        piece: piece.0,
        time,
    }
}

/// A piece's line, borrowing its vertices, triangles and heights.
fn piece_line(piece: &LevelPiece) -> PieceLine<'_> {
    match piece {
        LevelPiece::Primitive {
            shape,
            pose,
            layers,
        } => PieceLine::Primitive {
            shape: *shape,
            pose: *pose,
            layers: *layers,
        },
        LevelPiece::Mesh {
            vertices,
            triangles,
            layers,
        } => PieceLine::Mesh {
            vertices: Cow::Borrowed(vertices),
            triangles: Cow::Borrowed(triangles),
            layers: *layers,
        },
        LevelPiece::HeightField {
            heights,
            rows,
            columns,
            size,
            pose,
            layers,
        } => PieceLine::HeightField {
            heights: Cow::Borrowed(heights),
            rows: *rows as u64,
            columns: *columns as u64,
            size: *size,
            pose: *pose,
            layers: *layers,
        },
    }
}

/// The piece a line holds, unchecked ([`LevelPiece::check`] says what is wrong with it).
pub(super) fn level_piece(line: PieceLine<'_>) -> LevelPiece {
    match line {
        PieceLine::Primitive {
            shape,
            pose,
            layers,
        } => LevelPiece::Primitive {
            shape,
            pose,
            layers,
        },
        PieceLine::Mesh {
            vertices,
            triangles,
            layers,
        } => LevelPiece::Mesh {
            vertices: vertices.into_owned(),
            triangles: triangles.into_owned(),
            layers,
        },
        PieceLine::HeightField {
            heights,
            rows,
            columns,
            size,
            pose,
            layers,
        } => LevelPiece::HeightField {
            heights: heights.into_owned(),
            // A count no platform can hold is refused by the check as a wrong grid.
            rows: usize::try_from(rows).unwrap_or(usize::MAX),
            columns: usize::try_from(columns).unwrap_or(usize::MAX),
            size,
            pose,
            layers,
        },
    }
}

pub(super) fn spawn_line<'a>(
    entity: EntityId,
    rig: &'a Rig,
    participant: Option<&Participant>,
    role: EntityRole,
) -> SpawnLine<'a> {
    SpawnLine {
        kind: RecordType::Spawn,
        entity: entity.to_bits(),
        bone_count: rig.bone_count().into(),
        hitboxes: Cow::Borrowed(rig.hitboxes()),
        participant: participant.map(participant_line),
        role,
    }
}

pub(super) fn entity_line(kind: RecordType, entity: EntityId) -> EntityLine {
    EntityLine {
        kind,
        entity: entity.to_bits(),
    }
}

pub(super) fn participant_line(p: &Participant) -> ParticipantLine {
    ParticipantLine {
        team: p.team,
        aim_bone: p.aim_bone,
        aim_forward: p.aim_forward,
    }
}

fn participant_of(p: &ParticipantLine) -> Participant {
    Participant {
        team: p.team,
        aim_bone: p.aim_bone,
        aim_forward: p.aim_forward,
    }
}

pub(super) fn timing_line(shooter: EntityId, t: &ClientTiming) -> TimingLine {
    TimingLine {
        kind: RecordType::Timing,
        shooter: shooter.to_bits(),
        srtt: t.srtt,
        rttvar: t.rttvar,
        interp_delay: t.interp_delay,
    }
}

fn num3(v: Vec3) -> [Num32; 3] {
    [Num32(v.x), Num32(v.y), Num32(v.z)]
}

fn vec3(v: [Num32; 3]) -> Vec3 {
    Vec3::new(v[0].0, v[1].0, v[2].0)
}

pub(super) fn claim_line(received_at: f64, c: &ShotClaim) -> ClaimLine {
    ClaimLine {
        kind: RecordType::Claim,
        received_at,
        shooter: c.shooter.to_bits(),
        weapon: c.weapon.0,
        seq: c.seq,
        render_time: match c.render_time {
            RenderTime::Ticks { from, to, fraction } => RenderTimeLine::Ticks {
                from: from.0,
                to: to.0,
                fraction: Num32(fraction),
            },
            RenderTime::Time(t) => RenderTimeLine::Time(Num64(t)),
            RenderTime::Extrapolated { from, by } => RenderTimeLine::Extrapolated {
                from: from.0,
                by: Num64(by),
            },
        },
        origin: num3(c.origin),
        direction: num3(c.direction),
        hit: c.hit.map(|h| HitLine {
            target: h.target.to_bits(),
            hitbox: h.hitbox.map(|id| id.0),
            point: h.point.map(num3),
        }),
    }
}

fn claim_of(c: &ClaimLine) -> ShotClaim {
    ShotClaim {
        shooter: EntityId::from_bits(c.shooter),
        weapon: WeaponId(c.weapon),
        seq: c.seq,
        render_time: match c.render_time {
            RenderTimeLine::Ticks { from, to, fraction } => RenderTime::Ticks {
                from: Tick(from),
                to: Tick(to),
                fraction: fraction.0,
            },
            RenderTimeLine::Time(t) => RenderTime::Time(t.0),
            RenderTimeLine::Extrapolated { from, by } => RenderTime::Extrapolated {
                from: Tick(from),
                by: by.0,
            },
        },
        origin: vec3(c.origin),
        direction: vec3(c.direction),
        hit: c.hit.as_ref().map(|h| ClaimedHit {
            target: EntityId::from_bits(h.target),
            hitbox: h.hitbox.map(HitboxId),
            point: h.point.map(vec3),
        }),
    }
}

pub(super) fn verdict_line(v: &Verdict) -> VerdictLine {
    let mut line = VerdictLine {
        kind: RecordType::Verdict,
        shooter: v.shooter.to_bits(),
        seq: v.seq,
        weapon: v.weapon.0,
        outcome: OutcomeLabel::Miss,
        target: None,
        hitbox: None,
        zone: None,
        damage_multiplier: None,
        wall: None,
        entity: None,
        distance: None,
        point: None,
        by_leeway: None,
        reason: None,
        refusal: None,
        basis: v.basis,
    };
    match v.outcome {
        VerdictOutcome::Confirmed(hit) => {
            line.outcome = OutcomeLabel::Confirmed;
            line.target = Some(hit.target.to_bits());
            line.hitbox = Some(hit.hitbox.0);
            line.zone = Some(hit.zone);
            line.damage_multiplier = Some(hit.damage_multiplier);
            line.distance = Some(hit.distance);
            line.point = Some(hit.point);
            line.by_leeway = Some(hit.by_leeway);
        }
        VerdictOutcome::Miss => {}
        VerdictOutcome::Blocked { by, distance } => {
            line.outcome = OutcomeLabel::Blocked;
            match by {
                Blocker::Wall(wall) => line.wall = Some(wall.0),
                Blocker::Entity(entity) => line.entity = Some(entity.to_bits()),
            }
            line.distance = Some(distance);
        }
        VerdictOutcome::Rejected { reason } => {
            line.outcome = OutcomeLabel::Rejected;
            line.reason = Some(reason);
        }
        VerdictOutcome::Refused {
            target,
            refusal,
            distance,
        } => {
            line.outcome = OutcomeLabel::Refused;
            line.target = Some(target.to_bits());
            line.refusal = Some(refusal);
            line.distance = Some(distance);
        }
    }
    line
}

fn verdict_of(v: &VerdictLine) -> Result<Verdict, RecordingErrorKind> {
    // Which members each outcome takes; any other member present is an error.
    let present = [
        ("target", v.target.is_some()),
        ("hitbox", v.hitbox.is_some()),
        ("zone", v.zone.is_some()),
        ("damage_multiplier", v.damage_multiplier.is_some()),
        ("wall", v.wall.is_some()),
        ("entity", v.entity.is_some()),
        ("distance", v.distance.is_some()),
        ("point", v.point.is_some()),
        ("by_leeway", v.by_leeway.is_some()),
        ("reason", v.reason.is_some()),
        ("refusal", v.refusal.is_some()),
    ];
    let (label, takes): (&str, &[&str]) = match v.outcome {
        OutcomeLabel::Confirmed => (
            "confirmed",
            &[
                "target",
                "hitbox",
                "zone",
                "damage_multiplier",
                "distance",
                "point",
                "by_leeway",
            ],
        ),
        OutcomeLabel::Miss => ("miss", &[]),
        // By a wall or by an entity (a door).
        OutcomeLabel::Blocked if v.entity.is_some() => ("blocked", &["entity", "distance"]),
        OutcomeLabel::Blocked => ("blocked", &["wall", "distance"]),
        OutcomeLabel::Rejected => ("rejected", &["reason"]),
        OutcomeLabel::Refused => ("refused", &["target", "refusal", "distance"]),
    };
    for (name, is_present) in present {
        let wanted = takes.contains(&name);
        if wanted && !is_present {
            return Err(RecordingErrorKind::Verdict(format!(
                "a {label} verdict needs `{name}`"
            )));
        }
        if is_present && !wanted {
            return Err(RecordingErrorKind::Verdict(format!(
                "`{name}` does not belong in a {label} verdict"
            )));
        }
    }
    let missing = || RecordingErrorKind::Verdict("incomplete".into());
    let outcome = match v.outcome {
        OutcomeLabel::Confirmed => VerdictOutcome::Confirmed(Confirmed {
            target: EntityId::from_bits(v.target.ok_or_else(missing)?),
            hitbox: HitboxId(v.hitbox.ok_or_else(missing)?),
            zone: v.zone.ok_or_else(missing)?,
            damage_multiplier: v.damage_multiplier.ok_or_else(missing)?,
            distance: v.distance.ok_or_else(missing)?,
            point: v.point.ok_or_else(missing)?,
            by_leeway: v.by_leeway.ok_or_else(missing)?,
        }),
        OutcomeLabel::Miss => VerdictOutcome::Miss,
        OutcomeLabel::Blocked => VerdictOutcome::Blocked {
            by: match v.entity {
                Some(entity) => Blocker::Entity(EntityId::from_bits(entity)),
                None => Blocker::Wall(StaticId(v.wall.ok_or_else(missing)?)),
            },
            distance: v.distance.ok_or_else(missing)?,
        },
        OutcomeLabel::Rejected => VerdictOutcome::Rejected {
            reason: v.reason.ok_or_else(missing)?,
        },
        OutcomeLabel::Refused => VerdictOutcome::Refused {
            target: EntityId::from_bits(v.target.ok_or_else(missing)?),
            refusal: v.refusal.ok_or_else(missing)?,
            distance: v.distance.ok_or_else(missing)?,
        },
    };
    Ok(Verdict {
        shooter: EntityId::from_bits(v.shooter),
        seq: v.seq,
        weapon: WeaponId(v.weapon),
        outcome,
        basis: v.basis,
    })
}

pub(super) fn weapon_claim_line(received_at: f64, claim: &WeaponClaim) -> WeaponClaimLine {
    WeaponClaimLine {
        kind: RecordType::WeaponClaim,
        received_at,
        claim: *claim,
    }
}

pub(super) fn weapon_verdict_line(verdict: &WeaponVerdict) -> WeaponVerdictLine {
    WeaponVerdictLine {
        kind: RecordType::WeaponVerdict,
        verdict: *verdict,
    }
}

//! The rules a sequence of lines must follow, checked one line at a time: the header
//! first, rules before claims, entities spawned before use and not after their despawn,
//! frames in order with the right bones, verdicts right after their claims, and the
//! [`super::limits`].
//!
//! The reader runs every line through a [`Checker`] before it keeps it, the writer before
//! it writes it, and a replay over the whole recording before it starts, so no replay
//! ever stops half-way over a bad record. A line that fails leaves the checker as it was.

use std::collections::{HashMap, HashSet, VecDeque};

use lagcomp::{
    EntityRole, History, HistoryConfig, LevelError, LevelPiece, PieceError, StaticError, StaticId,
};

use super::RecordType;
use super::error::RecordingErrorKind;
use super::limits;
use super::record::{check_rig_size, level_piece};
use super::wire::{Line, OutcomeLabel, ParticipantLine, PieceLine, RenderTimeLine};

/// Server times beyond this many seconds are corrupt (the history refuses them).
const MAX_TIME: f64 = 1.0e12;

/// Bytes the history stores per bone per frame, and per entity per frame.
const BYTES_PER_BONE_FRAME: u64 = 28;
const BYTES_PER_ENTITY_FRAME: u64 = 36;

/// What the checker remembers about an entity number.
#[derive(Debug, Clone, Copy)]
struct Known {
    spawned: usize,
    bone_count: u64,
    despawned: Option<usize>,
    bytes: u64,
}

/// What the checker remembers about a piece of level geometry.
#[derive(Debug, Clone, Copy)]
struct PieceLife {
    added: f64,
    removed: bool,
}

/// The state needed to check the next line.
#[derive(Debug, Default)]
pub(super) struct Checker {
    /// Frames the history keeps, known once the header is read.
    capacity: Option<u64>,
    /// The header's format version.
    version: u64,
    /// Every piece of level geometry by id: when it was added, and whether it was removed.
    pieces: Vec<PieceLife>,
    level_records: usize,
    triangles: u64,
    rules_line: Option<usize>,
    first_claim: Option<usize>,
    entities: HashMap<u64, Known>,
    active: usize,
    statics: usize,
    newest: Option<(u32, f64)>,
    frames: u64,
    /// Despawned entities whose history is still held: (frames recorded at the despawn,
    /// bytes).
    retiring: VecDeque<(u64, u64)>,
    history_bytes: u64,
    /// The previous line, if it was a claim: (shooter, seq, weapon, its kind's name).
    last_claim: Option<(u64, u32, u16, &'static str)>,
    /// Scratch: entities seen in the frame being checked.
    in_frame: HashSet<u64>,
}

impl Checker {
    /// Checks `line`, found on line number `at`, and takes it into account.
    pub(super) fn accept(&mut self, at: usize, line: &Line<'_>) -> Result<(), RecordingErrorKind> {
        let Some(capacity) = self.capacity else {
            let Line::Header(header) = line else {
                return Err(RecordingErrorKind::MissingHeader { found: line.kind() });
            };
            if header.format != super::FORMAT_NAME {
                return Err(RecordingErrorKind::WrongFormat(header.format.to_string()));
            }
            if !super::READS_VERSIONS.contains(&header.version) {
                return Err(RecordingErrorKind::UnsupportedVersion {
                    found: header.version,
                    supported: super::FORMAT_VERSION,
                });
            }
            self.version = header.version;
            let history = History::new(HistoryConfig {
                tick_rate: header.tick_rate,
                max_rewind: header.max_rewind,
            })?;
            self.capacity = Some(history.capacity() as u64);
            return Ok(());
        };
        let mut claim = None;
        match line {
            Line::Header(_) => return Err(RecordingErrorKind::DuplicateHeader),
            Line::Rules(r) => {
                if let Some(first) = self.rules_line {
                    return Err(RecordingErrorKind::RulesTwice { first });
                }
                if let Some(claim) = self.first_claim {
                    return Err(RecordingErrorKind::RulesAfterClaim { claim });
                }
                r.rules.check()?;
                if r.rules
                    .weapons
                    .values()
                    .any(|w| w.hit_layers != u32::MAX || w.blocked_by != u32::MAX)
                {
                    self.member_since("rules.weapons.hit_layers / blocked_by")?;
                }
                self.rules_line = Some(at);
            }
            Line::Static(s) => {
                if self.statics >= limits::MAX_STATICS {
                    return Err(too_large(
                        "the number of static colliders",
                        self.statics + 1,
                        limits::MAX_STATICS,
                    ));
                }
                s.shape.validate().map_err(StaticError::from)?;
                s.pose.validate().map_err(StaticError::from)?;
                self.check_piece_count(1)?;
                self.statics += 1;
                self.pieces.push(PieceLife {
                    added: f64::NEG_INFINITY,
                    removed: false,
                });
            }
            Line::Level(l) => {
                self.accept_pieces(RecordType::Level, &l.pieces, f64::NEG_INFINITY)?
            }
            Line::LevelAdd(l) => {
                self.since_version(RecordType::LevelAdd)?;
                if !l.time.is_finite() {
                    return Err(LevelError {
                        piece: 0,
                        error: PieceError::Static(StaticError::Time(l.time)),
                    }
                    .into());
                }
                self.accept_pieces(RecordType::LevelAdd, &l.pieces, l.time)?;
            }
            Line::LevelRemove(r) => {
                self.since_version(RecordType::LevelRemove)?;
                let id = StaticId(r.piece);
                let piece = usize::try_from(r.piece)
                    .ok()
                    .and_then(|i| self.pieces.get_mut(i))
                    .ok_or(RecordingErrorKind::LevelRemove(StaticError::UnknownPiece(
                        id,
                    )))?;
                if piece.removed {
                    return Err(RecordingErrorKind::LevelRemove(
                        StaticError::AlreadyRemoved(id),
                    ));
                }
                if !r.time.is_finite() || r.time < piece.added {
                    return Err(RecordingErrorKind::LevelRemove(StaticError::Time(r.time)));
                }
                piece.removed = true;
            }
            Line::Spawn(s) => {
                if let Some(known) = self.entities.get(&s.entity) {
                    return Err(RecordingErrorKind::SpawnedTwice {
                        entity: s.entity,
                        first: known.spawned,
                    });
                }
                check_rig_size(s.bone_count, s.hitboxes.len())?;
                if s.role != EntityRole::Target {
                    self.member_since("spawn.role")?;
                }
                if let Some(p) = &s.participant {
                    check_participant(p)?;
                }
                if self.active >= limits::MAX_ENTITIES {
                    return Err(too_large(
                        "the number of entities spawned at once",
                        self.active + 1,
                        limits::MAX_ENTITIES,
                    ));
                }
                let bytes =
                    capacity * (s.bone_count * BYTES_PER_BONE_FRAME + BYTES_PER_ENTITY_FRAME);
                if self.history_bytes + bytes > limits::MAX_HISTORY_BYTES {
                    return Err(RecordingErrorKind::TooLarge {
                        what: "the bone history held at once (bytes)",
                        got: self.history_bytes + bytes,
                        limit: limits::MAX_HISTORY_BYTES,
                    });
                }
                self.history_bytes += bytes;
                self.active += 1;
                self.entities.insert(
                    s.entity,
                    Known {
                        spawned: at,
                        bone_count: s.bone_count,
                        despawned: None,
                        bytes,
                    },
                );
            }
            Line::Register(r) => {
                self.active_entity(r.entity, "register")?;
                check_participant(&r.participant)?;
            }
            Line::Forget(e) => {
                self.known_entity(e.entity, "forget")?;
            }
            Line::Despawn(e) => {
                let known = *self.active_entity(e.entity, "despawn")?;
                self.entities.insert(
                    e.entity,
                    Known {
                        despawned: Some(at),
                        ..known
                    },
                );
                self.active -= 1;
                self.retiring.push_back((self.frames, known.bytes));
            }
            Line::Frame(f) => {
                if !(f.time.is_finite() && f.time.abs() <= MAX_TIME) {
                    return Err(RecordingErrorKind::BadTime(f.time));
                }
                if let Some((tick, time)) = self.newest {
                    if f.tick <= tick {
                        return Err(RecordingErrorKind::TickOutOfOrder {
                            tick: f.tick,
                            previous: tick,
                        });
                    }
                    if f.time <= time {
                        return Err(RecordingErrorKind::TimeOutOfOrder {
                            time: f.time,
                            previous: time,
                        });
                    }
                }
                if f.entities.len() > limits::MAX_ENTITIES_PER_FRAME {
                    return Err(too_large(
                        "the number of entities in a frame",
                        f.entities.len(),
                        limits::MAX_ENTITIES_PER_FRAME,
                    ));
                }
                self.in_frame.clear();
                for e in &f.entities {
                    let known = *self.active_entity(e.entity, "frame")?;
                    if !self.in_frame.insert(e.entity) {
                        return Err(RecordingErrorKind::RecordedTwice { entity: e.entity });
                    }
                    if e.state.invulnerable || e.state.evasive {
                        self.evasion_since("frame state invulnerable / evasive")?;
                    }
                    if e.bones.len() as u64 != known.bone_count {
                        return Err(RecordingErrorKind::BoneCount {
                            entity: e.entity,
                            expected: known.bone_count as u16,
                            got: e.bones.len(),
                        });
                    }
                    if let Some(velocity) = e.velocity {
                        self.member_since_extrapolation("frame.entities.velocity")?;
                        if !(velocity.is_finite()
                            && velocity.abs().max_element() <= lagcomp::math::MAX_COORDINATE)
                        {
                            return Err(RecordingErrorKind::BadVelocity {
                                entity: e.entity,
                                velocity,
                            });
                        }
                    }
                    for (bone, transform) in e.bones.iter().enumerate() {
                        transform
                            .validate()
                            .map_err(|error| RecordingErrorKind::Transform {
                                entity: e.entity,
                                bone,
                                error,
                            })?;
                    }
                }
                self.newest = Some((f.tick, f.time));
                self.frames += 1;
                // A despawned entity's history is freed once its last frame ages out.
                while let Some(&(at_despawn, bytes)) = self.retiring.front()
                    && self.frames >= at_despawn + capacity
                {
                    self.retiring.pop_front();
                    self.history_bytes -= bytes;
                }
            }
            Line::Timing(t) => {
                self.active_entity(t.shooter, "timing")?;
                for (what, v) in [
                    ("timing srtt", t.srtt),
                    ("timing rttvar", t.rttvar),
                    ("timing interp_delay", t.interp_delay),
                ] {
                    finite(what, v)?;
                }
            }
            Line::Claim(c) => {
                finite("received_at", c.received_at)?;
                // A shooter that has been despawned may still have shots in flight; the
                // validator decides what they come to.
                self.known_entity(c.shooter, "claim (shooter)")?;
                if matches!(c.render_time, RenderTimeLine::Extrapolated { .. }) {
                    self.member_since_extrapolation("claim.render_time.extrapolated")?;
                }
                self.first_claim.get_or_insert(at);
                claim = Some((c.shooter, c.seq, c.weapon, "hitscan"));
            }
            Line::WeaponClaim(c) => {
                self.kinds_since(RecordType::WeaponClaim)?;
                finite("received_at", c.received_at)?;
                let shooter = c.claim.shooter().to_bits();
                self.known_entity(shooter, "weapon_claim (shooter)")?;
                self.first_claim.get_or_insert(at);
                claim = Some((shooter, c.claim.seq(), c.claim.weapon().0, c.claim.kind()));
            }
            Line::WeaponVerdict(v) => {
                self.kinds_since(RecordType::WeaponVerdict)?;
                let Some((shooter, seq, weapon, kind)) = self.last_claim else {
                    return Err(RecordingErrorKind::VerdictWithoutClaim);
                };
                let verdict = &v.verdict;
                if verdict.kind() != kind {
                    return Err(RecordingErrorKind::VerdictKindMismatch {
                        verdict: verdict.kind(),
                        claim: kind,
                    });
                }
                let (v_shooter, v_seq, v_weapon) = (
                    verdict.shooter().to_bits(),
                    verdict.seq(),
                    weapon_of(verdict).0,
                );
                if (v_shooter, v_seq, v_weapon) != (shooter, seq, weapon) {
                    return Err(RecordingErrorKind::VerdictMismatch {
                        shooter: v_shooter,
                        seq: v_seq,
                        weapon: v_weapon,
                        claim_shooter: shooter,
                        claim_seq: seq,
                        claim_weapon: weapon,
                    });
                }
            }
            Line::Verdict(v) => {
                let Some((shooter, seq, weapon, kind)) = self.last_claim else {
                    return Err(RecordingErrorKind::VerdictWithoutClaim);
                };
                if kind != "hitscan" {
                    return Err(RecordingErrorKind::VerdictKindMismatch {
                        verdict: "hitscan",
                        claim: kind,
                    });
                }
                if v.entity.is_some() {
                    self.member_since("verdict.entity")?;
                }
                if v.refusal.is_some() {
                    self.evasion_since("verdict.refusal")?;
                }
                if (v.shooter, v.seq, v.weapon) != (shooter, seq, weapon) {
                    return Err(RecordingErrorKind::VerdictMismatch {
                        shooter: v.shooter,
                        seq: v.seq,
                        weapon: v.weapon,
                        claim_shooter: shooter,
                        claim_seq: seq,
                        claim_weapon: weapon,
                    });
                }
                if v.outcome == OutcomeLabel::Confirmed
                    && let Some(target) = v.target
                {
                    self.known_entity(target, "verdict (target)")?;
                }
                let b = &v.basis;
                let numbers = [
                    v.damage_multiplier,
                    v.distance,
                    v.point.map(|p| p.max_element()),
                    v.point.map(|p| p.min_element()),
                ];
                let times = [
                    Some(b.received_at),
                    b.requested_time,
                    b.time_used,
                    b.oldest,
                    b.newest,
                    b.shooter_latency,
                    b.interp_delay,
                ];
                if numbers.iter().flatten().any(|x| !x.is_finite())
                    || times.iter().flatten().any(|x| !x.is_finite())
                {
                    return Err(RecordingErrorKind::NonFinite {
                        what: "a number of the verdict",
                    });
                }
            }
        }
        self.last_claim = claim;
        Ok(())
    }

    /// Checks a `level` or `level_add` record's pieces, every one before any is counted,
    /// and takes them in as added at `added`.
    fn accept_pieces(
        &mut self,
        kind: RecordType,
        pieces: &[PieceLine<'_>],
        added: f64,
    ) -> Result<(), RecordingErrorKind> {
        self.since_version(kind)?;
        if self.level_records >= limits::MAX_LEVEL_RECORDS {
            return Err(too_large(
                "the number of level records",
                self.level_records + 1,
                limits::MAX_LEVEL_RECORDS,
            ));
        }
        self.check_piece_count(pieces.len())?;
        let mut triangles = self.triangles;
        for (index, line) in pieces.iter().enumerate() {
            let piece = level_piece(line.clone());
            piece.check().map_err(|error| LevelError {
                piece: index,
                error,
            })?;
            triangles += triangles_of(&piece);
            if triangles > limits::MAX_LEVEL_TRIANGLES {
                return Err(RecordingErrorKind::TooLarge {
                    what: "the level's triangles",
                    got: triangles,
                    limit: limits::MAX_LEVEL_TRIANGLES,
                });
            }
        }
        self.triangles = triangles;
        self.level_records += 1;
        self.pieces.extend(pieces.iter().map(|_| PieceLife {
            added,
            removed: false,
        }));
        Ok(())
    }

    /// Refuses a record newer than the header's version.
    fn since_version(&self, kind: RecordType) -> Result<(), RecordingErrorKind> {
        const LEVEL_RECORDS_SINCE: u32 = 2;
        if self.version < u64::from(LEVEL_RECORDS_SINCE) {
            return Err(RecordingErrorKind::NotInVersion {
                kind,
                needs: LEVEL_RECORDS_SINCE,
                version: self.version,
            });
        }
        Ok(())
    }

    /// Refuses a record of format 5 (claims and verdicts of every weapon kind) in an older
    /// file.
    fn kinds_since(&self, kind: RecordType) -> Result<(), RecordingErrorKind> {
        const KINDS_SINCE: u32 = 5;
        if self.version < u64::from(KINDS_SINCE) {
            return Err(RecordingErrorKind::NotInVersion {
                kind,
                needs: KINDS_SINCE,
                version: self.version,
            });
        }
        Ok(())
    }

    /// Refuses a member newer than the header's version (format 3: entity roles, weapon
    /// layer masks, verdicts blocked by an entity).
    fn member_since(&self, member: &'static str) -> Result<(), RecordingErrorKind> {
        const ROLES_SINCE: u32 = 3;
        self.member_in(member, ROLES_SINCE)
    }

    /// Refuses a member newer than the header's version (format 4: entity velocities,
    /// extrapolated render times).
    fn member_since_extrapolation(&self, member: &'static str) -> Result<(), RecordingErrorKind> {
        const VELOCITIES_SINCE: u32 = 4;
        self.member_in(member, VELOCITIES_SINCE)
    }

    /// Refuses a member newer than the header's version (format 4: the entity states
    /// `invulnerable` and `evasive`, refused verdicts). A reader of format 3 would take
    /// those hits for confirmed ones.
    fn evasion_since(&self, member: &'static str) -> Result<(), RecordingErrorKind> {
        const EVASION_SINCE: u32 = 4;
        self.member_in(member, EVASION_SINCE)
    }

    /// Refuses `member` when the header's version is older than `needs`.
    fn member_in(&self, member: &'static str, needs: u32) -> Result<(), RecordingErrorKind> {
        if self.version < u64::from(needs) {
            return Err(RecordingErrorKind::MemberNotInVersion {
                member,
                needs,
                version: self.version,
            });
        }
        Ok(())
    }

    fn check_piece_count(&self, more: usize) -> Result<(), RecordingErrorKind> {
        let total = self.pieces.len() + more;
        if total > limits::MAX_LEVEL_PIECES {
            return Err(too_large(
                "the number of level pieces",
                total,
                limits::MAX_LEVEL_PIECES,
            ));
        }
        Ok(())
    }

    /// An entity number that was spawned at some point.
    fn known_entity(&self, entity: u64, role: &'static str) -> Result<&Known, RecordingErrorKind> {
        self.entities
            .get(&entity)
            .ok_or(RecordingErrorKind::UnknownEntity { entity, role })
    }

    /// An entity number that was spawned and not despawned.
    fn active_entity(&self, entity: u64, role: &'static str) -> Result<&Known, RecordingErrorKind> {
        let known = self.known_entity(entity, role)?;
        match known.despawned {
            Some(despawned) => Err(RecordingErrorKind::Despawned {
                entity,
                role,
                despawned,
            }),
            None => Ok(known),
        }
    }
}

/// Triangles a checked piece holds (a heightfield: two per grid square; a primitive: none).
fn triangles_of(piece: &LevelPiece) -> u64 {
    match piece {
        LevelPiece::Primitive { .. } => 0,
        LevelPiece::Mesh { triangles, .. } => triangles.len() as u64,
        LevelPiece::HeightField { rows, columns, .. } => {
            (rows.saturating_sub(1) as u64) * (columns.saturating_sub(1) as u64) * 2
        }
    }
}

fn check_participant(p: &ParticipantLine) -> Result<(), RecordingErrorKind> {
    if p.aim_forward.is_finite() {
        Ok(())
    } else {
        Err(RecordingErrorKind::NonFinite {
            what: "participant aim_forward",
        })
    }
}

fn finite(what: &'static str, v: f64) -> Result<(), RecordingErrorKind> {
    if v.is_finite() {
        Ok(())
    } else {
        Err(RecordingErrorKind::NonFinite { what })
    }
}

fn too_large(what: &'static str, got: usize, limit: usize) -> RecordingErrorKind {
    RecordingErrorKind::TooLarge {
        what,
        got: got as u64,
        limit: limit as u64,
    }
}

/// The weapon a verdict of any kind names.
fn weapon_of(verdict: &crate::any::WeaponVerdict) -> crate::claim::WeaponId {
    verdict.weapon()
}

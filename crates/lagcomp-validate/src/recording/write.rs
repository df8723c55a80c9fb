//! [`RecordingWriter`]: what a live server calls, next to each history and validator
//! call, to record a match.

use std::borrow::Cow;
use std::io::{self, Write};

use lagcomp::{
    BoneTransform, EntityId, EntityRole, EntityState, HistoryConfig, LevelPiece, Pose, Rig, Shape,
    StaticId, Tick, Vec3,
};

use super::check::Checker;
use super::error::{RecordingError, RecordingErrorKind};
use super::limits::MAX_LINE_BYTES;
use super::record::{
    RecordType, RecordingEntry, claim_line, entity_line, header_line, level_add_line, level_line,
    level_remove_line, participant_line, spawn_line, timing_line, verdict_line, weapon_claim_line,
    weapon_verdict_line,
};
use super::wire::{
    FrameEntityLine, FrameLine, Line, RegisterLine, RulesLine, StaticLine, WeaponClaimLine,
    WeaponVerdictLine,
};
use crate::any::{WeaponClaim, WeaponVerdict};
use crate::claim::{ClientTiming, ShotClaim};
use crate::rules::RuleSet;
use crate::validator::Participant;
use crate::verdict::Verdict;

/// Writes a recording as JSON Lines; the first line is the header.
///
/// Call it next to the server's own calls, in the same order: [`RecordingWriter::level`],
/// [`RecordingWriter::level_add`] and [`RecordingWriter::level_remove`] with the history's
/// `load_level`, `add_pieces_at` and `remove_static` (and
/// [`RecordingWriter::static_collider`] with `add_static`), [`RecordingWriter::spawn`]
/// with [`lagcomp::History::spawn`] (and the validator's `register`),
/// [`RecordingWriter::frame`] with each recorded frame, [`RecordingWriter::timing`] with
/// `set_timing`, [`RecordingWriter::claim`] then [`RecordingWriter::verdict`] around each
/// `validate`. Replaying the recording then makes the same calls.
///
/// Every line is checked as a reader would check it before a byte of it is written: a
/// refused record returns [`io::ErrorKind::InvalidInput`] (its message names the line it
/// would have been) and leaves the file as it was. Wrap files in a `BufWriter`.
#[derive(Debug)]
pub struct RecordingWriter<W: Write> {
    out: W,
    checker: Checker,
    /// Lines written so far.
    lines: usize,
    buf: Vec<u8>,
}

impl<W: Write> RecordingWriter<W> {
    /// A writer to `out`; writes the header for a history with `config`.
    ///
    /// # Errors
    /// The writer's error, or [`io::ErrorKind::InvalidInput`] for a configuration the
    /// history would refuse.
    pub fn new(out: W, config: &HistoryConfig) -> io::Result<Self> {
        let mut writer = Self {
            out,
            checker: Checker::default(),
            lines: 0,
            buf: Vec::new(),
        };
        writer.line(&Line::Header(header_line(config)))?;
        Ok(writer)
    }

    /// The rule set in force (once, before the first claim).
    ///
    /// # Errors
    /// As [`RecordingWriter::new`]: a second rule set, one after a claim, or one that
    /// fails [`RuleSet::check`] is refused.
    pub fn rules(&mut self, rules: &RuleSet) -> io::Result<()> {
        self.line(&Line::Rules(RulesLine {
            kind: RecordType::Rules,
            rules: Cow::Borrowed(rules),
        }))
    }

    /// Static geometry, as [`lagcomp::History::add_static`] takes it.
    ///
    /// # Errors
    /// As [`RecordingWriter::new`].
    pub fn static_collider(&mut self, shape: Shape, pose: Pose, layers: u32) -> io::Result<()> {
        self.line(&Line::Static(StaticLine {
            kind: RecordType::Static,
            shape,
            pose,
            layers,
        }))
    }

    /// Level geometry, as [`lagcomp::History::load_level`] takes it: one record for the
    /// whole batch, meshes and heightfields written out in full (about 35 bytes per mesh
    /// triangle; 3.5 MB for a 100,000-triangle level).
    ///
    /// # Errors
    /// As [`RecordingWriter::new`]: a piece loading would refuse, or a line beyond
    /// [`super::limits::MAX_LINE_BYTES`] (split a larger level into several calls, as the
    /// server may split its `load_level`).
    pub fn level(&mut self, pieces: &[LevelPiece]) -> io::Result<()> {
        self.line(&Line::Level(level_line(pieces)))
    }

    /// Pieces that appear at `time`, as [`lagcomp::History::add_pieces_at`] takes them.
    ///
    /// # Errors
    /// As [`RecordingWriter::level`]; a time that is not finite.
    pub fn level_add(&mut self, time: f64, pieces: &[LevelPiece]) -> io::Result<()> {
        self.line(&Line::LevelAdd(level_add_line(time, pieces)))
    }

    /// Piece `piece` removed at `time`, as [`lagcomp::History::remove_static`] takes it.
    ///
    /// # Errors
    /// As [`RecordingWriter::new`]: a piece not recorded, removed already, or a time that
    /// is not finite or before the piece was added.
    pub fn level_remove(&mut self, piece: StaticId, time: f64) -> io::Result<()> {
        self.line(&Line::LevelRemove(level_remove_line(piece, time)))
    }

    /// An entity spawned with `rig` under the id the history gave it, and registered with
    /// the validator as `participant`.
    ///
    /// # Errors
    /// As [`RecordingWriter::new`]: an id spawned before, or a rig beyond the limits.
    pub fn spawn(
        &mut self,
        entity: EntityId,
        rig: &Rig,
        participant: &Participant,
    ) -> io::Result<()> {
        self.line(&Line::Spawn(spawn_line(
            entity,
            rig,
            Some(participant),
            EntityRole::Target,
        )))
    }

    /// An entity spawned with a role ([`lagcomp::History::spawn_as`]: a door, a vehicle),
    /// registered with the validator as `participant` if given.
    ///
    /// # Errors
    /// As [`RecordingWriter::spawn`].
    pub fn spawn_as(
        &mut self,
        entity: EntityId,
        rig: &Rig,
        role: EntityRole,
        participant: Option<&Participant>,
    ) -> io::Result<()> {
        self.line(&Line::Spawn(spawn_line(entity, rig, participant, role)))
    }

    /// An entity spawned and not registered with the validator (a target with no team).
    ///
    /// # Errors
    /// As [`RecordingWriter::spawn`].
    pub fn spawn_unregistered(&mut self, entity: EntityId, rig: &Rig) -> io::Result<()> {
        self.line(&Line::Spawn(spawn_line(
            entity,
            rig,
            None,
            EntityRole::Target,
        )))
    }

    /// A registration changed after spawning ([`crate::Validator::register`]).
    ///
    /// # Errors
    /// As [`RecordingWriter::new`]: an entity not spawned, or despawned.
    pub fn register(&mut self, entity: EntityId, participant: &Participant) -> io::Result<()> {
        self.line(&Line::Register(RegisterLine {
            kind: RecordType::Register,
            entity: entity.to_bits(),
            participant: participant_line(participant),
        }))
    }

    /// [`crate::Validator::forget`].
    ///
    /// # Errors
    /// As [`RecordingWriter::new`]: an entity never spawned.
    pub fn forget(&mut self, entity: EntityId) -> io::Result<()> {
        self.line(&Line::Forget(entity_line(RecordType::Forget, entity)))
    }

    /// [`lagcomp::History::despawn`].
    ///
    /// # Errors
    /// As [`RecordingWriter::new`]: an entity not spawned, or despawned already.
    pub fn despawn(&mut self, entity: EntityId) -> io::Result<()> {
        self.line(&Line::Despawn(entity_line(RecordType::Despawn, entity)))
    }

    /// One frame: each entity recorded in it, in the order it was recorded, with its
    /// state and one world transform per bone.
    ///
    /// # Errors
    /// As [`RecordingWriter::new`]: anything the history would refuse (ticks or times not
    /// increasing, an entity not spawned or despawned or listed twice, a wrong bone count,
    /// an invalid transform).
    pub fn frame(
        &mut self,
        tick: Tick,
        time: f64,
        entities: &[(EntityId, EntityState, &[BoneTransform])],
    ) -> io::Result<()> {
        self.frame_line(
            tick,
            time,
            entities.iter().map(|&(e, s, b)| (e, s, b, None)),
        )
    }

    /// [`RecordingWriter::frame`] with each entity's velocity as the tick's snapshot sent
    /// it ([`lagcomp::FrameRecorder::record_velocity`]), which extrapolated claims are
    /// re-validated with.
    ///
    /// # Errors
    /// As [`RecordingWriter::frame`], and a velocity that is not finite or beyond the
    /// world's range.
    pub fn frame_moving(
        &mut self,
        tick: Tick,
        time: f64,
        entities: &[(EntityId, EntityState, &[BoneTransform], Vec3)],
    ) -> io::Result<()> {
        self.frame_line(
            tick,
            time,
            entities.iter().map(|&(e, s, b, v)| (e, s, b, Some(v))),
        )
    }

    fn frame_line<'b>(
        &mut self,
        tick: Tick,
        time: f64,
        entities: impl Iterator<Item = (EntityId, EntityState, &'b [BoneTransform], Option<Vec3>)>,
    ) -> io::Result<()> {
        self.line(&Line::Frame(FrameLine {
            kind: RecordType::Frame,
            tick: tick.0,
            time,
            entities: entities
                .map(|(entity, state, bones, velocity)| FrameEntityLine {
                    entity: entity.to_bits(),
                    state,
                    bones: Cow::Borrowed(bones),
                    velocity,
                })
                .collect(),
        }))
    }

    /// [`crate::Validator::set_timing`].
    ///
    /// # Errors
    /// As [`RecordingWriter::new`]: a shooter not spawned or despawned, a non-finite
    /// number.
    pub fn timing(&mut self, shooter: EntityId, timing: &ClientTiming) -> io::Result<()> {
        self.line(&Line::Timing(timing_line(shooter, timing)))
    }

    /// A claim that arrived at server time `received_at`, written before it is
    /// validated. Its NaN and infinite numbers are written as `null`.
    ///
    /// # Errors
    /// As [`RecordingWriter::new`]: a shooter never spawned, a non-finite `received_at`.
    pub fn claim(&mut self, received_at: f64, claim: &ShotClaim) -> io::Result<()> {
        self.line(&Line::Claim(claim_line(received_at, claim)))
    }

    /// The verdict of the claim written just before.
    ///
    /// # Errors
    /// As [`RecordingWriter::new`]: the previous line is not this verdict's claim.
    pub fn verdict(&mut self, verdict: &Verdict) -> io::Result<()> {
        self.line(&Line::Verdict(verdict_line(verdict)))
    }

    /// A claim of any weapon kind that arrived at server time `received_at`, written
    /// before [`crate::Validator::validate_any`] judges it: a hitscan claim as
    /// [`RecordingWriter::claim`] writes it (a `claim` line, so hitscan-only recordings keep
    /// their shape), any other kind as a `weapon_claim` line (format 5).
    ///
    /// # Errors
    /// As [`RecordingWriter::claim`]; a claim of another kind with a NaN or infinite number
    /// (JSON holds neither; the wire protocol refuses them before they reach a validator).
    pub fn weapon_claim(&mut self, received_at: f64, claim: &WeaponClaim) -> io::Result<()> {
        match claim {
            WeaponClaim::Hitscan(shot) => self.claim(received_at, shot),
            _ => self.line(&Line::WeaponClaim(weapon_claim_line(received_at, claim))),
        }
    }

    /// The verdict of the claim [`RecordingWriter::weapon_claim`] wrote just before: a
    /// hitscan verdict as [`RecordingWriter::verdict`] writes it, any other kind as a
    /// `weapon_verdict` line with the kind's breakdown (pellets, victims, the flown path).
    ///
    /// # Errors
    /// As [`RecordingWriter::verdict`]; a verdict of another kind than its claim's.
    pub fn weapon_verdict(&mut self, verdict: &WeaponVerdict) -> io::Result<()> {
        match verdict {
            WeaponVerdict::Hitscan(verdict) => self.verdict(verdict),
            _ => self.line(&Line::WeaponVerdict(weapon_verdict_line(verdict))),
        }
    }

    /// Any record but the header (which [`RecordingWriter::new`] wrote).
    ///
    /// # Errors
    /// As [`RecordingWriter::new`].
    pub fn record(&mut self, record: &RecordingEntry) -> io::Result<()> {
        self.line(&record.line())
    }

    /// Lines written so far, the header included.
    #[must_use]
    pub fn lines(&self) -> usize {
        self.lines
    }

    /// Hands what was written so far to the writer's destination (a `BufWriter`'s file):
    /// once a server tick, so a server killed outright loses at most the tick it was in.
    ///
    /// # Errors
    /// The writer's error.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Flushes and returns the writer.
    ///
    /// # Errors
    /// The writer's error.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }

    /// Checks, serializes and writes one line.
    fn line(&mut self, line: &Line<'_>) -> io::Result<()> {
        let at = self.lines + 1;
        let fail = |kind| io::Error::from(RecordingError::new(at, kind));
        self.buf.clear();
        serde_json::to_writer(&mut self.buf, line)?;
        if self.buf.len() > MAX_LINE_BYTES {
            return Err(fail(RecordingErrorKind::LineTooLong {
                limit: MAX_LINE_BYTES,
            }));
        }
        // JSON writes a NaN as `null`, which a weapon kind's claim or verdict cannot read
        // back: refuse it here rather than write a file the reader refuses.
        let unreadable = match line {
            Line::WeaponClaim(_) => serde_json::from_slice::<WeaponClaimLine>(&self.buf)
                .err()
                .map(|_| "a number of the weapon claim"),
            Line::WeaponVerdict(_) => serde_json::from_slice::<WeaponVerdictLine>(&self.buf)
                .err()
                .map(|_| "a number of the weapon verdict"),
            _ => None,
        };
        if let Some(what) = unreadable {
            return Err(fail(RecordingErrorKind::NotWritable { what }));
        }
        self.checker.accept(at, line).map_err(fail)?;
        self.buf.push(b'\n');
        self.out.write_all(&self.buf)?;
        self.lines = at;
        Ok(())
    }
}

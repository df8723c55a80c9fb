//! Offline re-validation: a recording's calls made again on a fresh history and
//! validator, in file order, so every claim is judged against the past exactly as it was
//! recorded up to its line.

use std::collections::{BTreeMap, HashMap};
use std::ops::ControlFlow;
use std::sync::Arc;

use lagcomp::{EntityId, History};

use super::error::{RecordingError, RecordingErrorKind};
use super::read::Recording;
use super::record::RecordingEntry;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::any::{WeaponClaim, WeaponVerdict};
use crate::claim::ShotClaim;
use crate::rules::{Policy, RuleSet};
use crate::validator::Validator;
use crate::verdict::{Verdict, VerdictOutcome};

/// One claim judged again.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Revalidated {
    /// The claim's line.
    pub line: usize,
    /// When it arrived (server time).
    pub received_at: f64,
    /// The claim, with the recording's entity numbers.
    pub claim: ShotClaim,
    /// The verdict line that followed the claim, if there was one.
    pub recorded: Option<Verdict>,
    /// The verdict now, with the recording's entity numbers.
    pub verdict: Verdict,
}

impl Revalidated {
    /// Whether there was a recorded verdict and the new one differs from it. A verdict
    /// recorded without [`crate::Basis::measured`] (written before verdicts carried it) is
    /// compared without it.
    #[must_use]
    pub fn changed(&self) -> bool {
        self.recorded
            .is_some_and(|recorded| hitscan_changed(&recorded, &self.verdict))
    }
}

/// One claim of any weapon kind judged again ([`revalidate_any`]): a hitscan claim from a
/// `claim` line as a [`WeaponClaim::Hitscan`], any other kind from a `weapon_claim` line.
#[derive(Debug, Clone, PartialEq)]
pub struct RevalidatedAny {
    /// The claim's line.
    pub line: usize,
    /// When it arrived (server time).
    pub received_at: f64,
    /// The claim, with the recording's entity numbers.
    pub claim: WeaponClaim,
    /// The verdict line that followed the claim, if there was one.
    pub recorded: Option<WeaponVerdict>,
    /// The verdict now, with the recording's entity numbers.
    pub verdict: WeaponVerdict,
}

impl RevalidatedAny {
    /// Whether there was a recorded verdict and the new one differs from it, breakdown
    /// included (each pellet, each blast victim, the flown path). A hitscan verdict is
    /// compared as [`Revalidated::changed`] compares it.
    #[must_use]
    pub fn changed(&self) -> bool {
        match (&self.recorded, &self.verdict) {
            (Some(WeaponVerdict::Hitscan(recorded)), WeaponVerdict::Hitscan(now)) => {
                hitscan_changed(recorded, now)
            }
            (Some(recorded), now) => recorded != now,
            (None, _) => false,
        }
    }
}

/// Whether `now` differs from `recorded`, leaving out the measurement when the recorded
/// verdict was written before verdicts carried one.
fn hitscan_changed(recorded: &Verdict, now: &Verdict) -> bool {
    let mut now = *now;
    if recorded.basis.measured.is_none() {
        now.basis.measured = None;
    }
    *recorded != now
}

/// Re-runs every claim of `recording`, of every weapon kind, as [`revalidate`] does, each
/// judged with [`Validator::validate_any`] as its kind's validation judged it live, and
/// returns them all in file order. `progress` is called after each claim with the number
/// judged so far and [`Recording::claims_of_every_kind`].
///
/// # Errors
/// As [`revalidate`].
pub fn revalidate_any(
    recording: &Recording,
    rules: Option<&RuleSet>,
    mut progress: impl FnMut(usize, usize),
) -> Result<Vec<RevalidatedAny>, RecordingError> {
    recording.check()?;
    let total = recording.claims_of_every_kind();
    let rules = rules_for(recording, rules)?;
    let mut judged: Vec<RevalidatedAny> = Vec::with_capacity(total);
    replay(recording, rules, |any, _| {
        judged.push(any.clone());
        progress(judged.len(), total);
        ControlFlow::Continue(())
    })?;
    Ok(judged)
}

/// Re-runs every claim of `recording` through a fresh [`History`] and [`Validator`], in
/// file order, making the calls the live server made: statics added, level geometry
/// loaded, added and removed (so every piece gets the id it had live), entities spawned
/// (and registered), frames recorded, timing set, despawns, and each claim validated at
/// its `received_at` against the history as recorded up to its line.
///
/// `rules` replaces the recording's own (`None`: use them). `progress` is called after
/// each claim with the number judged so far and the total ([`Recording::claims`]).
///
/// Only hitscan claims are returned; claims of the other weapon kinds (format 5's
/// `weapon_claim` lines) are judged too, in their place, since they change the
/// validator's state as they did live, and [`revalidate_any`] returns them all.
///
/// The recording is checked in full first ([`Recording::check`]): on error nothing has
/// been replayed and `progress` was never called. Under unchanged rules every verdict
/// equals the recorded one.
///
/// # Errors
/// [`RecordingError`] for a recording that fails its checks, for claims with no rules to
/// judge them by ([`RecordingErrorKind::NoRules`], on the first claim's line), or for
/// `rules` that fail [`RuleSet::check`] (line 0).
pub fn revalidate(
    recording: &Recording,
    rules: Option<&RuleSet>,
    mut progress: impl FnMut(usize, usize),
) -> Result<Vec<Revalidated>, RecordingError> {
    recording.check()?;
    let total = recording.claims();
    let rules = rules_for(recording, rules)?;
    let mut judged: Vec<Revalidated> = Vec::with_capacity(total);
    replay(recording, rules, |_, hitscan| {
        let Some(claim) = hitscan else {
            return ControlFlow::Continue(());
        };
        judged.push(*claim.judged);
        progress(judged.len(), total);
        ControlFlow::Continue(())
    })?;
    Ok(judged)
}

/// One claim as [`revalidate_until`] judged it, with the history and validator as they
/// stood right after: what a tool needs to look at the shot (where the target was then
/// and now, the walls, the weapon).
#[derive(Debug, Clone, Copy)]
pub struct ReplayedClaim<'r> {
    /// The claim and its verdicts, with the recording's entity numbers.
    pub judged: &'r Revalidated,
    /// The fresh history, holding every frame recorded up to the claim's line.
    pub history: &'r History,
    /// The validator that judged it (its rules are the ones re-validated with).
    pub validator: &'r Validator,
    ids: &'r Ids,
}

impl ReplayedClaim<'_> {
    /// The id the fresh [`ReplayedClaim::history`] gave the entity the recording numbers
    /// `recorded` (an id no history issues if it was never spawned).
    #[must_use]
    pub fn replayed_id(&self, recorded: EntityId) -> EntityId {
        self.ids.replayed(recorded)
    }

    /// Every entity spawned up to the claim's line (despawned ones too), in the
    /// recording's numbering, in increasing order.
    #[must_use]
    pub fn spawned(&self) -> Vec<EntityId> {
        let mut spawned: Vec<EntityId> = self.ids.replayed.keys().copied().collect();
        spawned.sort_unstable();
        spawned
    }
}

/// Replays `recording` like [`revalidate`] and hands each judged hitscan claim, with the history
/// it was judged against, to `pick`, stopping at the first for which `pick` returns
/// `Some`; that value is returned (`None`: no claim was picked). Claims after the picked
/// one are not judged.
///
/// # Errors
/// As [`revalidate`].
pub fn revalidate_until<T>(
    recording: &Recording,
    rules: Option<&RuleSet>,
    mut pick: impl FnMut(&ReplayedClaim<'_>) -> Option<T>,
) -> Result<Option<T>, RecordingError> {
    recording.check()?;
    let rules = rules_for(recording, rules)?;
    let mut picked = None;
    replay(recording, rules, |_, hitscan| {
        match hitscan.and_then(|claim| pick(&claim)) {
            Some(value) => {
                picked = Some(value);
                ControlFlow::Break(())
            }
            None => ControlFlow::Continue(()),
        }
    })?;
    Ok(picked)
}

/// The rules to judge by: `given` (checked), else the recording's own.
fn rules_for(recording: &Recording, given: Option<&RuleSet>) -> Result<RuleSet, RecordingError> {
    match (given, &recording.rules) {
        (Some(given), _) => {
            given
                .check()
                .map_err(|e| RecordingError::new(0, RecordingErrorKind::Rules(e)))?;
            Ok(given.clone())
        }
        (None, Some(own)) => Ok(own.clone()),
        (None, None) => {
            if let Some((line, _)) = recording
                .records
                .iter()
                .find(|(_, r)| matches!(r, RecordingEntry::Claim { .. }))
            {
                return Err(RecordingError::new(*line, RecordingErrorKind::NoRules));
            }
            Ok(RuleSet {
                policy: Policy::default(),
                weapons: BTreeMap::new(),
            })
        }
    }
}

/// The replay loop of [`revalidate`], [`revalidate_any`] and [`revalidate_until`], on a
/// checked recording: `on_claim` sees each claim of any kind once judged (and, for a
/// hitscan claim, the history it was judged against), and may stop the replay there.
fn replay(
    recording: &Recording,
    rules: RuleSet,
    mut on_claim: impl FnMut(&RevalidatedAny, Option<ReplayedClaim<'_>>) -> ControlFlow<()>,
) -> Result<(), RecordingError> {
    let mut history =
        History::new(recording.config).map_err(|e| RecordingError::new(1, e.into()))?;
    let mut validator = Validator::new(rules);
    let mut ids = Ids::default();
    let mut records = recording.records.iter().peekable();
    while let Some((line, record)) = records.next() {
        let line = *line;
        let refused = |e: &dyn std::fmt::Display| {
            RecordingError::new(line, RecordingErrorKind::Replay(e.to_string()))
        };
        match record {
            // Read once, before the first claim: the validator was made with them.
            // A verdict line belongs to the claim before it, which took it already.
            RecordingEntry::Header(_)
            | RecordingEntry::Rules(_)
            | RecordingEntry::Verdict(_)
            | RecordingEntry::WeaponVerdict(_) => {}
            RecordingEntry::Static {
                shape,
                pose,
                layers,
            } => {
                history
                    .add_static(*shape, *pose, *layers)
                    .map_err(|e| refused(&e))?;
            }
            RecordingEntry::Level { pieces } => {
                history
                    .load_level(pieces.iter().cloned())
                    .map_err(|e| refused(&e))?;
            }
            RecordingEntry::LevelAdd { time, pieces } => {
                history
                    .add_pieces_at(pieces.iter().cloned(), *time)
                    .map_err(|e| refused(&e))?;
            }
            RecordingEntry::LevelRemove { piece, time } => {
                history
                    .remove_static(*piece, *time)
                    .map_err(|e| refused(&e))?;
            }
            RecordingEntry::Spawn {
                entity,
                rig,
                participant,
                role,
            } => {
                let id = history.spawn_as(Arc::clone(rig), *role);
                ids.spawned(*entity, id);
                if let Some(participant) = participant {
                    validator.register(id, *participant);
                }
            }
            RecordingEntry::Register {
                entity,
                participant,
            } => validator.register(ids.replayed(*entity), *participant),
            RecordingEntry::Forget { entity } => validator.forget(ids.replayed(*entity)),
            RecordingEntry::Despawn { entity } => history
                .despawn(ids.replayed(*entity))
                .map_err(|e| refused(&e))?,
            RecordingEntry::Frame(frame) => {
                let mut recorder = history
                    .begin_frame(frame.tick, frame.time)
                    .map_err(|e| refused(&e))?;
                for e in &frame.entities {
                    let id = ids.replayed(e.entity);
                    recorder
                        .record(id, &e.bones, e.state)
                        .map_err(|e| refused(&e))?;
                    if let Some(velocity) = e.velocity {
                        recorder
                            .record_velocity(id, velocity)
                            .map_err(|e| refused(&e))?;
                    }
                }
                recorder.finish();
            }
            RecordingEntry::Timing { shooter, timing } => {
                // A timing the live validator refused (negative, absurd) it refused
                // here too: the replay keeps the state the live server had.
                let _refused = validator.set_timing(ids.replayed(*shooter), *timing);
            }
            RecordingEntry::Claim { received_at, claim } => {
                let verdict = validator.validate(&history, &ids.claim(claim), *received_at);
                // The checks put a claim's verdict, if it has one, right after it.
                let recorded = match records.peek() {
                    Some((_, RecordingEntry::Verdict(recorded))) => Some(*recorded),
                    _ => None,
                };
                let judged = Revalidated {
                    line,
                    received_at: *received_at,
                    claim: *claim,
                    recorded,
                    verdict: ids.verdict(verdict, claim.shooter),
                };
                let any = RevalidatedAny {
                    line,
                    received_at: *received_at,
                    claim: WeaponClaim::Hitscan(*claim),
                    recorded: recorded.map(WeaponVerdict::Hitscan),
                    verdict: WeaponVerdict::Hitscan(judged.verdict),
                };
                let replayed = ReplayedClaim {
                    judged: &judged,
                    history: &history,
                    validator: &validator,
                    ids: &ids,
                };
                if on_claim(&any, Some(replayed)).is_break() {
                    return Ok(());
                }
            }
            RecordingEntry::WeaponClaim { received_at, claim } => {
                let replayed_claim = ids.to_replayed(claim.as_ref());
                let verdict = validator.validate_any(&history, None, &replayed_claim, *received_at);
                let recorded = match records.peek() {
                    Some((_, RecordingEntry::WeaponVerdict(recorded))) => Some(**recorded),
                    Some((_, RecordingEntry::Verdict(recorded))) => {
                        Some(WeaponVerdict::Hitscan(*recorded))
                    }
                    _ => None,
                };
                let any = RevalidatedAny {
                    line,
                    received_at: *received_at,
                    claim: **claim,
                    recorded,
                    verdict: ids.to_recorded(&verdict),
                };
                if on_claim(&any, None).is_break() {
                    return Ok(());
                }
            }
        }
    }
    Ok(())
}

/// The recording's entity ids and the ones the fresh history gave the same entities.
#[derive(Debug, Default)]
struct Ids {
    replayed: HashMap<EntityId, EntityId>,
    recorded: HashMap<EntityId, EntityId>,
}

impl Ids {
    /// An id no history ever issues (slot index `u32::MAX`): what a recorded id that
    /// names no spawned entity becomes, so it stays unknown on replay.
    const NEVER_ISSUED: EntityId = EntityId::from_bits(u64::MAX);

    fn spawned(&mut self, recorded: EntityId, replayed: EntityId) {
        self.replayed.insert(recorded, replayed);
        self.recorded.insert(replayed, recorded);
    }

    fn replayed(&self, recorded: EntityId) -> EntityId {
        self.replayed
            .get(&recorded)
            .copied()
            .unwrap_or(Self::NEVER_ISSUED)
    }

    /// The claim as the fresh history names its entities. A claimed target that was
    /// not spawned (yet) stays unknown, as it was live.
    fn claim(&self, claim: &ShotClaim) -> ShotClaim {
        let mut replayed = *claim;
        replayed.shooter = self.replayed(claim.shooter);
        if let Some(hit) = &mut replayed.hit {
            hit.target = self.replayed(hit.target);
        }
        replayed
    }

    /// Any value holding entity ids (a weapon claim, a weapon verdict) with each id
    /// mapped by `map`: through its JSON, where an id is the only object with exactly the
    /// members `index` and `generation`, so every kind's ids are found, whatever fields
    /// hold them. Offline only (it allocates); a value that does not come back (it cannot
    /// for numbers JSON does not hold, which a read recording never has) stays as it was.
    fn map_entities<T: Serialize + DeserializeOwned + Copy>(
        value: &T,
        map: impl Fn(EntityId) -> EntityId,
    ) -> T {
        fn walk(value: &mut serde_json::Value, map: &dyn Fn(EntityId) -> EntityId) {
            if let serde_json::Value::Object(members) = value
                && members.len() == 2
                && members.get("index").is_some_and(serde_json::Value::is_u64)
                && members
                    .get("generation")
                    .is_some_and(serde_json::Value::is_u64)
                && let Ok(id) = serde_json::from_value::<EntityId>(value.clone())
                && let Ok(mapped) = serde_json::to_value(map(id))
            {
                *value = mapped;
                return;
            }
            match value {
                serde_json::Value::Object(members) => {
                    for member in members.values_mut() {
                        walk(member, map);
                    }
                }
                serde_json::Value::Array(items) => {
                    for item in items {
                        walk(item, map);
                    }
                }
                _ => {}
            }
        }
        let Ok(mut json) = serde_json::to_value(value) else {
            return *value;
        };
        walk(&mut json, &map);
        serde_json::from_value(json).unwrap_or(*value)
    }

    /// A claim of any kind as the fresh history names its entities (unknown ones stay
    /// unknown, as in [`Ids::claim`]).
    ///
    /// A pellet claim's seed is made from the live shooter's id
    /// ([`lagcomp::spread::pellet_seed`]) and the validator checks it against the id it is
    /// given: its verdict is reproduced when the fresh history numbers the shooter as the
    /// live one did, as it does when the recording holds every spawn the live history
    /// made.
    fn to_replayed(&self, claim: &WeaponClaim) -> WeaponClaim {
        Self::map_entities(claim, |id| self.replayed(id))
    }

    /// A verdict of any kind as the recording names its entities.
    fn to_recorded(&self, verdict: &WeaponVerdict) -> WeaponVerdict {
        Self::map_entities(verdict, |id| self.recorded.get(&id).copied().unwrap_or(id))
    }

    /// The verdict as the recording names its entities.
    fn verdict(&self, mut verdict: Verdict, shooter: EntityId) -> Verdict {
        verdict.shooter = shooter;
        if let VerdictOutcome::Confirmed(hit) = &mut verdict.outcome {
            hit.target = self
                .recorded
                .get(&hit.target)
                .copied()
                .unwrap_or(hit.target);
        }
        verdict
    }
}

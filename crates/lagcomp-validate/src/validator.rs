//! The validator: from a client's shot claim to a verdict, check by check.
//!
//! The checks run in this order, and the first that fails decides the verdict:
//!
//! 1. malformed: non-finite or absurd numbers, zero direction, unknown weapon or shooter;
//! 2. replay: the sequence number was used, or is too far behind;
//! 3. fire rate, per shooter across weapons: judged on claimed times (arrival jitter
//!    cannot fail an honest player) and, with a slack for jitter, on arrival times
//!    (spacing claimed times out cannot buy a cheat more shots than it sends); a shot
//!    that passes takes its slot whatever the later checks say (the weapon fired), unless
//!    check 4 refuses its time (then its time says nothing about when it fired);
//! 4. time: in the future, older than the weapon allows, or not the rewind measured for
//!    this client (backtracking);
//! 5. origin and 6. angle: against the shooter's own aim bone from history;
//! 7. the trace at the rewound time against every entity and the static world, hitting
//!    the weapon's `hit_layers` and stopped by its `blocked_by` layers: a wall or a
//!    blocker entity (a door, where the shooter saw it) in front is `Blocked`;
//! 9. the target's state then (a target at all, alive, lag-compensated, not a teammate),
//!    checked before
//! 8. the client's claimed target, hitbox and point, which must agree with the trace or
//!    lie within the weapon's leeway of the rewound hitbox and of the shot's line, with
//!    no wall, blocker entity or vehicle in front of it (then `Blocked`, as for a wall).
//!
//! A shot whose claim names a target is judged on the target's state first, so a claim at
//! an invulnerable or dead player says so rather than "tampered".

#[path = "judging.rs"]
mod judging;
#[path = "melee.rs"]
pub mod melee;
#[path = "players.rs"]
mod players;

pub use players::AddPlayerError;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use lagcomp::{
    EntityId, History, QueryError, Ray, RewindTarget, StaticWorld, Trace, Vec3, WindowPolicy,
};

use crate::claim::{ClientTiming, ShotClaim, TimingError};
use crate::extrapolated::in_front_in_the_picture;
use crate::measurement::Measurement;
use crate::rules::{Policy, RuleSet, ShooterReference, WeaponKind};
use crate::screening::{
    ClaimedMoment, check_extrapolation, check_numbers, claimed_time, time_reason,
};
use crate::shot_memory::{FiredShots, SequenceWindow, spacing_allows};
use crate::verdict::{Basis, RejectReason, Verdict, VerdictOutcome};

/// A shooter or target as the validator knows it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Participant {
    /// Team number; shots between equal teams are friendly fire.
    pub team: u16,
    /// The bone whose origin is the shooter's eye or muzzle and whose rotation is its view.
    pub aim_bone: u16,
    /// The view's forward direction in the aim bone's local axes (unit length).
    pub aim_forward: Vec3,
}

impl Default for Participant {
    fn default() -> Self {
        Self {
            team: 0,
            aim_bone: 0,
            aim_forward: Vec3::NEG_Z,
        }
    }
}

/// Everything the validator tracks per shooter.
#[derive(Debug, Clone)]
struct Shooter {
    /// Set by [`Validator::register`]; timing may arrive first.
    registered: bool,
    participant: Participant,
    timing: Option<ClientTiming>,
    sequence: SequenceWindow,
    /// Claimed times of the shots that counted, with every weapon.
    fired: FiredShots,
    /// Theoretical arrival time of the next shot (GCRA on arrival times).
    next_arrival: f64,
}

impl Default for Shooter {
    fn default() -> Self {
        Self {
            registered: false,
            participant: Participant::default(),
            timing: None,
            sequence: SequenceWindow::default(),
            fired: FiredShots::default(),
            // Server time may start anywhere, even below zero.
            next_arrival: f64::NEG_INFINITY,
        }
    }
}

impl Shooter {
    /// Checks 2 and 3, the only ones that read (and change) the shooter's state.
    fn check_rate(
        &mut self,
        policy: &Policy,
        claim: &ShotClaim,
        screened: &Screened,
        received_at: f64,
        basis: &mut Basis,
    ) -> Result<(), RejectReason> {
        // 2. Replay. The number is used up whatever the verdict.
        if let Err(reason) = self.sequence.admit(claim.seq, policy.sequence_window) {
            basis.measured = self.sequence.behind(claim.seq, policy.sequence_window);
            return Err(reason);
        }

        // 3. Fire rate, on the claimed time when it can be resolved (otherwise the time
        //    check rejects the shot).
        if let Ok((t, _)) = screened.claimed {
            basis.requested_time = Some(t);
        }
        if received_at < self.next_arrival - screened.arrival_tolerance {
            return Err(RejectReason::FireRate);
        }
        if let Ok((t, _)) = screened.claimed {
            // Runs longer than this many intervals cannot fail where every shorter run
            // passed; the older shots stay remembered for the next weapon's check.
            let horizon = (f64::from(screened.burst) + 2.0) * screened.min_interval.max(1e-3) * 4.0;
            if !spacing_allows(
                self.fired.since(t - horizon),
                t,
                screened.spacing,
                screened.burst,
            ) {
                return Err(RejectReason::FireRate);
            }
        }
        Ok(())
    }

    /// Counts a shot that passed the fire-rate checks and whose claimed time passed the
    /// time check, whatever its verdict otherwise: the weapon fired. (Counting only
    /// accepted shots let a rapid-fire pair through whenever the first of the two was
    /// rejected for another reason.) A claim whose time was refused says nothing about
    /// when the weapon fired: counting it let an absurd time push the real shots out of
    /// the memory.
    fn count_shot(&mut self, screened: &Screened, received_at: f64) {
        // Without a claimed time the time check rejects the shot and there is nothing
        // to space the next one from.
        let Ok((t, _)) = screened.claimed else {
            return;
        };
        self.fired.insert(t);
        self.next_arrival = self.next_arrival.max(received_at) + screened.spacing;
    }
}

/// Whether a shot with this outcome counts as fired: every outcome but a refused time
/// (checks 4), which leaves the claimed time meaningless.
fn counts_as_fired(outcome: &Result<VerdictOutcome, RejectReason>) -> bool {
    !matches!(
        outcome,
        Err(RejectReason::NoTiming
            | RejectReason::TimeInFuture
            | RejectReason::TimeTooOld
            | RejectReason::Backtrack
            | RejectReason::ExtrapolatedTooFar)
    )
}

/// What check 1 found that checks 2 and 3 need: the claimed time and the weapon's
/// spacing, which depend on the claim and the configuration, not on the shooter's state.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Screened {
    /// The server time the render time names, and the target that rebuilds it.
    claimed: Result<(f64, RewindTarget), RejectReason>,
    /// Least time between shots in claimed time, after the slack.
    spacing: f64,
    /// How much sooner than the steady rate a shot may arrive.
    arrival_tolerance: f64,
    burst: u32,
    min_interval: f64,
}

/// A claim examined against a history by [`Validator::examine`], waiting for
/// [`Validator::settle`] to judge it. Holds the claim, everything read from the history
/// (including the trace), and the configuration it was examined under.
#[derive(Debug, Clone, PartialEq)]
pub struct ExaminedShot {
    claim: ShotClaim,
    received_at: f64,
    revision: u64,
    /// The basis as check 1 left it.
    basis: Basis,
    /// Check 1's rejection, or what comes after checks 2 and 3.
    stage: Result<Examined, RejectReason>,
}

/// Checks 4 to 9, done ahead of checks 2 and 3.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Examined {
    screened: Screened,
    outcome: Result<VerdictOutcome, RejectReason>,
    /// The basis as checks 4 to 9 left it, starting from what checks 2 and 3 set when
    /// they pass.
    basis: Basis,
}

impl ExaminedShot {
    /// The claim examined.
    #[must_use]
    pub fn claim(&self) -> &ShotClaim {
        &self.claim
    }

    /// When it arrived (server time).
    #[must_use]
    pub fn received_at(&self) -> f64 {
        self.received_at
    }
}

/// An [`ExaminedShot`] cannot be settled: it was examined under other rules,
/// registrations or timings than the settling validator has (another validator, or one
/// changed since). Validate the claim again.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[error("the shot was examined under rules, registrations or timings this validator no longer has")]
pub struct StaleShot {
    /// The claim.
    pub claim: ShotClaim,
    /// When it arrived.
    pub received_at: f64,
}

/// Turns shot claims into verdicts. Holds the rules and per-shooter state (sequence
/// numbers, recent shots, timing); reads the history, never changes it.
///
/// A claim may also be judged in two halves, for servers that judge many at once on
/// several threads: [`Validator::examine`] does everything that reads the history (the
/// time, origin and angle checks and the trace) from `&self`, so any number of claims can
/// be examined in parallel; [`Validator::settle`] then runs the checks that depend on the
/// shooter's earlier shots (sequence numbers, fire rate) and counts the shot. Settling a
/// shooter's examined claims in the order they would have been validated gives exactly
/// the verdicts [`Validator::validate`] gives.
///
/// Made from the rules; then each player spawned in the history is added with
/// [`Validator::add_player`] (checked: its rig, aim bone and timing), its timing given again
/// with [`Validator::set_timing`] whenever it changes, and each claim judged with
/// [`Validator::validate`]. The crate's example (`lagcomp_validate`) does it all; here the
/// setup:
///
/// ```
/// use std::sync::Arc;
///
/// use lagcomp::{History, HistoryConfig, Hitbox, HitboxId, Rig, Shape, Vec3, Zone};
/// use lagcomp_validate::{ClientTiming, Participant, RuleSet, Validator};
///
/// # let rules = "[weapons.rifle]\nid = 1\nmax_range = 250.0\nmin_interval = 0.1\naim_tolerance_deg = 5.0\norigin_tolerance = 0.5\nhit_leeway = 1.25\nhit_leeway_min = 0.05\nmax_rewind = 0.35";
/// // Bone 0 carries the body; bone 1 is the eye.
/// let body = Hitbox::on_bone(0, HitboxId(0), "body", Zone::Torso, Shape::sphere(0.4));
/// let rig = Arc::new(Rig::new(2, vec![body])?);
/// let mut history = History::new(HistoryConfig { tick_rate: 64.0, max_rewind: 0.5 })?;
/// let (shooter, target) = (history.spawn(Arc::clone(&rig)), history.spawn(rig));
///
/// // The rules (a TOML file, or built in code).
/// let mut validator = Validator::new(RuleSet::from_toml(rules)?);
/// // Every player: its team, its aim bone (the eye, looking along the bone's -Z) and its
/// // timing, measured from its pings (seconds).
/// let blue = Participant { team: 1, aim_bone: 1, aim_forward: Vec3::NEG_Z };
/// let timing = ClientTiming { srtt: 0.080, rttvar: 0.004, interp_delay: 0.1 };
/// validator.add_player(&history, shooter, blue, timing)?;
/// validator.add_player(&history, target, Participant { team: 2, ..blue }, timing)?;
/// // Measured again later.
/// let slower = ClientTiming { srtt: 0.120, ..timing };
/// validator.set_timing(shooter, slower)?;
/// assert_eq!(validator.timing(shooter), Some(slower));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Validator {
    rules: RuleSet,
    participants: HashMap<EntityId, Shooter>,
    /// Names the configuration (rules, registrations, timings): a new value from
    /// [`next_revision`] at every change. Unique across validators, so a shot examined
    /// under one configuration is never settled under another. Clones share it, rightly:
    /// their configurations are equal until one of them changes.
    revision: u64,
}

/// A configuration revision no validator has had yet.
fn next_revision() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl Validator {
    /// A validator with `rules` (see [`RuleSet::check`]; unchecked rules are accepted
    /// here but may give odd verdicts).
    #[must_use]
    pub fn new(rules: RuleSet) -> Self {
        Self {
            rules,
            participants: HashMap::new(),
            revision: next_revision(),
        }
    }

    /// The registered participant `entity`, if any.
    pub(crate) fn participant(&self, entity: EntityId) -> Option<Participant> {
        self.participants
            .get(&entity)
            .filter(|s| s.registered)
            .map(|s| s.participant)
    }

    /// The rules in force.
    #[must_use]
    pub fn rules(&self) -> &RuleSet {
        &self.rules
    }

    /// Replaces the rules; per-shooter state is kept.
    pub fn set_rules(&mut self, rules: RuleSet) {
        self.rules = rules;
        self.revision = next_revision();
    }

    /// Registers (or updates) an entity that may shoot or be shot: its team and aim bone.
    /// Unregistered targets have no team (never friendly); unregistered shooters are
    /// rejected. For a player that shoots, [`Validator::add_player`] does this and
    /// [`Validator::set_timing`] in one step and checks the aim bone against its rig.
    pub fn register(&mut self, entity: EntityId, participant: Participant) {
        let entry = self.participants.entry(entity).or_default();
        entry.registered = true;
        entry.participant = participant;
        self.revision = next_revision();
    }

    /// Forgets an entity and its per-shooter state.
    pub fn forget(&mut self, entity: EntityId) {
        self.participants.remove(&entity);
        self.revision = next_revision();
    }

    /// Sets what the server measured about a shooter's connection (before or after
    /// [`Validator::register`]), seconds. Call it again whenever the measurement changes.
    ///
    /// ```
    /// use lagcomp::EntityId;
    /// use lagcomp_validate::{ClientTiming, RuleSet, TimingError, Validator};
    ///
    /// # let shooter = EntityId::from_bits(1);
    /// let mut validator = Validator::new(RuleSet::from_toml("[weapons]")?);
    /// let timing = ClientTiming { srtt: 0.080, rttvar: 0.004, interp_delay: 0.1 };
    /// validator.set_timing(shooter, timing)?;
    /// // A broken measurement is refused, and the last good one stays.
    /// let broken = ClientTiming { srtt: f64::NAN, ..timing };
    /// let error = validator.set_timing(shooter, broken).unwrap_err();
    /// assert!(matches!(error, TimingError::NotFinite { field: "srtt", .. }));
    /// assert_eq!(validator.timing(shooter), Some(timing));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`TimingError`], with nothing changed, when a field is NaN, infinite, negative or
    /// at least [`ClientTiming::MAX`].
    pub fn set_timing(
        &mut self,
        shooter: EntityId,
        timing: ClientTiming,
    ) -> Result<(), TimingError> {
        timing.check()?;
        self.participants.entry(shooter).or_default().timing = Some(timing);
        self.revision = next_revision();
        Ok(())
    }

    /// The timing last set for `shooter`.
    #[must_use]
    pub fn timing(&self, shooter: EntityId) -> Option<ClientTiming> {
        self.participants.get(&shooter).and_then(|s| s.timing)
    }

    /// Judges `claim`, which arrived at server time `received_at`, against `history`.
    /// Emits the verdict as a `tracing` event (target `lagcomp::verdict`).
    ///
    /// Feed each shooter's claims in the order they arrived: the replay and fire-rate
    /// checks remember earlier ones. `received_at` is in seconds, on the history's clock.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use lagcomp::{BoneTransform, EntityState, History, HistoryConfig, Hitbox, Rig, Shape, Tick, Vec3, Zone};
    /// # use lagcomp_validate::{ClaimedHit, ClientTiming, VerdictOutcome, Participant, RejectReason, RenderTime, RuleSet, ShotClaim, Validator, WeaponId};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # // A humanoid rig (bone 0 pelvis, 1 head, 2 eye); two players 10 m apart, recorded
    /// # // for half a second at 64 Hz; the validator set up in its three steps.
    /// # let rig = Arc::new(Rig::new(3, vec![
    /// #     Hitbox::new(0, "body", Zone::Torso, 0, Shape::cuboid(Vec3::new(0.25, 0.4, 0.15))),
    /// #     Hitbox::new(1, "head", Zone::Head, 1, Shape::sphere(0.12)),
    /// # ])?);
    /// # let bones = |feet: Vec3| [1.0, 1.6, 1.65].map(|up| BoneTransform::from_translation(feet + Vec3::Y * up));
    /// # let mut history = History::new(HistoryConfig { tick_rate: 64.0, max_rewind: 0.5 })?;
    /// # let (shooter, target) = (history.spawn(Arc::clone(&rig)), history.spawn(rig));
    /// # for tick in 0..=32 {
    /// #     let mut frame = history.begin_frame(Tick(tick), f64::from(tick) / 64.0)?;
    /// #     frame.record(shooter, &bones(Vec3::ZERO), EntityState::default())?;
    /// #     frame.record(target, &bones(Vec3::new(0.0, 0.0, -10.0)), EntityState::default())?;
    /// # }
    /// # let mut validator = Validator::new(RuleSet::from_toml("[weapons.rifle]\nid = 1\nmax_range = 250.0\nmin_interval = 0.1\naim_tolerance_deg = 5.0\norigin_tolerance = 0.5\nhit_leeway = 1.25\nhit_leeway_min = 0.05\nmax_rewind = 0.35")?);
    /// # let eye = Participant { team: 1, aim_bone: 2, aim_forward: Vec3::NEG_Z };
    /// # validator.register(shooter, eye);
    /// # validator.register(target, Participant { team: 2, ..eye });
    /// # validator.set_timing(shooter, ClientTiming { srtt: 0.1, rttvar: 0.005, interp_delay: 0.1 })?;
    /// // Server time 0.5 s: a shot the client drew 0.15 s earlier, from its eye at the
    /// // target's head.
    /// let origin = Vec3::new(0.0, 1.65, 0.0);
    /// let claim = ShotClaim {
    ///     shooter,
    ///     weapon: WeaponId(1),
    ///     seq: 0,
    ///     render_time: RenderTime::Time(0.35),
    ///     origin,
    ///     direction: Vec3::new(0.0, 1.6, -10.0) - origin,
    ///     hit: Some(ClaimedHit { target, hitbox: None, point: None }),
    /// };
    /// let verdict = validator.validate(&history, &claim, 0.5);
    /// assert!(matches!(verdict.outcome, VerdictOutcome::Confirmed(hit) if hit.zone == Zone::Head));
    /// // The same sequence number again is a replay.
    /// let again = validator.validate(&history, &claim, 0.6);
    /// assert_eq!(again.outcome.reason(), Some(RejectReason::Replayed));
    /// # Ok(())
    /// # }
    /// ```
    pub fn validate(&mut self, history: &History, claim: &ShotClaim, received_at: f64) -> Verdict {
        self.validate_with(history, None, claim, received_at)
    }

    /// [`Validator::validate`], with the shot's trace also stopped by `world`: the level
    /// geometry the server already has (see [`lagcomp::StaticWorld`]). A shot behind a
    /// piece of it is [`VerdictOutcome::Blocked`] naming the piece, as behind the history's own.
    pub fn validate_in_world(
        &mut self,
        history: &History,
        world: &dyn StaticWorld,
        claim: &ShotClaim,
        received_at: f64,
    ) -> Verdict {
        self.validate_with(history, Some(world), claim, received_at)
    }

    fn validate_with(
        &mut self,
        history: &History,
        world: Option<&dyn StaticWorld>,
        claim: &ShotClaim,
        received_at: f64,
    ) -> Verdict {
        let mut basis = Basis {
            received_at,
            ..Basis::default()
        };
        let outcome = self.judge(
            history,
            world,
            claim,
            WeaponKind::Hitscan,
            received_at,
            &mut basis,
        );
        verdict(claim, outcome, basis)
    }

    /// The half of [`Validator::validate`] that reads the history: every check but the
    /// sequence number and the fire rate, and the trace. Takes `&self`, so claims can be
    /// examined in parallel against the same history. Judge the result with
    /// [`Validator::settle`].
    ///
    /// A claim that check 1 rejects (malformed, unknown weapon or shooter) is not traced.
    /// One that checks 2 or 3 will reject (a replay, a shot too soon) is traced all the
    /// same: those checks depend on the shooter's earlier claims, settled later.
    #[must_use]
    pub fn examine(&self, history: &History, claim: &ShotClaim, received_at: f64) -> ExaminedShot {
        self.examine_with(history, None, claim, received_at)
    }

    /// [`Validator::examine`] with the trace also stopped by `world`, as
    /// [`Validator::validate_in_world`].
    #[must_use]
    pub fn examine_in_world(
        &self,
        history: &History,
        world: &dyn StaticWorld,
        claim: &ShotClaim,
        received_at: f64,
    ) -> ExaminedShot {
        self.examine_with(history, Some(world), claim, received_at)
    }

    fn examine_with(
        &self,
        history: &History,
        world: Option<&dyn StaticWorld>,
        claim: &ShotClaim,
        received_at: f64,
    ) -> ExaminedShot {
        let mut basis = Basis {
            received_at,
            ..Basis::default()
        };
        let stage = self
            .screen(history, claim, WeaponKind::Hitscan, received_at, &mut basis)
            .map(|screened| {
                // What checks 2 and 3 leave in the basis when they pass.
                let mut after = basis;
                if let Ok((t, _)) = screened.claimed {
                    after.requested_time = Some(t);
                }
                let outcome =
                    self.examine_shot(history, world, claim, &screened, received_at, &mut after);
                Examined {
                    screened,
                    outcome,
                    basis: after,
                }
            });
        ExaminedShot {
            claim: *claim,
            received_at,
            revision: self.revision,
            basis,
            stage,
        }
    }

    /// The other half of [`Validator::validate`]: the sequence number and fire-rate
    /// checks against the shooter's earlier shots, the verdict, and counting the shot.
    /// The verdict is the one `validate` would have given the claim on the history it was
    /// examined against, provided each shooter's claims are settled in the order they
    /// would have been validated (claims of different shooters may be settled in any
    /// order). Emits the verdict like `validate`.
    ///
    /// # Errors
    /// [`StaleShot`], with nothing changed, when the shot was examined under other rules,
    /// registrations or timings than this validator has now: another validator, or
    /// [`Validator::set_rules`], [`Validator::register`], [`Validator::forget`] or
    /// [`Validator::set_timing`] since. Validate its claim again.
    pub fn settle(&mut self, shot: ExaminedShot) -> Result<Verdict, StaleShot> {
        if shot.revision != self.revision {
            return Err(StaleShot {
                claim: shot.claim,
                received_at: shot.received_at,
            });
        }
        let ExaminedShot {
            claim,
            received_at,
            mut basis,
            stage,
            ..
        } = shot;
        let outcome = match stage {
            Err(reason) => Err(reason),
            Ok(examined) => self.settle_examined(&claim, received_at, &examined, &mut basis),
        };
        Ok(verdict(&claim, outcome, basis))
    }

    fn settle_examined(
        &mut self,
        claim: &ShotClaim,
        received_at: f64,
        examined: &Examined,
        basis: &mut Basis,
    ) -> Result<VerdictOutcome, RejectReason> {
        let policy = &self.rules.policy;
        let shooter = self
            .participants
            .get_mut(&claim.shooter)
            .ok_or(RejectReason::UnknownShooter)?;
        shooter.check_rate(policy, claim, &examined.screened, received_at, basis)?;
        *basis = examined.basis;
        if counts_as_fired(&examined.outcome) {
            shooter.count_shot(&examined.screened, received_at);
        }
        examined.outcome
    }

    /// Checks 1 to 9 of `claim`, fired by a weapon that must be of `kind`.
    pub(crate) fn judge(
        &mut self,
        history: &History,
        world: Option<&dyn StaticWorld>,
        claim: &ShotClaim,
        kind: WeaponKind,
        received_at: f64,
        basis: &mut Basis,
    ) -> Result<VerdictOutcome, RejectReason> {
        let screened = self.screen(history, claim, kind, received_at, basis)?;
        let policy = &self.rules.policy;
        let shooter = self
            .participants
            .get_mut(&claim.shooter)
            .ok_or(RejectReason::UnknownShooter)?;
        shooter.check_rate(policy, claim, &screened, received_at, basis)?;
        let outcome = self.examine_shot(history, world, claim, &screened, received_at, basis);
        if counts_as_fired(&outcome)
            && let Some(shooter) = self.participants.get_mut(&claim.shooter)
        {
            shooter.count_shot(&screened, received_at);
        }
        outcome
    }

    /// Check 1 (the weapon must be of `kind`), and what checks 2 and 3 need from the
    /// claim and the configuration.
    fn screen(
        &self,
        history: &History,
        claim: &ShotClaim,
        kind: WeaponKind,
        received_at: f64,
        basis: &mut Basis,
    ) -> Result<Screened, RejectReason> {
        // 1. Malformed.
        check_numbers(claim, received_at)?;
        let weapon = self
            .rules
            .weapon(claim.weapon)
            .ok_or(RejectReason::UnknownWeapon)?;
        if weapon.kind != kind {
            return Err(RejectReason::WrongWeaponKind);
        }
        if !history.is_active(claim.shooter) && history.rig(claim.shooter).is_err() {
            return Err(RejectReason::UnknownShooter);
        }
        let policy = &self.rules.policy;
        let shooter = self
            .participants
            .get(&claim.shooter)
            .filter(|s| s.registered)
            .ok_or(RejectReason::UnknownShooter)?;
        if let Some(timing) = shooter.timing {
            basis.shooter_latency = Some(timing.srtt / 2.0);
            basis.interp_delay = Some(timing.interp_delay);
        }
        let spacing = weapon.min_interval * (1.0 - policy.fire_rate_slack);
        let jitter = shooter.timing.map_or(0.0, |t| t.rttvar);
        Ok(Screened {
            claimed: claimed_time(history, claim.render_time),
            spacing,
            arrival_tolerance: f64::from(weapon.burst) * spacing
                + policy.arrival_slack
                + 4.0 * jitter,
            burst: weapon.burst,
            min_interval: weapon.min_interval,
        })
    }

    /// Checks 4 to 9: everything after the shooter's state is consulted. Reads the
    /// history and the configuration, changes nothing.
    fn examine_shot(
        &self,
        history: &History,
        world: Option<&dyn StaticWorld>,
        claim: &ShotClaim,
        screened: &Screened,
        received_at: f64,
        basis: &mut Basis,
    ) -> Result<VerdictOutcome, RejectReason> {
        // Both found by check 1 under the same configuration.
        let weapon = self
            .rules
            .weapon(claim.weapon)
            .ok_or(RejectReason::UnknownWeapon)?;
        let shooter = self
            .participants
            .get(&claim.shooter)
            .filter(|s| s.registered)
            .ok_or(RejectReason::UnknownShooter)?;
        let policy = &self.rules.policy;

        // 4. Time.
        let timing = shooter.timing.ok_or(RejectReason::NoTiming)?;
        let (t, target_of_claim) = screened.claimed?;
        let (oldest, newest) = history.window().ok_or(RejectReason::TimeTooOld)?;
        basis.oldest = Some(oldest);
        basis.newest = Some(newest);
        if t > received_at + policy.future_tolerance {
            basis.measured = Measurement::at_most(t - received_at, policy.future_tolerance);
            return Err(RejectReason::TimeInFuture);
        }
        let extrapolation = check_extrapolation(claim, policy, basis)?;
        let no_rewind = weapon
            .no_rewind_above_rtt
            .is_some_and(|limit| timing.srtt > limit);
        let claimed = ClaimedMoment {
            time: t,
            target: target_of_claim,
            received_at,
            oldest,
            newest,
        };
        // Without rewind the trace looks at the present, but the shooter still fired from
        // where its client drew it: its origin and view are looked up at the claimed
        // moment when that moment passes the same time checks a rewound shot's must (and
        // at the newest frame otherwise, with the checks' findings left out of the basis).
        let (target, window_policy, shooter_target) = if no_rewind {
            let mut unused = *basis;
            let seen = claimed
                .rewind(weapon, policy, &timing, &mut unused)
                .map_or(RewindTarget::Time(newest), |(target, _)| target);
            (RewindTarget::Time(newest), WindowPolicy::Reject, seen)
        } else {
            let (target, window_policy) = claimed.rewind(weapon, policy, &timing, basis)?;
            (target, window_policy, target)
        };
        basis.rewound = !no_rewind;
        // The client's extrapolated picture is what is checked when the claimed moment is
        // the one looked at (not the server's estimate in its place).
        let extrapolation = extrapolation.filter(|_| !no_rewind && target == target_of_claim);
        // An extrapolating client drew itself where it was at the claimed moment (its own
        // movement is not extrapolated), which the history holds: look it up there.
        let shooter_target = if extrapolation.is_some() {
            RewindTarget::Time(t)
        } else {
            shooter_target
        };

        // 5. Origin and 6. angle, from the shooter's own history (each at its reference
        //    moment).
        let moment = |reference| match reference {
            ShooterReference::RenderTime => shooter_target,
            ShooterReference::Arrival => RewindTarget::Time(newest),
        };
        let me = history
            .entity_as_recorded(
                claim.shooter,
                moment(policy.shooter_reference),
                WindowPolicy::Clamp,
            )
            .map_err(|e| match e {
                QueryError::Entity(_) => RejectReason::UnknownShooter,
                _ => RejectReason::TimeTooOld,
            })?
            .ok_or(RejectReason::ShooterNotAlive)?;
        if !me.state().alive {
            return Err(RejectReason::ShooterNotAlive);
        }
        let participant = shooter.participant;
        let aim = me
            .bone(participant.aim_bone)
            .ok_or(RejectReason::UnknownShooter)?;
        let off = claim.origin.distance(aim.translation);
        if off > weapon.origin_tolerance {
            basis.measured = Measurement::at_most(off.into(), weapon.origin_tolerance.into());
            return Err(RejectReason::OriginTooFar);
        }
        let ray = Ray::new(claim.origin, claim.direction, weapon.max_range)
            .map_err(|_| RejectReason::NonFinite)?;
        let view = if policy.view_reference == policy.shooter_reference {
            aim.rotation
        } else {
            history
                .entity_as_recorded(
                    claim.shooter,
                    moment(policy.view_reference),
                    WindowPolicy::Clamp,
                )
                .ok()
                .flatten()
                .and_then(|then| then.bone(participant.aim_bone))
                .ok_or(RejectReason::ShooterNotAlive)?
                .rotation
        };
        let forward = (view * participant.aim_forward).normalize_or_zero();
        let cos_tolerance = weapon.aim_tolerance_deg.to_radians().cos();
        // Fails closed: a participant registered without a usable forward (zero, NaN)
        // has no view any shot can be within.
        if !(forward != Vec3::ZERO && ray.dir().dot(forward) >= cos_tolerance) {
            if forward != Vec3::ZERO {
                let degrees = ray.dir().angle_between(forward).to_degrees();
                basis.measured =
                    Measurement::at_most(degrees.into(), weapon.aim_tolerance_deg.into());
            }
            return Err(RejectReason::AngleTooFar);
        }

        // 7. The trace.
        let ignore = [claim.shooter];
        let query = history
            .query(target)
            .ignore(&ignore)
            .layers(weapon.hit_layers)
            .blocked_by(weapon.blocked_by)
            .window_policy(window_policy);
        let mut query = match world {
            Some(world) => query.world(world),
            None => query,
        };
        let traced = if weapon.radius > 0.0 {
            query.sweep(&ray, weapon.radius)
        } else {
            query.ray(&ray)
        }
        .map_err(|e| time_reason(&e))?;
        basis.time_used = Some(traced.rewind.time);
        basis.oldest = Some(traced.rewind.oldest);
        basis.newest = Some(traced.rewind.newest);

        // 9. then 8.
        let team = participant.team;
        let outcome = match claim.hit {
            // Without rewind the client's picture is not what is checked: the present
            // trace alone decides (a claim on where the target was then is a miss).
            Some(_) if no_rewind => self.judge_trace(history, weapon, team, &traced, basis)?,
            Some(claimed) if claimed.target == claim.shooter => {
                return Err(RejectReason::TamperedClaim);
            }
            Some(claimed) => self.judge_claim(
                history,
                weapon,
                team,
                &ray,
                (target, window_policy, extrapolation),
                &traced,
                &claimed,
                basis,
            )?,
            // The trace met bodies where they stood at the frame an extrapolating client
            // drew from; the client drew them moved on. One it drew off the line was a
            // miss on its screen, and is one here (what else the trace found stands).
            None => {
                let traced = match (extrapolation, traced.hit) {
                    (Some(picture), Some(hit))
                        if !in_front_in_the_picture(
                            history,
                            hit.entity,
                            picture,
                            &ray,
                            ray.max_distance(),
                        ) =>
                    {
                        Trace {
                            hit: None,
                            ..traced
                        }
                    }
                    _ => traced,
                };
                self.judge_trace(history, weapon, team, &traced, basis)?
            }
        };
        Ok(outcome)
    }
}

/// The verdict on `claim`, emitted as a `tracing` event.
fn verdict(
    claim: &ShotClaim,
    outcome: Result<VerdictOutcome, RejectReason>,
    basis: Basis,
) -> Verdict {
    let verdict = Verdict {
        shooter: claim.shooter,
        seq: claim.seq,
        weapon: claim.weapon,
        outcome: outcome.unwrap_or_else(|reason| VerdictOutcome::Rejected { reason }),
        basis,
    };
    crate::audit::emit(&verdict);
    verdict
}

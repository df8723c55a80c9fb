//! Penetration claims: a hitscan shot that passed through walls and bodies (a sniper
//! round through a wooden wall into the player behind it, or through one player into the
//! next), and the client's word on the chain of layers it passed.
//!
//! What lives here: the claim ([`PenetrationClaim`], [`ClaimedLayer`]), the verdict with
//! its per-layer breakdown ([`PenetrationVerdict`], [`PenetrationOutcome`],
//! [`PenetrationLayerResult`]), the reasons only a penetration claim can be refused for
//! ([`PenetrationReason`]), and [`Validator::validate_penetration`]. The shot's own checks
//! are the hitscan checks of [`crate::validator`]; the weapon's power and materials are its
//! rules' `penetration` table ([`crate::rules::kinds::PenetrationTable`]); the walk itself
//! is [`lagcomp::Query::penetrate`]'s.

use std::cell::RefCell;
use std::fmt;

use lagcomp::query::penetration::{
    Penetrated, PenetrationChain, PenetrationRules, PenetrationStop, PenetrationTrace,
};
use lagcomp::{
    EntityId, History, Hit, HitboxId, Ray, RewindTarget, StaticId, StaticWorld, Vec3, Zone,
};
use serde::{Deserialize, Serialize};

use crate::claim::{RenderTime, ShotClaim, WeaponId};
use crate::evasion::Refusal;
use crate::rules::kinds::PenetrationTable;
use crate::rules::{WeaponKind, WeaponRules};
use crate::validator::Validator;
use crate::verdict::{Basis, RejectReason};

/// The most layers a penetration claim lists, and a weapon's `penetration.max_layers` may
/// allow: walls and hitboxes together (each hitbox of a body the shot crosses counts).
pub const MAX_PENETRATION_LAYERS: usize = 8;

/// One layer of the chain a penetration claim says its shot passed, in the order met.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "layer")]
pub enum ClaimedLayer {
    /// A wall: a static piece, of the history's level or the server's world.
    Wall {
        /// The piece, when the client knows its id; any wall at that place in the chain
        /// otherwise.
        piece: Option<StaticId>,
    },
    /// A body the shot hit (passing through it, or lodging in it).
    Body {
        /// The entity.
        target: EntityId,
        /// The hitbox, when the client names one: one the shot crossed in that body.
        /// Any of them otherwise.
        hitbox: Option<HitboxId>,
    },
}

/// A client's "my round passed through these": the shot as fired, and the chain of walls
/// and bodies it claims, nearest first. World space, metres.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PenetrationClaim {
    /// Who fired (the server knows this from the connection, not from the packet).
    pub shooter: EntityId,
    /// With what: a hitscan weapon with a `penetration` table.
    pub weapon: WeaponId,
    /// The client's sequence number for this shot.
    pub seq: u32,
    /// What the shooter's screen showed when it fired.
    pub render_time: RenderTime,
    /// The muzzle, world space.
    pub origin: Vec3,
    /// The aim; need not be unit length.
    pub direction: Vec3,
    /// The chain, nearest first; unused slots `None`. A wall may be left out (the server
    /// counts every layer its own walk crossed); each body the client wants damage for
    /// must be listed, once.
    pub layers: [Option<ClaimedLayer>; MAX_PENETRATION_LAYERS],
}

impl PenetrationClaim {
    /// The chain a client's own walk met ([`lagcomp::Query::penetrate`] on what it drew),
    /// as a claim lists it: every wall by id, every body once (at its first hitbox, named),
    /// nearest first; what does not fit in [`MAX_PENETRATION_LAYERS`] slots is left out
    /// (a weapon's rules allow no more layers than that).
    #[must_use]
    pub fn layers_walked(
        chain: &PenetrationChain,
    ) -> [Option<ClaimedLayer>; MAX_PENETRATION_LAYERS] {
        let mut layers = [None; MAX_PENETRATION_LAYERS];
        let walked = chain.layers();
        let claimed = walked
            .iter()
            .enumerate()
            .filter_map(|(i, layer)| match layer.layer {
                Penetrated::Wall(id) => Some(ClaimedLayer::Wall { piece: Some(id) }),
                // A body's later hitboxes are the same body.
                Penetrated::Body(hit) => (!walked[..i]
                    .iter()
                    .any(|l| l.hit().is_some_and(|h| h.entity == hit.entity)))
                .then_some(ClaimedLayer::Body {
                    target: hit.entity,
                    hitbox: Some(hit.hitbox),
                }),
            });
        for (slot, layer) in layers.iter_mut().zip(claimed) {
            *slot = Some(layer);
        }
        layers
    }

    /// The same shot as a hitscan claim with no hit: what the shot's own checks judge.
    fn as_shot(&self) -> ShotClaim {
        ShotClaim {
            shooter: self.shooter,
            weapon: self.weapon,
            seq: self.seq,
            render_time: self.render_time,
            origin: self.origin,
            direction: self.direction,
            hit: None,
        }
    }
}

/// Why a penetration claim was refused after the shot's own checks passed. Stable across
/// versions, as [`RejectReason`]: variants are only added, each keeps its code and name.
///
/// ```
/// use lagcomp_validate::penetration::PenetrationReason;
///
/// let reason = PenetrationReason::PenetrationBeyondPower;
/// assert_eq!((reason.name(), reason.code()), ("penetration_beyond_power", 1201));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum PenetrationReason {
    /// A body (or wall) is claimed beyond where the server's shot ended: its power ran
    /// out, a wall it cannot cross or a blocker (a door) stopped it, or it met as many
    /// layers as the weapon allows. The body is on the shot's line, past that point.
    PenetrationBeyondPower,
    /// A layer the server's shot never met where the claim puts it: a body off the line,
    /// a wall that is not there, layers out of order, a body listed twice, or a hitbox
    /// of the body the shot did not cross.
    PenetrationOffChain,
}

impl PenetrationReason {
    /// Every reason, in code order.
    pub const ALL: [Self; 2] = [Self::PenetrationBeyondPower, Self::PenetrationOffChain];

    /// A stable number, in [`RejectReason`]'s penetration range (12xx).
    #[must_use]
    pub const fn code(self) -> u16 {
        match self {
            Self::PenetrationBeyondPower => 1201,
            Self::PenetrationOffChain => 1202,
        }
    }

    /// The stable snake_case name.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::PenetrationBeyondPower => "penetration_beyond_power",
            Self::PenetrationOffChain => "penetration_off_chain",
        }
    }
}

impl fmt::Display for PenetrationReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The same reason among every kind's, with the same code and name: what the audit log,
/// the stats and [`crate::Rejection`] read.
impl From<PenetrationReason> for RejectReason {
    fn from(reason: PenetrationReason) -> Self {
        match reason {
            PenetrationReason::PenetrationBeyondPower => Self::PenetrationBeyondPower,
            PenetrationReason::PenetrationOffChain => Self::PenetrationOffChain,
        }
    }
}

/// What the server found for one claimed layer.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "result")]
pub enum PenetrationLayerResult {
    /// An unused slot, or the verdict was decided before this layer.
    NotTraced,
    /// The claimed wall, as the server's shot met it.
    Wall {
        /// The piece.
        piece: StaticId,
        /// Whether the shot came out the far side.
        crossed: bool,
        /// Where the shot entered it, metres from the muzzle.
        entry: f32,
        /// Where it left it (its face, when not crossed), metres from the muzzle.
        exit: f32,
    },
    /// The claimed body, hit.
    Hit {
        /// The entity.
        target: EntityId,
        /// The first of its hitboxes the shot met.
        hitbox: HitboxId,
        /// That hitbox's zone.
        zone: Zone,
        /// From the muzzle to the entry, metres.
        distance: f32,
        /// The entry point, world space at the rewound time.
        point: Vec3,
        /// The zone's multiplier times the weapon's `layer_damage` for each layer the
        /// shot crossed before this body: what the weapon's damage is multiplied by.
        damage_multiplier: f32,
        /// Whether the round stayed in the body (its power ran out there).
        lodged: bool,
    },
    /// The claimed body, hit, which takes no damage: spawn-protected, or dodging with the
    /// policy's dodge winning (as a hitscan hit would be
    /// [`crate::VerdictOutcome::Refused`]). Honest, not a cheat; not counted in `bodies`.
    Spared {
        /// The entity.
        target: EntityId,
        /// The first of its hitboxes the shot met.
        hitbox: HitboxId,
        /// Why it takes no damage.
        refusal: Refusal,
        /// From the muzzle to the entry, metres.
        distance: f32,
    },
    /// The layer the claim was refused on.
    Unmatched {
        /// Why.
        reason: PenetrationReason,
    },
}

/// What a penetration claim came to.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum PenetrationOutcome {
    /// Every claimed layer is in the server's chain, in the claimed order.
    Confirmed {
        /// How many claimed bodies take damage.
        bodies: u8,
    },
    /// The shot's own checks refused it.
    Rejected {
        /// Why.
        reason: RejectReason,
    },
    /// The server's chain disagrees with the claim. A cheat-class rejection, folded to
    /// [`crate::VerdictOutcome::Rejected`].
    Disproved {
        /// Why.
        reason: PenetrationReason,
    },
}

impl PenetrationOutcome {
    /// A short stable label: `confirmed`, or the reason's name.
    #[must_use]
    pub fn label(&self) -> &'static str {
        match self {
            Self::Confirmed { .. } => "confirmed",
            Self::Rejected { reason } => reason.name(),
            Self::Disproved { reason } => reason.name(),
        }
    }
}

/// The validator's answer to a [`PenetrationClaim`], with the breakdown per claimed
/// layer.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PenetrationVerdict {
    /// Who fired.
    pub shooter: EntityId,
    /// The claim's sequence number.
    pub seq: u32,
    /// The claimed weapon.
    pub weapon: WeaponId,
    /// The outcome.
    pub outcome: PenetrationOutcome,
    /// What the shot's checks decided on; `time_used` is the moment the chain was
    /// walked at.
    pub basis: Basis,
    /// Per claimed layer, in the claim's order.
    pub layers: [PenetrationLayerResult; MAX_PENETRATION_LAYERS],
    /// How the server's own walk ended, when it walked one.
    pub traced: Option<PenetrationTrace>,
}

/// What a penetration claim reuses from one claim to the next.
#[derive(Default)]
struct Scratch {
    /// The core's rules of each penetration table seen, built once (they hold tables).
    rules: Vec<(PenetrationTable, PenetrationRules)>,
    /// The server's walk.
    chain: PenetrationChain,
    /// Every body on the whole line, for a claim the walk disagrees with.
    along: Vec<Hit>,
}

/// How many weapons' rules [`Scratch`] keeps before it starts over (rules swapped again
/// and again would grow it without bound).
const RULES_KEPT: usize = 32;

impl Scratch {
    /// The core's rules for `table`, built the first time it is seen.
    fn rules_of(&mut self, table: &PenetrationTable, weapon: &WeaponRules) -> Option<usize> {
        if let Some(i) = self.rules.iter().position(|(t, _)| t == table) {
            return Some(i);
        }
        if self.rules.len() >= RULES_KEPT {
            self.rules.clear();
        }
        self.rules
            .push((table.clone(), weapon.penetration_rules()?));
        Some(self.rules.len() - 1)
    }
}

thread_local! {
    /// PERF: one scratch per thread, grown once (the chain to the most layers, the rules
    /// to the weapons in play), so a claim allocates nothing in steady state without a
    /// scratch argument in the API.
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

impl Validator {
    /// Judges a shot that passed through walls and bodies. First the shot's own checks,
    /// exactly as [`Validator::validate`] makes them for a hitscan shot with no hit
    /// claimed (the shot counts towards the fire rate). Then the chain: the server walks
    /// the shot itself ([`lagcomp::Query::penetrate`], the weapon's `penetration` table)
    /// at the moment the shot's checks settled on (the rewound time), within the weapon's
    /// range, with its hit and blocking layers, through the history's walls and `world`'s.
    ///
    /// Each claimed layer must be in the server's chain, in the claimed order (a wall may
    /// be left out): a body the server's shot never reached because its power ran out or
    /// something stopped it, though the body stands on the line beyond, is
    /// [`PenetrationReason::PenetrationBeyondPower`]; any other disagreement is
    /// [`PenetrationReason::PenetrationOffChain`]. Each claimed body is checked as a
    /// hitscan shot's target is (alive, lag-compensated, not a teammate unless the
    /// weapon has friendly fire): one that fails refuses the whole claim with that
    /// reason; a spawn-protected or dodging one is spared. Each body hit takes the
    /// weapon's damage times its first hitbox's zone multiplier times `layer_damage` per
    /// layer crossed before it (each wall, each body).
    ///
    /// The weapon must be a hitscan one with a `penetration` table
    /// ([`RejectReason::WrongWeaponKind`] otherwise).
    ///
    /// # Example
    /// ```
    /// use std::sync::Arc;
    ///
    /// use lagcomp::{BoneTransform, EntityState, History, HistoryConfig, Hitbox, MaterialId, Pose, Rig, Shape, Tick, Vec3, Zone};
    /// use lagcomp_validate::penetration::{ClaimedLayer, PenetrationClaim, PenetrationLayerResult, MAX_PENETRATION_LAYERS};
    /// use lagcomp_validate::{ClientTiming, Participant, RenderTime, RuleSet, Validator, WeaponId};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // Two players 10 m apart (bone 0 the body, bone 1 the eye), a 10 cm wooden wall
    /// // between them, half a second of history.
    /// let rig = Arc::new(Rig::new(2, vec![Hitbox::new(0, "body", Zone::Torso, 0, Shape::cuboid(Vec3::new(0.3, 0.9, 0.3)))])?);
    /// let bones = |feet: Vec3| [1.0, 1.6].map(|up| BoneTransform::from_translation(feet + Vec3::Y * up));
    /// let mut history = History::new(HistoryConfig { tick_rate: 64.0, max_rewind: 0.5 })?;
    /// let (shooter, target) = (history.spawn(Arc::clone(&rig)), history.spawn(rig));
    /// let wall = history.add_static(Shape::cuboid(Vec3::new(2.0, 2.0, 0.05)), Pose::from_translation(Vec3::new(0.0, 1.0, -5.0)), u32::MAX)?;
    /// history.set_static_material(wall, MaterialId(1))?;
    /// for tick in 0..=32 {
    ///     let mut frame = history.begin_frame(Tick(tick), f64::from(tick) / 64.0)?;
    ///     frame.record(shooter, &bones(Vec3::ZERO), EntityState::default())?;
    ///     frame.record(target, &bones(Vec3::new(0.0, 0.0, -10.0)), EntityState::default())?;
    /// }
    /// // Concrete 1.0, wood 0.25, flesh 0.5 per metre; damage x 0.75 per layer crossed.
    /// let mut validator = Validator::new(RuleSet::from_toml(
    ///     r#"
    ///     [weapons.sniper]
    ///     id = 3
    ///     max_range = 250.0
    ///     min_interval = 1.0
    ///     aim_tolerance_deg = 5.0
    ///     origin_tolerance = 0.5
    ///     hit_leeway = 1.25
    ///     hit_leeway_min = 0.05
    ///     max_rewind = 0.35
    ///     penetration = { power = 1.0, costs = [1.0, 0.25, 0.5], layer_damage = 0.75, body_material = 2 }
    ///     "#,
    /// )?);
    /// let eye = Participant { team: 1, aim_bone: 1, aim_forward: Vec3::NEG_Z };
    /// validator.register(shooter, eye);
    /// validator.register(target, Participant { team: 2, ..eye });
    /// validator.set_timing(shooter, ClientTiming { srtt: 0.1, rttvar: 0.005, interp_delay: 0.1 })?;
    ///
    /// // Through the wall into the body behind it, as the client saw t = 0.3 s.
    /// let mut layers = [None; MAX_PENETRATION_LAYERS];
    /// layers[0] = Some(ClaimedLayer::Wall { piece: Some(wall) });
    /// layers[1] = Some(ClaimedLayer::Body { target, hitbox: None });
    /// let claim = PenetrationClaim {
    ///     shooter,
    ///     weapon: WeaponId(3),
    ///     seq: 0,
    ///     render_time: RenderTime::Time(0.3),
    ///     origin: Vec3::new(0.0, 1.6, 0.0),
    ///     direction: Vec3::NEG_Z,
    ///     layers,
    /// };
    /// let verdict = validator.validate_penetration(&history, None, &claim, 0.45);
    /// assert_eq!(verdict.outcome.label(), "confirmed");
    /// // One layer (the wall) crossed before the body: damage x 0.75.
    /// assert!(matches!(verdict.layers[1], PenetrationLayerResult::Hit { damage_multiplier, .. } if damage_multiplier == 0.75));
    /// # Ok(())
    /// # }
    /// ```
    pub fn validate_penetration(
        &mut self,
        history: &History,
        world: Option<&dyn StaticWorld>,
        claim: &PenetrationClaim,
        received_at: f64,
    ) -> PenetrationVerdict {
        let mut basis = Basis {
            received_at,
            ..Basis::default()
        };
        let mut layers = [PenetrationLayerResult::NotTraced; MAX_PENETRATION_LAYERS];
        let mut traced = None;
        let outcome = match self.judge_penetration(
            history,
            world,
            claim,
            received_at,
            &mut basis,
            (&mut layers, &mut traced),
        ) {
            Ok(outcome) => outcome,
            Err(reason) => {
                // A claimed body's own state refused the whole claim: no layer stands.
                layers = [PenetrationLayerResult::NotTraced; MAX_PENETRATION_LAYERS];
                PenetrationOutcome::Rejected { reason }
            }
        };
        let verdict = PenetrationVerdict {
            shooter: claim.shooter,
            seq: claim.seq,
            weapon: claim.weapon,
            outcome,
            basis,
            layers,
            traced,
        };
        emit(&verdict);
        verdict
    }

    fn judge_penetration(
        &mut self,
        history: &History,
        world: Option<&dyn StaticWorld>,
        claim: &PenetrationClaim,
        received_at: f64,
        basis: &mut Basis,
        (results, traced): (
            &mut [PenetrationLayerResult; MAX_PENETRATION_LAYERS],
            &mut Option<PenetrationTrace>,
        ),
    ) -> Result<PenetrationOutcome, RejectReason> {
        // A rifle without the table fires plain hitscan shots: refused before the shot
        // counts, as a claim of another kind is.
        if self
            .rules()
            .weapon(claim.weapon)
            .is_some_and(|w| w.penetration.is_none())
        {
            return Err(RejectReason::WrongWeaponKind);
        }
        self.judge_fired(
            history,
            world,
            &claim.as_shot(),
            WeaponKind::Hitscan,
            received_at,
            basis,
        )?;
        let weapon = self
            .rules()
            .weapon(claim.weapon)
            .ok_or(RejectReason::UnknownWeapon)?;
        let table = weapon
            .penetration
            .as_ref()
            .ok_or(RejectReason::WrongWeaponKind)?;
        let fired = basis.time_used.ok_or(RejectReason::TimeTooOld)?;
        // The aim passed the shot's checks, so it is finite and not zero.
        let ray = Ray::new(claim.origin, claim.direction, weapon.max_range)
            .map_err(|_| RejectReason::NonFinite)?;
        let shooter = [claim.shooter];
        SCRATCH.with_borrow_mut(|scratch| {
            let rules = scratch
                .rules_of(table, weapon)
                .ok_or(RejectReason::WrongWeaponKind)?;
            let Scratch {
                rules: built,
                chain,
                along,
            } = scratch;
            let rules = &built[rules].1;
            let mut query = history
                .query(RewindTarget::at(fired))
                .ignore(&shooter)
                .layers(weapon.hit_layers)
                .blocked_by(weapon.blocked_by);
            let trace = match world {
                Some(world) => query.world(world).penetrate(&ray, rules, chain),
                None => query.penetrate(&ray, rules, chain),
            }
            .map_err(|_| RejectReason::TimeTooOld)?;
            *traced = Some(trace);
            let walked = Walked {
                chain,
                trace: &trace,
            };
            let mut cursor = 0;
            let mut bodies = 0_u8;
            for (slot, claimed) in claim.layers.iter().enumerate() {
                let Some(claimed) = *claimed else {
                    continue;
                };
                let found = match claimed {
                    ClaimedLayer::Wall { piece } => walked.wall(cursor, piece),
                    // A body listed twice would be paid twice.
                    ClaimedLayer::Body { target, hitbox }
                        if !listed(&claim.layers[..slot], target) =>
                    {
                        walked.body(cursor, target, hitbox)
                    }
                    ClaimedLayer::Body { .. } => None,
                };
                let Some(index) = found else {
                    // Beyond the power: a body the walk never met (not one it met out of
                    // order, or listed twice) though it stands on the line past its end.
                    let beyond = match claimed {
                        ClaimedLayer::Body { target, .. }
                            if walked.ended_short()
                                && !walked.met(target)
                                && !listed(&claim.layers[..slot], target) =>
                        {
                            on_the_line(history, fired, weapon, &ray, &shooter, target, along)?
                        }
                        _ => false,
                    };
                    let reason = if beyond {
                        PenetrationReason::PenetrationBeyondPower
                    } else {
                        PenetrationReason::PenetrationOffChain
                    };
                    results[slot] = PenetrationLayerResult::Unmatched { reason };
                    return Ok(PenetrationOutcome::Disproved { reason });
                };
                cursor = index + 1;
                let layer = &chain.layers()[index];
                results[slot] = match layer.layer {
                    Penetrated::Wall(piece) => PenetrationLayerResult::Wall {
                        piece,
                        crossed: layer.crossed,
                        entry: layer.entry,
                        exit: layer.exit,
                    },
                    Penetrated::Body(hit) => {
                        // How the first claimed body was sampled, as for a hitscan hit.
                        basis.sample.get_or_insert(hit.sample.kind);
                        // Check 9 on the body, as for a hitscan hit.
                        self.check_struck(weapon, claim.shooter, hit.entity, hit.state, true)?;
                        if let Some(refusal) = self.refusal(history, hit.entity, hit.state) {
                            PenetrationLayerResult::Spared {
                                target: hit.entity,
                                hitbox: hit.hitbox,
                                refusal,
                                distance: hit.distance,
                            }
                        } else {
                            bodies += 1;
                            PenetrationLayerResult::Hit {
                                target: hit.entity,
                                hitbox: hit.hitbox,
                                zone: hit.zone,
                                distance: hit.distance,
                                point: hit.entry.point,
                                damage_multiplier: weapon.damage.of(hit.zone) * layer.damage_factor,
                                lodged: walked.lodged_in(hit.entity),
                            }
                        }
                    }
                };
            }
            Ok(PenetrationOutcome::Confirmed { bodies })
        })
    }
}

/// The server's walk of one shot, as the claim is compared with it.
struct Walked<'a> {
    chain: &'a PenetrationChain,
    trace: &'a PenetrationTrace,
}

impl Walked<'_> {
    /// The first wall at or after layer `from`, `piece` if the claim names one.
    fn wall(&self, from: usize, piece: Option<StaticId>) -> Option<usize> {
        self.chain.layers()[from.min(self.chain.layers().len())..]
            .iter()
            .position(|layer| {
                matches!(layer.layer, Penetrated::Wall(id) if piece.is_none_or(|p| p == id))
            })
            .map(|i| from + i)
    }

    /// The first layer of `target`'s body, when it is at or after layer `from` (a body
    /// first met before the claim's previous layer is out of order) and holds `hitbox`
    /// if the claim names one.
    fn body(&self, from: usize, target: EntityId, hitbox: Option<HitboxId>) -> Option<usize> {
        let layers = self.chain.layers();
        let of_target = |layer: &&lagcomp::query::penetration::PenetratedLayer| {
            layer.hit().is_some_and(|hit| hit.entity == target)
        };
        let first = layers.iter().position(|layer| of_target(&layer))?;
        let crossed = hitbox.is_none_or(|h| {
            layers
                .iter()
                .filter(of_target)
                .any(|layer| layer.hit().is_some_and(|hit| hit.hitbox == h))
        });
        (first >= from && crossed).then_some(first)
    }

    /// Whether the walk met `target`'s body at all.
    fn met(&self, target: EntityId) -> bool {
        self.chain.hits().any(|(hit, _)| hit.entity == target)
    }

    /// Whether the shot ended before its reach: out of power, stopped, or out of layers.
    fn ended_short(&self) -> bool {
        self.trace.stop != PenetrationStop::Reach
    }

    /// Whether the shot's power ran out inside `target`'s body.
    fn lodged_in(&self, target: EntityId) -> bool {
        match self.trace.stop {
            PenetrationStop::Body { layer } => self.chain.layers()[layer]
                .hit()
                .is_some_and(|hit| hit.entity == target),
            _ => false,
        }
    }
}

/// Whether `layers` list `target`'s body.
fn listed(layers: &[Option<ClaimedLayer>], target: EntityId) -> bool {
    layers
        .iter()
        .any(|l| matches!(l, Some(ClaimedLayer::Body { target: t, .. }) if *t == target))
}

/// Whether `target` stands on the shot's whole line at the moment `fired` (walls, doors
/// and power left out): a body the walk did not reach though it is there to be reached.
/// Only asked of a claim the walk disagrees with; `along` is its reused buffer.
fn on_the_line(
    history: &History,
    fired: f64,
    weapon: &WeaponRules,
    ray: &Ray,
    shooter: &[EntityId],
    target: EntityId,
    along: &mut Vec<Hit>,
) -> Result<bool, RejectReason> {
    history
        .query(RewindTarget::at(fired))
        .ignore(shooter)
        .layers(weapon.hit_layers)
        .blocked_by(0)
        .ray_all(ray, along)
        .map_err(|_| RejectReason::TimeTooOld)?;
    Ok(along.iter().any(|hit| hit.entity == target))
}

/// Emits `verdict` as a `tracing` event with target `lagcomp::verdict`, as hitscan
/// verdicts are: INFO when the claim stood, WARN when refused.
fn emit(verdict: &PenetrationVerdict) {
    let shooter = verdict.shooter.to_bits();
    let label = verdict.outcome.label();
    let code = match verdict.outcome {
        PenetrationOutcome::Rejected { reason } => reason.code(),
        PenetrationOutcome::Disproved { reason } => reason.code(),
        PenetrationOutcome::Confirmed { .. } => 0,
    };
    if code == 0 {
        tracing::info!(target: "lagcomp::verdict", shooter, seq = verdict.seq, weapon = verdict.weapon.0, kind = "penetration", outcome = label, "penetration claim {label}");
    } else {
        tracing::warn!(target: "lagcomp::verdict", shooter, seq = verdict.seq, weapon = verdict.weapon.0, kind = "penetration", outcome = "rejected", reason = label, code, "penetration claim rejected: {label}");
    }
}

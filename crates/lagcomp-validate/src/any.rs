//! One claim of any weapon kind and what it came to: what a server whose players carry
//! more than one kind of weapon receives, judges, records and sends back.
//!
//! [`WeaponClaim`] holds any kind's claim, [`Validator::validate_any`] sends it to the kind's own
//! validation, and [`WeaponVerdict`] holds that kind's verdict with its breakdown (pellets,
//! victims, the flown path), folding into [`Verdict`]s for the audit log and stats.
//!
//! ```
//! use std::sync::Arc;
//!
//! use lagcomp::{BoneTransform, EntityState, History, HistoryConfig, Hitbox, Rig, Shape, Tick, Vec3, Zone};
//! use lagcomp_validate::{
//!     ClaimedHit, ClientTiming, Participant, RenderTime, RuleSet, ShotClaim, Validator,
//!     VerdictOutcome, WeaponClaim, WeaponId, WeaponRules,
//! };
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // Bone 0 the pelvis (body box), 1 the eye.
//! let rig = Arc::new(Rig::new(2, vec![
//!     Hitbox::new(0, "body", Zone::Torso, 0, Shape::cuboid(Vec3::new(0.25, 0.4, 0.15))),
//! ])?);
//! let bones = |feet: Vec3| [1.0, 1.65].map(|up| BoneTransform::from_translation(feet + Vec3::Y * up));
//! let mut history = History::new(HistoryConfig { tick_rate: 64.0, max_rewind: 0.5 })?;
//! let shooter = history.spawn(Arc::clone(&rig));
//! let target = history.spawn(rig);
//! for tick in 0..=32 {
//!     let mut frame = history.begin_frame(Tick(tick), f64::from(tick) / 64.0)?;
//!     frame.record(shooter, &bones(Vec3::ZERO), EntityState::default())?;
//!     frame.record(target, &bones(Vec3::new(0.0, 0.0, -10.0)), EntityState::default())?;
//! }
//!
//! let rules = RuleSet::default().with_weapon("rifle", WeaponRules::hitscan(WeaponId(1)));
//! let mut validator = Validator::new(rules);
//! let eye = Participant { team: 1, aim_bone: 1, aim_forward: Vec3::NEG_Z };
//! validator.register(shooter, eye);
//! validator.register(target, Participant { team: 2, ..eye });
//! let timing = ClientTiming { srtt: 0.100, rttvar: 0.005, interp_delay: 0.100 };
//! validator.set_timing(shooter, timing)?;
//!
//! let received_at = 0.5;
//! let origin = Vec3::new(0.0, 1.65, 0.0);
//! let claim = WeaponClaim::Hitscan(ShotClaim {
//!     shooter,
//!     weapon: WeaponId(1),
//!     seq: 0,
//!     render_time: RenderTime::Time(received_at - timing.expected_rewind()),
//!     origin,
//!     direction: Vec3::new(0.0, 1.0, -10.0) - origin,
//!     hit: Some(ClaimedHit { target, hitbox: None, point: None }),
//! });
//! let verdict = validator.validate_any(&history, None, &claim, received_at);
//! assert_eq!((verdict.kind(), verdict.seq()), ("hitscan", 0));
//! let folded: Vec<_> = verdict.verdicts().collect();
//! assert!(matches!(folded[..], [v] if matches!(v.outcome, VerdictOutcome::Confirmed(_))));
//! # Ok(())
//! # }
//! ```

use lagcomp::{EntityId, History, StaticWorld};
use serde::{Deserialize, Serialize};

use crate::claim::{RenderTime, ShotClaim, WeaponId};
use crate::pellets::{PelletClaim, PelletVerdict};
use crate::penetration::{PenetrationClaim, PenetrationVerdict};
use crate::projectile::{ProjectileHitClaim, ProjectileVerdict};
use crate::splash::{SplashClaim, SplashVerdict};
use crate::validator::Validator;
use crate::validator::melee::{MeleeClaim, MeleeVerdict};
use crate::verdict::{Basis, Verdict};

/// A claim of any weapon kind. In JSON, the kind's claim with a `"kind"` field naming it
/// (`"hitscan"`, `"projectile"`, `"pellets"`, `"melee"`, `"splash"`,
/// `"penetration"`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WeaponClaim {
    /// An instant ray, or a thick one.
    Hitscan(ShotClaim),
    /// A projectile that struck something during its flight.
    Projectile(ProjectileHitClaim),
    /// A shotgun's pellets.
    Pellets(PelletClaim),
    /// A blade or fist.
    Melee(MeleeClaim),
    /// A blast: a grenade's, or a rocket's on impact.
    Splash(SplashClaim),
    /// A round that passed through walls and bodies.
    Penetration(PenetrationClaim),
}

/// Picks one field out of whichever claim or verdict an enum holds.
macro_rules! each_kind {
    ($value:expr, $inner:ident => $field:expr) => {
        match $value {
            Self::Hitscan($inner) => $field,
            Self::Projectile($inner) => $field,
            Self::Pellets($inner) => $field,
            Self::Melee($inner) => $field,
            Self::Splash($inner) => $field,
            Self::Penetration($inner) => $field,
        }
    };
}

impl WeaponClaim {
    /// The kind's stable name, as in JSON: `hitscan`, `projectile`, `pellets`, `melee`,
    /// `splash` or `penetration`.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        kind_name(self.kind_index())
    }

    fn kind_index(&self) -> usize {
        match self {
            Self::Hitscan(_) => 0,
            Self::Projectile(_) => 1,
            Self::Pellets(_) => 2,
            Self::Melee(_) => 3,
            Self::Splash(_) => 4,
            Self::Penetration(_) => 5,
        }
    }

    /// Who fired.
    #[must_use]
    pub fn shooter(&self) -> EntityId {
        each_kind!(self, claim => claim.shooter)
    }

    /// The client's sequence number for the shot.
    #[must_use]
    pub fn seq(&self) -> u32 {
        each_kind!(self, claim => claim.seq)
    }

    /// Puts `shooter` in the claim: who fired is the server's to know from the connection,
    /// not the packet's to say.
    pub fn set_shooter(&mut self, shooter: EntityId) {
        each_kind!(self, claim => claim.shooter = shooter);
    }

    /// With what.
    #[must_use]
    pub fn weapon(&self) -> WeaponId {
        each_kind!(self, claim => claim.weapon)
    }

    /// What the shooter's screen showed.
    #[must_use]
    pub fn render_time(&self) -> RenderTime {
        each_kind!(self, claim => claim.render_time)
    }
}

/// What a [`WeaponClaim`] came to: the kind's own verdict, with its breakdown. In JSON, the
/// kind's verdict with a `"kind"` field naming it, as [`WeaponClaim`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[allow(
    clippy::large_enum_variant,
    reason = "a pellet verdict carries its pellets inline (~1.5 KB): a Box would allocate once per claim"
)]
pub enum WeaponVerdict {
    /// A hitscan shot's.
    Hitscan(Verdict),
    /// A projectile claim's.
    Projectile(ProjectileVerdict),
    /// A pellet claim's, pellet by pellet.
    Pellets(PelletVerdict),
    /// A melee claim's.
    Melee(MeleeVerdict),
    /// A blast's, victim by victim.
    Splash(SplashVerdict),
    /// A penetrating round's, layer by layer.
    Penetration(PenetrationVerdict),
}

impl WeaponVerdict {
    /// The kind's stable name, as [`WeaponClaim::kind`].
    #[must_use]
    pub fn kind(&self) -> &'static str {
        kind_name(match self {
            Self::Hitscan(_) => 0,
            Self::Projectile(_) => 1,
            Self::Pellets(_) => 2,
            Self::Melee(_) => 3,
            Self::Splash(_) => 4,
            Self::Penetration(_) => 5,
        })
    }

    /// Who fired.
    #[must_use]
    pub fn shooter(&self) -> EntityId {
        each_kind!(self, verdict => verdict.shooter)
    }

    /// The claim's sequence number.
    #[must_use]
    pub fn seq(&self) -> u32 {
        each_kind!(self, verdict => verdict.seq)
    }

    /// The outcome as one short stable label: `confirmed`, `miss`, `blocked`, or the
    /// reason's name (a pellet, blast or penetration claim counts once, whatever its
    /// pellets, victims or layers came to).
    #[must_use]
    pub fn label(&self) -> &'static str {
        each_kind!(self, verdict => verdict.outcome.label())
    }

    /// The claimed weapon.
    #[must_use]
    pub fn weapon(&self) -> WeaponId {
        each_kind!(self, verdict => verdict.weapon)
    }

    /// What the shot's checks decided on.
    #[must_use]
    pub fn basis(&self) -> Basis {
        each_kind!(self, verdict => verdict.basis)
    }

    /// This verdict as [`Verdict`]s: one for a hitscan, projectile or melee claim; one per
    /// target struck (or one miss, or one rejection) for pellets, blasts and penetrating
    /// rounds, as [`PelletVerdict::verdicts`], [`SplashVerdict::verdicts`] and
    /// [`PenetrationVerdict::verdicts`] fold them. Allocates
    /// nothing.
    pub fn verdicts(&self) -> impl Iterator<Item = Verdict> + '_ {
        let (one, pellets, splash, layers) = match self {
            Self::Hitscan(verdict) => (Some(*verdict), None, None, None),
            Self::Projectile(verdict) => (Some(verdict.verdict()), None, None, None),
            Self::Melee(verdict) => (Some(verdict.verdict()), None, None, None),
            Self::Pellets(verdict) => (None, Some(verdict.verdicts()), None, None),
            Self::Splash(verdict) => (None, None, Some(verdict.verdicts()), None),
            Self::Penetration(verdict) => (None, None, None, Some(verdict.verdicts())),
        };
        one.into_iter()
            .chain(pellets.into_iter().flatten())
            .chain(splash.into_iter().flatten())
            .chain(layers.into_iter().flatten())
    }
}

fn kind_name(index: usize) -> &'static str {
    [
        "hitscan",
        "projectile",
        "pellets",
        "melee",
        "splash",
        "penetration",
    ][index]
}

impl Validator {
    /// Judges a claim of any kind with that kind's validation: [`Validator::validate`] (or
    /// [`Validator::validate_in_world`]), [`Validator::validate_projectile`],
    /// [`Validator::validate_pellets`], [`Validator::validate_melee`] (or
    /// [`Validator::validate_melee_in_world`]), [`Validator::validate_splash`] or
    /// [`Validator::validate_penetration`].
    /// `world` is the level geometry the server has besides the history's own, if any;
    /// `received_at` is the server time the claim arrived, seconds.
    pub fn validate_any(
        &mut self,
        history: &History,
        world: Option<&dyn StaticWorld>,
        claim: &WeaponClaim,
        received_at: f64,
    ) -> WeaponVerdict {
        match claim {
            WeaponClaim::Hitscan(shot) => WeaponVerdict::Hitscan(match world {
                Some(world) => self.validate_in_world(history, world, shot, received_at),
                None => self.validate(history, shot, received_at),
            }),
            WeaponClaim::Projectile(hit) => WeaponVerdict::Projectile(self.validate_projectile(
                history,
                world,
                hit,
                received_at,
            )),
            WeaponClaim::Pellets(shot) => {
                WeaponVerdict::Pellets(self.validate_pellets(history, world, shot, received_at))
            }
            WeaponClaim::Melee(strike) => WeaponVerdict::Melee(match world {
                Some(world) => self.validate_melee_in_world(history, world, strike, received_at),
                None => self.validate_melee(history, strike, received_at),
            }),
            WeaponClaim::Splash(blast) => {
                WeaponVerdict::Splash(self.validate_splash(history, world, blast, received_at))
            }
            WeaponClaim::Penetration(round) => WeaponVerdict::Penetration(
                self.validate_penetration(history, world, round, received_at),
            ),
        }
    }
}

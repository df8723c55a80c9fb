//! What kind of shot a weapon fires, and each kind's own parameters, as rule files give
//! them: plain numbers (seconds, metres, degrees), range-checked by [`super::RuleSet::check`]
//! with the field named, and turned into the core's checked models ([`Flight`], [`Spread`],
//! [`Falloff`]) by the accessors here. The shared parameters (range, fire rate, tolerances,
//! damage per zone) stay on [`WeaponRules`].

use lagcomp::Vec3;
use lagcomp::projectile::Flight;
use lagcomp::spread::{Falloff, MAX_PELLETS, Spread, SpreadKind};
use serde::{Deserialize, Serialize};

use super::{RulesError, WeaponRules};
use crate::pellets::PelletWeapon;
use crate::splash::SplashWeapon;

/// What a weapon fires. Rule files say it with `kind = "..."`; without it a weapon is
/// [`WeaponKind::Hitscan`], so rule files written before kinds existed keep their meaning.
/// Every kind but hitscan has a table of its own parameters beside the weapon's (see
/// [`WeaponRules`]); a claim of one kind for a weapon of another is refused as
/// [`crate::RejectReason::WrongWeaponKind`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WeaponKind {
    /// An instant ray, or a thick one (the weapon's `radius`): [`crate::ShotClaim`].
    #[default]
    Hitscan,
    /// A projectile with travel time, gravity and drag (a `flight` table):
    /// [`crate::projectile::ProjectileHitClaim`]. A rocket's blast on impact is an
    /// `area` table beside it.
    Projectile,
    /// Pellets drawn from a spread and a seed (a `pellets` table):
    /// [`crate::pellets::PelletClaim`].
    Pellets,
    /// A blade or fist swept at the rewound time (a `melee` table):
    /// [`crate::MeleeClaim`].
    Melee,
    /// A blast that catches every body within its radius (an `area` table), a grenade:
    /// [`crate::splash::SplashClaim`].
    Area,
}

impl WeaponKind {
    /// The stable snake_case name, as in rule files.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Hitscan => "hitscan",
            Self::Projectile => "projectile",
            Self::Pellets => "pellets",
            Self::Melee => "melee",
            Self::Area => "area",
        }
    }

    /// Whether this is the default kind (left out when rules are written).
    #[must_use]
    pub fn is_hitscan(&self) -> bool {
        *self == Self::Hitscan
    }
}

impl std::fmt::Display for WeaponKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A projectile's flight (`[weapons.<name>.flight]`): see [`Flight::new`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlightRules {
    /// Muzzle speed, m/s: above 0, at most [`Flight::MAX_SPEED`].
    pub speed: f32,
    /// Gravity, m/s^2 (`[0.0, -9.81, 0.0]`); none when absent. Each component at most
    /// [`Flight::MAX_ACCELERATION`].
    #[serde(default)]
    pub gravity: Vec3,
    /// Quadratic drag factor, 1/m, 0 to [`Flight::MAX_DRAG`]; none when absent.
    #[serde(default)]
    pub drag: f32,
    /// The projectile's radius, metres (its sphere is swept); 0 for a point when absent.
    #[serde(default)]
    pub radius: f32,
    /// The fixed step its path is traced in, seconds (the server's tick interval is a
    /// good choice): above 0, at most [`Flight::MAX_STEP`].
    pub step: f32,
    /// How long it flies before it expires, seconds: above 0, at most
    /// [`Flight::MAX_STEPS`] steps.
    pub max_time: f32,
}

/// Where a shotgun's pellets go in its cone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PelletPattern {
    /// Uniform over the cone ([`SpreadKind::Uniform`]).
    #[default]
    Uniform,
    /// A fixed pattern of two rings, moved by the seed as much as `jitter` says
    /// ([`SpreadKind::Pattern`]).
    Rings,
}

/// A shotgun's pellets (`[weapons.<name>.pellets]`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PelletRules {
    /// Pellets a shot carries, 1 to [`MAX_PELLETS`].
    pub count: u8,
    /// The cone's half-angle around the aim, degrees, 0 to 45.
    pub half_angle_deg: f32,
    /// How pellets are placed; uniform when absent.
    #[serde(default)]
    pub pattern: PelletPattern,
    /// How far the seed moves each pellet of the rings pattern, 0 to 1; 0 when absent.
    #[serde(default)]
    pub jitter: f32,
    /// Damage by the distance a pellet travelled; full at every distance when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub falloff: Option<FalloffRules>,
}

/// Damage falling off with distance (see [`Falloff::new`]): full to `start`, `min` from
/// `end` on, linear between. Metres.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FalloffRules {
    /// Full damage up to here, metres (at least 0).
    pub start: f32,
    /// The least damage from here on, metres (at least `start`).
    pub end: f32,
    /// The multiplier from `end` on, 0 to 1.
    pub min: f32,
}

/// A melee weapon's limits (`[weapons.<name>.melee]`), the same numbers as a
/// `[melee.<name>]` table's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeleeLimits {
    /// How far from the eye a struck point may be, metres, above 0 to 100.
    pub reach: f32,
    /// How far off the attacker's view a strike may land, degrees, above 0 to 180.
    pub angle_deg: f32,
    /// The largest the swept shape may be (its bounding radius), metres, above 0 to 10.
    pub max_blade: f32,
    /// The largest angle a swing may turn through, degrees, 0 to 360.
    pub max_swing_deg: f32,
}

/// A blast (`[weapons.<name>.area]`): a grenade's, or a rocket's on impact.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AreaRules {
    /// How far the blast reaches, metres, above 0 to 1e4.
    pub radius: f32,
    /// Damage by the distance from the blast to a hitbox; full when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub falloff: Option<FalloffRules>,
    /// Whether bodies shield those behind them (walls always do); false when absent.
    #[serde(default)]
    pub bodies_block: bool,
}

impl FalloffRules {
    /// The core's falloff, `None` meaning full damage at every distance.
    fn falloff(rules: Option<Self>) -> Falloff {
        rules
            .and_then(|f| Falloff::new(f.start, f.end, f.min).ok())
            .unwrap_or(Falloff::NONE)
    }
}

impl MeleeLimits {
    /// The first limit out of its range, if any: its field, its value and what is
    /// allowed. Reach above 0 to 100 m, angle above 0 to 180 degrees, blade above 0 to
    /// 10 m, swing 0 to 360 degrees.
    pub(crate) fn out_of_range(&self) -> Option<(&'static str, f32, &'static str)> {
        [
            ("reach", self.reach, 100.0, true, "above 0, up to 100 m"),
            (
                "angle_deg",
                self.angle_deg,
                180.0,
                true,
                "above 0, up to 180",
            ),
            (
                "max_blade",
                self.max_blade,
                10.0,
                true,
                "above 0, up to 10 m",
            ),
            (
                "max_swing_deg",
                self.max_swing_deg,
                360.0,
                false,
                "0 to 360",
            ),
        ]
        .into_iter()
        .find(|&(_, value, most, open, _)| {
            let above = if open { value > 0.0 } else { value >= 0.0 };
            !(above && value <= most)
        })
        .map(|(field, value, _, _, allowed)| (field, value, allowed))
    }
}

impl WeaponRules {
    /// The flight of a projectile weapon (`None` for other kinds). Always `Some` for a
    /// projectile weapon of rules that passed [`super::RuleSet::check`].
    #[must_use]
    pub fn flight(&self) -> Option<Flight> {
        let f = self
            .flight
            .filter(|_| self.kind == WeaponKind::Projectile)?;
        Flight::new(f.speed, f.gravity, f.drag, f.radius, f.step, f.max_time).ok()
    }

    /// The spread and the falloff of a pellet weapon (`None` for other kinds). Always
    /// `Some` for a pellet weapon of rules that passed [`super::RuleSet::check`].
    #[must_use]
    pub fn pellet_weapon(&self) -> Option<PelletWeapon> {
        let p = self.pellets.filter(|_| self.kind == WeaponKind::Pellets)?;
        let kind = match p.pattern {
            PelletPattern::Uniform => SpreadKind::Uniform,
            PelletPattern::Rings => SpreadKind::Pattern { jitter: p.jitter },
        };
        let spread = Spread::new(p.count.into(), p.half_angle_deg, kind).ok()?;
        Some(PelletWeapon {
            spread,
            falloff: FalloffRules::falloff(p.falloff),
        })
    }

    /// The blast of an area weapon, or of a projectile weapon with an `area` table.
    #[must_use]
    pub fn splash_weapon(&self) -> Option<SplashWeapon> {
        let a = self
            .area
            .filter(|_| matches!(self.kind, WeaponKind::Area | WeaponKind::Projectile))?;
        Some(SplashWeapon {
            radius: a.radius,
            falloff: FalloffRules::falloff(a.falloff),
            bodies_block: a.bodies_block,
        })
    }

    /// The limits of a melee weapon (`None` for other kinds).
    #[must_use]
    pub fn melee_limits(&self) -> Option<MeleeLimits> {
        self.melee.filter(|_| self.kind == WeaponKind::Melee)
    }

    /// Checks the kind's table: present for the kind, absent for the others (a rocket's
    /// `area` beside its `flight` is allowed), every number in range.
    pub(crate) fn check_kind(&self, name: &str) -> Result<(), RulesError> {
        let f = |field: &str| format!("weapons.{name}.{field}");
        let tables = [
            ("flight", self.flight.is_some(), WeaponKind::Projectile),
            ("pellets", self.pellets.is_some(), WeaponKind::Pellets),
            ("melee", self.melee.is_some(), WeaponKind::Melee),
            ("area", self.area.is_some(), WeaponKind::Area),
        ];
        for (table, present, owner) in tables {
            let allowed =
                self.kind == owner || (table == "area" && self.kind == WeaponKind::Projectile);
            if present && !allowed {
                return Err(RulesError::KindTable {
                    weapon: name.to_owned(),
                    kind: self.kind,
                    table,
                    present: true,
                });
            }
            if !present && self.kind == owner {
                return Err(RulesError::KindTable {
                    weapon: name.to_owned(),
                    kind: self.kind,
                    table,
                    present: false,
                });
            }
        }
        let range = |field: String, value: f32, ok: bool, expected: &'static str| {
            if ok {
                Ok(())
            } else {
                Err(RulesError::OutOfRange {
                    field,
                    value: value.into(),
                    expected,
                })
            }
        };
        let metres = |v: f32| (0.0..=lagcomp::math::MAX_EXTENT).contains(&v);
        if let Some(fl) = self.flight {
            range(
                f("flight.speed"),
                fl.speed,
                fl.speed > 0.0 && fl.speed <= Flight::MAX_SPEED,
                "above 0, up to 1e4 m/s",
            )?;
            for (axis, g) in [
                ("x", fl.gravity.x),
                ("y", fl.gravity.y),
                ("z", fl.gravity.z),
            ] {
                range(
                    f(&format!("flight.gravity.{axis}")),
                    g,
                    g.is_finite() && g.abs() <= Flight::MAX_ACCELERATION,
                    "-1000 to 1000 m/s^2",
                )?;
            }
            range(
                f("flight.drag"),
                fl.drag,
                (0.0..=Flight::MAX_DRAG).contains(&fl.drag),
                "0 to 10 per m",
            )?;
            range(
                f("flight.radius"),
                fl.radius,
                metres(fl.radius),
                "0 to 1e4 m",
            )?;
            range(
                f("flight.step"),
                fl.step,
                fl.step > 0.0 && fl.step <= Flight::MAX_STEP,
                "above 0, up to 1 s",
            )?;
            let steps = f64::from(fl.max_time) / f64::from(fl.step);
            range(
                f("flight.max_time"),
                fl.max_time,
                fl.max_time > 0.0 && steps.is_finite() && steps <= f64::from(Flight::MAX_STEPS),
                "above 0, up to 100,000 steps",
            )?;
        }
        if let Some(p) = self.pellets {
            range(
                f("pellets.count"),
                p.count.into(),
                (1..=MAX_PELLETS).contains(&usize::from(p.count)),
                "1 to 32",
            )?;
            range(
                f("pellets.half_angle_deg"),
                p.half_angle_deg,
                (0.0..=45.0).contains(&p.half_angle_deg),
                "0 to 45",
            )?;
            range(
                f("pellets.jitter"),
                p.jitter,
                (0.0..=1.0).contains(&p.jitter),
                "0 to 1",
            )?;
            if let Some(falloff) = p.falloff {
                check_falloff(&falloff, &f("pellets.falloff"))?;
            }
        }
        if let Some((field, value, expected)) = self.melee.and_then(|m| m.out_of_range()) {
            return Err(RulesError::OutOfRange {
                field: f(&format!("melee.{field}")),
                value: value.into(),
                expected,
            });
        }
        if let Some(a) = self.area {
            range(
                f("area.radius"),
                a.radius,
                metres(a.radius) && a.radius > 0.0,
                "above 0, up to 1e4 m",
            )?;
            if let Some(falloff) = a.falloff {
                check_falloff(&falloff, &f("area.falloff"))?;
            }
        }
        Ok(())
    }
}

/// Checks a falloff's three numbers; `table` is its full name.
fn check_falloff(falloff: &FalloffRules, table: &str) -> Result<(), RulesError> {
    let out = |field: &str, value: f32, expected| RulesError::OutOfRange {
        field: format!("{table}.{field}"),
        value: value.into(),
        expected,
    };
    if !(falloff.start.is_finite() && (0.0..=lagcomp::math::MAX_EXTENT).contains(&falloff.start)) {
        return Err(out("start", falloff.start, "0 to 1e4 m"));
    }
    if !(falloff.end.is_finite()
        && falloff.end >= falloff.start
        && falloff.end <= lagcomp::math::MAX_EXTENT)
    {
        return Err(out("end", falloff.end, "start to 1e4 m"));
    }
    if !(0.0..=1.0).contains(&falloff.min) {
        return Err(out("min", falloff.min, "0 to 1"));
    }
    Ok(())
}

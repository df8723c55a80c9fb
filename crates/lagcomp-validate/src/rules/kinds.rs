//! What kind of shot a weapon fires, and each kind's own parameters, as rule files give
//! them: plain numbers (seconds, metres, degrees), range-checked by [`super::RuleSet::check`]
//! with the field named, and turned into the core's checked models ([`Flight`], [`Spread`],
//! [`Falloff`]) by the accessors here. The shared parameters (range, fire rate, tolerances,
//! damage per zone) stay on [`WeaponRules`].

use std::collections::BTreeMap;

use lagcomp::projectile::Flight;
use lagcomp::query::penetration::PenetrationRules;
use lagcomp::spread::{Falloff, MAX_PELLETS, Spread, SpreadKind};
use lagcomp::{MaterialId, Vec3, Zone};
use serde::{Deserialize, Serialize};

use super::{RulesError, WeaponRules};
use crate::pellets::PelletWeapon;
use crate::penetration::MAX_PENETRATION_LAYERS;
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

/// What a hitscan weapon's shot passes through (`[weapons.<name>.penetration]`): a sniper
/// rifle through a wooden wall into the player behind it. See
/// [`PenetrationRules`] for the model; a hitscan weapon without this table stops at the
/// first wall or body, as it always did.
///
/// ```
/// use lagcomp::{MaterialId, Zone};
/// use lagcomp_validate::{RuleSet, WeaponId};
///
/// let rules = RuleSet::from_toml(
///     r#"
///     [weapons.sniper]
///     id = 3
///     max_range = 500.0
///     min_interval = 1.5
///     aim_tolerance_deg = 2.0
///     origin_tolerance = 0.5
///     hit_leeway = 1.25
///     hit_leeway_min = 0.05
///     max_rewind = 0.35
///
///     [weapons.sniper.penetration]
///     power = 1.0
///     ## concrete, wood, flesh, body armour: cost per metre
///     costs = [1.0, 0.25, 0.5, 4.0]
///     layer_damage = 0.75
///     body_material = 2
///     zones = { torso = 3 }
///     "#,
/// )?;
/// let sniper = rules.weapon(WeaponId(3)).unwrap().penetration_rules().unwrap();
/// assert_eq!(sniper.zone_material(Zone::Torso), MaterialId(3));
/// assert_eq!(sniper.zone_material(Zone::Head), MaterialId(2));
/// # Ok::<(), lagcomp_validate::RulesError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PenetrationTable {
    /// The power a shot starts with, in the weapon's own units, 0 to 1e4.
    pub power: f32,
    /// What crossing a metre of each material costs, by material id (`costs[m]` for
    /// [`MaterialId`]`(m)`): each at least 0, `inf` for a material never crossed; a
    /// material past the list is never crossed. 1 to 65,536 entries.
    pub costs: Vec<f32>,
    /// The factor on the weapon's damage per layer crossed before a body (a wall or a
    /// body), 0 to 1; 1 (no loss) when absent.
    #[serde(default = "no_layer_loss")]
    pub layer_damage: f32,
    /// The most layers (walls and hitboxes) a shot may meet, 1 to
    /// [`MAX_PENETRATION_LAYERS`]; that many when absent.
    #[serde(default = "most_layers")]
    pub max_layers: u16,
    /// What bodies are made of where `zones` says nothing: an index into `costs`; 0
    /// when absent.
    #[serde(default)]
    pub body_material: u16,
    /// What hitboxes of a zone are made of (a helmet, body armour): indices into `costs`.
    #[serde(default)]
    pub zones: ZoneMaterials,
}

/// What the hitboxes of each zone are made of, for [`PenetrationTable::zones`]: material
/// ids, each an index into the weapon's `costs`; a zone left out is the body's material.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ZoneMaterials {
    /// Head hitboxes (a helmet).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head: Option<u16>,
    /// Torso hitboxes (body armour).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub torso: Option<u16>,
    /// Arm and leg hitboxes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limb: Option<u16>,
    /// Game-defined zones ([`Zone::Custom`]) by number.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub custom: BTreeMap<u16, u16>,
}

impl ZoneMaterials {
    /// Every zone given a material, with its name as in rule files.
    fn each(&self) -> impl Iterator<Item = (String, Zone, u16)> + '_ {
        [
            ("head", Zone::Head, self.head),
            ("torso", Zone::Torso, self.torso),
            ("limb", Zone::Limb, self.limb),
        ]
        .into_iter()
        .filter_map(|(name, zone, m)| Some((name.to_owned(), zone, m?)))
        .chain(
            self.custom
                .iter()
                .map(|(&n, &m)| (format!("custom.{n}"), Zone::Custom(n), m)),
        )
    }
}

/// No damage lost per layer: a penetration table's `layer_damage` when absent.
const fn no_layer_loss() -> f32 {
    1.0
}

/// A penetration table's `max_layers` when absent: as many as a claim can list.
const fn most_layers() -> u16 {
    MAX_PENETRATION_LAYERS as u16
}

impl PenetrationTable {
    /// The first number out of its range, if any: its field (under the table), its value
    /// and what is allowed.
    fn out_of_range(&self) -> Option<(String, f64, &'static str)> {
        if !(self.power.is_finite() && (0.0..=1e4).contains(&self.power)) {
            return Some(("power".into(), self.power.into(), "0 to 1e4"));
        }
        if self.costs.is_empty() || self.costs.len() > usize::from(u16::MAX) + 1 {
            return Some((
                "costs".into(),
                self.costs.len() as f64,
                "1 to 65,536 materials",
            ));
        }
        if let Some((m, &cost)) = self
            .costs
            .iter()
            .enumerate()
            .find(|(_, c)| c.is_nan() || **c < 0.0)
        {
            return Some((format!("costs[{m}]"), cost.into(), "at least 0, or inf"));
        }
        if !(0.0..=1.0).contains(&self.layer_damage) {
            return Some(("layer_damage".into(), self.layer_damage.into(), "0 to 1"));
        }
        if !(1..=MAX_PENETRATION_LAYERS).contains(&usize::from(self.max_layers)) {
            return Some(("max_layers".into(), self.max_layers.into(), "1 to 8"));
        }
        let known = |m: u16| usize::from(m) < self.costs.len();
        if !known(self.body_material) {
            return Some((
                "body_material".into(),
                self.body_material.into(),
                "a material of costs (an index into it)",
            ));
        }
        self.zones
            .each()
            .find(|&(_, _, m)| !known(m))
            .map(|(name, _, m)| {
                (
                    format!("zones.{name}"),
                    m.into(),
                    "a material of costs (an index into it)",
                )
            })
    }

    /// The core's rules. Allocates (the cost and zone tables): build them once per rule
    /// set, not per shot.
    fn rules(&self) -> Option<PenetrationRules> {
        let mut rules = PenetrationRules::new(self.power, self.layer_damage, self.costs.clone())
            .ok()?
            .with_max_layers(self.max_layers)
            .ok()?
            .with_body_material(MaterialId(self.body_material));
        for (_, zone, m) in self.zones.each() {
            rules = rules.with_zone_material(zone, MaterialId(m));
        }
        Some(rules)
    }
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

    /// What a penetrating hitscan weapon's shot passes through (`None` for a weapon
    /// without a `penetration` table, or of another kind). Always `Some` for such a
    /// weapon of rules that passed [`super::RuleSet::check`]. Allocates: the validator
    /// builds them once per rule set.
    #[must_use]
    pub fn penetration_rules(&self) -> Option<PenetrationRules> {
        self.penetration
            .as_ref()
            .filter(|_| self.kind == WeaponKind::Hitscan)?
            .rules()
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
            // Optional for its kind: a rifle without it stops at the first wall.
            (
                "penetration",
                self.penetration.is_some(),
                WeaponKind::Hitscan,
            ),
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
            if !present && self.kind == owner && table != "penetration" {
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
        if let Some(p) = &self.penetration {
            if let Some((field, value, expected)) = p.out_of_range() {
                return Err(RulesError::OutOfRange {
                    field: f(&format!("penetration.{field}")),
                    value,
                    expected,
                });
            }
            // The walk is a line: a thick shot's sphere has no entry and exit to cost.
            range(
                f("radius"),
                self.radius,
                self.radius == 0.0,
                "0 for a weapon with a penetration table",
            )?;
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

//! Weapon rules and the validation policy, loadable from TOML.
//!
//! ```toml
//! [policy]
//! time_mismatch = "reject"        # or "use_server_estimate"
//! dodge = "dodge_wins"            # or "shooter_wins": see `DodgeRule`
//!
//! [weapons.rifle]
//! id = 1
//! max_range = 250.0
//! min_interval = 0.1              # seconds between shots
//! burst = 0
//! aim_tolerance_deg = 5.0
//! origin_tolerance = 1.0
//! hit_leeway = 1.25
//! hit_leeway_min = 0.05
//! max_rewind = 0.35
//! no_rewind_above_rtt = 0.4
//! friendly_fire = false
//! damage = { head = 4.0, torso = 1.0, limb = 0.75 }
//! hit_layers = 0xffffffff         # which layers the shot can hit (default: every one)
//! blocked_by = 0xfffffffb         # which layers stop it: all but layer 2, glass
//!
//! [weapons.rocket_launcher]       # a kind other than hitscan, with its own table
//! kind = "projectile"             # hitscan (the default), projectile, pellets, melee, area
//! id = 3
//! max_range = 200.0
//! min_interval = 0.8
//! aim_tolerance_deg = 5.0
//! origin_tolerance = 1.0
//! hit_leeway = 1.25
//! hit_leeway_min = 0.05
//! max_rewind = 0.35
//! flight = { speed = 40.0, gravity = [0.0, -2.0, 0.0], radius = 0.1, step = 0.015625, max_time = 5.0 }
//! area = { radius = 4.0, falloff = { start = 1.0, end = 4.0, min = 0.2 } }
//!
//! [weapons.shotgun]
//! kind = "pellets"
//! # ... the same shared fields ...
//! pellets = { count = 12, half_angle_deg = 4.0, pattern = "rings", jitter = 0.3 }
//!
//! [weapons.knife]
//! kind = "melee"
//! # ... the same shared fields ...
//! melee = { reach = 2.0, angle_deg = 60.0, max_blade = 0.4, max_swing_deg = 150.0 }
//!
//! [weapons.grenade]
//! kind = "area"
//! # ... the same shared fields ...
//! area = { radius = 6.0, bodies_block = true }
//! ```
//!
//! Each kind's table is required for that kind and refused for the others (a projectile
//! may carry an `area` table: its blast on impact); see [`kinds`].

use std::collections::BTreeMap;

use lagcomp::Zone;
use serde::{Deserialize, Serialize};

use crate::claim::WeaponId;
use crate::evasion::DodgeRule;

pub mod kinds;

pub use kinds::{
    AreaRules, FalloffRules, FlightRules, MeleeLimits, PelletPattern, PelletRules,
    PenetrationTable, WeaponKind, ZoneMaterials,
};

/// Everything the validator is configured with: the weapons and the policy.
///
/// Usually loaded with [`RuleSet::from_toml`]; built in code, check it with
/// [`RuleSet::check`] before handing it to a [`crate::Validator`]:
///
/// ```
/// use std::collections::BTreeMap;
///
/// use lagcomp::Zone;
/// use lagcomp_validate::{DamageMultipliers, Policy, RuleSet, WeaponId, WeaponRules};
///
/// // What differs from a rifle's defaults (`WeaponRules::hitscan` lists them).
/// let pistol = WeaponRules {
///     max_range: 80.0,    // metres
///     min_interval: 0.25, // seconds between two shots
///     max_rewind: 0.35,   // seconds
///     damage: DamageMultipliers { head: 3.0, ..DamageMultipliers::default() },
///     blocked_by: !0b100, // rounds pass what is on layer 2 (glass)
///     ..WeaponRules::hitscan(WeaponId(2))
/// };
/// let rules = RuleSet {
///     policy: Policy::default(),
///     weapons: BTreeMap::from([("pistol".to_string(), pistol)]),
/// };
/// rules.check()?;
/// assert_eq!(rules.weapon(WeaponId(2)).unwrap().damage.of(Zone::Head), 3.0);
/// // The same rules as a file.
/// assert_eq!(RuleSet::from_toml(&rules.to_toml())?, rules);
/// # Ok::<(), lagcomp_validate::RulesError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSet {
    /// How borderline timing is judged.
    #[serde(default)]
    pub policy: Policy,
    /// The weapons, by name.
    pub weapons: BTreeMap<String, WeaponRules>,
}

/// The rules of one weapon.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WeaponRules {
    /// The id claims use for this weapon.
    pub id: WeaponId,
    /// Radius of the traced sphere in metres; 0 for a hitscan line.
    #[serde(default)]
    pub radius: f32,
    /// How far the shot reaches, metres.
    pub max_range: f32,
    /// Minimum time between a shot of this weapon and any other shot of the same
    /// shooter, whatever weapon fired it (fire rate is per shooter across weapons; each
    /// shot is judged with its own weapon's interval), seconds of claimed time.
    pub min_interval: f64,
    /// How many shots may come closer together than `min_interval` (a burst), as long as
    /// the average rate over the burst stays within the weapon's rate.
    #[serde(default)]
    pub burst: u32,
    /// How far the shot's direction may stray from the shooter's recorded view, degrees.
    pub aim_tolerance_deg: f32,
    /// How far the claimed muzzle may be from the shooter's aim bone, metres.
    pub origin_tolerance: f32,
    /// A claimed hit point the server's own trace does not confirm is still accepted when
    /// it lies within the claimed hitbox grown by this factor of the hitbox's size (>= 1).
    pub hit_leeway: f32,
    /// The smallest growth for that check, metres, however small the hitbox.
    pub hit_leeway_min: f32,
    /// The oldest a shot's claimed time may be, seconds before it arrived. May be shorter
    /// than the history's window, never longer (the history cannot rebuild more): derive
    /// it from the window you record. An honest shot reaches back about a round trip plus
    /// the client's interpolation delay (0.56 s at 500 ms); every second of reach is a
    /// second of the past the slowest players may shoot into (see
    /// [`lagcomp::HistoryConfig`]'s "Choosing `max_rewind`").
    pub max_rewind: f64,
    /// Above this round-trip time (seconds) the shooter gets no rewind at all: the shot is
    /// traced against the present and such players must lead their targets. The muzzle
    /// and the view are still checked where the shooter's client drew it, when the claimed
    /// moment passes the time checks a rewound shot's must (at the present otherwise).
    /// Bounds what the slowest players get without refusing their shots as too old.
    #[serde(default)]
    pub no_rewind_above_rtt: Option<f64>,
    /// Whether shots may hurt the shooter's own team.
    #[serde(default)]
    pub friendly_fire: bool,
    /// Damage multiplier per zone.
    #[serde(default)]
    pub damage: DamageMultipliers,
    /// The layers this weapon's shots can hit: targets whose layers (their
    /// [`lagcomp::EntityState::layers`] at the rewound time) share a bit with this mask.
    /// Every layer when absent.
    #[serde(default = "every_layer", skip_serializing_if = "is_every_layer")]
    pub hit_layers: u32,
    /// The layers that stop this weapon's shots: static pieces and blocker entities
    /// ([`lagcomp::EntityRole`]) whose layers share a bit with this mask. Leave a layer
    /// out and the shot passes what is on it: a fence that stops players but not bullets,
    /// glass a sniper round goes through. Every layer when absent.
    #[serde(default = "every_layer", skip_serializing_if = "is_every_layer")]
    pub blocked_by: u32,
    /// What the weapon fires; hitscan when absent (see [`WeaponKind`]).
    #[serde(default, skip_serializing_if = "WeaponKind::is_hitscan")]
    pub kind: WeaponKind,
    /// A projectile's flight: required for `kind = "projectile"`, refused otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flight: Option<FlightRules>,
    /// A shotgun's pellets: required for `kind = "pellets"`, refused otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pellets: Option<PelletRules>,
    /// A melee weapon's limits: required for `kind = "melee"`, refused otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub melee: Option<MeleeLimits>,
    /// A blast: required for `kind = "area"`, allowed for `kind = "projectile"` (its
    /// blast on impact), refused otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub area: Option<AreaRules>,
    /// What a hitscan weapon's shot passes through (walls and bodies, by material);
    /// allowed for `kind = "hitscan"` only. Without it the shot stops at the first wall
    /// or body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub penetration: Option<PenetrationTable>,
}

/// Every layer: a weapon's `hit_layers` and `blocked_by` when a rule file does not give
/// them.
const fn every_layer() -> u32 {
    u32::MAX
}

impl WeaponRules {
    /// A hitscan rifle with id `id`, every other field at a value that suits one; set what
    /// differs with struct update syntax (`WeaponRules { max_range: 80.0,
    /// ..WeaponRules::hitscan(id) }`). The defaults: a line (`radius` 0) reaching 250 m,
    /// 0.1 s between shots and no burst, 5 degrees of aim tolerance, the muzzle within
    /// 0.5 m of the aim bone, a claimed point accepted within its hitbox grown 1.25x (at
    /// least 5 cm), a rewind of up to [`lagcomp::DEFAULT_MAX_REWIND`] (the history's default
    /// window), always rewound, no friendly fire, damage x1 in every zone, every
    /// layer hit and every layer blocking. The result passes [`RuleSet::check`].
    ///
    /// ```
    /// use lagcomp_validate::{RuleSet, WeaponId, WeaponKind, WeaponRules};
    ///
    /// let sniper = WeaponRules {
    ///     max_range: 1000.0,
    ///     min_interval: 1.5,
    ///     ..WeaponRules::hitscan(WeaponId(3))
    /// };
    /// assert_eq!(sniper.kind, WeaponKind::Hitscan);
    /// let rules = RuleSet::default().with_weapon("sniper", sniper);
    /// rules.check()?;
    /// # Ok::<(), lagcomp_validate::RulesError>(())
    /// ```
    #[must_use]
    pub fn hitscan(id: WeaponId) -> Self {
        Self {
            id,
            radius: 0.0,
            max_range: 250.0,
            min_interval: 0.1,
            burst: 0,
            aim_tolerance_deg: 5.0,
            origin_tolerance: 0.5,
            hit_leeway: 1.25,
            hit_leeway_min: 0.05,
            max_rewind: lagcomp::DEFAULT_MAX_REWIND,
            no_rewind_above_rtt: None,
            friendly_fire: false,
            damage: DamageMultipliers::default(),
            hit_layers: every_layer(),
            blocked_by: every_layer(),
            kind: WeaponKind::Hitscan,
            flight: None,
            pellets: None,
            melee: None,
            area: None,
            penetration: None,
        }
    }
}

/// Whether `mask` is every layer (left out when the rules are written, so rules without
/// layer masks are written as before).
fn is_every_layer(mask: &u32) -> bool {
    *mask == u32::MAX
}

/// Damage multiplier per hitbox zone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DamageMultipliers {
    /// Head hits.
    pub head: f32,
    /// Torso hits.
    pub torso: f32,
    /// Arm and leg hits.
    pub limb: f32,
    /// Game-defined zones ([`Zone::Custom`]) by number; 1.0 when absent.
    pub custom: BTreeMap<u16, f32>,
}

impl Default for DamageMultipliers {
    fn default() -> Self {
        Self {
            head: 1.0,
            torso: 1.0,
            limb: 1.0,
            custom: BTreeMap::new(),
        }
    }
}

impl DamageMultipliers {
    /// The multiplier for `zone`.
    #[must_use]
    pub fn of(&self, zone: Zone) -> f32 {
        match zone {
            Zone::Head => self.head,
            Zone::Torso => self.torso,
            Zone::Limb => self.limb,
            Zone::Custom(n) => self.custom.get(&n).copied().unwrap_or(1.0),
        }
    }
}

/// What to do when a claimed time does not match the rewind the server measured for the
/// client (the backtracking check).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeMismatch {
    /// Reject the shot ([`crate::RejectReason::Backtrack`]).
    #[default]
    Reject,
    /// Validate at the server's own estimate of what the client saw (now minus half the
    /// round trip minus the interpolation delay), as Source does. The verdict says so.
    UseServerEstimate,
}

/// At which moment the shooter's own position and view are looked up for the origin and
/// angle checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShooterReference {
    /// At the shot's rewound time, like its targets: right when the shooter's client draws
    /// itself from the same snapshots as everyone else.
    #[default]
    RenderTime,
    /// In the newest frame when the claim is validated (validate right after recording
    /// the tick that applied the input carrying the shot): right when the shooter's
    /// movement or view comes from its client's input, applied by the server as it
    /// arrives.
    Arrival,
}

/// How timing is judged. Every tolerance is in seconds unless it says otherwise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Policy {
    /// What to do on a backtracking mismatch.
    pub time_mismatch: TimeMismatch,
    /// Where the shooter's position (the origin check) is looked up.
    pub shooter_reference: ShooterReference,
    /// Where the shooter's view (the angle check) is looked up. `Arrival` suits servers
    /// that record the view from each client's latest input: the input that carries a
    /// shot carries the view it was aimed with, while the view recorded at the render
    /// time is a round trip and an interpolation delay older.
    pub view_reference: ShooterReference,
    /// Fixed part of the backtracking tolerance.
    pub rewind_tolerance: f64,
    /// Times the measured RTT variation added to that tolerance.
    pub rewind_jitter_factor: f64,
    /// Extra tolerance for a claim older than expected: a shot resent after a lost packet
    /// arrives one send interval late.
    pub rewind_late_slack: f64,
    /// How far past the arrival time a claimed time may lie (rounding, tick phase).
    pub future_tolerance: f64,
    /// Relative slack on shot spacing in claimed time (the client's clock slews by a few
    /// percent while it converges).
    pub fire_rate_slack: f64,
    /// Slack on shot spacing in arrival time: arrivals bunch up by up to this much plus
    /// four RTT variations through jitter and resends.
    pub arrival_slack: f64,
    /// How many sequence numbers behind the highest seen are still accepted (out-of-order
    /// delivery): with 4, after 20 the numbers 16 to 19 are; older ones are rejected as
    /// too old. At most 1024.
    pub sequence_window: u32,
    /// How far past its newest snapshot a client may extrapolate, seconds
    /// ([`RenderTime::Extrapolated`](crate::RenderTime::Extrapolated)); a claim beyond is
    /// rejected `extrapolated_too_far`. `lagcomp-net`'s default limit.
    pub max_extrapolation: f64,
    /// Who wins when a shot meets a target's registered dodge (`evasive`): the dodge
    /// (default; the hit is refused) or the shooter (the rewound hit stands).
    pub dodge: DodgeRule,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            time_mismatch: TimeMismatch::Reject,
            shooter_reference: ShooterReference::RenderTime,
            view_reference: ShooterReference::RenderTime,
            rewind_tolerance: 0.03,
            rewind_jitter_factor: 4.0,
            rewind_late_slack: 0.05,
            future_tolerance: 0.005,
            fire_rate_slack: 0.05,
            arrival_slack: 0.1,
            sequence_window: 256,
            max_extrapolation: lagcomp_net::DEFAULT_MAX_EXTRAPOLATION,
            dodge: DodgeRule::DodgeWins,
        }
    }
}

/// Why a rule set was refused.
#[derive(Debug, thiserror::Error)]
pub enum RulesError {
    /// Not valid TOML, or not the expected tables and fields.
    #[error("rules file: {0}")]
    Parse(#[from] toml::de::Error),
    /// Two weapons share an id.
    #[error("weapons {first:?} and {second:?} share id {id}")]
    DuplicateId {
        /// The id.
        id: u16,
        /// One weapon.
        first: String,
        /// The other.
        second: String,
    },
    /// A weapon's kind lacks its table (`kind = "pellets"` without `pellets`), or the
    /// weapon has a table of another kind.
    #[error("weapons.{weapon}: kind {kind} {}", if *present { format!("has no use for a {table} table") } else { format!("needs a {table} table") })]
    KindTable {
        /// The weapon's name.
        weapon: String,
        /// Its kind.
        kind: WeaponKind,
        /// The table (`flight`, `pellets`, `melee`, `area`).
        table: &'static str,
        /// True when the table is there but does not belong, false when it is missing.
        present: bool,
    },
    /// A `[melee.<name>]` table names a weapon id the rule set does not have.
    #[error("melee weapon {name:?}: no weapon has id {id}")]
    MeleeWithoutWeapon {
        /// The melee table's name.
        name: String,
        /// Its id.
        id: u16,
    },
    /// A number is out of its range.
    #[error("{field}: {value} is out of range ({expected})")]
    OutOfRange {
        /// Which field (`weapons.rifle.max_range`, `policy.sequence_window`).
        field: String,
        /// Its value.
        value: f64,
        /// What is allowed.
        expected: &'static str,
    },
}

impl RuleSet {
    /// The same rules with `weapon` added under `name` (replacing a weapon of that name).
    /// Check the result with [`RuleSet::check`]; [`RuleSet::default`] is the default
    /// [`Policy`] and no weapons.
    #[must_use]
    pub fn with_weapon(mut self, name: impl Into<String>, weapon: WeaponRules) -> Self {
        self.weapons.insert(name.into(), weapon);
        self
    }

    /// Parses and checks a TOML rule set (the format is in the [module documentation](self);
    /// seconds, metres and degrees). Fields left out take their defaults: no policy table
    /// is the default [`Policy`].
    ///
    /// ```
    /// use lagcomp_validate::{RuleSet, RulesError, WeaponId};
    ///
    /// let toml = r#"
    ///     [weapons.rifle]
    ///     id = 1
    ///     max_range = 250.0
    ///     min_interval = 0.1
    ///     aim_tolerance_deg = 5.0
    ///     origin_tolerance = 0.5
    ///     hit_leeway = 1.25
    ///     hit_leeway_min = 0.05
    ///     max_rewind = 0.35
    ///     damage = { head = 4.0, torso = 1.0, limb = 0.75 }
    /// "#;
    /// let rules = RuleSet::from_toml(toml)?;
    /// assert_eq!(rules.weapon(WeaponId(1)).unwrap().max_range, 250.0);
    ///
    /// // A bad number is refused, naming the field.
    /// let error = RuleSet::from_toml(&toml.replace("250.0", "-1.0")).unwrap_err();
    /// assert!(matches!(error, RulesError::OutOfRange { .. }));
    /// assert!(error.to_string().contains("weapons.rifle.max_range"), "{error}");
    /// # Ok::<(), RulesError>(())
    /// ```
    ///
    /// # Errors
    /// [`RulesError`] naming the bad field.
    pub fn from_toml(text: &str) -> Result<Self, RulesError> {
        let rules: Self = toml::from_str(text)?;
        rules.check()?;
        Ok(rules)
    }

    /// The rule set as TOML.
    #[must_use]
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("rule sets always serialize")
    }

    /// Checks every number against its range and that weapon ids are unique.
    ///
    /// # Errors
    /// [`RulesError`] naming the bad field.
    pub fn check(&self) -> Result<(), RulesError> {
        let range = |field: String, value: f64, ok: bool, expected: &'static str| {
            if ok {
                Ok(())
            } else {
                Err(RulesError::OutOfRange {
                    field,
                    value,
                    expected,
                })
            }
        };
        let non_negative = |v: f64| v.is_finite() && v >= 0.0;
        let p = &self.policy;
        for (name, value) in [
            ("rewind_tolerance", p.rewind_tolerance),
            ("rewind_jitter_factor", p.rewind_jitter_factor),
            ("rewind_late_slack", p.rewind_late_slack),
            ("future_tolerance", p.future_tolerance),
            ("arrival_slack", p.arrival_slack),
            ("max_extrapolation", p.max_extrapolation),
        ] {
            range(
                format!("policy.{name}"),
                value,
                non_negative(value) && value <= 10.0,
                "0 to 10",
            )?;
        }
        range(
            "policy.fire_rate_slack".into(),
            p.fire_rate_slack,
            non_negative(p.fire_rate_slack) && p.fire_rate_slack < 0.5,
            "0 to 0.5",
        )?;
        range(
            "policy.sequence_window".into(),
            f64::from(p.sequence_window),
            (1..=1024).contains(&p.sequence_window),
            "1 to 1024",
        )?;
        let mut ids: BTreeMap<u16, &str> = BTreeMap::new();
        for (name, w) in &self.weapons {
            if let Some(first) = ids.insert(w.id.0, name) {
                return Err(RulesError::DuplicateId {
                    id: w.id.0,
                    first: first.to_owned(),
                    second: name.clone(),
                });
            }
            let f = |field: &str| format!("weapons.{name}.{field}");
            let metres = |v: f32| (0.0..=lagcomp::math::MAX_EXTENT).contains(&v);
            range(f("radius"), w.radius.into(), metres(w.radius), "0 to 1e4 m")?;
            range(
                f("max_range"),
                w.max_range.into(),
                metres(w.max_range) && w.max_range > 0.0,
                "above 0, up to 1e4 m",
            )?;
            range(
                f("min_interval"),
                w.min_interval,
                non_negative(w.min_interval) && w.min_interval <= 60.0,
                "0 to 60 s",
            )?;
            range(f("burst"), w.burst.into(), w.burst <= 64, "0 to 64")?;
            range(
                f("aim_tolerance_deg"),
                w.aim_tolerance_deg.into(),
                w.aim_tolerance_deg.is_finite() && (0.0..=180.0).contains(&w.aim_tolerance_deg),
                "0 to 180",
            )?;
            range(
                f("origin_tolerance"),
                w.origin_tolerance.into(),
                metres(w.origin_tolerance),
                "0 to 1e4 m",
            )?;
            range(
                f("hit_leeway"),
                w.hit_leeway.into(),
                w.hit_leeway.is_finite() && (1.0..=10.0).contains(&w.hit_leeway),
                "1 to 10",
            )?;
            range(
                f("hit_leeway_min"),
                w.hit_leeway_min.into(),
                metres(w.hit_leeway_min),
                "0 to 1e4 m",
            )?;
            range(
                f("max_rewind"),
                w.max_rewind,
                non_negative(w.max_rewind) && w.max_rewind <= 10.0,
                "0 to 10 s",
            )?;
            if let Some(rtt) = w.no_rewind_above_rtt {
                range(
                    f("no_rewind_above_rtt"),
                    rtt,
                    non_negative(rtt) && rtt <= 60.0,
                    "0 to 60 s",
                )?;
            }
            for (zone, m) in [
                ("head", w.damage.head),
                ("torso", w.damage.torso),
                ("limb", w.damage.limb),
            ]
            .into_iter()
            .chain(w.damage.custom.values().map(|m| ("custom", *m)))
            {
                range(
                    f(&format!("damage.{zone}")),
                    m.into(),
                    m.is_finite() && (0.0..=1000.0).contains(&m),
                    "0 to 1000",
                )?;
            }
            // A weapon that can hit no layer would miss every shot, silently.
            range(
                f("hit_layers"),
                w.hit_layers.into(),
                w.hit_layers != 0,
                "at least one layer (not 0)",
            )?;
            w.check_kind(name)?;
        }
        Ok(())
    }

    /// The weapon with id `id`.
    #[must_use]
    pub fn weapon(&self, id: WeaponId) -> Option<&WeaponRules> {
        self.weapons.values().find(|w| w.id == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RIFLE: &str = r#"
        [weapons.rifle]
        id = 1
        max_range = 250.0
        min_interval = 0.1
        aim_tolerance_deg = 5.0
        origin_tolerance = 1.0
        hit_leeway = 1.25
        hit_leeway_min = 0.05
        max_rewind = 0.35
        damage = { head = 4.0, custom = { 7 = 0.5 } }
    "#;

    #[test]
    fn toml_round_trips_with_defaults() {
        let rules = RuleSet::from_toml(RIFLE).unwrap();
        let rifle = rules.weapon(WeaponId(1)).unwrap();
        assert_eq!(rifle.radius, 0.0);
        assert!(!rifle.friendly_fire);
        assert_eq!(rifle.damage.of(Zone::Head), 4.0);
        assert_eq!(rifle.damage.of(Zone::Torso), 1.0);
        assert_eq!(rifle.damage.of(Zone::Custom(7)), 0.5);
        assert_eq!(rifle.damage.of(Zone::Custom(8)), 1.0);
        assert_eq!(rules.policy, Policy::default());
        assert_eq!(RuleSet::from_toml(&rules.to_toml()).unwrap(), rules);
    }

    #[test]
    fn bad_rules_name_the_field() {
        let e = RuleSet::from_toml(&RIFLE.replace("max_range = 250.0", "max_range = -1.0"))
            .unwrap_err();
        assert!(e.to_string().contains("weapons.rifle.max_range"), "{e}");
        let e = RuleSet::from_toml(&RIFLE.replace("hit_leeway = 1.25", "hit_leeway = 0.5"))
            .unwrap_err();
        assert!(e.to_string().contains("hit_leeway"), "{e}");
        let e = RuleSet::from_toml(&format!(
            "{RIFLE}\n[weapons.pistol]\nid = 1\n{}",
            RIFLE.split_once("id = 1").unwrap().1
        ))
        .unwrap_err();
        assert!(matches!(e, RulesError::DuplicateId { id: 1, .. }), "{e}");
        let e = RuleSet::from_toml(&RIFLE.replace("max_rewind", "max_rewnd")).unwrap_err();
        assert!(matches!(e, RulesError::Parse(_)), "{e}");
        let e = RuleSet::from_toml(&format!("[policy]\nsequence_window = 0\n{RIFLE}")).unwrap_err();
        assert!(e.to_string().contains("policy.sequence_window"), "{e}");
        // A weapon that can hit no layer would miss every shot.
        let e = RuleSet::from_toml(&weapon_of("blank", 2, "hit_layers = 0")).unwrap_err();
        assert!(e.to_string().contains("weapons.blank.hit_layers"), "{e}");
        assert!(RuleSet::from_toml(&weapon_of("glass", 2, "blocked_by = 0")).is_ok());
    }

    /// The rifle's shared fields under another name and id, with `extra` lines added.
    fn weapon_of(name: &str, id: u16, extra: &str) -> String {
        let shared = RIFLE.split_once("id = 1").unwrap().1;
        format!("[weapons.{name}]\nid = {id}\n{extra}\n{shared}")
    }

    #[test]
    fn every_kind_reads_its_table_and_round_trips() {
        let text = [
            weapon_of(
                "rocket",
                2,
                "kind = \"projectile\"\n\
                 flight = { speed = 40.0, gravity = [0.0, -2.0, 0.0], drag = 0.01, radius = 0.1, \
                 step = 0.015625, max_time = 5.0 }\n\
                 area = { radius = 4.0, falloff = { start = 1.0, end = 4.0, min = 0.2 } }",
            ),
            weapon_of(
                "shotgun",
                3,
                "kind = \"pellets\"\n\
                 pellets = { count = 12, half_angle_deg = 4.0, pattern = \"rings\", jitter = 0.3, \
                 falloff = { start = 5.0, end = 15.0, min = 0.5 } }",
            ),
            weapon_of(
                "knife",
                4,
                "kind = \"melee\"\n\
                 melee = { reach = 2.0, angle_deg = 60.0, max_blade = 0.4, max_swing_deg = 150.0 }",
            ),
            weapon_of(
                "grenade",
                5,
                "kind = \"area\"\narea = { radius = 6.0, bodies_block = true }",
            ),
        ]
        .join("\n");
        let rules = RuleSet::from_toml(&format!("{RIFLE}\n{text}")).unwrap();
        let kind = |id| rules.weapon(WeaponId(id)).unwrap().kind;
        assert_eq!(
            [1, 2, 3, 4, 5].map(kind),
            [
                WeaponKind::Hitscan,
                WeaponKind::Projectile,
                WeaponKind::Pellets,
                WeaponKind::Melee,
                WeaponKind::Area
            ]
        );
        let rocket = rules.weapon(WeaponId(2)).unwrap();
        let flight = rocket.flight().unwrap();
        assert_eq!(flight.muzzle_speed(), 40.0);
        assert_eq!(flight.gravity(), lagcomp::Vec3::new(0.0, -2.0, 0.0));
        assert_eq!(flight.steps(), 320);
        let blast = rocket.splash_weapon().unwrap();
        assert_eq!(blast.radius, 4.0);
        assert_eq!(blast.falloff.multiplier(4.0), 0.2);
        assert!(!blast.bodies_block);
        let shotgun = rules.weapon(WeaponId(3)).unwrap().pellet_weapon().unwrap();
        assert_eq!(shotgun.spread.pellets(), 12);
        assert_eq!(
            shotgun.spread.kind(),
            lagcomp::spread::SpreadKind::Pattern { jitter: 0.3 }
        );
        assert_eq!(shotgun.falloff.multiplier(15.0), 0.5);
        let knife = rules.weapon(WeaponId(4)).unwrap();
        assert_eq!(knife.melee_limits().unwrap().reach, 2.0);
        assert!(knife.flight().is_none() && knife.pellet_weapon().is_none());
        assert!(
            rules
                .weapon(WeaponId(5))
                .unwrap()
                .splash_weapon()
                .unwrap()
                .bodies_block
        );
        // A hitscan weapon has none of the kinds' parameters, and writes no kind.
        let rifle = rules.weapon(WeaponId(1)).unwrap();
        assert!(rifle.flight().is_none() && rifle.splash_weapon().is_none());
        let written = rules.to_toml();
        assert_eq!(written.matches("kind = ").count(), 4, "{written}");
        assert_eq!(RuleSet::from_toml(&written).unwrap(), rules);
    }

    #[test]
    fn a_kind_needs_its_table_and_refuses_the_others() {
        let e = RuleSet::from_toml(&weapon_of("shotgun", 3, "kind = \"pellets\"")).unwrap_err();
        assert!(
            matches!(
                &e,
                RulesError::KindTable {
                    table: "pellets",
                    present: false,
                    ..
                }
            ),
            "{e}"
        );
        assert_eq!(
            e.to_string(),
            "weapons.shotgun: kind pellets needs a pellets table"
        );
        let e = RuleSet::from_toml(&weapon_of(
            "rifle2",
            3,
            "flight = { speed = 40.0, step = 0.1, max_time = 1.0 }",
        ))
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "weapons.rifle2: kind hitscan has no use for a flight table"
        );
        // A grenade is not a projectile: its blast alone.
        let e = RuleSet::from_toml(&weapon_of(
            "grenade",
            3,
            "kind = \"area\"\narea = { radius = 6.0 }\nflight = { speed = 4.0, step = 0.1, max_time = 1.0 }",
        ))
        .unwrap_err();
        assert!(
            matches!(
                e,
                RulesError::KindTable {
                    table: "flight",
                    present: true,
                    ..
                }
            ),
            "{e}"
        );
        // Unknown kinds and unknown fields in a kind's table are refused.
        for extra in [
            "kind = \"laser\"",
            "kind = \"melee\"\nmelee = { reach = 2.0, angle_deg = 60.0, max_blade = 0.4, max_swing_deg = 150.0, sharp = true }",
            "kind = \"pellets\"\npellets = { count = 12, half_angle_deg = 4.0, seed = 7 }",
        ] {
            let e = RuleSet::from_toml(&weapon_of("odd", 3, extra)).unwrap_err();
            assert!(matches!(e, RulesError::Parse(_)), "{extra}: {e}");
        }
    }

    #[test]
    fn every_kind_number_is_range_checked_with_its_field_named() {
        let flight = |f: &str| format!("kind = \"projectile\"\nflight = {{ {f} }}");
        let cases = [
            (flight("speed = 0.0, step = 0.1, max_time = 1.0"), "weapons.w.flight.speed"),
            (flight("speed = 1e5, step = 0.1, max_time = 1.0"), "weapons.w.flight.speed"),
            (
                flight("speed = 10.0, gravity = [0.0, -2000.0, 0.0], step = 0.1, max_time = 1.0"),
                "weapons.w.flight.gravity.y",
            ),
            (flight("speed = 10.0, drag = -1.0, step = 0.1, max_time = 1.0"), "weapons.w.flight.drag"),
            (flight("speed = 10.0, radius = -0.1, step = 0.1, max_time = 1.0"), "weapons.w.flight.radius"),
            (flight("speed = 10.0, step = 0.0, max_time = 1.0"), "weapons.w.flight.step"),
            (flight("speed = 10.0, step = 2.0, max_time = 1.0"), "weapons.w.flight.step"),
            (flight("speed = 10.0, step = 0.00001, max_time = 10.0"), "weapons.w.flight.max_time"),
            (flight("speed = 10.0, step = 0.1, max_time = nan"), "weapons.w.flight.max_time"),
            (
                "kind = \"pellets\"\npellets = { count = 0, half_angle_deg = 4.0 }".into(),
                "weapons.w.pellets.count",
            ),
            (
                "kind = \"pellets\"\npellets = { count = 33, half_angle_deg = 4.0 }".into(),
                "weapons.w.pellets.count",
            ),
            (
                "kind = \"pellets\"\npellets = { count = 8, half_angle_deg = 50.0 }".into(),
                "weapons.w.pellets.half_angle_deg",
            ),
            (
                "kind = \"pellets\"\npellets = { count = 8, half_angle_deg = 5.0, jitter = 2.0 }".into(),
                "weapons.w.pellets.jitter",
            ),
            (
                "kind = \"pellets\"\npellets = { count = 8, half_angle_deg = 5.0, \
                 falloff = { start = 5.0, end = 4.0, min = 0.5 } }"
                    .into(),
                "weapons.w.pellets.falloff.end",
            ),
            (
                "kind = \"melee\"\nmelee = { reach = 0.0, angle_deg = 60.0, max_blade = 0.4, max_swing_deg = 150.0 }".into(),
                "weapons.w.melee.reach",
            ),
            (
                "kind = \"melee\"\nmelee = { reach = 2.0, angle_deg = 60.0, max_blade = 0.4, max_swing_deg = 400.0 }".into(),
                "weapons.w.melee.max_swing_deg",
            ),
            ("kind = \"area\"\narea = { radius = 0.0 }".into(), "weapons.w.area.radius"),
            (
                "kind = \"area\"\narea = { radius = 5.0, falloff = { start = 1.0, end = 5.0, min = 1.5 } }".into(),
                "weapons.w.area.falloff.min",
            ),
            (
                "kind = \"area\"\narea = { radius = 5.0, falloff = { start = -1.0, end = 5.0, min = 0.5 } }".into(),
                "weapons.w.area.falloff.start",
            ),
        ];
        for (extra, field) in cases {
            let e = RuleSet::from_toml(&weapon_of("w", 3, &extra)).unwrap_err();
            assert!(matches!(e, RulesError::OutOfRange { .. }), "{extra}: {e}");
            assert!(
                e.to_string().starts_with(&format!("{field}:")),
                "{extra}: {e}"
            );
        }
    }

    #[test]
    fn a_hitscan_weapon_from_its_defaults_is_valid_and_survives_a_file() {
        let rules = RuleSet::default()
            .with_weapon("rifle", WeaponRules::hitscan(WeaponId(1)))
            .with_weapon(
                "pistol",
                WeaponRules {
                    max_range: 80.0,
                    ..WeaponRules::hitscan(WeaponId(2))
                },
            );
        rules.check().unwrap();
        assert_eq!(RuleSet::from_toml(&rules.to_toml()).unwrap(), rules);
        assert_eq!(rules.weapon(WeaponId(2)).unwrap().max_range, 80.0);
        // Two weapons with one id are still refused.
        let twice = rules.with_weapon("copy", WeaponRules::hitscan(WeaponId(1)));
        assert!(matches!(
            twice.check(),
            Err(RulesError::DuplicateId { id: 1, .. })
        ));
    }
}

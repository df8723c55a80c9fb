//! The game's arsenal and the rules the server judges each weapon's claims by: what the
//! bot brain (which picks a weapon and paces its fire by them) and the server core (which
//! validates with them) share. Neither the brain nor the server lives here.
//!
//! Five weapons, one per way a shot is judged: the rifle (hitscan), the sniper rifle
//! (hitscan whose round passes through players: a penetration claim), the shotgun (pellets from a seed), the rocket launcher (a projectile whose impact
//! blasts: a projectile claim and a splash claim) and the knife (a swept blade).

use lagcomp_validate::penetration::MAX_PENETRATION_LAYERS;
use lagcomp_validate::{RuleSet, RulesError, WeaponId};
use serde::{Deserialize, Serialize};

/// The rifle: hitscan, for anything no other weapon fits.
pub const RIFLE: WeaponId = WeaponId(1);
/// The shotgun: twelve pellets from a seed, for targets close by.
pub const SHOTGUN: WeaponId = WeaponId(2);
/// The rocket launcher: a projectile that blasts where it strikes, for targets on the
/// ground at mid range.
pub const ROCKET_LAUNCHER: WeaponId = WeaponId(3);
/// The knife: a blade thrust along the view, for targets within reach.
pub const KNIFE: WeaponId = WeaponId(4);
/// The sniper rifle: hitscan, slow, for targets far away.
pub const SNIPER_RIFLE: WeaponId = WeaponId(5);

/// The rifle's least interval between shots, seconds (its `min_interval` in [`rules`]): a
/// steady rate of fire is never faster.
pub const RIFLE_INTERVAL: f64 = 0.1;

/// How far the knife reaches from the eye, metres (its `melee.reach` in [`rules`]).
pub const KNIFE_REACH: f32 = 2.0;

/// The rocket's flight: muzzle speed, m/s.
pub const ROCKET_SPEED: f32 = 40.0;
/// The rocket's flight: seconds per traced step (the server's tick at 64 Hz).
pub const ROCKET_STEP: f32 = 1.0 / 64.0;
/// The rocket's flight: seconds before it expires unexploded.
pub const ROCKET_MAX_TIME: f32 = 0.75;
/// The rocket's blast radius, metres.
pub const BLAST_RADIUS: f32 = 3.0;

/// The sniper round's power (its `penetration.power` in [`rules`]), in the units its
/// material costs are per metre.
pub const SNIPER_POWER: f32 = 1.0;
/// What a metre of a player costs the sniper round (its flesh's cost in [`rules`]).
pub const SNIPER_FLESH_COST: f32 = 0.5;

/// One of the game's weapons: what a bot carries and picks from, and what the report
/// counts claims by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arm {
    /// [`RIFLE`].
    Rifle,
    /// [`SHOTGUN`].
    Shotgun,
    /// [`ROCKET_LAUNCHER`]: its projectile claim.
    RocketLauncher,
    /// The rocket launcher's blast: the splash claim sent with each rocket that struck.
    RocketBlast,
    /// [`KNIFE`].
    Knife,
    /// [`SNIPER_RIFLE`].
    SniperRifle,
}

impl Arm {
    /// Every weapon (and the rocket's blast), in report order.
    pub const ALL: [Self; 6] = [
        Self::Rifle,
        Self::Shotgun,
        Self::RocketLauncher,
        Self::RocketBlast,
        Self::Knife,
        Self::SniperRifle,
    ];

    /// The weapon's id in [`rules`] (the blast's is the launcher's).
    #[must_use]
    pub const fn id(self) -> WeaponId {
        match self {
            Self::Rifle => RIFLE,
            Self::Shotgun => SHOTGUN,
            Self::RocketLauncher | Self::RocketBlast => ROCKET_LAUNCHER,
            Self::Knife => KNIFE,
            Self::SniperRifle => SNIPER_RIFLE,
        }
    }

    /// Its name, as in the JSON result and the report.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Rifle => "rifle",
            Self::Shotgun => "shotgun",
            Self::RocketLauncher => "rocket_launcher",
            Self::RocketBlast => "rocket_blast",
            Self::Knife => "knife",
            Self::SniperRifle => "sniper_rifle",
        }
    }

    /// The kind of claim it makes, as [`lagcomp_validate::WeaponClaim::kind`] names it
    /// (the sniper rifle's on an extrapolated picture is a plain hitscan claim).
    #[must_use]
    pub const fn kind(self) -> &'static str {
        match self {
            Self::Rifle => "hitscan",
            Self::SniperRifle => "penetration",
            Self::Shotgun => "pellets",
            Self::RocketLauncher => "projectile",
            Self::RocketBlast => "splash",
            Self::Knife => "melee",
        }
    }

    /// Its least interval between shots, seconds (its `min_interval` in [`rules`]).
    ///
    /// Kept short for the slower weapons: the server spaces a shot by its weapon's
    /// interval from every recent shot of any weapon (a run of `k` shots ending with it
    /// spans `k` intervals), so a weapon of one second would be held back for seconds
    /// after a burst of the rifle.
    #[must_use]
    pub const fn interval(self) -> f64 {
        match self {
            Self::Rifle => RIFLE_INTERVAL,
            Self::Shotgun => 0.35,
            Self::RocketLauncher | Self::RocketBlast => 0.3,
            Self::Knife => 0.3,
            Self::SniperRifle => 0.4,
        }
    }
}

/// The rules the server validates with: every weapon reaches back `max_rewind` seconds
/// (the server's history window: the two are one setting, [`CoreConfig::max_rewind`]),
/// and rewinds nobody whose round trip is above `no_rewind_above_rtt` seconds, if given.
///
/// [`CoreConfig::max_rewind`]: crate::server::CoreConfig::max_rewind
///
/// # Errors
/// [`RulesError`] for a `max_rewind` outside `0..=10` or a `no_rewind_above_rtt` outside
/// `0..=60` (or not finite).
pub fn rules(max_rewind: f64, no_rewind_above_rtt: Option<f64>) -> Result<RuleSet, RulesError> {
    let no_rewind = no_rewind_above_rtt
        .map(|rtt| format!("no_rewind_above_rtt = {rtt:?}"))
        .unwrap_or_default();
    // What every weapon shares: the window, the threshold, and how far the muzzle may be
    // from the body the server recorded.
    let common = format!("origin_tolerance = 0.35\nmax_rewind = {max_rewind:?}\n{no_rewind}");
    let interval = |arm: Arm| arm.interval();
    RuleSet::from_toml(&format!(
        r#"
        [weapons.rifle]
        id = {rifle}
        max_range = 200.0
        min_interval = {rifle_interval}
        aim_tolerance_deg = 45.0
        hit_leeway = 1.05
        hit_leeway_min = 0.02
        damage = {{ head = 4.0, torso = 1.0, limb = 0.75 }}
        {common}

        [weapons.sniper_rifle]
        id = {sniper}
        max_range = 200.0
        min_interval = {sniper_interval}
        aim_tolerance_deg = 45.0
        hit_leeway = 1.05
        hit_leeway_min = 0.02
        damage = {{ head = 10.0, torso = 4.0, limb = 2.0 }}
        {common}

        # The round crosses players, never walls: the scenery's pieces are material 0
        # and stop it within a centimetre; flesh (material 1) costs half the power per
        # metre, so it crosses two metres of players, each hitbox one of its 8 layers.
        [weapons.sniper_rifle.penetration]
        power = {SNIPER_POWER:?}
        costs = [100.0, {SNIPER_FLESH_COST:?}]
        layer_damage = 0.75
        body_material = 1
        max_layers = {MAX_PENETRATION_LAYERS}

        [weapons.shotgun]
        kind = "pellets"
        id = {shotgun}
        max_range = 40.0
        min_interval = {shotgun_interval}
        aim_tolerance_deg = 45.0
        hit_leeway = 1.0
        hit_leeway_min = 0.0
        damage = {{ head = 2.0, torso = 1.0, limb = 0.75 }}
        pellets = {{ count = 12, half_angle_deg = 4.0, falloff = {{ start = 5.0, end = 20.0, min = 0.25 }} }}
        {common}

        [weapons.rocket_launcher]
        kind = "projectile"
        id = {rocket}
        max_range = 60.0
        min_interval = {rocket_interval}
        # Each rocket that strikes makes two claims, its flight's and its blast's, both
        # counted as shots: the pair may come closer than the interval.
        burst = 1
        aim_tolerance_deg = 45.0
        hit_leeway = 1.05
        hit_leeway_min = 0.05
        damage = {{ head = 3.0, torso = 3.0, limb = 3.0 }}
        flight = {{ speed = {ROCKET_SPEED:?}, radius = 0.0, step = {ROCKET_STEP:?}, max_time = {ROCKET_MAX_TIME:?} }}
        area = {{ radius = {BLAST_RADIUS:?}, falloff = {{ start = 0.5, end = {BLAST_RADIUS:?}, min = 0.2 }}, bodies_block = false }}
        {common}

        [weapons.knife]
        kind = "melee"
        id = {knife}
        max_range = 3.0
        min_interval = {knife_interval}
        # The view a melee strike is judged by is the one recorded at the moment drawn,
        # and a bot turning after a target close by sweeps its view fast: a quarter turn.
        aim_tolerance_deg = 90.0
        hit_leeway = 1.0
        hit_leeway_min = 0.0
        damage = {{ head = 5.0, torso = 2.5, limb = 1.5 }}
        melee = {{ reach = {KNIFE_REACH:?}, angle_deg = 90.0, max_blade = 0.2, max_swing_deg = 10.0 }}
        {common}
        "#,
        rifle = RIFLE.0,
        sniper = SNIPER_RIFLE.0,
        shotgun = SHOTGUN.0,
        rocket = ROCKET_LAUNCHER.0,
        knife = KNIFE.0,
        rifle_interval = interval(Arm::Rifle),
        sniper_interval = interval(Arm::SniperRifle),
        shotgun_interval = interval(Arm::Shotgun),
        rocket_interval = interval(Arm::RocketLauncher),
        knife_interval = interval(Arm::Knife),
    ))
    .map(|mut rules| {
        // The server records each bot's view from its latest input, which also carries
        // its shots: judge the angle against that, not against the view a round trip ago.
        rules.policy.view_reference = lagcomp_validate::ShooterReference::Arrival;
        // Shots are resent in every input until acknowledged, so a burst of lost inputs
        // (Gilbert-Elliott, several in a row at the 2-6 % presets) holds one back by a
        // send interval per packet lost: up to about 130 ms seen at 100/25/2 %, where
        // the default 50 ms rejected 1 honest shot in 4,000 as backtracking. A backtrack
        // of a quarter second is still caught at every preset.
        rules.policy.rewind_late_slack = 0.1;
        rules
    })
}

#[cfg(test)]
mod tests {
    use lagcomp::{HistoryConfig, MaterialId, Zone};

    use super::{RIFLE, SNIPER_FLESH_COST, SNIPER_POWER, SNIPER_RIFLE, rules};
    use crate::body::Arena;
    use crate::server::{CoreConfig, CoreError, ServerCore};

    #[test]
    fn the_rifle_reaches_back_as_far_as_the_history_keeps() {
        let config = CoreConfig::default();
        assert_eq!(config.max_rewind, HistoryConfig::default().max_rewind);
        let core = ServerCore::new(config, Arena::standard()).expect("the defaults are valid");
        let rifle = core.validator().rules().weapon(RIFLE).expect("the rifle");
        assert_eq!(rifle.max_rewind, core.history().config().max_rewind);
        assert_eq!(rifle.no_rewind_above_rtt, None);

        let slow = CoreConfig {
            max_rewind: 0.75,
            no_rewind_above_rtt: Some(0.3),
            ..config
        };
        let core = ServerCore::new(slow, Arena::standard()).expect("valid");
        let rifle = core.validator().rules().weapon(RIFLE).expect("the rifle");
        assert_eq!(
            (rifle.max_rewind, rifle.no_rewind_above_rtt),
            (0.75, Some(0.3))
        );
        assert_eq!(core.history().config().max_rewind, 0.75);
    }

    #[test]
    fn the_sniper_round_crosses_players_and_never_a_wall() {
        let rules = rules(1.0, None).expect("valid");
        let sniper = rules
            .weapon(SNIPER_RIFLE)
            .and_then(|w| w.penetration_rules())
            .expect("the sniper rifle penetrates");
        assert_eq!(sniper.power(), SNIPER_POWER);
        // The scenery's pieces are material 0: a centimetre of one takes all the power.
        assert!(sniper.cost_per_metre(MaterialId(0)) * 0.01 >= sniper.power());
        // Players are flesh: two torsos of 40 cm each leave more than half the power.
        let flesh = sniper.cost_per_metre(sniper.zone_material(Zone::Torso));
        assert_eq!(flesh, SNIPER_FLESH_COST);
        assert!(2.0 * 0.4 * flesh < 0.5 * sniper.power());
        // The rifle's round stops in the first player.
        assert!(
            rules
                .weapon(RIFLE)
                .and_then(|w| w.penetration_rules())
                .is_none()
        );
    }

    #[test]
    fn a_bad_window_or_threshold_is_an_error_not_a_panic() {
        for (window, threshold) in [
            (f64::NAN, None),
            (f64::INFINITY, None),
            (11.0, None),
            (1.0, Some(f64::NAN)),
            (1.0, Some(-0.1)),
            (1.0, Some(61.0)),
            (1.0, Some(f64::INFINITY)),
        ] {
            assert!(
                rules(window, threshold).is_err(),
                "{window} s, {threshold:?}"
            );
            let config = CoreConfig {
                max_rewind: window,
                no_rewind_above_rtt: threshold,
                ..CoreConfig::default()
            };
            assert!(
                matches!(
                    ServerCore::new(config, Arena::standard()),
                    Err(CoreError::Rules(_) | CoreError::Config(_))
                ),
                "{window} s, {threshold:?}"
            );
        }
        assert!(rules(10.0, Some(0.0)).is_ok());
    }
}

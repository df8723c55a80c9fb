//! The one weapon of the game and the rules the server judges its shots by: what the
//! bot brain (which paces its fire by them) and the server core (which validates with
//! them) share. Neither the brain nor the server lives here.

use lagcomp_validate::{RuleSet, RulesError, WeaponId};

/// The weapon every bot carries.
pub const RIFLE: WeaponId = WeaponId(1);

/// The rifle's least interval between shots, seconds (its `min_interval` in [`rules`]): a
/// steady rate of fire is never faster.
pub const RIFLE_INTERVAL: f64 = 0.1;

/// The rules the server validates with: the rifle reaches back `max_rewind` seconds (the
/// server's history window: the two are one setting, [`CoreConfig::max_rewind`]), and
/// rewinds nobody whose round trip is above `no_rewind_above_rtt` seconds, if given.
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
    RuleSet::from_toml(&format!(
        r#"
        [weapons.rifle]
        id = {id}
        max_range = 200.0
        min_interval = {RIFLE_INTERVAL}
        aim_tolerance_deg = 45.0
        origin_tolerance = 0.35
        hit_leeway = 1.05
        hit_leeway_min = 0.02
        max_rewind = {max_rewind:?}
        {no_rewind}
        damage = {{ head = 4.0, torso = 1.0, limb = 0.75 }}
        "#,
        id = RIFLE.0,
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
    use lagcomp::HistoryConfig;

    use super::{RIFLE, rules};
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

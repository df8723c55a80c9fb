//! The one weapon of the game and the rules the server judges its shots by: what the
//! bot brain (which paces its fire by them) and the server core (which validates with
//! them) share. Neither the brain nor the server lives here.

use lagcomp_validate::{RuleSet, WeaponId};

/// The weapon every bot carries.
pub const RIFLE: WeaponId = WeaponId(1);

/// The rifle's least interval between shots, seconds (its `min_interval` in [`rules`]): a
/// steady rate of fire is never faster.
pub const RIFLE_INTERVAL: f64 = 0.1;

/// The rules the server validates with.
///
/// # Panics
/// Never for a finite `max_rewind` in `0..=10`; the rules are fixed text otherwise.
#[must_use]
pub fn rules(max_rewind: f64) -> RuleSet {
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
        max_rewind = {max_rewind}
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
    .expect("the simulator's rules are valid")
}

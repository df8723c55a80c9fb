//! The history window a rule set needs: the history is sized from the weapons' reach
//! rather than configured a second time, so the two settings cannot disagree.

use lagcomp::{DEFAULT_MAX_REWIND, HistoryConfig};

use crate::rules::RuleSet;

impl RuleSet {
    /// The longest `max_rewind` of any weapon, seconds: how far back the history must
    /// reach so that no weapon's reach is cut short by it. `None` without weapons.
    #[must_use]
    pub fn longest_rewind(&self) -> Option<f64> {
        self.weapons
            .values()
            .map(|w| w.max_rewind)
            .max_by(f64::total_cmp)
    }

    /// The history for these rules at `tick_rate` ticks per second: its window is
    /// [`RuleSet::longest_rewind`] ([`DEFAULT_MAX_REWIND`] without weapons), so every
    /// weapon reaches exactly as far as its rule says, and the history keeps no more than
    /// the longest reach (each second of window costs
    /// [`HistoryConfig::bytes_per_entity`] per entity).
    ///
    /// ```
    /// use lagcomp::History;
    /// use lagcomp_validate::RuleSet;
    ///
    /// let rules = RuleSet::from_toml(
    ///     r#"
    ///     [weapons.rifle]
    ///     id = 1
    ///     max_range = 250.0
    ///     min_interval = 0.1
    ///     aim_tolerance_deg = 5.0
    ///     origin_tolerance = 0.5
    ///     hit_leeway = 1.25
    ///     hit_leeway_min = 0.05
    ///     max_rewind = 0.8
    ///
    ///     [weapons.sniper]
    ///     id = 2
    ///     max_range = 800.0
    ///     min_interval = 1.5
    ///     aim_tolerance_deg = 2.0
    ///     origin_tolerance = 0.5
    ///     hit_leeway = 1.1
    ///     hit_leeway_min = 0.02
    ///     max_rewind = 0.3 # the slowest players may not snipe round corners
    ///     "#,
    /// )?;
    /// let config = rules.history_config(64.0);
    /// assert_eq!(config.max_rewind, 0.8);
    /// let history = History::new(config)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn history_config(&self, tick_rate: f64) -> HistoryConfig {
        HistoryConfig {
            tick_rate,
            max_rewind: self.longest_rewind().unwrap_or(DEFAULT_MAX_REWIND),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use lagcomp::DEFAULT_MAX_REWIND;

    use crate::rules::RuleSet;

    #[test]
    fn the_history_keeps_the_longest_reach_of_any_weapon() {
        let rifle = "[weapons.rifle]\nid = 1\nmax_range = 250.0\nmin_interval = 0.1\n\
                     aim_tolerance_deg = 5.0\norigin_tolerance = 0.5\nhit_leeway = 1.25\n\
                     hit_leeway_min = 0.05\nmax_rewind = 0.35\n";
        let mut rules = RuleSet::from_toml(rifle).expect("valid rules");
        assert_eq!(rules.longest_rewind(), Some(0.35));
        let mut shotgun = rules.weapons["rifle"].clone();
        shotgun.id = crate::WeaponId(2);
        shotgun.max_rewind = 1.2;
        rules.weapons.insert("shotgun".to_owned(), shotgun);
        assert_eq!(rules.longest_rewind(), Some(1.2));
        let config = rules.history_config(30.0);
        assert_eq!((config.tick_rate, config.max_rewind), (30.0, 1.2));

        rules.weapons = BTreeMap::new();
        assert_eq!(rules.longest_rewind(), None);
        assert_eq!(rules.history_config(64.0).max_rewind, DEFAULT_MAX_REWIND);
    }
}

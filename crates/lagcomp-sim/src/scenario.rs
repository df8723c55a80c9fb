//! Scenarios: what a `lagcomp simulate` run plays (network conditions, cheat classes) and
//! how the matches' tallies become a [`SimResult`].

use lagcomp_game::cheat::Cheat;
use lagcomp_game::scorecard::{CheatResult, ModeResult};
use lagcomp_net::conditioner::{PRESETS, Preset, preset};

use crate::result::{DistanceStats, Mode, PresetRun, RewindStats, SimResult};
use crate::skirmish::{SkirmishConfig, Tally, play};

/// A run's settings.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The scenario's name.
    pub name: String,
    /// Seed of everything random.
    pub seed: u64,
    /// Simulated seconds per network condition (after a 2 s warm-up).
    pub duration: f64,
    /// Bots per match.
    pub bots: usize,
    /// Server tick rate, Hz.
    pub tick_rate: f64,
    /// Snapshot send rate, Hz.
    pub send_rate: f64,
    /// Client frame rate, Hz.
    pub client_fps: f64,
    /// The rewind window, seconds: the history's and the rifle's. Every scenario runs with
    /// [`lagcomp::DEFAULT_MAX_REWIND`] (1 s), which holds every rewind its presets need
    /// (up to about 0.6 s at 500 ms round trip; each run reports its own, [`RewindStats`]).
    pub max_rewind: f64,
    /// The rifle's no-rewind threshold, seconds of round trip: shooters measured above it
    /// are judged against the present. `None` (every scenario): everyone is rewound.
    pub no_rewind_above_rtt: Option<f64>,
    /// The network conditions, in order.
    pub presets: Vec<Preset>,
    /// Cheat classes to run (each its own match, at [`Scenario::cheat_preset`]).
    pub cheats: Vec<Cheat>,
    /// The network the cheat matches run on.
    pub cheat_preset: Preset,
    /// Respawns per bot per second.
    pub respawn_rate: f64,
    /// Whether the server holds probed round trips to its players' snapshot
    /// acknowledgements (the fake-latency defence, [`lagcomp_validate::latency`]); `true` unless
    /// measuring what it changes.
    pub echo_ceiling: bool,
    /// Whether the arena has doors, a tram, a breakable wall and a mesh level
    /// ([`SkirmishConfig::scenery`]); on in every built-in scenario.
    pub scenery: bool,
    /// Whether honest bots carry every weapon ([`SkirmishConfig::arsenal`]); on in every
    /// built-in scenario.
    pub arsenal: bool,
}

/// Why a scenario could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// An unknown scenario name.
    #[error("unknown scenario {0:?} (known: default, quick, cheats, high-latency)")]
    UnknownScenario(String),
    /// A preset that is neither a known name nor `RTT/JITTER/LOSS%` in milliseconds.
    #[error("unknown preset {0:?}: use a preset name or RTT/JITTER/LOSS% in ms, e.g. 500/0/0%")]
    UnknownPreset(String),
}

impl Scenario {
    /// A named scenario: `default` (every preset, every cheat class), `quick` (two
    /// presets, a few seconds), `cheats` (the cheat classes only) or `high-latency` (500 ms
    /// RTT). Each runs with the default 1 s window.
    ///
    /// # Errors
    /// [`ScenarioError::UnknownScenario`].
    pub fn named(name: &str) -> Result<Self, ScenarioError> {
        let mut s = Self {
            name: name.to_owned(),
            seed: 1,
            duration: 30.0,
            bots: 8,
            tick_rate: 64.0,
            send_rate: 64.0,
            client_fps: 60.0,
            max_rewind: lagcomp::DEFAULT_MAX_REWIND,
            no_rewind_above_rtt: None,
            presets: PRESETS.to_vec(),
            cheats: Cheat::ALL.to_vec(),
            cheat_preset: preset("100/25/2%").expect("a built-in preset"),
            respawn_rate: 0.05,
            echo_ceiling: true,
            scenery: true,
            arsenal: true,
        };
        match name {
            "default" => {}
            "quick" => {
                s.duration = 8.0;
                s.presets = vec![PRESETS[0], preset("100/25/2%").expect("built in")];
                s.cheats = Vec::new();
            }
            "cheats" => s.presets = Vec::new(),
            "high-latency" => {
                s.presets = vec![parse_preset("500/0/0%")?];
                s.cheats = Vec::new();
            }
            other => return Err(ScenarioError::UnknownScenario(other.to_owned())),
        }
        Ok(s)
    }

    /// Every match this scenario plays, with a label for progress reports.
    #[must_use]
    pub fn matches(&self) -> Vec<(String, SkirmishConfig)> {
        let base = |preset: Preset, cheat: Option<Cheat>, salt: u64| SkirmishConfig {
            seed: self
                .seed
                .wrapping_mul(0x9e37_79b9_7f4a_7c15)
                .wrapping_add(salt),
            duration: self.duration,
            bots: self.bots,
            tick_rate: self.tick_rate,
            send_rate: self.send_rate.min(self.tick_rate),
            client_fps: self.client_fps,
            max_rewind: self.max_rewind,
            no_rewind_above_rtt: self.no_rewind_above_rtt,
            preset,
            respawn_rate: self.respawn_rate,
            cheat,
            echo_ceiling: self.echo_ceiling,
            scenery: self.scenery,
            arsenal: self.arsenal,
        };
        let mut out: Vec<_> = self
            .presets
            .iter()
            .enumerate()
            .map(|(i, p)| (p.name.to_owned(), base(*p, None, i as u64)))
            .collect();
        // A class that needs doors never fires on the bare arena: not played there.
        let cheats = self
            .cheats
            .iter()
            .filter(|c| self.scenery || !c.needs_doors());
        out.extend(cheats.enumerate().map(|(i, c)| {
            (
                format!("cheat {}", c.name()),
                base(self.cheat_preset, Some(*c), 100 + i as u64),
            )
        }));
        out
    }

    /// Plays every match and gathers the result. `progress(match index, label, fraction
    /// of that match done)`.
    pub fn run(&self, mut progress: impl FnMut(usize, &str, f64)) -> SimResult {
        let mut result = SimResult {
            scenario: self.name.clone(),
            seed: self.seed,
            duration: self.duration,
            bots: self.bots,
            tick_rate: self.tick_rate,
            send_rate: self.send_rate.min(self.tick_rate),
            max_rewind: self.max_rewind,
            no_rewind_above_rtt: self.no_rewind_above_rtt,
            ..SimResult::default()
        };
        for (index, (label, config)) in self.matches().into_iter().enumerate() {
            let mut tally = play(&config, |f| progress(index, &label, f));
            if result.scenery.is_none() {
                result.scenery.clone_from(&tally.scenery);
            }
            result
                .scenes
                .merge(std::mem::take(&mut tally.scenes), &label);
            match config.cheat {
                None => {
                    if result.picture.is_none() {
                        result.picture.clone_from(&tally.picture);
                    }
                    result
                        .runs
                        .push(preset_run(&config.preset, tally, self.max_rewind));
                }
                Some(cheat) => result.cheats.push(cheat_result(cheat, &tally)),
            }
        }
        result
    }
}

/// A preset by name, or `RTT/JITTER/LOSS%` in milliseconds (`500/0/0%`).
///
/// # Errors
/// [`ScenarioError::UnknownPreset`].
pub fn parse_preset(text: &str) -> Result<Preset, ScenarioError> {
    if let Some(p) = preset(text) {
        return Ok(p);
    }
    let bad = || ScenarioError::UnknownPreset(text.to_owned());
    let mut parts = text.trim_end_matches('%').split('/');
    let mut next = || -> Result<f64, ScenarioError> {
        let v: f64 = parts
            .next()
            .ok_or_else(bad)?
            .trim()
            .parse()
            .map_err(|_| bad())?;
        if v.is_finite() && v >= 0.0 {
            Ok(v)
        } else {
            Err(bad())
        }
    };
    let (rtt, jitter, loss) = (next()?, next()?, next()?);
    if parts.next().is_some() || loss > 100.0 || rtt > 5000.0 || jitter > rtt.max(1.0) * 4.0 {
        return Err(bad());
    }
    // Presets carry a static name; a handful of custom ones per run is a negligible leak.
    let name: &'static str = Box::leak(format!("{rtt}/{jitter}/{loss}%").into_boxed_str());
    Ok(Preset {
        name,
        rtt: rtt / 1000.0,
        jitter: jitter / 1000.0,
        loss: loss / 100.0,
    })
}

/// A network of `text` milliseconds of round trip and nothing else (`150` is `150/0/0%`):
/// one step of a latency ladder such as Unity's 50 / 150 / 500 ms test.
///
/// # Errors
/// [`ScenarioError::UnknownPreset`] for anything but a number of milliseconds, 0 to 5000.
pub fn parse_latency(text: &str) -> Result<Preset, ScenarioError> {
    let rtt = text.trim().trim_end_matches("ms").trim();
    if rtt.is_empty() || rtt.contains(['/', '%']) {
        return Err(ScenarioError::UnknownPreset(text.to_owned()));
    }
    parse_preset(&format!("{rtt}/0/0%")).map_err(|_| ScenarioError::UnknownPreset(text.to_owned()))
}

fn preset_run(preset: &Preset, tally: Tally, window: f64) -> PresetRun {
    // Agreement: of the hits the client saw, the share the server agreed with.
    let agreement = |m: &mut ModeResult| {
        m.agreement = if m.client_hits == 0 {
            f64::NAN
        } else {
            m.agreed as f64 / m.client_hits as f64
        };
    };
    let mut modes = tally.modes;
    modes.values_mut().for_each(agreement);
    let mut weapons = tally.arms;
    weapons.values_mut().for_each(agreement);
    // Every weapon's: the hitscan ones' are the full mode's.
    let honest_rejected = weapons
        .values()
        .map(|m| m.rejections.values().sum::<u64>())
        .sum();
    let movers = |claimed_hit| {
        tally
            .honest_blocked
            .get(&("entity", claimed_hit))
            .copied()
            .unwrap_or(0)
    };
    let blocked_by_movers_disputed = movers(true);
    let blocked_by_movers = movers(false) + blocked_by_movers_disputed;
    PresetRun {
        preset: preset.name.to_owned(),
        rtt_ms: preset.rtt * 1000.0,
        jitter_ms: preset.jitter * 1000.0,
        loss: preset.loss,
        modes,
        reconstruction: error_stats(tally.reconstruction),
        honest_rejected,
        extrapolated: tally.extrapolated,
        refused: tally.refused,
        rewind: rewind_stats(tally.rewinds, window),
        blocked_by_movers,
        blocked_by_movers_disputed,
        weapons,
    }
}

/// Median, p99 and largest of rewinds given in seconds, reported in milliseconds, and how
/// many exceed `window`.
fn rewind_stats(mut seconds: Vec<f64>, window: f64) -> RewindStats {
    if seconds.is_empty() {
        return RewindStats::default();
    }
    seconds.sort_by(f64::total_cmp);
    let n = seconds.len();
    let rank = |q: f64| seconds[((n as f64 * q).ceil() as usize).clamp(1, n) - 1] * 1000.0;
    RewindStats {
        shots: n as u64,
        median_ms: rank(0.5),
        p99_ms: rank(0.99),
        max_ms: seconds[n - 1] * 1000.0,
        beyond_window: seconds.iter().filter(|&&s| s > window).count() as u64,
    }
}

fn cheat_result(cheat: Cheat, tally: &Tally) -> CheatResult {
    let honest_rejected = tally
        .modes
        .get(&Mode::Full)
        .map_or(0, |m| m.rejections.values().sum());
    CheatResult {
        class: cheat.name().to_owned(),
        description: cheat.description().to_owned(),
        attempts: tally.cheat_attempts,
        accepted: tally.cheat_accepted,
        outcomes: tally.cheat_outcomes.clone(),
        honest_rejected,
    }
}

/// Mean, p99, max and a histogram of errors given in metres, reported in millimetres.
#[must_use]
pub fn error_stats(mut metres: Vec<f64>) -> DistanceStats {
    if metres.is_empty() {
        return DistanceStats::default();
    }
    metres.sort_by(f64::total_cmp);
    let mm: Vec<f64> = metres.iter().map(|m| m * 1000.0).collect();
    let n = mm.len();
    let p99 = mm[((n as f64 * 0.99).ceil() as usize).clamp(1, n) - 1];
    let bounds = [0.001, 0.01, 0.1, 1.0, 10.0, 100.0];
    let mut histogram: Vec<(Option<f64>, u64)> = bounds.iter().map(|b| (Some(*b), 0)).collect();
    histogram.push((None, 0));
    for v in &mm {
        let bucket = bounds.iter().position(|b| v <= b).unwrap_or(bounds.len());
        histogram[bucket].1 += 1;
    }
    DistanceStats {
        samples: n as u64,
        mean_mm: mm.iter().sum::<f64>() / n as f64,
        p99_mm: p99,
        max_mm: mm[n - 1],
        histogram,
    }
}

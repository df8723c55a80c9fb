//! What a simulation run measured: the data behind the table, the JSON output and the
//! HTML report. Plain data, serializable, no behaviour beyond small derived figures.

use std::collections::BTreeMap;

use lagcomp_game::scorecard::{CheatResult, ModeResult};
use lagcomp_game::weapon::Arm;
use serde::{Deserialize, Serialize};

/// How the server decides a shot, side by side on the same shots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// No compensation: the shot is traced against the present.
    None,
    /// Compensation with the server's own latency guess: now − RTT/2 − interpolation
    /// delay (as Mirror and UT4 do).
    ServerGuess,
    /// Full compensation: the client-stamped render time, through the validator.
    Full,
}

impl Mode {
    /// The three modes, in report order.
    pub const ALL: [Self; 3] = [Self::None, Self::ServerGuess, Self::Full];

    /// A short human label.
    #[must_use]
    pub const fn label(self) -> &'static str {
        match self {
            Self::None => "no compensation",
            Self::ServerGuess => "server latency guess",
            Self::Full => "full (client-stamped)",
        }
    }
}

/// Distribution summary of a distance, in millimetres.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DistanceStats {
    /// How many samples.
    pub samples: u64,
    /// Mean, mm.
    pub mean_mm: f64,
    /// 99th percentile, mm.
    pub p99_mm: f64,
    /// Largest, mm.
    pub max_mm: f64,
    /// Histogram: `(upper bound of the bucket in mm, count)`, buckets in increasing order;
    /// the last bucket's bound is `f64::INFINITY` written as `null` in JSON.
    pub histogram: Vec<(Option<f64>, u64)>,
}

/// One network condition (a preset) with its three modes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PresetRun {
    /// The preset's name (`"100/25/2%"`).
    pub preset: String,
    /// Round-trip latency, ms.
    pub rtt_ms: f64,
    /// Round-trip jitter, ms.
    pub jitter_ms: f64,
    /// Loss per direction, fraction.
    pub loss: f64,
    /// Per mode.
    pub modes: BTreeMap<Mode, ModeResult>,
    /// Distance between the target pose a client drew and the pose the server rebuilt
    /// for full compensation (largest bone distance per shot), excluding teleport frames.
    pub reconstruction: DistanceStats,
    /// Honest shots the full validator rejected, all reasons.
    pub honest_rejected: u64,
    /// Honest shots that arrived claiming an extrapolated view (fired while the client
    /// had run out of snapshots), and how many of those the full validator rejected.
    #[serde(default)]
    pub extrapolated: ExtrapolatedShots,
    /// Honest hits the full validator refused, by refusal name (`invulnerable`: spawn
    /// protection; `dodged`: a dodge registered before the shot arrived). Not rejections:
    /// the server's trace agreed (they count as agreed), the game's rules denied damage.
    #[serde(default)]
    pub refused: BTreeMap<String, u64>,
    /// How far back the honest shots reached: what the rewind window must hold.
    #[serde(default)]
    pub rewind: RewindStats,
    /// Honest shots the full validator judged `blocked` by a door or the tram: no damage,
    /// and no rejection either.
    #[serde(default)]
    pub blocked_by_movers: u64,
    /// Of those, the ones whose client had seen a hit (it drew the door elsewhere): each is
    /// an honest hit lost, counted against agreement.
    #[serde(default)]
    pub blocked_by_movers_disputed: u64,
    /// Per weapon (the rocket's blast on its own), the full validator's verdicts on the
    /// honest claims it made: `agreed` of `client_hits` (the client saw a hit and the
    /// server confirmed it on the same player, or agreed and refused damage),
    /// `false_confirmations` (the client saw none, the server confirmed one), rejections
    /// by reason. `shots_sent` is not counted per weapon (0). The modes above judge the
    /// hitscan claims (rifle, sniper rifle) only.
    #[serde(default)]
    pub weapons: BTreeMap<Arm, ModeResult>,
}

/// Honest shots claiming an extrapolated view, and their rejections.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtrapolatedShots {
    /// Arrived at the server.
    pub shots: u64,
    /// Of those, rejected (any reason).
    pub rejected: u64,
}

/// How far back honest shots reached under one network condition: from the moment each
/// shot's client drew (its claimed time) to its arrival at the server, milliseconds. The
/// rewind window must hold the largest, or those shots are rejected as `time_too_old`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RewindStats {
    /// Honest shots measured.
    pub shots: u64,
    /// Median, ms.
    pub median_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// Largest, ms.
    pub max_ms: f64,
    /// Shots that reached further back than the window.
    pub beyond_window: u64,
}

/// A 2-D outline seen from above (x to the right, z down the page).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outline {
    /// A circle.
    Circle {
        /// Centre `[x, z]`.
        center: [f32; 2],
        /// Radius.
        radius: f32,
    },
    /// A convex polygon, corners in order.
    Polygon {
        /// Corners `[x, z]`.
        points: Vec<[f32; 2]>,
    },
    /// A segment grown by a radius (a capsule from above).
    Stadium {
        /// One end `[x, z]`.
        a: [f32; 2],
        /// The other end.
        b: [f32; 2],
        /// Radius.
        radius: f32,
    },
}

/// One shot drawn from above: where the target is now, where it was rebuilt, the ray.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ShotPicture {
    /// One line saying what the picture shows.
    pub caption: String,
    /// The target's hitboxes in the present.
    pub present: Vec<Outline>,
    /// Its hitboxes rebuilt at the shot's render time.
    pub rewound: Vec<Outline>,
    /// The shot: muzzle `[x, z]`.
    pub ray_from: [f32; 2],
    /// The shot's end (at the hit, or at a fixed length).
    pub ray_to: [f32; 2],
    /// Where the server confirmed the hit, if it did.
    pub hit: Option<[f32; 2]>,
}

/// Everything one `lagcomp simulate` run measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SimResult {
    /// The scenario's name.
    pub scenario: String,
    /// The seed.
    pub seed: u64,
    /// Simulated seconds per network condition.
    pub duration: f64,
    /// Bots per run.
    pub bots: usize,
    /// Server tick rate, Hz.
    pub tick_rate: f64,
    /// Snapshot send rate, Hz.
    pub send_rate: f64,
    /// The rewind window, seconds: the history's and the rifle's.
    #[serde(default)]
    pub max_rewind: f64,
    /// The rifle's no-rewind threshold, seconds of round trip (`None`: everyone rewound).
    #[serde(default)]
    pub no_rewind_above_rtt: Option<f64>,
    /// What the arena held besides its walls (doors, a tram, a breakable wall, a mesh
    /// level), as one line; `None` for the bare arena.
    #[serde(default)]
    pub scenery: Option<String>,
    /// One per network condition, in increasing latency.
    pub runs: Vec<PresetRun>,
    /// One per cheat class.
    pub cheats: Vec<CheatResult>,
    /// A shot to draw.
    pub picture: Option<ShotPicture>,
    /// A few chosen shots as 3D scenes (not in the JSON: the report writes them as files).
    #[serde(skip)]
    pub scenes: crate::report::ShotScenes,
}

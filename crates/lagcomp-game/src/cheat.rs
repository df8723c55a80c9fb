//! The cheat classes a cheating bot can play, one at a time.

use serde::{Deserialize, Serialize};

/// How the cheating bot cheats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cheat {
    /// Claims a render time older than the rewind window (by
    /// [`TOO_OLD_MARGIN`](crate::brain::TOO_OLD_MARGIN), behind what it draws), aiming
    /// where the target was.
    TooOld,
    /// Claims a render time inside the window but 250 ms older than its latency allows
    /// (backtracking), aiming where the target was.
    Backtrack,
    /// Fires a second shot 25 ms after each shot (the weapon allows one per 100 ms).
    RapidFire,
    /// Reports a view 90 degrees away from where it shoots (a snapping aimbot).
    Snap,
    /// Puts its muzzle 4 m in front of its body.
    FarMuzzle,
    /// Shoots only targets behind walls, claiming hits.
    ThroughWalls,
    /// Fires 1 m wide of the target's head and claims a head hit.
    TamperedPoint,
    /// Reuses the sequence number of its first shot for every later shot.
    Replay,
    /// Shoots only targets that are invulnerable (just respawned).
    Invulnerable,
    /// Fake latency: answers the server's round-trip probes [`FAKE_LATENCY`] late while
    /// sending its inputs, shots and snapshot acknowledgements on time, so the round trip
    /// the server measures from probes is that much longer than the real one; then claims
    /// render times half that (250 ms) older than it drew, which such a round trip would
    /// explain, aiming where the target was.
    FakeLatency,
    /// Shoots only targets behind a door (or the tram) it draws shut between them,
    /// claiming hits as if the door were not there. Needs a map with doors
    /// ([`crate::scenery`]); on one without, it never fires.
    ThroughDoor,
    /// Fires rockets and claims each struck the target 2/64 s into its flight, a metre
    /// and a quarter out: before it could arrive. Needs the arsenal.
    EarlyRocket,
    /// Fires the shotgun with pellets drawn from a seed of its choosing, every pellet
    /// claimed on the target. Needs the arsenal.
    ChosenPelletSeed,
    /// Knifes targets 2.5 to 8 m away, its blade starting half a metre short of the
    /// target's chest (the knife reaches 2 m from the eye). Needs the arsenal.
    LongKnife,
    /// Claims rocket blasts just this side of a wall that catch a target standing
    /// behind it. Needs the arsenal.
    BlastThroughWall,
    /// Fires the sniper rifle only at targets behind a wall, listing them in its
    /// penetration claim as if the round had crossed the wall (it crosses players, never
    /// walls). Needs the arsenal.
    ThroughTheWallSniper,
}

/// How late a fake-latency cheat answers the server's round-trip probes, seconds.
pub const FAKE_LATENCY: f64 = 0.5;

impl Cheat {
    /// Every class, in report order.
    pub const ALL: [Self; 16] = [
        Self::TooOld,
        Self::Backtrack,
        Self::RapidFire,
        Self::Snap,
        Self::FarMuzzle,
        Self::ThroughWalls,
        Self::TamperedPoint,
        Self::Replay,
        Self::Invulnerable,
        Self::FakeLatency,
        Self::ThroughDoor,
        Self::EarlyRocket,
        Self::ChosenPelletSeed,
        Self::LongKnife,
        Self::BlastThroughWall,
        Self::ThroughTheWallSniper,
    ];

    /// Whether the class needs doors ([`crate::scenery`]) to play: on a map without them
    /// it never fires.
    #[must_use]
    pub const fn needs_doors(self) -> bool {
        matches!(self, Self::ThroughDoor)
    }

    /// Whether the class plays a weapon other than the rifle, which a brain carries only
    /// with [`BrainConfig::arsenal`](crate::brain::BrainConfig::arsenal): without it, it
    /// never fires.
    #[must_use]
    pub const fn needs_arsenal(self) -> bool {
        matches!(
            self,
            Self::EarlyRocket
                | Self::ChosenPelletSeed
                | Self::LongKnife
                | Self::BlastThroughWall
                | Self::ThroughTheWallSniper
        )
    }

    /// The class's name.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::TooOld => "too_old",
            Self::Backtrack => "backtrack",
            Self::RapidFire => "rapid_fire",
            Self::Snap => "snap",
            Self::FarMuzzle => "far_muzzle",
            Self::ThroughWalls => "through_walls",
            Self::TamperedPoint => "tampered_point",
            Self::Replay => "replay",
            Self::Invulnerable => "invulnerable",
            Self::FakeLatency => "fake_latency",
            Self::ThroughDoor => "through_door",
            Self::EarlyRocket => "early_rocket",
            Self::ChosenPelletSeed => "chosen_pellet_seed",
            Self::LongKnife => "long_knife",
            Self::BlastThroughWall => "blast_through_wall",
            Self::ThroughTheWallSniper => "through_the_wall_sniper",
        }
    }

    /// One line on what the cheat does.
    #[must_use]
    pub const fn description(self) -> &'static str {
        match self {
            Self::TooOld => "claims a render time older than the rewind window",
            Self::Backtrack => "claims a render time 250 ms older than its latency allows",
            Self::RapidFire => "fires a second shot 25 ms after each (weapon: 100 ms)",
            Self::Snap => "reports a view 90 degrees away from its shots",
            Self::FarMuzzle => "puts its muzzle 4 m in front of its body",
            Self::ThroughWalls => "shoots only targets behind walls, claiming hits",
            Self::TamperedPoint => "fires 1 m wide of the head and claims a head hit",
            Self::Replay => "reuses its first shot's sequence number",
            Self::Invulnerable => "shoots only targets that are invulnerable",
            Self::FakeLatency => {
                "answers probes 500 ms late, claims render times 250 ms older than it drew"
            }
            Self::ThroughDoor => "shoots only targets behind a shut door, claiming hits",
            Self::EarlyRocket => "claims its rocket struck 2/64 s into its flight, 1.25 m out",
            Self::ChosenPelletSeed => {
                "draws its pellets from a seed of its choosing, all on target"
            }
            Self::LongKnife => "knifes targets 2.5 to 8 m away (reach: 2 m from the eye)",
            Self::BlastThroughWall => "claims blasts that catch a target behind a wall",
            Self::ThroughTheWallSniper => {
                "claims its sniper round crossed a wall into the target behind it"
            }
        }
    }
}

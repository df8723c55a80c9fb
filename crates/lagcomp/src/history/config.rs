//! How a history is sized ([`HistoryConfig`]) and why a size is refused ([`ConfigError`]).

use super::{EntityFrame, EntityVelocity, StoredRotation, StoredTranslation};

/// How the history is sized: [`History::new`](super::History::new) shows one in use.
///
/// ```
/// use lagcomp::HistoryConfig;
///
/// // The default: a 64 Hz server keeping one second, Source's default (`sv_maxunlag 1`).
/// assert_eq!(HistoryConfig::default(), HistoryConfig { tick_rate: 64.0, max_rewind: 1.0 });
/// // What that window holds for one 8-bone body: 73 frames of 276 bytes.
/// assert_eq!(HistoryConfig::default().bytes_per_entity(8), 20_148);
/// ```
///
/// # Choosing `max_rewind`
///
/// A shot reaches the server a round trip plus the client's interpolation delay after the
/// moment its client drew (the snapshots it drew were half a round trip old when they
/// arrived, the shot takes the other half back), plus jitter, plus a send interval for each
/// lost packet it was resent after. The window must hold that for the worst connection the
/// game still serves, or those players' shots are rejected as `time_too_old`. In
/// `lagcomp simulate` (64 Hz, a 2-snapshot buffer) honest shots needed at most about
/// 0.56 s at 500 ms round trip and 0.53 s at 300 ms with 75 ms jitter and 6 % loss; the
/// default second serves round trips up to about 800 ms.
///
/// The window costs two things:
/// - **Memory**: [`HistoryConfig::bytes_per_entity`] per entity (28 bytes per bone and 52
///   per entity for every frame held), 24 bytes per frame header, and the broadphase's
///   boxes ([`History::broadphase_bytes`](super::History::broadphase_bytes)). Linear in the
///   window: at 64 Hz a second costs 20,148 bytes for an 8-bone body and 44,676 for a
///   20-bone one, 4.5 MB for 100 such players.
/// - **Backtracking room**: the window is the furthest back any shot can reach. A shot
///   whose claimed moment does not fit the shooter's measured round trip is refused
///   (`backtrack`) whatever the window, so a client faking its stamps gains only the
///   validator's tolerance; but a player who really is that far behind (or delays every
///   packet on purpose, a lag switch) hits where targets were up to `max_rewind` ago: a
///   target running 5 m/s was 5 m away a second before. Cap that per weapon with a
///   shorter `max_rewind` in its rules, or with a round trip above which it gets no
///   rewind at all (`no_rewind_above_rtt` in `lagcomp-validate`).
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct HistoryConfig {
    /// Server ticks per second (frames recorded per second).
    pub tick_rate: f64,
    /// The furthest back a query may rewind, in seconds: the longest round trip plus
    /// interpolation delay the game serves (see [Choosing `max_rewind`](Self#choosing-max_rewind)).
    pub max_rewind: f64,
}

/// The default window, seconds: Source's `sv_maxunlag`, and room for a 500 ms round trip
/// (Unity's advice is to test at 50, 150 and 500 ms) with its interpolation delay, jitter
/// and resends.
pub const DEFAULT_MAX_REWIND: f64 = 1.0;

impl Default for HistoryConfig {
    fn default() -> Self {
        Self {
            tick_rate: 64.0,
            max_rewind: DEFAULT_MAX_REWIND,
        }
    }
}

impl HistoryConfig {
    /// Frames kept: enough to cover the window at a tick rate up to 10 % faster than
    /// configured (tick lengths vary), plus the frame just older than the window edge and
    /// the newest frame.
    pub(super) fn capacity(&self) -> usize {
        ((self.max_rewind * self.tick_rate * 1.1).ceil() as usize).saturating_add(2)
    }

    /// Bytes the history holds for one entity of `bones` bones over the whole window: its
    /// bones' poses (a 12-byte translation and a 16-byte rotation each), its per-frame
    /// record (flags, layers, bounds: 36 bytes) and its velocity (16 bytes) for every frame
    /// of the ring. What
    /// [`History::history_bytes`](super::History::history_bytes) grows by per entity spawned
    /// before the first frame, when the rig's bone count is a multiple of four (other rigs
    /// share a few padding places); a bone recorded with a non-unit scale adds 12 bytes
    /// per frame; the frame headers and the broadphase come on top.
    #[must_use]
    pub fn bytes_per_entity(&self, bones: usize) -> usize {
        let per_frame = bones * (size_of::<StoredTranslation>() + size_of::<StoredRotation>())
            + size_of::<EntityFrame>()
            + size_of::<EntityVelocity>();
        self.capacity() * per_frame
    }
}

/// Why a configuration was refused.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// The tick rate must be finite and in `(0, 1000]`.
    #[error("tick rate {0} must be finite and in (0, 1000] Hz")]
    TickRate(f64),
    /// The rewind window must be finite and in `(0, 10]` seconds.
    #[error("max rewind {0} must be finite and in (0, 10] seconds")]
    MaxRewind(f64),
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::HistoryConfig;
    use crate::history::{EntityState, History};
    use crate::math::BoneTransform;
    use crate::rig::{Hitbox, Rig, Shape, Zone};
    use crate::time::Tick;

    /// `history_bytes` after one frame of `entities` bodies of `bones` bones, all spawned
    /// before it.
    fn held(config: HistoryConfig, entities: usize, bones: u16) -> usize {
        let hitboxes = (0..bones)
            .map(|b| {
                Hitbox::new(
                    b,
                    format!("b{b}"),
                    Zone::Torso,
                    b,
                    Shape::Sphere { radius: 0.1 },
                )
            })
            .collect();
        let rig = Arc::new(Rig::new(bones, hitboxes).expect("valid rig"));
        let mut history = History::new(config).expect("valid config");
        let ids: Vec<_> = (0..entities)
            .map(|_| history.spawn(Arc::clone(&rig)))
            .collect();
        let pose = vec![BoneTransform::IDENTITY; usize::from(bones)];
        let mut frame = history.begin_frame(Tick(1), 0.0).expect("first frame");
        for id in ids {
            frame
                .record(id, &pose, EntityState::default())
                .expect("valid pose");
        }
        drop(frame);
        history.history_bytes()
    }

    /// The documented cost of the window is what the history's own accounting grows by per
    /// entity, at the default and at other rates and windows.
    #[test]
    fn bytes_per_entity_is_what_each_entity_adds_to_the_history() {
        for (tick_rate, max_rewind, bones) in [
            (64.0, 1.0, 8),  // the default window, the simulator's humanoid
            (64.0, 0.5, 20), // the old default window, a 20-bone rig
            (128.0, 2.0, 16),
            (20.0, 0.25, 4),
        ] {
            let config = HistoryConfig {
                tick_rate,
                max_rewind,
            };
            let grown = held(config, 20, bones) - held(config, 10, bones);
            assert_eq!(
                grown,
                10 * config.bytes_per_entity(usize::from(bones)),
                "{tick_rate} Hz, {max_rewind} s, {bones} bones"
            );
        }
        // Linear in the window: twice the window, twice the frames (but for the two at
        // its edges).
        let one = HistoryConfig::default();
        let two = HistoryConfig {
            max_rewind: 2.0,
            ..one
        };
        assert_eq!(one.bytes_per_entity(8), 73 * 276);
        assert_eq!(two.bytes_per_entity(8), 143 * 276);
    }
}

//! How a history is sized ([`HistoryConfig`]) and why a size is refused ([`ConfigError`]).

/// How the history is sized: [`History::new`](super::History::new) shows one in use.
///
/// ```
/// use lagcomp::HistoryConfig;
///
/// // The default: a 64 Hz server keeping half a second.
/// assert_eq!(HistoryConfig::default(), HistoryConfig { tick_rate: 64.0, max_rewind: 0.5 });
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct HistoryConfig {
    /// Server ticks per second (frames recorded per second).
    pub tick_rate: f64,
    /// The furthest back a query may rewind, in seconds.
    pub max_rewind: f64,
}

impl Default for HistoryConfig {
    fn default() -> Self {
        Self {
            tick_rate: 64.0,
            max_rewind: 0.5,
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

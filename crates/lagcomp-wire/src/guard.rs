//! Counting malformed messages per sender: each one is dropped, and a sender that sends
//! more than a threshold of them within a sliding window of time is disconnected.
//!
//! The guard reads no clock: every call takes the caller's `now` in seconds.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

/// How many malformed messages a sender may send, and within how long.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GuardConfig {
    /// A sender is disconnected once more than this many malformed messages arrived within
    /// `window` (0: at the first).
    pub threshold: u16,
    /// The sliding window, seconds.
    pub window: f64,
}

impl Default for GuardConfig {
    /// 20 malformed messages in 10 s: a flaky sender rides out a burst of corruption, a
    /// fuzzing or confused one is gone within seconds.
    fn default() -> Self {
        Self {
            threshold: 20,
            window: 10.0,
        }
    }
}

/// Why a guard configuration was refused.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum GuardConfigError {
    /// The window must be finite and positive.
    #[error("malformed-message window {0} must be finite and positive seconds")]
    Window(f64),
}

/// What to do with a sender that just sent a malformed message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[must_use]
pub enum Penalty {
    /// Drop the message and carry on.
    Drop,
    /// Drop the message and disconnect the sender: over the threshold within the window.
    Disconnect,
}

/// Per-sender malformed-message counts, keyed by whatever names a sender (renet's
/// `ClientId`, a socket address).
///
/// ```
/// use lagcomp_wire::{ClientMessage, GuardConfig, MalformedGuard, Penalty};
///
/// let mut guard = MalformedGuard::new(GuardConfig { threshold: 2, window: 1.0 })?;
/// let client = 7_u64;
/// let garbage = [0xff_u8; 12];
/// let mut penalties = Vec::new();
/// for now in [0.0, 0.1, 0.2] {
///     if ClientMessage::decode(&garbage).is_err() {
///         penalties.push(guard.record(client, now));
///     }
/// }
/// assert_eq!(penalties, [Penalty::Drop, Penalty::Drop, Penalty::Disconnect]);
/// assert_eq!(guard.total(&client), 3);
/// # Ok::<(), lagcomp_wire::GuardConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct MalformedGuard<K> {
    config: GuardConfig,
    senders: HashMap<K, SenderRecord>,
}

#[derive(Debug, Clone, Default)]
struct SenderRecord {
    /// Arrival times within the window, oldest first; at most `threshold + 1`.
    recent: VecDeque<f64>,
    /// Every malformed message ever counted.
    total: u64,
}

impl<K: Hash + Eq> MalformedGuard<K> {
    /// A guard with `config`.
    ///
    /// # Errors
    /// [`GuardConfigError::Window`] for a window that is not finite and positive.
    pub fn new(config: GuardConfig) -> Result<Self, GuardConfigError> {
        if !(config.window.is_finite() && config.window > 0.0) {
            return Err(GuardConfigError::Window(config.window));
        }
        Ok(Self {
            config,
            senders: HashMap::new(),
        })
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> GuardConfig {
        self.config
    }

    /// Counts a malformed message from `sender` at `now` and says what to do with the
    /// sender. A `now` earlier than the sender's last one (or not finite) counts as that
    /// last one, so a clock that steps back never forgives anything.
    pub fn record(&mut self, sender: K, now: f64) -> Penalty {
        let limit = usize::from(self.config.threshold);
        let window = self.config.window;
        let record = self.senders.entry(sender).or_default();
        let last = record.recent.back().copied();
        let now = match last {
            Some(last) if !(now.is_finite() && now >= last) => last,
            None if !now.is_finite() => 0.0,
            _ => now,
        };
        record.total = record.total.saturating_add(1);
        record.recent.push_back(now);
        forget_before(&mut record.recent, now - window);
        // Only whether the count is over the threshold matters: keep no more than that.
        while record.recent.len() > limit + 1 {
            record.recent.pop_front();
        }
        if record.recent.len() > limit {
            Penalty::Disconnect
        } else {
            Penalty::Drop
        }
    }

    /// Malformed messages from `sender` within the window ending at `now` (capped at the
    /// threshold plus one).
    #[must_use]
    pub fn recent(&self, sender: &K, now: f64) -> usize {
        let window = self.config.window;
        self.senders.get(sender).map_or(0, |record| {
            record
                .recent
                .iter()
                .filter(|&&at| at > now - window)
                .count()
        })
    }

    /// Every malformed message counted from `sender` since it was last forgotten.
    #[must_use]
    pub fn total(&self, sender: &K) -> u64 {
        self.senders.get(sender).map_or(0, |record| record.total)
    }

    /// Forgets `sender` (call it when the sender disconnects, so the guard stays as small
    /// as the set of connected senders).
    pub fn forget(&mut self, sender: &K) {
        self.senders.remove(sender);
    }

    /// Senders with a count.
    #[must_use]
    pub fn senders(&self) -> usize {
        self.senders.len()
    }
}

/// Drops arrival times at or before `cutoff` (the window is half-open: `(now - window,
/// now]`).
fn forget_before(recent: &mut VecDeque<f64>, cutoff: f64) {
    while recent.front().is_some_and(|&at| at <= cutoff) {
        recent.pop_front();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(threshold: u16, window: f64) -> MalformedGuard<u64> {
        MalformedGuard::new(GuardConfig { threshold, window }).expect("a valid config")
    }

    #[test]
    fn disconnects_past_the_threshold_within_the_window() {
        let mut g = guard(3, 1.0);
        for (i, now) in [0.0, 0.2, 0.4].into_iter().enumerate() {
            assert_eq!(g.record(1, now), Penalty::Drop, "message {i}");
        }
        assert_eq!(g.recent(&1, 0.4), 3);
        assert_eq!(g.record(1, 0.6), Penalty::Disconnect);
        assert_eq!(g.total(&1), 4);
    }

    #[test]
    fn spaced_out_messages_are_only_dropped() {
        let mut g = guard(3, 1.0);
        // One every 0.3 s: never more than 3 within 1 s (0.0, 0.3, 0.6, 0.9 would be 4).
        for k in 0..1000 {
            let now = f64::from(k) * 0.34;
            assert_eq!(g.record(1, now), Penalty::Drop, "message {k} at {now}");
        }
        assert_eq!(g.total(&1), 1000);
        // The memory stays bounded by the threshold.
        assert!(g.senders[&1].recent.len() <= 4);
    }

    #[test]
    fn the_window_is_half_open() {
        let mut g = guard(1, 1.0);
        assert_eq!(g.record(1, 0.0), Penalty::Drop);
        // Exactly one window later the first no longer counts.
        assert_eq!(g.record(1, 1.0), Penalty::Drop);
        // Just within the window of the second, it does.
        assert_eq!(g.record(1, 1.999), Penalty::Disconnect);
    }

    #[test]
    fn a_burst_is_forgiven_once_the_window_passes() {
        let mut g = guard(2, 5.0);
        assert_eq!(g.record(1, 0.0), Penalty::Drop);
        assert_eq!(g.record(1, 0.0), Penalty::Drop);
        assert_eq!(g.record(1, 0.0), Penalty::Disconnect);
        assert_eq!(g.recent(&1, 4.0), 3);
        assert_eq!(g.recent(&1, 5.0), 0);
        assert_eq!(g.record(1, 5.5), Penalty::Drop);
    }

    #[test]
    fn senders_are_counted_apart_and_forgotten() {
        let mut g = guard(1, 10.0);
        assert_eq!(g.record(1, 0.0), Penalty::Drop);
        assert_eq!(g.record(2, 0.0), Penalty::Drop);
        assert_eq!(g.record(2, 0.1), Penalty::Disconnect);
        assert_eq!(g.recent(&1, 0.1), 1);
        assert_eq!(g.senders(), 2);
        g.forget(&2);
        assert_eq!(g.senders(), 1);
        assert_eq!(g.total(&2), 0);
        assert_eq!(g.record(2, 0.2), Penalty::Drop);
    }

    #[test]
    fn threshold_zero_disconnects_at_the_first() {
        let mut g = guard(0, 1.0);
        assert_eq!(g.record(9, 3.0), Penalty::Disconnect);
    }

    #[test]
    fn time_running_backwards_or_nan_forgives_nothing() {
        let mut g = guard(2, 1.0);
        assert_eq!(g.record(1, 100.0), Penalty::Drop);
        // A clock that stepped back a long way still counts within the last window.
        assert_eq!(g.record(1, 0.0), Penalty::Drop);
        assert_eq!(g.record(1, f64::NAN), Penalty::Disconnect);
        let mut g = guard(1, 1.0);
        assert_eq!(g.record(1, 5.0), Penalty::Drop);
        // An infinite clock would otherwise age every count out of the window.
        assert_eq!(g.record(1, f64::INFINITY), Penalty::Disconnect);
        let mut g = guard(1, 1.0);
        assert_eq!(g.record(1, f64::INFINITY), Penalty::Drop);
        assert_eq!(g.record(1, f64::NEG_INFINITY), Penalty::Disconnect);
        assert_eq!(g.total(&1), 2);
    }

    #[test]
    fn bad_windows_are_refused() {
        for window in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(
                MalformedGuard::<u64>::new(GuardConfig {
                    threshold: 1,
                    window
                })
                .is_err(),
                "{window}"
            );
        }
        assert_eq!(GuardConfig::default().threshold, 20);
    }
}

//! Ticks, server time, and the ways a caller names the past moment to rewind to.
//!
//! The crate never reads a clock: server time is an `f64` of seconds that the caller passes
//! in when recording a frame, and "now" is an argument wherever it matters
//! ([`RewindTarget::Latency`]). Resolving a target against the recorded frames happens in
//! [`crate::history`]; this module only defines the vocabulary and its errors.

use std::fmt;

/// A server simulation tick number. Ticks increase; they may skip.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Tick(pub u32);

impl fmt::Display for Tick {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tick {}", self.0)
    }
}

/// The past moment a query should see.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum RewindTarget {
    /// An absolute server time in seconds.
    Time(f64),
    /// Exactly what a client drew: the pose interpolated from the frame of tick `from` to
    /// the frame of tick `to` at `fraction` (0 = `from`, 1 = `to`).
    ///
    /// The two frames are blended directly, even when the server recorded other ticks
    /// between them (the client may never have received those), so the server rebuilds the
    /// very picture the client rendered.
    Ticks {
        /// The older tick the client interpolated from.
        from: Tick,
        /// The newer tick the client interpolated towards; equal to `from` for a held frame.
        to: Tick,
        /// Progress from `from` to `to`, in `[0, 1]`.
        fraction: f32,
    },
    /// `latency` seconds before `now` (both in server seconds).
    Latency {
        /// The present server time.
        now: f64,
        /// How far back to look, in seconds; not negative.
        latency: f64,
    },
}

impl RewindTarget {
    /// A target at an absolute server time.
    #[must_use]
    pub const fn at(time: f64) -> Self {
        Self::Time(time)
    }

    /// A target between two ticks, as a client interpolated them.
    #[must_use]
    pub const fn between(from: Tick, to: Tick, fraction: f32) -> Self {
        Self::Ticks { from, to, fraction }
    }

    /// A target `latency` seconds before `now`.
    #[must_use]
    pub const fn latency(now: f64, latency: f64) -> Self {
        Self::Latency { now, latency }
    }
}

/// What to do with a target outside the recorded window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum WindowPolicy {
    /// Refuse with [`RewindError::OutOfWindow`] (the default: a claimed time is never
    /// silently moved).
    #[default]
    Reject,
    /// Move the target to the nearest edge of the window and report that it was clamped.
    Clamp,
}

/// Which side of the window a target fell off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum WindowSide {
    /// Older than the rewind window or than the oldest frame kept.
    TooOld,
    /// Newer than the newest recorded frame (the crate never extrapolates).
    TooNew,
}

/// In words, for messages: `too old`, `too new`.
impl fmt::Display for WindowSide {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::TooOld => "too old",
            Self::TooNew => "too new",
        })
    }
}

/// Why a rewind target could not be resolved to recorded history.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum RewindError {
    /// Nothing has been recorded yet.
    #[error("no frames have been recorded")]
    Empty,
    /// A time, latency or fraction was NaN or infinite, or a latency was negative.
    #[error("rewind target is not a finite, non-negative time: {0}")]
    InvalidTime(f64),
    /// An extrapolation ([`History::entity_extrapolated`](crate::History::entity_extrapolated))
    /// by a number of seconds that is NaN, infinite or negative.
    #[error("extrapolation by {0} s is not a finite, non-negative time")]
    InvalidExtrapolation(f64),
    /// A tick fraction outside `[0, 1]` or not finite.
    #[error("tick fraction {0} is outside [0, 1]")]
    InvalidFraction(f32),
    /// `from` is after `to`.
    #[error("ticks are out of order: from {from} to {to}")]
    TicksOutOfOrder {
        /// The claimed older tick.
        from: Tick,
        /// The claimed newer tick.
        to: Tick,
    },
    /// A named tick was never recorded or has aged out of the history.
    #[error("{0} is not in the history")]
    UnknownTick(Tick),
    /// The target lies outside the window. Nothing was moved; the caller may retry with
    /// [`WindowPolicy::Clamp`].
    #[error(
        "requested time {requested:.4} s is {side}: the history holds {oldest:.4} s to {newest:.4} s"
    )]
    OutOfWindow {
        /// The time that was asked for.
        requested: f64,
        /// The oldest time a query may use (window start or oldest frame, whichever is newer).
        oldest: f64,
        /// The newest recorded frame's time.
        newest: f64,
        /// Which side it fell off.
        side: WindowSide,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_out_of_window_message_reads_as_words() {
        let e = RewindError::OutOfWindow {
            requested: 0.1,
            oldest: 0.5,
            newest: 1.0,
            side: WindowSide::TooOld,
        };
        assert_eq!(
            e.to_string(),
            "requested time 0.1000 s is too old: the history holds 0.5000 s to 1.0000 s"
        );
        let e = RewindError::OutOfWindow {
            side: WindowSide::TooNew,
            requested: 1.5,
            oldest: 0.5,
            newest: 1.0,
        };
        assert!(e.to_string().contains("is too new:"), "{e}");
    }
}

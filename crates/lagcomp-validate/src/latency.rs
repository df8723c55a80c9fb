//! Measuring a client's [`ClientTiming`] on the server: probes out, replies and snapshot
//! acknowledgements in.
//!
//! A [`LatencyTracker`] is one connection's measurement. The server sends the client a
//! probe id a few times a second and tells the tracker ([`LatencyTracker::probe_sent`]);
//! the client echoes the id in its next message, and the server hands the reply over
//! ([`LatencyTracker::reply_received`]): one round-trip sample, smoothed as TCP does it
//! (RFC 6298, [`RttEstimator`]). The client also reports how far in the past it draws
//! others ([`LatencyTracker::delay_reported`]). [`LatencyTracker::timing`] is what to hand
//! [`Validator::set_timing`](crate::Validator::set_timing).
//!
//! # The fake-latency ceiling
//!
//! The validator lets a shot reach back half the measured round trip plus the
//! interpolation delay. A client that answers probes late while sending its inputs on time
//! (a "fake latency" cheat) makes the server believe in a longer round trip, and so accept
//! shots claiming older moments than it could have drawn (backtracking). Every input can
//! also name the newest snapshot tick its client holds, and the first input to name a tick
//! arrives one round trip (and at most a client frame) after that tick was recorded: a
//! second echo, carried by the inputs the cheat needs on time
//! ([`LatencyTracker::snapshot_acked`]). With the ceiling on (the default), the round trip
//! in [`LatencyTracker::timing`] is the probes' one, but never more than this echo's plus
//! [`ECHO_SLACK`]; a client that acknowledges no snapshot gets no latency credit.
//!
//! A client can hold back its acknowledgements as well as its probe answers, and then looks
//! exactly like a client that far away: it gets what an honest client at that round trip
//! gets, no more (its claimed times still have to fit it). Naming a tick before it arrived
//! only shortens its own round trip.
//!
//! Units: seconds, in the server's clock (the one given to
//! [`History::begin_frame`](lagcomp::History::begin_frame)). The tracker reads no clock:
//! every call takes the server time `now`, which must never go backwards. Bad input
//! (non-finite or negative times, replies to probes never sent or already answered, times
//! going backwards) is refused with a [`LatencyError`] and changes nothing. Nothing
//! allocates: the probes in flight are a fixed array of [`PROBES_IN_FLIGHT`].

use lagcomp::{History, Tick};
use lagcomp_net::RttEstimator;

use crate::ClientTiming;

/// How many probes a tracker remembers while their replies are awaited: when one more is
/// sent, the oldest unanswered is forgotten (its reply, if it ever comes, is then
/// [`LatencyError::UnknownProbe`]). At 5 probes a second that is over 3 s of silence.
pub const PROBES_IN_FLIGHT: usize = 16;

/// How much longer than the acknowledgement echo's the probes' round trip may be, and how
/// much larger its variation, seconds. The two echoes ride the same inputs, so an honest
/// client's differ only by the phase of its frames against the ticks and by which of two
/// bunched snapshots it acknowledges: a few milliseconds either way (in the simulator at
/// 100/25/2 % and 300/75/6 %, seed 1, the echo's round trip ran 2 to 10 ms under the
/// probes' for most players, up to 7 ms over for a few). The slack keeps the ceiling off
/// honest clients and is all a fake latency can add to the backtracking tolerance (at most
/// `ECHO_SLACK / 2 + rewind_jitter_factor × ECHO_SLACK`, 22.5 ms by default).
pub const ECHO_SLACK: f64 = 0.005;

/// The interpolation delay assumed until the client reports one, seconds.
pub const ASSUMED_INTERP_DELAY: f64 = 0.1;

/// The largest interpolation delay a client may report, seconds: more is taken as this
/// much, so a client cannot widen its own rewind window without bound.
pub const MAX_INTERP_DELAY: f64 = 0.3;

/// Why a [`LatencyTracker`] refused an event. The tracker is unchanged.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum LatencyError {
    /// A time or delay was NaN or infinite.
    #[error("{what} is {value}, not a number of seconds")]
    NotFinite {
        /// Which value (`"now"`, `"interpolation delay"`).
        what: &'static str,
        /// The value.
        value: f64,
    },
    /// A time or delay was below zero.
    #[error("{what} is {value} s, below zero")]
    Negative {
        /// Which value (`"now"`, `"interpolation delay"`).
        what: &'static str,
        /// The value, seconds.
        value: f64,
    },
    /// `now` was before a time the tracker was already given.
    #[error("server time went backwards: {now} s after {latest} s")]
    TimeWentBack {
        /// The time given, seconds.
        now: f64,
        /// The latest time given before, seconds.
        latest: f64,
    },
    /// A probe was sent with the id of one still awaiting its reply.
    #[error("probe {0} is already awaiting its reply")]
    ProbeInFlight(u32),
    /// A reply to a probe this tracker never sent, or forgot (more than
    /// [`PROBES_IN_FLIGHT`] newer ones were sent since).
    #[error("reply to probe {0}, which was never sent or is long forgotten")]
    UnknownProbe(u32),
    /// A second reply to a probe already answered (a duplicated or replayed message).
    #[error("second reply to probe {0}")]
    DuplicateReply(u32),
    /// An acknowledgement of a snapshot tick the history does not hold (never recorded,
    /// or older than its window).
    #[error("acknowledged tick {} is not in the history", .0.0)]
    UnknownTick(Tick),
}

/// One remembered probe.
#[derive(Debug, Clone, Copy, PartialEq)]
enum ProbeSlot {
    Empty,
    /// Sent at this time; no reply yet.
    Awaiting {
        id: u32,
        sent: f64,
    },
    /// Answered: kept so that a second reply is told apart from an unknown one.
    Answered {
        id: u32,
        sent: f64,
    },
}

impl ProbeSlot {
    fn id(self) -> Option<u32> {
        match self {
            Self::Empty => None,
            Self::Awaiting { id, .. } | Self::Answered { id, .. } => Some(id),
        }
    }
}

/// One connection's round trip, its variation and its interpolation delay, measured on
/// the server (see the [module documentation](self)).
///
/// # Example
///
/// A client 80 ms away that draws others 50 ms late; probes every 0.2 s.
///
/// ```
/// use lagcomp::{History, HistoryConfig, Tick};
/// use lagcomp_validate::latency::{LatencyError, LatencyTracker};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut history = History::new(HistoryConfig { tick_rate: 50.0, max_rewind: 1.0 })?;
/// let mut tracker = LatencyTracker::new();
/// assert_eq!(tracker.timing(), None); // nothing measured yet: the validator says no_timing
///
/// for step in 0..10u32 {
///     let now = f64::from(step) * 0.2;
///     let tick = Tick(step * 10);
///     drop(history.begin_frame(tick, now)?); // record the tick's bodies here
///     tracker.probe_sent(step, now)?;
///     // 80 ms later the client's input arrives: it answers the probe, acknowledges the
///     // snapshot of `tick` and reports its interpolation delay.
///     let arrived = now + 0.08;
///     assert!((tracker.reply_received(step, arrived)? - 0.08).abs() < 1e-9);
///     tracker.snapshot_acked(tick, true, arrived, &history)?;
///     tracker.delay_reported(0.05)?;
/// }
/// let timing = tracker.timing().expect("measured");
/// assert!((timing.srtt - 0.08).abs() < 1e-9);
/// assert_eq!(timing.interp_delay, 0.05);
/// // validator.set_timing(player, timing)?;
///
/// // A replayed reply is refused and changes nothing.
/// assert_eq!(tracker.reply_received(9, 2.0), Err(LatencyError::DuplicateReply(9)));
/// assert_eq!(tracker.timing(), Some(timing));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyTracker {
    probes: [ProbeSlot; PROBES_IN_FLIGHT],
    /// The round trip from probe replies.
    rtt: RttEstimator,
    /// The round trip from snapshot acknowledgements, which caps `rtt`.
    echo: RttEstimator,
    /// The newest tick an input acknowledged.
    newest_acked: Option<Tick>,
    echo_ceiling: bool,
    interp_delay: f64,
    /// The latest `now` given; `-inf` before any.
    latest: f64,
}

impl Default for LatencyTracker {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyTracker {
    /// A tracker that has measured nothing, with the fake-latency ceiling on and the
    /// interpolation delay assumed to be [`ASSUMED_INTERP_DELAY`] until reported.
    #[must_use]
    pub fn new() -> Self {
        Self {
            probes: [ProbeSlot::Empty; PROBES_IN_FLIGHT],
            rtt: RttEstimator::new(),
            echo: RttEstimator::new(),
            newest_acked: None,
            echo_ceiling: true,
            interp_delay: ASSUMED_INTERP_DELAY,
            latest: f64::NEG_INFINITY,
        }
    }

    /// Whether [`LatencyTracker::timing`] holds the probes' round trip to the snapshot
    /// acknowledgements' (on by default: the fake-latency defence). Off only for a client
    /// that sends no acknowledgements, or to measure what the defence changes.
    pub fn set_echo_ceiling(&mut self, on: bool) {
        self.echo_ceiling = on;
    }

    /// Probe `id` was sent to the client at server time `now`. When
    /// [`PROBES_IN_FLIGHT`] probes already await their replies, the oldest is forgotten.
    ///
    /// # Errors
    /// A `now` that is not finite, negative or before an earlier call's, or an `id` still
    /// awaiting its reply.
    pub fn probe_sent(&mut self, id: u32, now: f64) -> Result<(), LatencyError> {
        self.check_now(now)?;
        if self
            .probes
            .iter()
            .any(|slot| matches!(slot, ProbeSlot::Awaiting { id: waiting, .. } if *waiting == id))
        {
            return Err(LatencyError::ProbeInFlight(id));
        }
        // An empty slot, else the oldest answered one (its reply can only be a duplicate
        // now), else the oldest awaiting one.
        let rank = |slot: &ProbeSlot| match *slot {
            ProbeSlot::Empty => (0, f64::NEG_INFINITY),
            ProbeSlot::Answered { sent, .. } => (1, sent),
            ProbeSlot::Awaiting { sent, .. } => (2, sent),
        };
        let mut victim = 0;
        for (i, slot) in self.probes.iter().enumerate() {
            let (kind, sent) = rank(slot);
            let (best_kind, best_sent) = rank(&self.probes[victim]);
            if kind < best_kind || (kind == best_kind && sent < best_sent) {
                victim = i;
            }
        }
        self.probes[victim] = ProbeSlot::Awaiting { id, sent: now };
        self.latest = now;
        Ok(())
    }

    /// The client's reply to probe `id` arrived at server time `now`: one round-trip
    /// sample, which is returned, seconds.
    ///
    /// # Errors
    /// A `now` that is not finite, negative or before an earlier call's; a probe never
    /// sent or forgotten ([`LatencyError::UnknownProbe`]) or already answered
    /// ([`LatencyError::DuplicateReply`]).
    pub fn reply_received(&mut self, id: u32, now: f64) -> Result<f64, LatencyError> {
        self.check_now(now)?;
        let slot = self
            .probes
            .iter_mut()
            .find(|slot| slot.id() == Some(id))
            .ok_or(LatencyError::UnknownProbe(id))?;
        let ProbeSlot::Awaiting { sent, .. } = *slot else {
            return Err(LatencyError::DuplicateReply(id));
        };
        // Never negative: `sent` is a time given earlier, and `now` is not before it.
        let sample = now - sent;
        *slot = ProbeSlot::Answered { id, sent };
        self.rtt.sample(sample);
        self.latest = now;
        Ok(sample)
    }

    /// An input that arrived at server time `now` says its client holds snapshots up to
    /// tick `acked`. The first input to name a tick newer than any before takes a
    /// round-trip sample from when `history` recorded that tick, if the input `follows`
    /// the one received before it (the frame right after): after a lost input the tick may
    /// have arrived a frame or a burst of losses earlier than the input that names it,
    /// which would stretch the sample (probe replies, sent once, are never stretched so).
    /// Returns the sample taken, seconds, if any (`None` for a tick already acknowledged,
    /// or after a lost input).
    ///
    /// # Errors
    /// A `now` that is not finite, negative or before an earlier call's; a tick the
    /// history does not hold ([`LatencyError::UnknownTick`]).
    pub fn snapshot_acked(
        &mut self,
        acked: Tick,
        follows: bool,
        now: f64,
        history: &History,
    ) -> Result<Option<f64>, LatencyError> {
        self.check_now(now)?;
        if self.newest_acked.is_some_and(|newest| acked <= newest) {
            self.latest = now;
            return Ok(None);
        }
        let recorded = history
            .time_of(acked)
            .ok_or(LatencyError::UnknownTick(acked))?;
        self.latest = now;
        self.newest_acked = Some(acked);
        if !follows {
            return Ok(None);
        }
        let sample = now - recorded;
        self.echo.sample(sample);
        Ok(Some(sample))
    }

    /// The client reports it draws others `delay` seconds in the past. More than
    /// [`MAX_INTERP_DELAY`] is taken as that much.
    ///
    /// # Errors
    /// A delay that is not finite or is negative.
    pub fn delay_reported(&mut self, delay: f64) -> Result<(), LatencyError> {
        check_seconds("interpolation delay", delay)?;
        self.interp_delay = delay.min(MAX_INTERP_DELAY);
        Ok(())
    }

    /// The client's timing, once a probe reply has been received: the probes' smoothed
    /// round trip and variation (each held to the acknowledgements' plus [`ECHO_SLACK`]
    /// when the ceiling is on) and the reported interpolation delay. Hand it to
    /// [`Validator::set_timing`](crate::Validator::set_timing).
    #[must_use]
    pub fn timing(&self) -> Option<ClientTiming> {
        let (mut srtt, mut rttvar) = (self.rtt.srtt()?, self.rtt.rttvar()?);
        if self.echo_ceiling {
            // The variation is held as well as the mean: a late first answer alone starts
            // the variation at half that round trip, and late answers of varying lateness
            // keep it high, which widens the tolerance as much as a longer round trip
            // shifts it.
            srtt = srtt.min(self.echo.srtt().unwrap_or(0.0) + ECHO_SLACK);
            rttvar = rttvar.min(self.echo.rttvar().unwrap_or(0.0) + ECHO_SLACK);
        }
        Some(ClientTiming {
            srtt,
            rttvar,
            interp_delay: self.interp_delay,
        })
    }

    /// The round trip measured from probe replies alone, with no ceiling.
    #[must_use]
    pub fn probe_round_trip(&self) -> &RttEstimator {
        &self.rtt
    }

    /// The round trip measured from snapshot acknowledgements alone.
    #[must_use]
    pub fn ack_round_trip(&self) -> &RttEstimator {
        &self.echo
    }

    /// The interpolation delay last reported (clamped), or [`ASSUMED_INTERP_DELAY`].
    #[must_use]
    pub fn interp_delay(&self) -> f64 {
        self.interp_delay
    }

    fn check_now(&self, now: f64) -> Result<(), LatencyError> {
        check_seconds("now", now)?;
        if now < self.latest {
            return Err(LatencyError::TimeWentBack {
                now,
                latest: self.latest,
            });
        }
        Ok(())
    }
}

fn check_seconds(what: &'static str, value: f64) -> Result<(), LatencyError> {
    if !value.is_finite() {
        Err(LatencyError::NotFinite { what, value })
    } else if value < 0.0 {
        Err(LatencyError::Negative { what, value })
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use lagcomp::HistoryConfig;

    use super::*;

    fn history(ticks: u32) -> History {
        let mut history = History::new(HistoryConfig {
            tick_rate: 10.0,
            max_rewind: 1.0,
        })
        .expect("a valid configuration");
        for tick in 0..ticks {
            let frame = history.begin_frame(Tick(tick), f64::from(tick) * 0.1);
            drop(frame.expect("ticks increase"));
        }
        history
    }

    /// `a` and `b` within `1e-12`, saying by how much when not.
    fn assert_close(a: f64, b: f64) {
        assert!(
            (a - b).abs() < 1e-12,
            "{a} vs {b}: off by {}",
            (a - b).abs()
        );
    }

    #[test]
    fn replies_are_smoothed_as_rfc_6298() {
        let mut tracker = LatencyTracker::new();
        tracker.set_echo_ceiling(false);
        tracker.probe_sent(1, 0.0).unwrap();
        assert_close(tracker.reply_received(1, 0.1).unwrap(), 0.1);
        tracker.probe_sent(2, 0.2).unwrap();
        assert_close(tracker.reply_received(2, 0.32).unwrap(), 0.12);
        let timing = tracker.timing().unwrap();
        assert_close(timing.srtt, 0.875 * 0.1 + 0.125 * 0.12);
        assert_close(timing.rttvar, 0.75 * 0.05 + 0.25 * 0.02);
        assert_eq!(timing.interp_delay, ASSUMED_INTERP_DELAY);
    }

    #[test]
    fn bad_events_are_refused_and_change_nothing() {
        let history = history(4);
        let mut tracker = LatencyTracker::new();
        tracker.probe_sent(1, 0.1).unwrap();
        tracker.probe_sent(2, 0.2).unwrap();
        tracker.reply_received(1, 0.25).unwrap();
        tracker.delay_reported(0.05).unwrap();
        let before = tracker.clone();
        let refused = [
            tracker.probe_sent(3, f64::NAN),
            tracker.probe_sent(3, f64::INFINITY),
            tracker.probe_sent(3, -1.0),
            tracker.probe_sent(3, 0.2),
            tracker.probe_sent(2, 0.3),
            tracker.reply_received(1, 0.3).map(drop),
            tracker.reply_received(7, 0.3).map(drop),
            tracker.reply_received(2, 0.24).map(drop),
            tracker.reply_received(2, f64::NEG_INFINITY).map(drop),
            tracker.delay_reported(f64::NAN),
            tracker.delay_reported(-0.01),
            tracker
                .snapshot_acked(Tick(40), true, 0.3, &history)
                .map(drop),
            tracker
                .snapshot_acked(Tick(1), true, 0.2, &history)
                .map(drop),
        ];
        assert_eq!(
            refused.map(|r| r.unwrap_err().to_string()),
            [
                LatencyError::NotFinite {
                    what: "now",
                    value: f64::NAN
                },
                LatencyError::NotFinite {
                    what: "now",
                    value: f64::INFINITY
                },
                LatencyError::Negative {
                    what: "now",
                    value: -1.0
                },
                LatencyError::TimeWentBack {
                    now: 0.2,
                    latest: 0.25
                },
                LatencyError::ProbeInFlight(2),
                LatencyError::DuplicateReply(1),
                LatencyError::UnknownProbe(7),
                LatencyError::TimeWentBack {
                    now: 0.24,
                    latest: 0.25
                },
                LatencyError::NotFinite {
                    what: "now",
                    value: f64::NEG_INFINITY
                },
                LatencyError::NotFinite {
                    what: "interpolation delay",
                    value: f64::NAN
                },
                LatencyError::Negative {
                    what: "interpolation delay",
                    value: -0.01
                },
                LatencyError::UnknownTick(Tick(40)),
                LatencyError::TimeWentBack {
                    now: 0.2,
                    latest: 0.25
                },
            ]
            .map(|e| e.to_string()),
        );
        assert_eq!(tracker, before);
    }

    #[test]
    fn a_nan_error_says_what_was_nan() {
        let mut tracker = LatencyTracker::new();
        let error = tracker.probe_sent(1, f64::NAN).unwrap_err();
        assert_eq!(error.to_string(), "now is NaN, not a number of seconds");
        assert_eq!(tracker, LatencyTracker::new());
    }

    #[test]
    fn the_oldest_unanswered_probe_is_forgotten_first() {
        let mut tracker = LatencyTracker::new();
        tracker.probe_sent(0, 0.0).unwrap();
        tracker.reply_received(0, 0.05).unwrap();
        // Probes 1..=16 go unanswered: the answered probe 0 makes room first, then 1.
        for id in 1..=16 {
            tracker.probe_sent(id, f64::from(id)).unwrap();
        }
        assert_eq!(
            tracker.reply_received(0, 20.0),
            Err(LatencyError::UnknownProbe(0))
        );
        tracker.probe_sent(17, 17.0).unwrap();
        assert_eq!(
            tracker.reply_received(1, 20.0),
            Err(LatencyError::UnknownProbe(1))
        );
        assert_close(tracker.reply_received(2, 20.0).unwrap(), 18.0);
        assert_close(tracker.reply_received(17, 20.0).unwrap(), 3.0);
    }

    #[test]
    fn an_oversized_delay_is_capped() {
        let mut tracker = LatencyTracker::new();
        tracker.delay_reported(5.0).unwrap();
        assert_eq!(tracker.interp_delay(), MAX_INTERP_DELAY);
        tracker.delay_reported(0.0).unwrap();
        assert_eq!(tracker.interp_delay(), 0.0);
    }

    #[test]
    fn only_the_first_acknowledgement_of_a_tick_right_after_the_last_input_counts() {
        let history = history(6);
        let mut tracker = LatencyTracker::new();
        // Tick 1 (0.1 s) named at 0.25 s, right after an input that did not name it.
        let sample = tracker.snapshot_acked(Tick(1), true, 0.25, &history);
        assert_close(sample.unwrap().unwrap(), 0.15);
        for (tick, follows, now) in [
            // Named again later, or an older tick: no new sample.
            (1, true, 0.9),
            (0, true, 0.9),
            // After a lost input, the tick may have arrived long before: no sample
            // either, and the tick is used up.
            (2, false, 0.9),
            (2, true, 0.95),
        ] {
            let sample = tracker.snapshot_acked(Tick(tick), follows, now, &history);
            assert_eq!(sample, Ok(None), "tick {tick} at {now} s");
        }
        assert_close(tracker.ack_round_trip().srtt().unwrap(), 0.15);
        assert_eq!(tracker.ack_round_trip().samples(), 1);
    }

    #[test]
    fn the_ceiling_holds_the_probes_to_the_echo() {
        let history = history(3);
        let mut tracker = LatencyTracker::new();
        tracker.probe_sent(1, 0.0).unwrap();
        tracker.reply_received(1, 0.6).unwrap();
        // A 0.6 s probe round trip (variation 0.3) and no acknowledgement yet: only the
        // slack.
        let timing = tracker.timing().unwrap();
        assert_eq!((timing.srtt, timing.rttvar), (ECHO_SLACK, ECHO_SLACK));
        // Tick 1 (0.1 s) acknowledged at 0.7 s: the echo agrees with the probes (0.6 s),
        // which then pass unchanged.
        tracker
            .snapshot_acked(Tick(1), true, 0.7, &history)
            .unwrap();
        let (srtt, rttvar) = (
            tracker.ack_round_trip().srtt().unwrap(),
            tracker.ack_round_trip().rttvar().unwrap(),
        );
        let timing = tracker.timing().unwrap();
        assert_close(timing.srtt, 0.6f64.min(srtt + ECHO_SLACK));
        assert_close(timing.rttvar, 0.3f64.min(rttvar + ECHO_SLACK));
        assert_close(timing.srtt, 0.6);
        // Without the ceiling the probes stand alone.
        tracker.set_echo_ceiling(false);
        assert_close(tracker.timing().unwrap().srtt, 0.6);
    }

    #[test]
    fn a_fake_latency_gains_only_the_slack() {
        let history = history(6);
        let mut tracker = LatencyTracker::new();
        // Inputs on time (50 ms echo), probe answers held back 400 ms.
        for tick in 1..6u32 {
            let recorded = f64::from(tick) * 0.1;
            tracker
                .snapshot_acked(Tick(tick), true, recorded + 0.05, &history)
                .unwrap();
        }
        tracker.probe_sent(1, 0.55).unwrap();
        tracker.reply_received(1, 1.0).unwrap();
        let timing = tracker.timing().unwrap();
        let echo = tracker.ack_round_trip().srtt().unwrap();
        assert_close(echo, 0.05);
        assert_close(timing.srtt, 0.05 + ECHO_SLACK);
        assert!(tracker.probe_round_trip().srtt().unwrap() > 0.4);
    }
}

//! The round trip a server measures on its own from the snapshot ticks a player's inputs
//! acknowledge, and the ceiling it puts on the round trip measured from probes.
//!
//! The validator lets a shot reach back half the measured round trip plus the
//! interpolation delay. The round trip comes from the server's probes, which the client
//! answers; a client that answers them late while sending its inputs on time (a "fake
//! latency" cheat) makes the server believe in a longer round trip, and so accept shots
//! claiming older moments than it could have drawn (backtracking). Every input also names
//! the newest snapshot tick its client holds, and the first input to name a tick arrives
//! one round trip (and at most a client frame) after that tick was recorded: a second
//! echo, carried by the inputs the cheat needs on time. The round trip handed to the
//! validator is the probes' one, but never more than this echo's plus [`ECHO_SLACK`].
//!
//! A client can hold back its acknowledgements as well as its probe answers, and then
//! looks exactly like a client that far away: it gets what an honest client at that round
//! trip gets, no more (its claimed times still have to fit it). Naming a tick before it
//! arrived only shortens its own round trip.

use lagcomp::{History, Tick};
use lagcomp_net::clock::RttEstimator;

/// How much longer than the acknowledgement echo's the probes' round trip may be, and how
/// much larger its variation, seconds. The two echoes ride the same inputs, so an honest
/// client's differ only by the phase of its frames against the ticks and by which of two
/// bunched snapshots it acknowledges: a few milliseconds either way (in the simulator at
/// 100/25/2 % and 300/75/6 %, seed 1, the echo's round trip ran 2 to 10 ms under the
/// probes' for most players, up to 7 ms over for a few). The slack keeps the ceiling
/// off honest clients and is all a fake latency can add to the backtracking tolerance
/// (at most `ECHO_SLACK / 2 + rewind_jitter_factor × ECHO_SLACK`, 22.5 ms by default).
pub const ECHO_SLACK: f64 = 0.005;

/// One player's acknowledgement echo.
#[derive(Debug, Clone, Copy, Default)]
pub struct SnapshotEcho {
    /// The newest tick an input acknowledged.
    newest: Option<Tick>,
    rtt: RttEstimator,
}

impl SnapshotEcho {
    /// An input that arrived at server time `now` saying its client holds snapshots up to
    /// tick `acked`: the first to name a tick newer than any before takes a round-trip
    /// sample, from when `history` recorded that tick, if the input `follows` the one
    /// received before it (the frame right after). After a lost input the tick may have
    /// arrived a frame or a burst of losses earlier than the input that names it, which
    /// would stretch the sample (probe answers, sent once, are never stretched so). A tick
    /// the history no longer (or never) held is ignored.
    pub fn on_input(&mut self, acked: Option<Tick>, follows: bool, now: f64, history: &History) {
        let Some(tick) = acked else {
            return;
        };
        if self.newest.is_some_and(|newest| tick <= newest) {
            return;
        }
        if let Some(recorded) = history.time_of(tick) {
            self.newest = Some(tick);
            if follows {
                self.rtt.sample(now - recorded);
            }
        }
    }

    /// The smoothed round trip of the echo, once sampled.
    #[must_use]
    pub fn srtt(&self) -> Option<f64> {
        self.rtt.srtt()
    }

    /// The echo's round-trip variation, once sampled.
    #[must_use]
    pub fn rttvar(&self) -> Option<f64> {
        self.rtt.rttvar()
    }

    /// `(srtt, rttvar)` measured from probes, each held to at most this echo's plus
    /// [`ECHO_SLACK`]. The variation is held as well as the mean: a late first answer
    /// alone starts the variation at half that round trip, and late answers of varying
    /// lateness keep it high, which widens the tolerance as much as a longer round trip
    /// shifts it. Before any acknowledgement the echo allows only the slack: a client
    /// that acknowledges no snapshot gets no latency credit.
    #[must_use]
    pub fn ceiling(&self, srtt: f64, rttvar: f64) -> (f64, f64) {
        (
            srtt.min(self.srtt().unwrap_or(0.0) + ECHO_SLACK),
            rttvar.min(self.rttvar().unwrap_or(0.0) + ECHO_SLACK),
        )
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

    #[test]
    fn only_the_first_acknowledgement_of_a_tick_right_after_the_last_input_counts() {
        let history = history(6);
        let mut echo = SnapshotEcho::default();
        echo.on_input(None, true, 0.1, &history);
        assert_eq!(echo.srtt(), None);
        // Tick 1 (0.1 s) named at 0.25 s, right after an input that did not name it.
        echo.on_input(Some(Tick(1)), true, 0.25, &history);
        assert!((echo.srtt().unwrap() - 0.15).abs() < 1e-9);
        // Named again later, or an older tick: no new sample.
        echo.on_input(Some(Tick(1)), true, 0.9, &history);
        echo.on_input(Some(Tick(0)), true, 0.9, &history);
        // After a lost input, the tick may have arrived long before: no sample either,
        // and the tick is used up.
        echo.on_input(Some(Tick(2)), false, 0.9, &history);
        echo.on_input(Some(Tick(2)), true, 0.95, &history);
        // A tick never recorded says nothing.
        echo.on_input(Some(Tick(40)), true, 0.3, &history);
        assert!((echo.srtt().unwrap() - 0.15).abs() < 1e-9);
        assert_eq!(echo.rtt.samples(), 1);
    }

    #[test]
    fn the_ceiling_holds_the_probes_to_the_echo() {
        let history = history(3);
        let mut echo = SnapshotEcho::default();
        // No acknowledgement yet: only the slack.
        assert_eq!(echo.ceiling(0.6, 0.3), (ECHO_SLACK, ECHO_SLACK));
        echo.on_input(Some(Tick(1)), true, 0.2, &history);
        let (srtt, rttvar) = (echo.srtt().unwrap(), echo.rttvar().unwrap());
        assert_eq!(
            echo.ceiling(0.6, 0.3),
            (srtt + ECHO_SLACK, rttvar + ECHO_SLACK)
        );
        // Probes that agree with it pass unchanged.
        assert_eq!(echo.ceiling(srtt, rttvar / 2.0), (srtt, rttvar / 2.0));
    }
}

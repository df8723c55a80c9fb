//! Clock sync: the client's estimate of server time, and the round-trip time.
//!
//! What lives here: [`ClockSync`], the client side of an NTP-like exchange (the client
//! sends a [`Ping`], the server answers with a [`Pong`] carrying the two server
//! timestamps), the filter that turns those samples into an estimate of server time, and
//! the slewed, monotonic clock the game reads; [`RttEstimator`], the RFC 6298 round-trip
//! smoother, in [`rtt`]; the exchange's messages in [`exchange`]. What does not: sending
//! the messages (the caller owns the sockets) and reading the time (every call takes the
//! client's "now" as seconds).
//!
//! # How the estimate is made
//!
//! Each answered ping gives the four timestamps `t0` (client send), `t1` (server receive),
//! `t2` (server send) and `t3` (client receive), hence
//!
//! ```text
//! offset = ((t1 − t0) + (t2 − t3)) / 2      server time ≈ client time + offset
//! delay  = (t3 − t0) − (t2 − t1)            time spent on the network, both ways
//! ```
//!
//! The offset is exact when both directions take equally long. When they do not, it is
//! off by half the difference, `(up − down) / 2`, which is at most `delay / 2`: **no
//! exchange of timestamps can see route asymmetry**, so the error of this clock is bounded
//! by half the round trip of the sample it trusts, not by zero. Queueing delay is what
//! makes routes asymmetric in practice, so the filter trusts the sample with the least
//! delay among the last [`ClockConfig::samples`] (the NTP clock filter's rule).
//!
//! A client clock that runs fast or slow (0.1 % is common) makes an old sample's offset
//! stale. The filter fits the drift (the slope of the offset against client time) through
//! the best sample of each block of [`ClockConfig::samples`], over up to 32 blocks, and
//! carries every sample forward at the fitted rate. A block whose best sample falls off the
//! fitted line by more than four times the others' scatter is held back; if the next one
//! confirms it, the offset has stepped (a route changed, or the server's clock moved by
//! less than a jump) and the fit restarts from those two, keeping its drift meanwhile: a
//! step is never read as a rate.
//!
//! The game does not read the raw estimate, which moves in steps as samples come and go:
//! [`ClockSync::server_time`] runs a clock of its own that follows the estimate by changing
//! its rate by at most [`ClockConfig::slew_rate`] (slewing), jumps only when it is more than
//! [`ClockConfig::jump_threshold`] off, and never runs backwards: where a jump would go
//! back, it holds until the estimate catches up.

pub mod exchange;
pub mod rtt;

use std::collections::VecDeque;

pub use exchange::{Ping, Pong};
pub use rtt::RttEstimator;

/// How many consecutive samples must disagree with the estimate by more than the jump
/// threshold before the filter believes the server's clock stepped (one such sample could
/// be a forged or corrupted answer).
const STEP_CONFIRMATIONS: usize = 2;

/// How many blocks' best samples the drift fit keeps.
const DRIFT_ANCHORS: usize = 32;

/// The drift fit is used once its anchors span this many client seconds: over a shorter
/// baseline the jitter of the anchors would dominate a 0.1 % slope.
const DRIFT_BASELINE: f64 = 5.0;

/// The smallest step of the offset the drift fit looks for, seconds. Smaller ones bend the
/// fitted drift by at most their size over the fit's baseline (tens of seconds): a few
/// hundredths of a percent.
const MIN_STEP: f64 = 0.002;

/// Settings of [`ClockSync`]. Out-of-range values are clamped by [`ClockSync::new`] (see
/// each field).
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ClockConfig {
    /// How many recent samples the filter chooses from (8, as NTP's clock filter). At least
    /// 1.
    pub samples: usize,
    /// How many samples are needed before the clock is synced (3). Between 1 and
    /// [`ClockConfig::samples`].
    pub min_samples: usize,
    /// The most the clock's rate may differ from the client's to absorb an error (0.05:
    /// 5 %, lightyear's figure; Unity uses 1 %, Mirror +2 % / −4 %). Between 0 and 0.5.
    pub slew_rate: f64,
    /// An error above this many seconds is corrected by jumping, not slewing (0.25 s:
    /// slewing that much at 5 % takes 5 s). Not negative.
    pub jump_threshold: f64,
    /// Slewing removes an error over about this many seconds, as a first-order follower
    /// (1 s), within the slew rate. Positive.
    pub correction_time: f64,
    /// How many unanswered pings are remembered (32); an answer to an older one is
    /// [`PongOutcome::Unknown`]. At least 1.
    pub max_pending: usize,
    /// An answer arriving more than this many client seconds after its ping is
    /// [`PongOutcome::Stale`] (2 s). Positive.
    pub max_ping_age: f64,
    /// The largest client clock drift believed, as a fraction (0.005: 0.5 %, five times
    /// what cheap crystals do). Between 0 and 0.1.
    pub max_drift: f64,
    /// The interval [`ClockSync::ping_due`] suggests between pings (0.1 s). Positive.
    pub ping_interval: f64,
}

impl Default for ClockConfig {
    fn default() -> Self {
        Self {
            samples: 8,
            min_samples: 3,
            slew_rate: 0.05,
            jump_threshold: 0.25,
            correction_time: 1.0,
            max_pending: 32,
            max_ping_age: 2.0,
            max_drift: 0.005,
            ping_interval: 0.1,
        }
    }
}

impl ClockConfig {
    /// The configuration with every field clamped into its documented range (non-finite
    /// numbers take the default).
    #[must_use]
    pub fn sanitized(self) -> Self {
        let d = Self::default();
        let finite_or = |v: f64, default: f64| if v.is_finite() { v } else { default };
        let samples = self.samples.max(1);
        Self {
            samples,
            min_samples: self.min_samples.clamp(1, samples),
            slew_rate: finite_or(self.slew_rate, d.slew_rate).clamp(0.0, 0.5),
            jump_threshold: finite_or(self.jump_threshold, d.jump_threshold).max(0.0),
            correction_time: positive_or(self.correction_time, d.correction_time),
            max_pending: self.max_pending.max(1),
            max_ping_age: positive_or(self.max_ping_age, d.max_ping_age),
            max_drift: finite_or(self.max_drift, d.max_drift).clamp(0.0, 0.1),
            ping_interval: positive_or(self.ping_interval, d.ping_interval),
        }
    }
}

fn positive_or(v: f64, default: f64) -> f64 {
    if v.is_finite() && v > 0.0 { v } else { default }
}

/// What [`ClockSync::on_pong`] made of an answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PongOutcome {
    /// A good sample, now in the filter window.
    Accepted {
        /// Its offset (server minus client time), seconds.
        offset: f64,
        /// Its network delay (both ways), seconds.
        delay: f64,
    },
    /// A good sample that disagrees with the estimate by more than the jump threshold. It
    /// is kept aside: if the next sample agrees with it, the server's clock is taken to
    /// have stepped and the filter restarts from them.
    Suspect {
        /// Its offset, seconds.
        offset: f64,
        /// Its network delay, seconds.
        delay: f64,
    },
    /// No remembered ping has this id (never sent, too old to be remembered, or the
    /// echoed send time does not match): ignored.
    Unknown,
    /// The ping was already answered: ignored.
    Duplicate,
    /// The answer took longer than [`ClockConfig::max_ping_age`]: ignored.
    Stale,
    /// A timestamp is not a time (NaN, infinite, beyond [`crate::MAX_TIME`]), the server
    /// sent before it received, or the delay is negative: ignored.
    Invalid,
}

/// One answered ping, reduced to what the filter needs.
#[derive(Debug, Clone, Copy, PartialEq)]
struct ClockSample {
    /// Client time half-way through the exchange, `(t0 + t3) / 2`.
    client: f64,
    /// Server time half-way through the server's part, `(t1 + t2) / 2`; the server time at
    /// `client`, give or take `delay / 2`.
    server: f64,
    delay: f64,
}

impl ClockSample {
    fn offset(&self) -> f64 {
        self.server - self.client
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct PendingPing {
    id: u32,
    sent: f64,
    answered: bool,
}

/// The clock the game reads: its last reading and how it is moving.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Reading {
    client: f64,
    server: f64,
    /// Holding still after a large backward error, until the estimate catches up.
    holding: bool,
}

/// The client's estimate of the server's clock, and of the round-trip time.
///
/// Send [`ClockSync::ping`]s (every [`ClockConfig::ping_interval`], see
/// [`ClockSync::ping_due`]), hand every answer to [`ClockSync::on_pong`], and read
/// [`ClockSync::server_time`] whenever the game needs "server time now". See the
/// [module documentation](self) for how the estimate is made and how far it can be trusted.
///
/// ```
/// use lagcomp_net::{ClockConfig, ClockSync, Pong};
///
/// let mut clock = ClockSync::new(ClockConfig::default());
/// // The server's clock is 100 s ahead; each way takes 20 ms.
/// let mut client_now = 5.0;
/// for _ in 0..3 {
///     let ping = clock.ping(client_now);
///     let at_server = client_now + 0.020 + 100.0;
///     clock.on_pong(Pong::answer(ping, at_server, at_server), client_now + 0.040);
///     client_now += 0.1;
/// }
/// assert!(clock.is_synced());
/// let server_now = clock.server_time(client_now).unwrap();
/// assert!((server_now - (client_now + 100.0)).abs() < 1e-9);
/// assert!((clock.rtt().srtt().unwrap() - 0.040).abs() < 1e-9);
/// ```
#[derive(Debug, Clone)]
pub struct ClockSync {
    config: ClockConfig,
    next_id: u32,
    last_ping: Option<f64>,
    pending: VecDeque<PendingPing>,
    /// The last `config.samples` samples consistent with the estimate, oldest first.
    window: VecDeque<ClockSample>,
    /// Samples that disagree with the estimate by more than the jump threshold, waiting
    /// for confirmation of a step.
    suspects: Vec<ClockSample>,
    /// Best sample of the block being filled, and how many samples the block has.
    block: (Option<ClockSample>, usize),
    /// Best samples of past blocks, for the drift fit.
    anchors: VecDeque<ClockSample>,
    /// An anchor off the fitted line, waiting for a second to confirm a step.
    held_anchor: Option<ClockSample>,
    /// Server seconds per client second, minus one.
    drift: f64,
    synced: bool,
    reading: Option<Reading>,
    rtt: RttEstimator,
}

impl ClockSync {
    /// A clock that has seen no sample. The configuration is [sanitized](ClockConfig::sanitized).
    #[must_use]
    pub fn new(config: ClockConfig) -> Self {
        let config = config.sanitized();
        Self {
            config,
            next_id: 0,
            last_ping: None,
            pending: VecDeque::with_capacity(config.max_pending),
            window: VecDeque::with_capacity(config.samples),
            suspects: Vec::with_capacity(STEP_CONFIRMATIONS),
            block: (None, 0),
            anchors: VecDeque::with_capacity(DRIFT_ANCHORS),
            held_anchor: None,
            drift: 0.0,
            synced: false,
            reading: None,
            rtt: RttEstimator::new(),
        }
    }

    /// The configuration in use (after sanitizing).
    #[must_use]
    pub fn config(&self) -> &ClockConfig {
        &self.config
    }

    /// A new probe sent at `client_now`; remember to send it. Its id is remembered until it
    /// is answered or [`ClockConfig::max_pending`] newer pings push it out.
    pub fn ping(&mut self, client_now: f64) -> Ping {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        if self.pending.len() == self.config.max_pending {
            self.pending.pop_front();
        }
        self.pending.push_back(PendingPing {
            id,
            sent: client_now,
            answered: false,
        });
        if crate::is_time(client_now) {
            self.last_ping = Some(client_now);
        }
        Ping {
            id,
            client_send: client_now,
        }
    }

    /// Whether a ping is due at `client_now`: none was sent yet, or the last one left at
    /// least [`ClockConfig::ping_interval`] ago (or in the future, after the caller's clock
    /// went back).
    #[must_use]
    pub fn ping_due(&self, client_now: f64) -> bool {
        match self.last_ping {
            None => true,
            Some(last) => {
                let since = client_now - last;
                since >= self.config.ping_interval || since < 0.0
            }
        }
    }

    /// Takes the server's answer, received at `client_now`.
    ///
    /// Answers to unknown, stale or already answered pings, and answers with timestamps that
    /// are not times (NaN, infinite, beyond [`crate::MAX_TIME`]) or are inconsistent, are
    /// ignored (the outcome says which).
    ///
    /// A sample's delay may come out a hair below zero on a link with no latency, because
    /// the server's hold time `t2 − t1` is measured with the server's clock: delays down to
    /// `−max_drift · (t2 − t1)` are taken as zero; anything more negative is
    /// [`PongOutcome::Invalid`].
    pub fn on_pong(&mut self, pong: Pong, client_now: f64) -> PongOutcome {
        let Some(index) = self.pending.iter().position(|p| p.id == pong.id) else {
            return PongOutcome::Unknown;
        };
        let pending = self.pending[index];
        if pending.answered {
            return PongOutcome::Duplicate;
        }
        // Bitwise, so a NaN echo never matches.
        if pending.sent.to_bits() != pong.client_send.to_bits() {
            return PongOutcome::Unknown;
        }
        let (t0, t1, t2, t3) = (
            pending.sent,
            pong.server_receive,
            pong.server_send,
            client_now,
        );
        if ![t0, t1, t2, t3].into_iter().all(crate::is_time) || t2 < t1 {
            return PongOutcome::Invalid;
        }
        let hold = t2 - t1;
        let raw_delay = (t3 - t0) - hold;
        if raw_delay < -(self.config.max_drift * hold + 1e-9) {
            return PongOutcome::Invalid;
        }
        self.pending[index].answered = true;
        if t3 - t0 > self.config.max_ping_age {
            return PongOutcome::Stale;
        }
        let delay = raw_delay.max(0.0);
        self.rtt.sample(delay);
        let sample = ClockSample {
            client: t0 + (t3 - t0) / 2.0,
            server: t1 + hold / 2.0,
            delay,
        };
        let offset = sample.offset();
        if self.is_consistent(&sample) {
            self.suspects.clear();
            self.admit(sample);
            return PongOutcome::Accepted { offset, delay };
        }
        self.suspects.push(sample);
        if self.suspects.len() >= STEP_CONFIRMATIONS {
            // The server's clock stepped (or the client's did): what the window holds
            // describes a clock that no longer exists. The drift is a rate and survives.
            self.window.clear();
            self.anchors.clear();
            self.held_anchor = None;
            self.block = (None, 0);
            for s in std::mem::take(&mut self.suspects) {
                self.admit(s);
            }
            return PongOutcome::Accepted { offset, delay };
        }
        PongOutcome::Suspect { offset, delay }
    }

    /// Whether `sample` agrees with the current estimate within the jump threshold, allowing
    /// for the uncertainty of both (half their delays).
    fn is_consistent(&self, sample: &ClockSample) -> bool {
        let Some(best) = self.best() else {
            return true;
        };
        if !self.synced {
            return true;
        }
        let predicted = self.project(best, sample.client);
        let slack = self.config.jump_threshold + (sample.delay + best.delay) / 2.0;
        (sample.server - predicted).abs() <= slack
    }

    fn admit(&mut self, sample: ClockSample) {
        if self.window.len() == self.config.samples {
            self.window.pop_front();
        }
        self.window.push_back(sample);
        if self.window.len() >= self.config.min_samples {
            self.synced = true;
        }
        let (best, count) = &mut self.block;
        if best.is_none_or(|b| sample.delay <= b.delay) {
            *best = Some(sample);
        }
        *count += 1;
        if *count >= self.config.samples {
            let anchor = best.take().expect("a full block has a best sample");
            *count = 0;
            self.add_anchor(anchor);
        }
    }

    /// Adds a block's best sample to the drift fit, unless it breaks the line the anchors
    /// follow: the offset stepped (a route became asymmetric, or the server's clock moved
    /// by less than a jump). A step read as drift would bend the clock's rate for as long
    /// as the anchors span, so an anchor off the line is held back; a second one off the
    /// line by the same amount confirms the step and the fit restarts from the two.
    fn add_anchor(&mut self, anchor: ClockSample) {
        if let Some(tolerance) = self.step_tolerance()
            && (anchor.offset() - self.anchor_line(anchor.client)).abs() > tolerance
        {
            match self.held_anchor.take() {
                Some(held)
                    if (anchor.offset()
                        - held.offset()
                        - self.drift * (anchor.client - held.client))
                        .abs()
                        <= tolerance =>
                {
                    self.anchors.clear();
                    self.anchors.push_back(held);
                    self.anchors.push_back(anchor);
                }
                _ => self.held_anchor = Some(anchor),
            }
            return;
        }
        self.held_anchor = None;
        if self.anchors.len() == DRIFT_ANCHORS {
            self.anchors.pop_front();
        }
        self.anchors.push_back(anchor);
        self.fit_drift();
    }

    /// The anchors' offset line at the fitted drift: through their mean, at slope `drift`.
    fn anchor_line(&self, client: f64) -> f64 {
        let n = self.anchors.len() as f64;
        let (Some(first), true) = (self.anchors.front(), n > 0.0) else {
            return 0.0;
        };
        // Centred on the first anchor so large client times lose no precision.
        let mean_x = self
            .anchors
            .iter()
            .map(|a| a.client - first.client)
            .sum::<f64>()
            / n;
        let mean_y = self.anchors.iter().map(|a| a.offset()).sum::<f64>() / n;
        mean_y + self.drift * (client - first.client - mean_x)
    }

    /// How far off the anchor line an anchor may fall before it counts as a step: four
    /// times the anchors' own scatter about it, and at least [`MIN_STEP`]. `None` while too
    /// few anchors show what their scatter is.
    fn step_tolerance(&self) -> Option<f64> {
        if self.anchors.len() < 3 {
            return None;
        }
        let n = self.anchors.len() as f64;
        let scatter = (self
            .anchors
            .iter()
            .map(|a| (a.offset() - self.anchor_line(a.client)).powi(2))
            .sum::<f64>()
            / n)
            .sqrt();
        Some((4.0 * scatter).max(MIN_STEP))
    }

    /// Least-squares slope of the anchors' offsets against client time, once they span
    /// [`DRIFT_BASELINE`].
    fn fit_drift(&mut self) {
        let (Some(first), Some(last)) = (self.anchors.front(), self.anchors.back()) else {
            return;
        };
        if self.anchors.len() < 3 || last.client - first.client < DRIFT_BASELINE {
            return;
        }
        // Centred on the first anchor so large client times lose no precision.
        let (c0, o0) = (first.client, first.offset());
        let n = self.anchors.len() as f64;
        let mean_x = self.anchors.iter().map(|a| a.client - c0).sum::<f64>() / n;
        let mean_y = self.anchors.iter().map(|a| a.offset() - o0).sum::<f64>() / n;
        let (mut sxy, mut sxx) = (0.0, 0.0);
        for a in &self.anchors {
            let (x, y) = (a.client - c0 - mean_x, a.offset() - o0 - mean_y);
            sxy += x * y;
            sxx += x * x;
        }
        if sxx > 0.0 {
            let slope = sxy / sxx;
            if slope.is_finite() {
                self.drift = slope.clamp(-self.config.max_drift, self.config.max_drift);
            }
        }
    }

    /// The sample the filter trusts: the least delay in the window, the newest on a tie.
    fn best(&self) -> Option<&ClockSample> {
        self.window
            .iter()
            .rev()
            .min_by(|a, b| a.delay.total_cmp(&b.delay))
    }

    /// Server time at client time `client`, carried forward from `sample` at the fitted
    /// drift.
    fn project(&self, sample: &ClockSample, client: f64) -> f64 {
        sample.server + (client - sample.client) * (1.0 + self.drift)
    }

    /// The filter's raw estimate of server time at `client_now`: no slewing, not monotonic
    /// (it steps whenever the trusted sample changes). `None` before the clock is synced or
    /// when `client_now` is not a time (NaN, infinite, beyond [`crate::MAX_TIME`]). For
    /// diagnostics; the game reads [`ClockSync::server_time`].
    #[must_use]
    pub fn estimate(&self, client_now: f64) -> Option<f64> {
        if !self.synced || !crate::is_time(client_now) {
            return None;
        }
        self.best().map(|best| self.project(best, client_now))
    }

    /// The filter's estimate of the offset (server minus client time) at `client_now`.
    #[must_use]
    pub fn offset(&self, client_now: f64) -> Option<f64> {
        self.estimate(client_now).map(|server| server - client_now)
    }

    /// The fitted drift of the server's clock against the client's: server seconds per
    /// client second, minus one (positive when the client's clock runs slow). Zero until
    /// the fit has a long enough baseline.
    #[must_use]
    pub fn drift(&self) -> f64 {
        self.drift
    }

    /// The client's estimate of the server's time at `client_now`, seconds.
    ///
    /// The first reading after sync is the filter's estimate. Later readings advance at the
    /// client clock's rate (corrected for the fitted drift) plus a correction towards the
    /// estimate, the whole rate staying within `1 ± slew_rate` of the client clock; an error
    /// over [`ClockConfig::jump_threshold`] is removed at once if it is ahead, and by
    /// holding still until the estimate catches up if it is behind. Readings never
    /// decrease, even if `client_now` does (the last reading is repeated).
    ///
    /// `None` before the clock is synced, or when `client_now` is not a time (NaN,
    /// infinite, beyond [`crate::MAX_TIME`]).
    pub fn server_time(&mut self, client_now: f64) -> Option<f64> {
        let target = self.estimate(client_now)?;
        let reading = match self.reading {
            None => Reading {
                client: client_now,
                server: target,
                holding: false,
            },
            Some(last) if client_now <= last.client => return Some(last.server),
            Some(last) => {
                let dt = client_now - last.client;
                let free = last.server + dt * (1.0 + self.drift);
                let error = target - free;
                let (server, holding) = if last.holding || error < -self.config.jump_threshold {
                    // Behind the reading by more than a jump: hold still until the
                    // estimate passes it.
                    if target >= last.server {
                        (target, false)
                    } else {
                        (last.server, true)
                    }
                } else if error > self.config.jump_threshold {
                    (target, false)
                } else {
                    let slew = self.config.slew_rate;
                    let correction = error * (dt / self.config.correction_time).min(1.0);
                    let advance = (dt * (1.0 + self.drift) + correction)
                        .clamp(dt * (1.0 - slew), dt * (1.0 + slew));
                    (last.server + advance, false)
                };
                Reading {
                    client: client_now,
                    // Rounding must not undo monotonicity either.
                    server: server.max(last.server),
                    holding,
                }
            }
        };
        self.reading = Some(reading);
        Some(reading.server)
    }

    /// The round-trip time estimate, fed with every accepted sample's network delay
    /// (`(t3 − t0) − (t2 − t1)`: the server's hold time is not part of it).
    #[must_use]
    pub fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }

    /// Whether enough samples arrived for [`ClockSync::server_time`] to answer. Once
    /// synced, the clock stays synced.
    #[must_use]
    pub fn is_synced(&self) -> bool {
        self.synced
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_config_is_sanitized() {
        let c = ClockConfig {
            samples: 0,
            min_samples: 9,
            slew_rate: f64::NAN,
            jump_threshold: -1.0,
            correction_time: 0.0,
            max_pending: 0,
            max_ping_age: f64::INFINITY,
            max_drift: 3.0,
            ping_interval: -0.1,
        }
        .sanitized();
        let d = ClockConfig::default();
        assert_eq!((c.samples, c.min_samples, c.max_pending), (1, 1, 1));
        assert_eq!(c.slew_rate, d.slew_rate);
        assert_eq!(c.jump_threshold, 0.0);
        assert_eq!(c.correction_time, d.correction_time);
        assert_eq!(c.max_ping_age, d.max_ping_age);
        assert_eq!(c.max_drift, 0.1);
        assert_eq!(c.ping_interval, d.ping_interval);
        assert_eq!(ClockSync::new(c).config(), &c);
    }

    #[test]
    fn pings_are_due_every_interval() {
        let mut clock = ClockSync::new(ClockConfig::default());
        assert!(clock.ping_due(5.0));
        let first = clock.ping(5.0);
        let second = clock.ping(5.0);
        assert_eq!(second.id, first.id.wrapping_add(1));
        assert!(!clock.ping_due(5.05));
        assert!(clock.ping_due(5.11));
        assert!(clock.ping_due(4.0), "the caller's clock went back");
        // A ping at a time that is not one does not move the schedule.
        clock.ping(f64::NAN);
        assert!(!clock.ping_due(5.05));
    }
}

//! How far behind the server's clock a client draws remote entities.
//!
//! The delay must cover the time between snapshots (so there is a newer one to blend
//! towards) and the variation of their arrival (so a late one is still in time), and no
//! more: every millisecond of it is a millisecond the shooter sees the past, which the
//! server then has to rewind.

/// Settings of [`InterpolationDelay`]. Out-of-range values are clamped by
/// [`InterpolationDelay::new`] (see each field).
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct InterpolationConfig {
    /// The delay never goes below this, seconds (0.05). Not negative.
    pub min_delay: f64,
    /// Nor above this, seconds (0.5). Keep it below the server's rewind window minus the
    /// round trip, or shots drawn that far back cannot be rewound. At least `min_delay`.
    pub max_delay: f64,
    /// The delay covers this many send intervals (1.7, lightyear's figure: one interval to
    /// have the next snapshot, most of another for a lost one). Not negative.
    pub send_interval_factor: f64,
    /// Plus this many times the measured jitter (4.0, lightyear's figure). Not negative.
    pub jitter_factor: f64,
    /// Plus this, seconds: one server tick, for the tick a snapshot may wait on the server
    /// before it is sent (1/64 s; set it to the game's tick). Not negative.
    pub tick_interval: f64,
    /// The delay used until two snapshots have been measured, seconds (0.1, Source's
    /// `cl_interp`). Clamped into `[min_delay, max_delay]`.
    pub initial_delay: f64,
    /// The most the delay may change per second of time, as a fraction (0.05: at most
    /// 50 ms per second). Below 1, so render time always moves forward. Between 0 and 0.5.
    pub max_rate: f64,
}

impl Default for InterpolationConfig {
    fn default() -> Self {
        Self {
            min_delay: 0.05,
            max_delay: 0.5,
            send_interval_factor: 1.7,
            jitter_factor: 4.0,
            tick_interval: 1.0 / 64.0,
            initial_delay: 0.1,
            max_rate: 0.05,
        }
    }
}

impl InterpolationConfig {
    /// The configuration with every field clamped into its documented range (non-finite
    /// numbers take the default).
    #[must_use]
    pub fn sanitized(self) -> Self {
        let d = Self::default();
        let non_negative = |v: f64, default: f64| {
            if v.is_finite() { v.max(0.0) } else { default }
        };
        let min_delay = non_negative(self.min_delay, d.min_delay);
        let max_delay = non_negative(self.max_delay, d.max_delay).max(min_delay);
        Self {
            min_delay,
            max_delay,
            send_interval_factor: non_negative(self.send_interval_factor, d.send_interval_factor),
            jitter_factor: non_negative(self.jitter_factor, d.jitter_factor),
            tick_interval: non_negative(self.tick_interval, d.tick_interval),
            initial_delay: non_negative(self.initial_delay, d.initial_delay)
                .clamp(min_delay, max_delay),
            max_rate: non_negative(self.max_rate, d.max_rate).min(0.5),
        }
    }
}

/// The last snapshot measured.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Arrival {
    client: f64,
    server: f64,
}

/// An adaptive interpolation delay.
///
/// Feed it every snapshot's arrival ([`InterpolationDelay::on_snapshot`]); it measures
///
/// - the send interval, as a moving average (weight 1/8) of the server-time gaps between
///   snapshots (a lost snapshot counts as a longer gap, which errs on the safe side);
/// - the jitter, as RTP does (RFC 3550 § 6.4.1): the mean (weight 1/16) of the change in
///   transit time `arrival − server_time` from one snapshot to the next. The transit time
///   includes the unknown clock offset, which cancels in the difference.
///
/// and aims at
///
/// ```text
/// target = clamp(send_interval_factor · send_interval + jitter_factor · jitter + tick_interval,
///                min_delay, max_delay)
/// ```
///
/// The delay moves towards the target by at most `max_rate` times the client time between
/// snapshots ([`InterpolationDelay::delay`]), and [`InterpolationDelay::render_time`]
/// spreads each such step over the following frames, so render time never goes backwards.
///
/// ```
/// use lagcomp_net::{InterpolationConfig, InterpolationDelay};
///
/// let mut delay = InterpolationDelay::new(InterpolationConfig::default());
/// // Snapshots every 50 ms, arriving with no jitter.
/// for k in 0..2000 {
///     let server_time = f64::from(k) * 0.05;
///     delay.on_snapshot(server_time + 3.0, server_time);
/// }
/// // 1.7 x 50 ms + one 64 Hz tick.
/// assert!((delay.delay() - (0.085 + 1.0 / 64.0)).abs() < 1e-9);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct InterpolationDelay {
    config: InterpolationConfig,
    last: Option<Arrival>,
    send_interval: Option<f64>,
    jitter: f64,
    /// The delay after the last snapshot.
    delay: f64,
    /// The last render time handed out, the server time it was for, and the delay applied.
    render: Option<(f64, f64, f64)>,
}

impl InterpolationDelay {
    /// A delay at `config.initial_delay`, with nothing measured. The configuration is
    /// [sanitized](InterpolationConfig::sanitized).
    #[must_use]
    pub fn new(config: InterpolationConfig) -> Self {
        let config = config.sanitized();
        Self {
            config,
            last: None,
            send_interval: None,
            jitter: 0.0,
            delay: config.initial_delay,
            render: None,
        }
    }

    /// The configuration in use (after sanitizing).
    #[must_use]
    pub fn config(&self) -> &InterpolationConfig {
        &self.config
    }

    /// Measures a snapshot that arrived at client time `arrival_client_time` and was taken
    /// at server time `server_time_of_snapshot`. Snapshots not newer than the last one
    /// measured (duplicates, reordered) and times that are not times (NaN, infinite, beyond
    /// [`crate::MAX_TIME`]) are ignored.
    pub fn on_snapshot(&mut self, arrival_client_time: f64, server_time_of_snapshot: f64) {
        let now = Arrival {
            client: arrival_client_time,
            server: server_time_of_snapshot,
        };
        if !(crate::is_time(now.client) && crate::is_time(now.server)) {
            return;
        }
        let Some(last) = self.last else {
            self.last = Some(now);
            return;
        };
        if now.server <= last.server {
            return;
        }
        let gap = now.server - last.server;
        self.send_interval = Some(match self.send_interval {
            None => gap,
            Some(interval) => interval + (gap - interval) / 8.0,
        });
        let transit_change = (now.client - now.server) - (last.client - last.server);
        self.jitter += (transit_change.abs() - self.jitter) / 16.0;
        // A client clock that went back grants no time to move in.
        let elapsed = (now.client - last.client).max(0.0);
        let step = self.config.max_rate * elapsed;
        self.delay += (self.target_delay() - self.delay).clamp(-step, step);
        self.last = Some(now);
    }

    /// The delay the measurements call for now, before rate limiting, seconds.
    #[must_use]
    pub fn target_delay(&self) -> f64 {
        let c = &self.config;
        match self.send_interval {
            None => c.initial_delay,
            Some(interval) => (c.send_interval_factor * interval
                + c.jitter_factor * self.jitter
                + c.tick_interval)
                .clamp(c.min_delay, c.max_delay),
        }
    }

    /// The interpolation delay, seconds: how far behind server time remote entities are
    /// drawn. It changes only when a snapshot is measured, by at most `max_rate` times the
    /// client time since the previous one; for a render time that never goes backwards
    /// even across those steps, use [`InterpolationDelay::render_time`].
    #[must_use]
    pub fn delay(&self) -> f64 {
        self.delay
    }

    /// The measured send interval (moving average), seconds, once two snapshots arrived.
    #[must_use]
    pub fn send_interval(&self) -> Option<f64> {
        self.send_interval
    }

    /// The measured arrival jitter (RFC 3550 mean transit change), seconds.
    #[must_use]
    pub fn jitter(&self) -> f64 {
        self.jitter
    }

    /// The server time to draw remote entities at when the server's time is `server_now`
    /// (from [`crate::ClockSync::server_time`]): `server_now` minus the delay, where the
    /// delay applied follows [`InterpolationDelay::delay`] at no more than `max_rate` per
    /// second of server time. Strictly increasing while `server_now` increases; repeated
    /// when it does not.
    ///
    /// When `server_now` is not a time (NaN, infinite, beyond [`crate::MAX_TIME`]): `None`
    /// before any render time was handed out, the last render time after.
    pub fn render_time(&mut self, server_now: f64) -> Option<f64> {
        let (render, at, applied) = match self.render {
            None if crate::is_time(server_now) => {
                let render = server_now - self.delay;
                (render, server_now, self.delay)
            }
            None => return None,
            Some((render, at, _)) if !crate::is_time(server_now) || server_now <= at => {
                return Some(render);
            }
            Some((last_render, at, applied)) => {
                let step = self.config.max_rate * (server_now - at);
                let applied = applied + (self.delay - applied).clamp(-step, step);
                // Rounding must not undo monotonicity.
                ((server_now - applied).max(last_render), server_now, applied)
            }
        };
        self.render = Some((render, at, applied));
        Some(render)
    }
}

impl Default for InterpolationDelay {
    fn default() -> Self {
        Self::new(InterpolationConfig::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(
        delay: &mut InterpolationDelay,
        interval: f64,
        count: u32,
        jitter: impl Fn(u32) -> f64,
    ) {
        for k in 0..count {
            let server = f64::from(k) * interval;
            delay.on_snapshot(server + 1.0 + jitter(k), server);
        }
    }

    #[test]
    fn starts_at_the_initial_delay() {
        let d = InterpolationDelay::default();
        assert_eq!(d.delay(), 0.1);
        assert_eq!(d.target_delay(), 0.1);
        assert_eq!(d.send_interval(), None);
    }

    #[test]
    fn settles_on_the_formula_without_jitter() {
        let mut d = InterpolationDelay::default();
        feed(&mut d, 1.0 / 20.0, 400, |_| 0.0);
        assert!((d.send_interval().unwrap() - 0.05).abs() < 1e-12);
        assert!(d.jitter() < 1e-12, "only rounding: {}", d.jitter());
        let expected = 1.7 * 0.05 + 1.0 / 64.0;
        assert!((d.delay() - expected).abs() < 1e-9, "{}", d.delay());
    }

    #[test]
    fn fast_snapshots_are_held_at_the_floor() {
        let mut d = InterpolationDelay::default();
        feed(&mut d, 1.0 / 128.0, 2000, |_| 0.0);
        assert_eq!(d.target_delay(), 0.05);
        assert!((d.delay() - 0.05).abs() < 1e-9);
    }

    #[test]
    fn jitter_raises_the_delay() {
        let mut calm = InterpolationDelay::default();
        feed(&mut calm, 0.05, 400, |_| 0.0);
        let mut rough = InterpolationDelay::default();
        // Alternating 0 and 20 ms late: every transit change is 20 ms.
        feed(
            &mut rough,
            0.05,
            400,
            |k| if k % 2 == 0 { 0.0 } else { 0.02 },
        );
        assert!((rough.jitter() - 0.02).abs() < 1e-6, "{}", rough.jitter());
        assert!((rough.delay() - calm.delay() - 4.0 * 0.02).abs() < 1e-6);
    }

    #[test]
    fn the_delay_changes_at_a_bounded_rate() {
        let mut d = InterpolationDelay::default();
        let mut last = d.delay();
        for k in 0..200_u32 {
            let server = f64::from(k) * 0.05;
            // Wildly jittered arrivals push the target to the ceiling.
            let jitter = if k % 2 == 0 { 0.0 } else { 0.3 };
            d.on_snapshot(server + jitter, server);
            let change = (d.delay() - last).abs();
            // Client time between snapshots is at most 0.05 + 0.3.
            assert!(change <= 0.05 * 0.35 + 1e-12, "step {change}");
            last = d.delay();
        }
        assert!(d.delay() <= 0.5);
    }

    #[test]
    fn render_time_never_goes_back_while_the_delay_grows() {
        let mut d = InterpolationDelay::default();
        let mut last = f64::NEG_INFINITY;
        for step in 0..20_000_u32 {
            let server_now = f64::from(step) * 0.001;
            if step % 50 == 0 {
                let k = step / 50;
                let jitter = if k % 2 == 0 { 0.0 } else { 0.2 };
                d.on_snapshot(server_now + jitter, server_now);
            }
            let render = d.render_time(server_now).unwrap();
            assert!(render > last, "render time {render} after {last}");
            last = render;
        }
        // It did follow the delay up.
        assert!(d.delay() > 0.4);
        assert!((19.999 - last - d.delay()).abs() < 0.01);
    }

    #[test]
    fn bad_times_are_ignored() {
        let mut d = InterpolationDelay::default();
        d.on_snapshot(f64::NAN, 1.0);
        d.on_snapshot(1.0, f64::INFINITY);
        assert_eq!(d, InterpolationDelay::default());
        assert_eq!(d.render_time(f64::NAN), None);
        assert_eq!(d.render_time(10.0), Some(9.9));
        assert_eq!(d.render_time(f64::NAN), Some(9.9));
        assert_eq!(d.render_time(f64::INFINITY), Some(9.9));
        assert_eq!(d.render_time(5.0), Some(9.9));
    }

    #[test]
    fn garbage_config_is_sanitized() {
        let d = InterpolationDelay::new(InterpolationConfig {
            min_delay: f64::NAN,
            max_delay: -1.0,
            send_interval_factor: f64::INFINITY,
            jitter_factor: -3.0,
            tick_interval: f64::NAN,
            initial_delay: 99.0,
            max_rate: 7.0,
        });
        let c = d.config();
        assert_eq!(c.min_delay, 0.05);
        assert_eq!(c.max_delay, 0.05);
        assert_eq!(c.send_interval_factor, 1.7);
        assert_eq!(c.jitter_factor, 0.0);
        assert_eq!(c.initial_delay, 0.05);
        assert_eq!(c.max_rate, 0.5);
    }
}

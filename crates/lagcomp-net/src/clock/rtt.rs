//! Round-trip time smoothing, as TCP does it (RFC 6298), with outliers clamped first.

/// How long a single sample may exceed the smoothed RTT by, at least, before it counts as an
/// outlier, in seconds.
///
/// RFC 6298 keeps a clock-granularity floor `G` in its timeout for the same reason: on a link
/// with no jitter at all the variation decays towards zero, and a clamp of
/// `srtt + 3 · rttvar` would then pin the estimate to its old value even after the route
/// really changed. One millisecond is below any jitter a game would notice.
pub const RTT_GRANULARITY: f64 = 0.001;

/// The largest step above the smoothed RTT a single sample may take, in seconds (0.5 s, as
/// lightyear clamps its samples).
pub const MAX_RTT_STEP: f64 = 0.5;

/// Smoothed round-trip time and its variation, from RTT samples.
///
/// The first sample sets `srtt = r` and `rttvar = r / 2`; each later sample `r` is first
/// clamped to `srtt + min(max(3 · rttvar, G), max(2 · srtt, G), 0.5 s)` (that is
/// `min(srtt + 3 · rttvar, 3 · srtt, srtt + 0.5)` with the floor [`RTT_GRANULARITY`] `G` on
/// the first two terms), so a lone spike from a stalled packet moves the estimate by an
/// eighth of a bounded step, and then smoothed:
///
/// ```text
/// rttvar = 3/4 · rttvar + 1/4 · |srtt − r|
/// srtt   = 7/8 · srtt   + 1/8 · r
/// ```
///
/// Only upward outliers are clamped: a faster route is believed at once (at the smoothing
/// rate).
///
/// ```
/// use lagcomp_net::RttEstimator;
///
/// let mut rtt = RttEstimator::new();
/// assert_eq!(rtt.srtt(), None);
/// rtt.sample(0.100);
/// assert_eq!((rtt.srtt(), rtt.rttvar()), (Some(0.100), Some(0.050)));
/// // A 5 s stall is clamped to 0.1 + 3 * 0.05 = 0.25 s before smoothing.
/// rtt.sample(5.0);
/// assert!((rtt.srtt().unwrap() - (0.875 * 0.100 + 0.125 * 0.25)).abs() < 1e-12);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RttEstimator {
    /// `(srtt, rttvar)` once a sample has been taken.
    state: Option<(f64, f64)>,
    samples: u64,
}

impl RttEstimator {
    /// An estimator that has seen no sample.
    #[must_use]
    pub const fn new() -> Self {
        Self {
            state: None,
            samples: 0,
        }
    }

    /// Takes one round-trip sample, in seconds. NaN, infinite and negative samples are
    /// ignored.
    pub fn sample(&mut self, rtt: f64) {
        if !(rtt.is_finite() && rtt >= 0.0) {
            return;
        }
        self.samples += 1;
        let Some((srtt, rttvar)) = self.state else {
            self.state = Some((rtt, rtt / 2.0));
            return;
        };
        let step = (3.0 * rttvar)
            .max(RTT_GRANULARITY)
            .min((2.0 * srtt).max(RTT_GRANULARITY))
            .min(MAX_RTT_STEP);
        let r = rtt.min(srtt + step);
        // RFC 6298 order: the variation is measured against the old mean.
        let rttvar = 0.75 * rttvar + 0.25 * (srtt - r).abs();
        let srtt = 0.875 * srtt + 0.125 * r;
        self.state = Some((srtt, rttvar));
    }

    /// The smoothed round-trip time in seconds, once a sample has been taken.
    #[must_use]
    pub fn srtt(&self) -> Option<f64> {
        self.state.map(|(srtt, _)| srtt)
    }

    /// The round-trip time variation (mean deviation) in seconds, once a sample has been
    /// taken.
    #[must_use]
    pub fn rttvar(&self) -> Option<f64> {
        self.state.map(|(_, rttvar)| rttvar)
    }

    /// How many samples were taken (ignored ones do not count).
    #[must_use]
    pub fn samples(&self) -> u64 {
        self.samples
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sample_sets_mean_and_half_variation() {
        let mut rtt = RttEstimator::new();
        rtt.sample(0.08);
        assert_eq!(rtt.srtt(), Some(0.08));
        assert_eq!(rtt.rttvar(), Some(0.04));
        assert_eq!(rtt.samples(), 1);
    }

    #[test]
    fn smoothing_follows_rfc_6298() {
        let mut rtt = RttEstimator::new();
        rtt.sample(0.100);
        // Within the clamp: 0.12 < 0.1 + min(0.15, 0.2, 0.5).
        rtt.sample(0.120);
        let var = 0.75 * 0.05 + 0.25 * 0.02;
        let mean = 0.875 * 0.1 + 0.125 * 0.12;
        assert!((rtt.rttvar().unwrap() - var).abs() < 1e-15);
        assert!((rtt.srtt().unwrap() - mean).abs() < 1e-15);
    }

    #[test]
    fn outliers_are_clamped_by_each_bound() {
        // srtt + 3 rttvar is the smallest: 0.1 + 0.15.
        let mut a = RttEstimator::new();
        a.sample(0.1);
        a.sample(10.0);
        assert!((a.srtt().unwrap() - (0.875 * 0.1 + 0.125 * 0.25)).abs() < 1e-15);

        // 3 srtt is the smallest once the variation is large (set directly: srtt 0.1 with
        // rttvar 0.2 takes several samples to reach).
        let mut b = RttEstimator {
            state: Some((0.1, 0.2)),
            samples: 1,
        };
        b.sample(10.0);
        assert!((b.srtt().unwrap() - (0.875 * 0.1 + 0.125 * 0.3)).abs() < 1e-15);

        // srtt + 0.5 is the smallest on a slow link.
        let mut c = RttEstimator::new();
        c.sample(2.0);
        c.sample(100.0);
        assert!((c.srtt().unwrap() - (0.875 * 2.0 + 0.125 * 2.5)).abs() < 1e-12);
    }

    #[test]
    fn a_jitterless_link_can_still_move_up() {
        // Hundreds of identical samples decay rttvar to nothing; the granularity floor
        // still lets a real route change through within a few dozen samples.
        let mut rtt = RttEstimator::new();
        for _ in 0..500 {
            rtt.sample(0.0005);
        }
        assert!(rtt.rttvar().unwrap() < 1e-12);
        let mut n = 0;
        while rtt.srtt().unwrap() < 0.09 {
            rtt.sample(0.1);
            n += 1;
            assert!(n < 100, "stuck at {:?}", rtt.srtt());
        }
    }

    #[test]
    fn a_zero_first_sample_does_not_pin_the_estimate() {
        let mut rtt = RttEstimator::new();
        rtt.sample(0.0);
        for _ in 0..100 {
            rtt.sample(0.05);
        }
        assert!((rtt.srtt().unwrap() - 0.05).abs() < 1e-3);
    }

    #[test]
    fn bad_samples_are_ignored() {
        let mut rtt = RttEstimator::new();
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.01] {
            rtt.sample(bad);
        }
        assert_eq!(rtt, RttEstimator::new());
        rtt.sample(0.05);
        rtt.sample(f64::NAN);
        assert_eq!(rtt.srtt(), Some(0.05));
        assert_eq!(rtt.samples(), 1);
    }
}

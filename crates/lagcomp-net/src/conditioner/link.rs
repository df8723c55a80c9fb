//! What one direction of a simulated link does to packets.

/// Bursty loss: a two-state Markov chain (Gilbert–Elliott). The chain moves once per
/// packet sent, before that packet's fate is drawn; each state loses packets with its own
/// probability. The chain starts in the good state.
///
/// Real losses come in runs (a queue overflows, a radio fades), which hurts redundancy
/// schemes far more than the same rate of independent losses; this models that.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct GilbertElliott {
    /// Probability of moving from the good to the bad state, per packet.
    pub good_to_bad: f64,
    /// Probability of moving from the bad back to the good state, per packet (the mean
    /// time in the bad state is `1 / bad_to_good` packets).
    pub bad_to_good: f64,
    /// Probability of losing a packet in the good state.
    pub loss_in_good: f64,
    /// Probability of losing a packet in the bad state.
    pub loss_in_bad: f64,
}

impl GilbertElliott {
    /// A burst model losing every packet while bad, with bad spells of `mean_burst`
    /// packets on average, that loses `loss` of all packets in the long run.
    ///
    /// `loss` is clamped to `[0, 0.99]` and `mean_burst` to at least 1 packet.
    #[must_use]
    pub fn bursts(loss: f64, mean_burst: f64) -> Self {
        let loss = if loss.is_finite() {
            loss.clamp(0.0, 0.99)
        } else {
            0.0
        };
        let mean_burst = if mean_burst.is_finite() {
            mean_burst.max(1.0)
        } else {
            1.0
        };
        let bad_to_good = 1.0 / mean_burst;
        // In the long run the chain is bad a share good_to_bad / (good_to_bad + bad_to_good)
        // of the time; solve that share for `loss`.
        let good_to_bad = loss * bad_to_good / (1.0 - loss);
        Self {
            good_to_bad,
            bad_to_good,
            loss_in_good: 0.0,
            loss_in_bad: 1.0,
        }
    }

    /// The long-run share of packets lost.
    #[must_use]
    pub fn stationary_loss(&self) -> f64 {
        let switching = self.good_to_bad + self.bad_to_good;
        if switching <= 0.0 {
            // Never leaves the good state it starts in.
            return self.loss_in_good;
        }
        let bad = self.good_to_bad / switching;
        bad * self.loss_in_bad + (1.0 - bad) * self.loss_in_good
    }

    /// Every probability clamped into `[0, 1]` (NaN becomes 0).
    #[must_use]
    pub fn sanitized(self) -> Self {
        Self {
            good_to_bad: probability(self.good_to_bad),
            bad_to_good: probability(self.bad_to_good),
            loss_in_good: probability(self.loss_in_good),
            loss_in_bad: probability(self.loss_in_bad),
        }
    }
}

/// One direction of a simulated link. The default is a perfect link: no latency, no loss.
///
/// A packet that survives loss is delivered after `latency` plus a delay drawn uniformly
/// from `[−jitter, +jitter]` (never below zero), and never before a packet sent earlier: a
/// link is a queue, and real links mostly keep order, so jitter alone does not reorder.
/// When packets are sent faster than the jitter's spread, this queueing makes the mean
/// delay a little longer than `latency`. Only the `reorder` knob reorders.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct LinkConfig {
    /// One-way latency, seconds.
    pub latency: f64,
    /// Largest deviation from the latency, seconds: each packet's delay is drawn uniformly
    /// from `latency ± jitter` (and is never negative).
    pub jitter: f64,
    /// Probability that a packet is lost, independently of the others.
    pub loss: f64,
    /// Bursty loss on top of `loss` (a packet is lost if either loses it).
    pub burst: Option<GilbertElliott>,
    /// Probability that a packet is delivered twice; the copy takes its own delay and
    /// arrives after the original.
    pub duplicate: f64,
    /// Probability that a packet is held back so that packets sent after it overtake it:
    /// it is delivered `(0.5 + u) · max(latency, 10 ms)` later than it would have been
    /// (`u` uniform in `[0, 1)`), and packets behind it do not wait for it.
    pub reorder: f64,
}

impl LinkConfig {
    /// A link with only a latency.
    #[must_use]
    pub const fn with_latency(latency: f64) -> Self {
        Self {
            latency,
            jitter: 0.0,
            loss: 0.0,
            burst: None,
            duplicate: 0.0,
            reorder: 0.0,
        }
    }

    /// The long-run share of packets lost, with bursts.
    #[must_use]
    pub fn expected_loss(&self) -> f64 {
        let s = self.sanitized();
        let burst = s.burst.map_or(0.0, |b| b.stationary_loss());
        1.0 - (1.0 - s.loss) * (1.0 - burst)
    }

    /// The configuration with times clamped into `[0, MAX_TIME]` (NaN and infinities
    /// become 0) and
    /// probabilities clamped into `[0, 1]` (NaN becomes 0).
    #[must_use]
    pub fn sanitized(self) -> Self {
        let time = |t: f64| {
            if t.is_finite() {
                t.clamp(0.0, crate::MAX_TIME)
            } else {
                0.0
            }
        };
        Self {
            latency: time(self.latency),
            jitter: time(self.jitter),
            loss: probability(self.loss),
            burst: self.burst.map(GilbertElliott::sanitized),
            duplicate: probability(self.duplicate),
            reorder: probability(self.reorder),
        }
    }
}

fn probability(p: f64) -> f64 {
    if p.is_nan() { 0.0 } else { p.clamp(0.0, 1.0) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bursts_lose_the_requested_share() {
        for (loss, burst) in [(0.01, 2.0), (0.05, 4.0), (0.3, 10.0)] {
            let ge = GilbertElliott::bursts(loss, burst);
            assert!((ge.stationary_loss() - loss).abs() < 1e-12, "{ge:?}");
            assert!((1.0 / ge.bad_to_good - burst).abs() < 1e-12);
        }
        assert_eq!(
            GilbertElliott::bursts(f64::NAN, f64::NAN).stationary_loss(),
            0.0
        );
    }

    #[test]
    fn a_chain_that_never_switches_keeps_its_start() {
        let ge = GilbertElliott {
            good_to_bad: 0.0,
            bad_to_good: 0.0,
            loss_in_good: 0.1,
            loss_in_bad: 1.0,
        };
        assert_eq!(ge.stationary_loss(), 0.1);
    }

    #[test]
    fn garbage_is_sanitized() {
        let c = LinkConfig {
            latency: f64::NAN,
            jitter: -1.0,
            loss: 2.0,
            burst: Some(GilbertElliott {
                good_to_bad: f64::NAN,
                bad_to_good: -0.5,
                loss_in_good: 0.5,
                loss_in_bad: f64::INFINITY,
            }),
            duplicate: f64::NEG_INFINITY,
            reorder: 0.25,
        }
        .sanitized();
        assert_eq!(
            (c.latency, c.jitter, c.loss, c.duplicate, c.reorder),
            (0.0, 0.0, 1.0, 0.0, 0.25)
        );
        let b = c.burst.unwrap();
        assert_eq!(
            (b.good_to_bad, b.bad_to_good, b.loss_in_good, b.loss_in_bad),
            (0.0, 0.0, 0.5, 1.0)
        );
    }
}

//! Small measuring helpers for the server's status lines.

/// The calling thread's CPU time, seconds (`None` where there is no such clock).
pub(crate) fn thread_cpu_time() -> Option<f64> {
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
    {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
        Some(t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9)
    }
    #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
    None
}

/// Width of one bucket, seconds.
const BUCKET: f64 = 5e-6;

/// Buckets: 5 µs each, up to 100 ms; longer times go in the last.
const BUCKETS: usize = 20_000;

/// Durations in a fixed histogram (5 µs buckets up to 100 ms), so a server running for
/// hours keeps the same 80 kB; quantiles are a bucket's upper edge, the maximum is exact.
#[derive(Debug, Clone, PartialEq)]
pub struct TickTimes {
    counts: Vec<u32>,
    count: u64,
    max: f64,
}

impl Default for TickTimes {
    fn default() -> Self {
        Self {
            counts: Vec::new(),
            count: 0,
            max: 0.0,
        }
    }
}

impl TickTimes {
    /// Adds one duration, seconds (negative and non-finite ones count as 0 and as the
    /// longest bucket).
    pub fn record(&mut self, seconds: f64) {
        if self.counts.is_empty() {
            self.counts = vec![0; BUCKETS];
        }
        let bucket = if seconds.is_nan() {
            BUCKETS - 1
        } else {
            ((seconds.max(0.0) / BUCKET) as usize).min(BUCKETS - 1)
        };
        self.counts[bucket] = self.counts[bucket].saturating_add(1);
        self.count += 1;
        if seconds > self.max {
            self.max = seconds;
        }
    }

    /// How many durations.
    #[must_use]
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The longest, seconds; `None` when empty.
    #[must_use]
    pub fn max(&self) -> Option<f64> {
        (self.count > 0).then_some(self.max)
    }

    /// The `q` quantile (0 to 1), as the upper edge of its bucket (never above the
    /// maximum), or the maximum when it falls among the durations over 100 ms (an upper
    /// bound then); `None` when empty.
    #[must_use]
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0_u64;
        for (i, &n) in self.counts.iter().enumerate() {
            seen += u64::from(n);
            if seen >= rank {
                if i == BUCKETS - 1 {
                    return Some(self.max);
                }
                return Some(((i + 1) as f64 * BUCKET).min(self.max));
            }
        }
        Some(self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_within_a_bucket_and_never_past_the_maximum() {
        let mut times = TickTimes::default();
        assert_eq!(times.quantile(0.5), None);
        // 10 µs to 1 ms in 10 µs steps.
        for i in 1..=100 {
            times.record(f64::from(i) * 1e-5);
        }
        // A quantile is never below the true one, and at most a bucket (and a rounding)
        // above it.
        let within = |q: f64, truth: f64| q >= truth && q <= truth + BUCKET * 1.001;
        let p50 = times.quantile(0.5).unwrap();
        assert!(within(p50, 0.5e-3), "{p50}");
        let p99 = times.quantile(0.99).unwrap();
        assert!(within(p99, 0.99e-3), "{p99}");
        assert_eq!(times.quantile(1.0), Some(1e-3));
        assert_eq!(times.max(), Some(1e-3));
        assert_eq!(times.count(), 100);
    }

    #[test]
    fn long_and_odd_durations_land_in_the_last_bucket() {
        let mut times = TickTimes::default();
        times.record(2.0);
        times.record(f64::NAN);
        times.record(-1.0);
        assert_eq!(times.count(), 3);
        assert_eq!(times.max(), Some(2.0));
        assert_eq!(times.quantile(0.0), Some(BUCKET));
        // Past the last edge, the maximum bounds the quantile.
        assert_eq!(times.quantile(1.0), Some(2.0));
    }
}

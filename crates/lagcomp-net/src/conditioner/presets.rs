//! Named network conditions, as ping figures.

use super::link::{GilbertElliott, LinkConfig};

/// Mean length, in packets, of the loss bursts the lossy presets include.
pub const PRESET_MEAN_BURST: f64 = 2.0;

/// Named network conditions: a round-trip time, its jitter and a loss rate, as a ping tool
/// reports them.
///
/// [`Preset::links`] turns them into one [`LinkConfig`] per direction: each direction takes
/// half the round-trip latency and half the jitter, and the full loss rate. Lossy presets
/// take half of their loss as bursts (a [`GilbertElliott`] chain losing everything in bad
/// spells of [`PRESET_MEAN_BURST`] packets on average) and the rest as independent losses,
/// sized so the long-run rate is exactly `loss`: mild, but enough that a redundancy scheme
/// tested on a preset meets back-to-back losses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Preset {
    /// The preset's name: `"LAN"`, or `"rtt/jitter/loss"` in milliseconds and percent.
    pub name: &'static str,
    /// Round-trip time, seconds.
    pub rtt: f64,
    /// Round-trip jitter (largest deviation from `rtt`), seconds.
    pub jitter: f64,
    /// Share of packets lost in each direction.
    pub loss: f64,
}

/// The presets: a LAN, then the four used by naia's link conditioner.
pub const PRESETS: [Preset; 5] = [
    Preset {
        name: "LAN",
        rtt: 0.0005,
        jitter: 0.0,
        loss: 0.0,
    },
    Preset {
        name: "40/10/0.2%",
        rtt: 0.040,
        jitter: 0.010,
        loss: 0.002,
    },
    Preset {
        name: "100/25/2%",
        rtt: 0.100,
        jitter: 0.025,
        loss: 0.02,
    },
    Preset {
        name: "200/50/4%",
        rtt: 0.200,
        jitter: 0.050,
        loss: 0.04,
    },
    Preset {
        name: "300/75/6%",
        rtt: 0.300,
        jitter: 0.075,
        loss: 0.06,
    },
];

/// The preset called `name` (ASCII case ignored).
#[must_use]
pub fn preset(name: &str) -> Option<Preset> {
    PRESETS
        .iter()
        .find(|p| p.name.eq_ignore_ascii_case(name))
        .copied()
}

impl Preset {
    /// The links `(up, down)`: client to server, server to client. Both are the same
    /// [`Preset::link`].
    #[must_use]
    pub fn links(&self) -> (LinkConfig, LinkConfig) {
        (self.link(), self.link())
    }

    /// One direction of the preset (see [`Preset`] for how it is split).
    #[must_use]
    pub fn link(&self) -> LinkConfig {
        let loss = if self.loss.is_finite() {
            self.loss.clamp(0.0, 0.99)
        } else {
            0.0
        };
        let (independent, burst) = if loss > 0.0 {
            let bursty = loss / 2.0;
            // (1 − independent)(1 − bursty) = 1 − loss.
            (
                1.0 - (1.0 - loss) / (1.0 - bursty),
                Some(GilbertElliott::bursts(bursty, PRESET_MEAN_BURST)),
            )
        } else {
            (0.0, None)
        };
        LinkConfig {
            latency: self.rtt / 2.0,
            jitter: self.jitter / 2.0,
            loss: independent,
            burst,
            duplicate: 0.0,
            reorder: 0.0,
        }
        .sanitized()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_split_the_round_trip() {
        let p = preset("100/25/2%").unwrap();
        let (up, down) = p.links();
        assert_eq!(up, down);
        assert_eq!(up.latency, 0.05);
        assert_eq!(up.jitter, 0.0125);
        assert!((up.expected_loss() - 0.02).abs() < 1e-12);
        assert!(up.burst.is_some());
        assert_eq!((up.duplicate, up.reorder), (0.0, 0.0));
    }

    #[test]
    fn every_preset_loses_its_rate() {
        for p in PRESETS {
            let link = p.link();
            assert!((link.expected_loss() - p.loss).abs() < 1e-12, "{}", p.name);
            assert_eq!(link.burst.is_some(), p.loss > 0.0, "{}", p.name);
            assert_eq!(preset(p.name), Some(p));
        }
    }

    #[test]
    fn lan_is_a_quarter_millisecond_each_way() {
        let lan = preset("lan").unwrap().link();
        assert_eq!(lan, LinkConfig::with_latency(0.00025));
        assert_eq!(preset("dial-up"), None);
    }
}

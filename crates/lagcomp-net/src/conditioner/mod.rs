//! The link conditioner: a seeded, simulated network link for tests, bots and the simulator.
//!
//! What lives here: [`LinkConditioner`], one direction of a link that delays, loses,
//! duplicates and reorders packets; its settings [`LinkConfig`] and bursty loss
//! [`GilbertElliott`] in [`link`]; named conditions ([`Preset`], [`PRESETS`], [`preset()`])
//! in [`presets`]. What does not: sockets and clocks. The caller hands every packet to
//! [`LinkConditioner::send`] with the time it was sent, and takes deliveries out with
//! [`LinkConditioner::poll`] as its virtual clock advances.
//!
//! Everything is deterministic: the same seed, settings and calls give the same
//! deliveries, on every platform (a PCG generator, a fixed number of draws per packet, and
//! ties in delivery time broken by send order).

pub mod link;
pub mod presets;

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

pub use link::{GilbertElliott, LinkConfig};
pub use presets::{PRESETS, Preset, preset};

/// Random numbers drawn per packet sent, whatever happens to it, so that one knob's
/// outcome never shifts the draws of the packets after it.
const DRAWS_PER_PACKET: usize = 8;

/// A reordered packet is held back by at least half of this, seconds, even on a link with
/// almost no latency (so that it really is overtaken).
const MIN_REORDER_HOLD: f64 = 0.010;

/// What a [`LinkConditioner`] has done so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LinkStats {
    /// Packets handed to [`LinkConditioner::send`].
    pub sent: u64,
    /// Packets lost (including those sent at a time that is not one).
    pub dropped: u64,
    /// Extra copies made.
    pub duplicated: u64,
    /// Packets held back to be overtaken.
    pub reordered: u64,
    /// Packets (and copies) handed out by [`LinkConditioner::poll`].
    pub delivered: u64,
}

/// A packet on its way.
#[derive(Debug, Clone)]
struct InFlight<T> {
    at: f64,
    /// Enqueue order: breaks ties in `at`, so delivery order never depends on the heap.
    order: u64,
    packet: T,
}

impl<T> PartialEq for InFlight<T> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl<T> Eq for InFlight<T> {}

impl<T> PartialOrd for InFlight<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for InFlight<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.at
            .total_cmp(&other.at)
            .then(self.order.cmp(&other.order))
    }
}

/// One direction of a simulated link.
///
/// ```
/// use lagcomp_net::{LinkConditioner, LinkConfig};
///
/// let mut link = LinkConditioner::new(LinkConfig::with_latency(0.05), 7);
/// link.send(1.0, "hello");
/// assert_eq!(link.poll(1.04), None);
/// assert_eq!(link.next_delivery(), Some(1.05));
/// assert_eq!(link.poll(1.05), Some("hello"));
/// assert_eq!(link.stats().delivered, 1);
/// ```
#[derive(Debug, Clone)]
pub struct LinkConditioner<T> {
    config: LinkConfig,
    rng: Pcg64Mcg,
    /// Whether the burst chain is in its bad state.
    bad: bool,
    /// Delivery time of the newest packet that kept its place in the queue.
    last_delivery: f64,
    next_order: u64,
    queue: BinaryHeap<Reverse<InFlight<T>>>,
    stats: LinkStats,
}

impl<T> LinkConditioner<T> {
    /// A link with `config` ([sanitized](LinkConfig::sanitized)) whose randomness comes from
    /// `seed`.
    #[must_use]
    pub fn new(config: LinkConfig, seed: u64) -> Self {
        Self {
            config: config.sanitized(),
            rng: Pcg64Mcg::seed_from_u64(seed),
            bad: false,
            last_delivery: f64::NEG_INFINITY,
            next_order: 0,
            queue: BinaryHeap::new(),
            stats: LinkStats::default(),
        }
    }

    /// The settings in use (after sanitizing).
    #[must_use]
    pub fn config(&self) -> &LinkConfig {
        &self.config
    }

    /// Changes the settings for packets sent from now on; packets in flight keep their
    /// delivery times, and later packets still never overtake them (unless reordered).
    pub fn set_config(&mut self, config: LinkConfig) {
        self.config = config.sanitized();
    }

    /// The next packet due at `now` (delivery time at or before it), in delivery-time
    /// order, ties in send order. `None` when nothing is due or `now` is not finite.
    pub fn poll(&mut self, now: f64) -> Option<T> {
        if !now.is_finite() {
            return None;
        }
        if self.queue.peek().is_some_and(|Reverse(p)| p.at <= now) {
            self.stats.delivered += 1;
            return self.queue.pop().map(|Reverse(p)| p.packet);
        }
        None
    }

    /// When the next packet will be delivered, if any is in flight.
    #[must_use]
    pub fn next_delivery(&self) -> Option<f64> {
        self.queue.peek().map(|Reverse(p)| p.at)
    }

    /// How many packets (and copies) are in flight.
    #[must_use]
    pub fn in_flight(&self) -> usize {
        self.queue.len()
    }

    /// What the link has done so far.
    #[must_use]
    pub fn stats(&self) -> LinkStats {
        self.stats
    }

    /// One packet's delay, from a uniform draw `u` in `[0, 1)`.
    fn delay(&self, u: f64) -> f64 {
        (self.config.latency + self.config.jitter * (2.0 * u - 1.0)).max(0.0)
    }

    fn enqueue(&mut self, at: f64, packet: T) {
        let order = self.next_order;
        self.next_order += 1;
        self.queue.push(Reverse(InFlight { at, order, packet }));
    }
}

impl<T: Clone> LinkConditioner<T> {
    /// Sends `packet` at time `now`: it is lost, or delivered (maybe twice) later. A packet
    /// sent at a time that is not one (NaN, infinite, beyond [`crate::MAX_TIME`]) is
    /// dropped.
    pub fn send(&mut self, now: f64, packet: T) {
        self.stats.sent += 1;
        let mut u = [0.0_f64; DRAWS_PER_PACKET];
        for draw in &mut u {
            *draw = self.rng.random();
        }
        let [
            u_chain,
            u_loss,
            u_burst_loss,
            u_jitter,
            u_duplicate,
            u_copy_jitter,
            u_reorder,
            u_hold,
        ] = u;
        if !crate::is_time(now) {
            self.stats.dropped += 1;
            return;
        }
        let c = self.config;
        let burst_loss = match c.burst {
            Some(chain) => {
                self.bad = if self.bad {
                    u_chain >= chain.bad_to_good
                } else {
                    u_chain < chain.good_to_bad
                };
                if self.bad {
                    chain.loss_in_bad
                } else {
                    chain.loss_in_good
                }
            }
            None => 0.0,
        };
        if u_loss < c.loss || u_burst_loss < burst_loss {
            self.stats.dropped += 1;
            return;
        }
        let natural = (now + self.delay(u_jitter)).max(self.last_delivery);
        let copy = (u_duplicate < c.duplicate).then(|| packet.clone());
        let reordered = u_reorder < c.reorder;
        let at = if reordered {
            self.stats.reordered += 1;
            natural + (0.5 + u_hold) * c.latency.max(MIN_REORDER_HOLD)
        } else {
            self.last_delivery = natural;
            natural
        };
        self.enqueue(at, packet);
        if let Some(copy) = copy {
            self.stats.duplicated += 1;
            // After the original: behind a held-back original too, but then without making
            // the packets sent after it wait.
            let copy_at = (now + self.delay(u_copy_jitter)).max(at);
            if !reordered {
                self.last_delivery = copy_at;
            }
            self.enqueue(copy_at, copy);
        }
    }
}

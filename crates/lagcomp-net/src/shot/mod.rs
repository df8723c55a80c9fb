//! Shots: what a client claims it saw when it fired, and getting the claim to the server.
//!
//! What lives here: [`Stamp`], the moment a shot claims (derived from the [`View`] the
//! client drew, by [`stamp`]); [`ShotSender`], which repeats each shot in the next few
//! packets until it is acknowledged, in [`sender`]; [`ShotReceiver`], the server's side,
//! which tells a redundant copy from a replay, in [`receiver`]; [`Fingerprint`], a
//! deterministic hash of a shot's content for the receiver. What does not: the shot's
//! geometry and its validation (`lagcomp-validate`).
//!
//! Sequence numbers start at 1 and increase by one per shot; 0 means "nothing" in
//! acknowledgements. A `u32` lasts more than six years at 20 shots a second, so they are
//! not expected to wrap.

pub mod receiver;
pub mod sender;

use lagcomp::Tick;

use crate::interp::View;

pub use receiver::{Delivery, ShotReceiver};
pub use sender::ShotSender;

/// The moment a shot claims its shooter saw.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Stamp {
    /// Between the snapshots of two ticks at a fraction: what the server rebuilds with
    /// [`lagcomp::RewindTarget::between`]`(from, to, fraction)`, bit for bit. A single
    /// snapshot shown as is has `from == to` and fraction 0.
    Ticks {
        /// The older tick.
        from: Tick,
        /// The newer tick.
        to: Tick,
        /// Progress from `from` to `to`, in `[0, 1]`.
        fraction: f32,
    },
    /// Past the newest snapshot, extrapolated by `by` seconds. The server rebuilds this
    /// picture with [`lagcomp::History::entity_extrapolated`] (the same formula the buffer
    /// draws with); its moment is the server time of `from` plus `by`
    /// ([`crate::SnapshotBuffer::time_of`] gives the first).
    Extrapolated {
        /// The newest snapshot the client had.
        from: Tick,
        /// How far past it, seconds.
        by: f64,
    },
}

impl Stamp {
    /// The server's rewind target for a tick-pair stamp; `None` for an extrapolated one
    /// (no rewind target names it: see [`lagcomp::History::entity_extrapolated`]).
    #[must_use]
    pub fn rewind_target(&self) -> Option<lagcomp::RewindTarget> {
        match *self {
            Self::Ticks { from, to, fraction } => {
                Some(lagcomp::RewindTarget::between(from, to, fraction))
            }
            Self::Extrapolated { .. } => None,
        }
    }
}

/// What a shot fired while `view` was on screen claims.
///
/// A blend is claimed as its tick pair and fraction. A teleport's nearer frame
/// ([`View::Nearest`]) is claimed as the pair and fraction too: the server applies the
/// same nearer-frame rule to them and gets the same pose, and the claim keeps the exact
/// moment for the validator's timing checks. A single snapshot ([`View::Exact`],
/// [`View::Held`]) is claimed as that tick twice at fraction 0.
///
/// ```
/// use lagcomp::{BoneTransform, RewindTarget, Tick, Vec3};
/// use lagcomp_net::{Snapshot, SnapshotBuffer, Stamp, stamp};
///
/// // Snapshots of a remote player at ticks 10 and 11 (20 a second, times in seconds).
/// let mut buffer = SnapshotBuffer::new(32);
/// for tick in [10, 11] {
///     buffer.push(Snapshot {
///         tick: Tick(tick),
///         time: f64::from(tick) / 20.0,
///         bones: vec![BoneTransform::from_translation(Vec3::new(tick as f32, 0.0, 0.0))],
///         velocity: Vec3::new(20.0, 0.0, 0.0), // metres per second
///         teleport: false,
///     });
/// }
/// // The frame on screen when the player fired: a quarter of the way from 10 to 11.
/// let mut bones = Vec::new();
/// let view = buffer.sample(0.5125, 0.25, &mut bones).unwrap();
/// let claim = stamp(&view);
/// assert_eq!(claim, Stamp::Ticks { from: Tick(10), to: Tick(11), fraction: 0.25 });
/// // The server rewinds its history to exactly that moment.
/// assert_eq!(claim.rewind_target(), Some(RewindTarget::between(Tick(10), Tick(11), 0.25)));
/// ```
#[must_use]
pub fn stamp(view: &View) -> Stamp {
    match *view {
        View::Interpolated { from, to, fraction }
        | View::Nearest {
            from, to, fraction, ..
        } => Stamp::Ticks { from, to, fraction },
        View::Exact { tick } | View::Held { tick } => Stamp::Ticks {
            from: tick,
            to: tick,
            fraction: 0.0,
        },
        View::Extrapolated { from, by } => Stamp::Extrapolated { from, by },
    }
}

/// A 64-bit FNV-1a hash of a shot's content, for [`ShotReceiver::accept`]: two copies of
/// one shot hash the same, and a replay with anything changed almost surely does not.
///
/// Deterministic on every platform and Rust version (unlike `std`'s `DefaultHasher`).
/// Floats are hashed by their bits, so `0.0` and `-0.0` differ, as they do on the wire. Not
/// a cryptographic hash: it tells transport duplicates from different content, it does not
/// authenticate anything.
///
/// ```
/// use lagcomp_net::Fingerprint;
///
/// let shot = |x: f32| Fingerprint::new().u32(7).f32(x).f64(12.5).finish();
/// assert_eq!(shot(1.0), shot(1.0));
/// assert_ne!(shot(1.0), shot(1.000_001));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint(u64);

impl Fingerprint {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;

    /// An empty fingerprint.
    #[must_use]
    pub const fn new() -> Self {
        Self(Self::OFFSET_BASIS)
    }

    /// Mixes in raw bytes.
    #[must_use]
    pub const fn bytes(mut self, bytes: &[u8]) -> Self {
        let mut i = 0;
        while i < bytes.len() {
            self.0 ^= bytes[i] as u64;
            self.0 = self.0.wrapping_mul(Self::PRIME);
            i += 1;
        }
        self
    }

    /// Mixes in a `u32` (little-endian).
    #[must_use]
    pub const fn u32(self, value: u32) -> Self {
        self.bytes(&value.to_le_bytes())
    }

    /// Mixes in a `u64` (little-endian).
    #[must_use]
    pub const fn u64(self, value: u64) -> Self {
        self.bytes(&value.to_le_bytes())
    }

    /// Mixes in an `f32` by its bits.
    #[must_use]
    pub const fn f32(self, value: f32) -> Self {
        self.u32(value.to_bits())
    }

    /// Mixes in an `f64` by its bits.
    #[must_use]
    pub const fn f64(self, value: f64) -> Self {
        self.u64(value.to_bits())
    }

    /// Mixes in a [`Stamp`].
    #[must_use]
    pub const fn stamp(self, stamp: &Stamp) -> Self {
        match *stamp {
            Stamp::Ticks { from, to, fraction } => self.u32(0).u32(from.0).u32(to.0).f32(fraction),
            Stamp::Extrapolated { from, by } => self.u32(1).u32(from.0).f64(by),
        }
    }

    /// The hash.
    #[must_use]
    pub const fn finish(self) -> u64 {
        self.0
    }
}

impl Default for Fingerprint {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_1a_reference_values() {
        // Published FNV-1a 64 test vectors.
        assert_eq!(Fingerprint::new().finish(), 0xcbf2_9ce4_8422_2325);
        assert_eq!(
            Fingerprint::new().bytes(b"a").finish(),
            0xaf63_dc4c_8601_ec8c
        );
        assert_eq!(
            Fingerprint::new().bytes(b"foobar").finish(),
            0x8594_4171_f739_67e8
        );
    }

    #[test]
    fn stamps_distinguish_their_kind() {
        let a = Stamp::Ticks {
            from: Tick(1),
            to: Tick(2),
            fraction: 0.0,
        };
        let b = Stamp::Extrapolated {
            from: Tick(1),
            by: 0.0,
        };
        assert_ne!(
            Fingerprint::new().stamp(&a).finish(),
            Fingerprint::new().stamp(&b).finish()
        );
    }

    #[test]
    fn every_view_stamps_as_documented() {
        let (t1, t2) = (Tick(1), Tick(2));
        let cases = [
            (
                View::Interpolated {
                    from: t1,
                    to: t2,
                    fraction: 0.25,
                },
                Stamp::Ticks {
                    from: t1,
                    to: t2,
                    fraction: 0.25,
                },
            ),
            // The nearer frame is claimed as the pair: the server picks the same frame.
            (
                View::Nearest {
                    tick: t2,
                    from: t1,
                    to: t2,
                    fraction: 0.75,
                },
                Stamp::Ticks {
                    from: t1,
                    to: t2,
                    fraction: 0.75,
                },
            ),
            (
                View::Exact { tick: t2 },
                Stamp::Ticks {
                    from: t2,
                    to: t2,
                    fraction: 0.0,
                },
            ),
            (
                View::Held { tick: t1 },
                Stamp::Ticks {
                    from: t1,
                    to: t1,
                    fraction: 0.0,
                },
            ),
            (
                View::Extrapolated { from: t2, by: 0.1 },
                Stamp::Extrapolated { from: t2, by: 0.1 },
            ),
        ];
        for (view, expected) in cases {
            assert_eq!(stamp(&view), expected, "{view:?}");
        }
        assert_eq!(
            stamp(&View::Exact { tick: t2 }).rewind_target(),
            Some(lagcomp::RewindTarget::between(t2, t2, 0.0))
        );
        assert_eq!(
            stamp(&View::Extrapolated { from: t2, by: 0.1 }).rewind_target(),
            None
        );
    }
}

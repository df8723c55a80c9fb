//! Which connection requests reach netcode: a token bucket per source IP and one for
//! everyone, and in unsecure mode a cap on how far ahead a request's token may expire.
//!
//! Why: netcode keeps a pending entry for each address that sent a valid request until
//! the request's token expires, in a table of 4,096. Unsecure mode needs no credentials,
//! so one host sending requests from thousands of source ports fills the table and no
//! one else can join; and its tokens are the client's own making, expiry included (a
//! renet client makes them for 300 s). Limited here, a host gets a few requests a second
//! ([`PER_HOST`]) and everyone together [`GLOBAL`]; the global rate times the longest
//! expiry accepted ([`UNSECURE_EXPIRY_LIMIT_SECS`]) stays under the table's size, so in
//! unsecure mode a flood from any number of hosts cannot fill it. In secure mode a token
//! is the matchmaker's, checked by netcode, and only the rates apply.
//!
//! The per-host table is fixed ([`HOSTS`] entries, 4-way set associative by a keyed hash
//! of the IP): a host not in it takes the slot of the set's longest-idle host, so memory
//! never grows and nothing is allocated per datagram.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::net::IpAddr;

use crate::channel::UNSECURE_EXPIRY_LIMIT_SECS;
use crate::framing::REQUEST_EXPIRY;

/// A token bucket's rate (tokens a second) and depth (tokens it holds at most).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Rate {
    /// Refill, per second.
    pub(crate) per_second: f64,
    /// Burst.
    pub(crate) burst: f64,
}

/// One source IP: a burst of 16 requests, then 8 a second (a netcode client repeats its
/// request every 250 ms until answered, so 8 players joining together behind one address
/// are all let in at once).
pub(crate) const PER_HOST: Rate = Rate {
    per_second: 8.0,
    burst: 16.0,
};

/// Everyone together: 64 a second, bursts of 128.
pub(crate) const GLOBAL: Rate = Rate {
    per_second: 64.0,
    burst: 128.0,
};

// The global rate's burst plus its rate over the longest unsecure expiry stays under
// netcode's 4,096 pending entries.
const _: () = assert!(
    (GLOBAL.burst as u64) + (GLOBAL.per_second as u64) * (UNSECURE_EXPIRY_LIMIT_SECS + 1) < 4096
);

/// Hosts remembered at once.
const HOSTS: usize = 1024;

/// Hosts per set.
const WAYS: usize = 4;

/// Why a connection request was not handed to netcode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Its host sent more than [`PER_HOST`] allows.
    HostRate,
    /// Everyone together sent more than [`GLOBAL`] allows.
    GlobalRate,
    /// Unsecure mode, and its token expires further ahead than
    /// [`UNSECURE_EXPIRY_LIMIT_SECS`].
    LongToken,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    /// Server time of the last refill, seconds.
    at: f64,
}

impl Bucket {
    fn full(rate: Rate, now: f64) -> Self {
        Self {
            tokens: rate.burst,
            at: now,
        }
    }

    fn take(&mut self, rate: Rate, now: f64) -> bool {
        let elapsed = (now - self.at).max(0.0);
        self.tokens = (self.tokens + elapsed * rate.per_second).min(rate.burst);
        self.at = self.at.max(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// Whether it would be full by `now`: its host may be forgotten at no cost.
    fn idle(&self, rate: Rate, now: f64) -> bool {
        self.tokens + (now - self.at).max(0.0) * rate.per_second >= rate.burst
    }
}

#[derive(Debug, Clone, Copy)]
struct Host {
    ip: Option<IpAddr>,
    bucket: Bucket,
}

/// The rate limits and the expiry cap (see the [module documentation](self)).
#[derive(Debug)]
pub(crate) struct Admission {
    hosts: Box<[Host]>,
    global: Bucket,
    per_host: Rate,
    everyone: Rate,
    /// Unsecure mode: the expiry cap applies.
    unsecure: bool,
    hasher: RandomState,
}

impl Admission {
    /// Limits for a server in unsecure mode or not, starting at server time `now`.
    pub(crate) fn new(unsecure: bool, now: f64) -> Self {
        let (per_host, everyone) = (PER_HOST, GLOBAL);
        Self {
            hosts: vec![
                Host {
                    ip: None,
                    bucket: Bucket::full(per_host, now),
                };
                HOSTS
            ]
            .into_boxed_slice(),
            global: Bucket::full(everyone, now),
            per_host,
            everyone,
            unsecure,
            hasher: RandomState::new(),
        }
    }

    /// Whether the connection request `request` (framed: [`crate::framing::check`]) from
    /// `ip` at server time `now` goes on to netcode, whose clock reads `unix_secs`.
    ///
    /// # Errors
    /// [`Refusal`]: why not.
    pub(crate) fn admit(
        &mut self,
        ip: IpAddr,
        request: &[u8],
        now: f64,
        unix_secs: u64,
    ) -> Result<(), Refusal> {
        if self.unsecure {
            let expiry = request
                .get(REQUEST_EXPIRY)
                .and_then(|bytes| bytes.try_into().ok())
                .map_or(u64::MAX, u64::from_le_bytes);
            if expiry > unix_secs.saturating_add(UNSECURE_EXPIRY_LIMIT_SECS) {
                return Err(Refusal::LongToken);
            }
        }
        let per_host = self.per_host;
        if !self.host(ip, now).bucket.take(per_host, now) {
            return Err(Refusal::HostRate);
        }
        if !self.global.take(self.everyone, now) {
            return Err(Refusal::GlobalRate);
        }
        Ok(())
    }

    /// `ip`'s entry: found, or made in its set's slot idle longest.
    fn host(&mut self, ip: IpAddr, now: f64) -> &mut Host {
        let set = (self.hasher.hash_one(ip) as usize % (HOSTS / WAYS)) * WAYS;
        let ways = set..set + WAYS;
        let slot = ways
            .clone()
            .find(|&i| self.hosts[i].ip == Some(ip))
            .or_else(|| {
                ways.clone().find(|&i| {
                    let host = &self.hosts[i];
                    host.ip.is_none() || host.bucket.idle(self.per_host, now)
                })
            })
            .unwrap_or_else(|| {
                // All four busy: the one refilled longest ago goes.
                ways.min_by(|&a, &b| self.hosts[a].bucket.at.total_cmp(&self.hosts[b].bucket.at))
                    .unwrap_or(set)
            });
        let host = &mut self.hosts[slot];
        if host.ip != Some(ip) {
            *host = Host {
                ip: Some(ip),
                bucket: Bucket::full(self.per_host, now),
            };
        }
        host
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framing::REQUEST_BYTES;

    /// A request whose token expires at `expiry` (Unix seconds).
    fn request(expiry: u64) -> Vec<u8> {
        let mut bytes = vec![0; REQUEST_BYTES];
        bytes[REQUEST_EXPIRY].copy_from_slice(&expiry.to_le_bytes());
        bytes
    }

    const UNIX: u64 = 1_800_000_000;

    #[test]
    fn one_host_gets_its_burst_then_its_rate_and_others_are_unaffected() {
        let mut admission = Admission::new(false, 0.0);
        let flooder: IpAddr = "127.0.0.2".parse().expect("an address");
        let honest: IpAddr = "127.0.0.1".parse().expect("an address");
        let ok = request(UNIX + 10);
        let admitted = (0..1000)
            .filter(|i| {
                admission
                    .admit(flooder, &ok, f64::from(*i) * 1e-4, UNIX)
                    .is_ok()
            })
            .count();
        // 0.1 s of a 10,000/s flood: the burst and about one more.
        assert!((16..=17).contains(&admitted), "{admitted}");
        assert_eq!(
            admission.admit(flooder, &ok, 0.1, UNIX),
            Err(Refusal::HostRate)
        );
        for _ in 0..8 {
            assert_eq!(admission.admit(honest, &ok, 0.1, UNIX), Ok(()));
        }
        // A second later, eight more for the flooder.
        let later = (0..100)
            .filter(|_| admission.admit(flooder, &ok, 1.1, UNIX).is_ok())
            .count();
        assert_eq!(later, 8);
    }

    #[test]
    fn many_hosts_together_get_the_global_rate() {
        let mut admission = Admission::new(false, 0.0);
        let ok = request(UNIX + 10);
        let mut admitted = [0, 0];
        for i in 0..5000_u32 {
            let ip = IpAddr::from(i.to_be_bytes());
            // Half at once, half half a second later.
            let (half, now) = if i < 2500 { (0, 0.0) } else { (1, 0.5) };
            if admission.admit(ip, &ok, now, UNIX).is_ok() {
                admitted[half] += 1;
            }
        }
        // The burst, then half a second's rate.
        assert_eq!(admitted, [128, 32]);
        assert_eq!(
            admission.admit("10.0.0.1".parse().expect("an address"), &ok, 0.5, UNIX),
            Err(Refusal::GlobalRate)
        );
    }

    #[test]
    fn unsecure_tokens_may_not_outlive_the_cap() {
        let ip: IpAddr = "127.0.0.1".parse().expect("an address");
        let mut unsecure = Admission::new(true, 0.0);
        // renet's own unsecure clients: 300 s.
        assert_eq!(
            unsecure.admit(ip, &request(UNIX + 300), 0.0, UNIX),
            Err(Refusal::LongToken)
        );
        assert_eq!(
            unsecure.admit(ip, &request(UNIX + UNSECURE_EXPIRY_LIMIT_SECS), 0.0, UNIX),
            Ok(())
        );
        // Secure mode: the matchmaker's tokens, any expiry.
        let mut secure = Admission::new(false, 0.0);
        assert_eq!(secure.admit(ip, &request(UNIX + 300), 0.0, UNIX), Ok(()));
    }

    #[test]
    fn the_host_table_stays_its_size_under_a_sweep_of_addresses() {
        let mut admission = Admission::new(false, 0.0);
        let ok = request(UNIX + 10);
        for i in 0..100_000_u32 {
            let _ = admission.admit(IpAddr::from(i.to_be_bytes()), &ok, f64::from(i), UNIX);
        }
        assert_eq!(admission.hosts.len(), HOSTS);
    }
}

//! What a running server reports once a second and when it ends ([`Status`],
//! [`Summary`]).

use std::collections::BTreeMap;

/// One second (or the whole run) of the server's work.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Status {
    /// Seconds since the start.
    pub elapsed: f64,
    /// The server's tick then: ticks since the start, run or skipped (the next tick's
    /// number).
    pub tick: u32,
    /// Players connected now.
    pub players: usize,
    /// Ticks run.
    pub ticks: u64,
    /// Ticks that started more than a tick late.
    pub late_ticks: u64,
    /// Ticks skipped because the server was more than [`MAX_CATCH_UP`](super::MAX_CATCH_UP)
    /// ticks behind.
    pub skipped_ticks: u64,
    /// Tick work time, median, seconds (`None` without ticks).
    pub tick_p50: Option<f64>,
    /// Tick work time, 99th percentile, seconds.
    pub tick_p99: Option<f64>,
    /// Tick work time, the longest, seconds.
    pub tick_max: Option<f64>,
    /// Of the tick's work time, the CPU time the server's thread spent on it, median,
    /// seconds: what the work time would be with a core to itself (on a loaded machine
    /// the rest is time spent waiting for one). Not measured where the system has no
    /// thread CPU clock.
    pub cpu_p50: Option<f64>,
    /// The same, 99th percentile.
    pub cpu_p99: Option<f64>,
    /// Of that, the send thread's part (its CPU time for the tick's datagrams), median and
    /// 99th percentile (`None` without a send thread).
    pub send_cpu_p50: Option<f64>,
    /// The same, 99th percentile.
    pub send_cpu_p99: Option<f64>,
    /// Datagrams the ticks handed to the socket (snapshots with their verdicts, renet's
    /// acknowledgements and resends; not the answers to pings, sent at once between ticks).
    pub tick_datagrams: u64,
    /// Verdicts dropped before their shooter acknowledged them, because
    /// [`VerdictOutbox::CAPACITY`](lagcomp_wire::VerdictOutbox::CAPACITY) of its verdicts
    /// were waiting (a client that stopped acknowledging).
    pub verdicts_given_up: u64,
    /// Of the tick's work, moving the bodies and recording the frame: 99th percentile.
    pub record_p99: Option<f64>,
    /// Validating the tick's shots and sending their results: 99th percentile.
    pub validate_p99: Option<f64>,
    /// Encoding and sending snapshots: 99th percentile.
    pub send_p99: Option<f64>,
    /// The tick budget (one tick interval), seconds.
    pub budget: f64,
    /// Shots validated.
    pub shots: u64,
    /// Copies of shots already answered (a replayed claim sent again unchanged), answered
    /// again from memory instead of validated and written again.
    pub copies_answered: u64,
    /// Shots dropped unvalidated because their client was past
    /// [`ServeConfig::max_verdicts_per_second`](super::ServeConfig::max_verdicts_per_second).
    pub verdicts_capped: u64,
    /// Verdicts by outcome label (`confirmed`, `miss`, `blocked`, or the rejection reason).
    pub verdicts: BTreeMap<&'static str, u64>,
    /// Malformed messages dropped.
    pub malformed: u64,
    /// Clients disconnected for them.
    pub kicked: u64,
    /// Datagrams dropped before netcode because they were not netcode's framing (a
    /// prefix byte naming no packet type or a sequence longer than 8 bytes, a length
    /// their packet type never has): noise, or an attack on the netcode library.
    pub framing_drops: u64,
    /// Connection requests dropped before netcode: over the rate limits (per source IP
    /// and for everyone), or, in unsecure mode, with a token that expires further ahead
    /// than [`crate::channel::UNSECURE_EXPIRY_LIMIT_SECS`].
    pub refused_requests: u64,
    /// Datagrams whose processing panicked inside netcode or renet and was contained
    /// (dropped, the sender disconnected if a client, logged at error level). No known
    /// input gets here; one that does is a bug to report.
    pub contained_panics: u64,
    /// Snapshots sent (one per client whose turn it was, in however many parts).
    pub snapshots: u64,
    /// Snapshot parts sent (messages).
    pub snapshot_parts: u64,
    /// Entities in the snapshots sent (with interest management, each client's view).
    pub snapshot_entities: u64,
    /// Players that joined.
    pub joined: u64,
    /// Players that left.
    pub left: u64,
}

impl Status {
    /// The line `lagcomp serve` prints each second by default, under 70 characters: the
    /// tick, players, shots a second, the 99th percentile of the tick's work, and
    /// everything dropped (see [`BriefStatus`]). The `Display` of the status itself is the
    /// full line.
    #[must_use]
    pub fn brief(&self) -> BriefStatus<'_> {
        BriefStatus(self)
    }

    /// Shots validated a second over the stretch the status covers (its ticks, run or
    /// skipped), or 0 without ticks.
    #[must_use]
    pub fn shots_per_second(&self) -> f64 {
        let seconds = (self.ticks + self.skipped_ticks) as f64 * self.budget;
        if seconds > 0.0 {
            self.shots as f64 / seconds
        } else {
            0.0
        }
    }

    /// Everything dropped: malformed messages, datagrams that were not netcode's,
    /// connection requests refused, shots over the verdict cap, verdicts given up
    /// unacknowledged, and datagrams whose processing panicked.
    #[must_use]
    pub fn dropped(&self) -> u64 {
        self.malformed
            + self.framing_drops
            + self.refused_requests
            + self.verdicts_capped
            + self.verdicts_given_up
            + self.contained_panics
    }
}

/// A status in one short line ([`Status::brief`]):
/// `tick 640 (p99 0.412 ms) | 8 players | 12.5 shots/s | dropped 0`: the server's tick
/// and the 99th percentile of its ticks' work in the second, players connected, shots
/// validated a second, and everything dropped ([`Status::dropped`]); with
/// `| N ticks skipped` after it when ticks were skipped.
#[derive(Debug, Clone, Copy)]
pub struct BriefStatus<'a>(&'a Status);

impl std::fmt::Display for BriefStatus<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.0;
        write!(f, "tick {} (p99 ", s.tick)?;
        match s.tick_p99 {
            Some(t) => write!(f, "{:.3} ms)", t * 1e3)?,
            None => f.write_str("-)")?,
        }
        write!(f, " | {} players | ", s.players)?;
        // Tenths only where they say something.
        let rate = s.shots_per_second();
        if rate < 100.0 {
            write!(f, "{rate:.1}")?;
        } else {
            write!(f, "{rate:.0}")?;
        }
        write!(f, " shots/s | dropped {}", s.dropped())?;
        if s.skipped_ticks > 0 {
            write!(f, " | {} ticks skipped", s.skipped_ticks)?;
        }
        Ok(())
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |t: Option<f64>| t.map_or_else(|| "-".to_owned(), |t| format!("{:.3}", t * 1e3));
        write!(
            f,
            "players {} | tick p50 {} ms, p99 {} ms, max {} ms of {:.3} ms ({} ticks, {} late, \
             {} skipped)",
            self.players,
            ms(self.tick_p50),
            ms(self.tick_p99),
            ms(self.tick_max),
            self.budget * 1e3,
            self.ticks,
            self.late_ticks,
            self.skipped_ticks,
        )?;
        if self.ticks > 0 {
            write!(
                f,
                " | p99 record {} ms, validate {} ms, send {} ms | CPU p50 {} ms, p99 {} ms",
                ms(self.record_p99),
                ms(self.validate_p99),
                ms(self.send_p99),
                ms(self.cpu_p50),
                ms(self.cpu_p99)
            )?;
            if self.send_cpu_p50.is_some() {
                write!(
                    f,
                    " (send thread p50 {} ms, p99 {} ms)",
                    ms(self.send_cpu_p50),
                    ms(self.send_cpu_p99)
                )?;
            }
        }
        write!(f, " | shots {}", self.shots)?;
        if !self.verdicts.is_empty() {
            let verdicts: Vec<String> = self
                .verdicts
                .iter()
                .map(|(label, n)| format!("{label} {n}"))
                .collect();
            write!(f, " ({})", verdicts.join(", "))?;
        }
        if self.copies_answered > 0 || self.verdicts_capped > 0 {
            write!(
                f,
                " | copies answered from memory {}, shots over the verdict cap {}",
                self.copies_answered, self.verdicts_capped
            )?;
        }
        if self.snapshots > 0 {
            write!(
                f,
                " | snapshots {} ({:.1} parts, {:.1} entities each; {:.2} datagrams per \
                 snapshot)",
                self.snapshots,
                self.snapshot_parts as f64 / self.snapshots as f64,
                self.snapshot_entities as f64 / self.snapshots as f64,
                self.tick_datagrams as f64 / self.snapshots as f64
            )?;
        }
        write!(f, " | malformed {}", self.malformed)?;
        if self.kicked > 0 {
            write!(f, " ({} disconnected)", self.kicked)?;
        }
        if self.framing_drops + self.refused_requests + self.contained_panics > 0 {
            write!(
                f,
                " | dropped: {} not netcode, {} connection requests, {} panics contained",
                self.framing_drops, self.refused_requests, self.contained_panics
            )?;
        }
        Ok(())
    }
}

/// What a run did, when it ends.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Over the whole run.
    pub status: Status,
    /// Lines in the recording, if one was written.
    pub recording_lines: Option<usize>,
    /// Verdicts in the audit log, if one was written.
    pub audited: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::Status;

    #[test]
    fn the_brief_line_is_short_and_says_the_essentials() {
        let mut status = Status {
            tick: 123_456,
            players: 1024,
            ticks: 64,
            budget: 1.0 / 64.0,
            shots: 2_000,
            tick_p99: Some(0.012_345),
            malformed: 3,
            framing_drops: 4,
            refused_requests: 5,
            verdicts_capped: 6,
            verdicts_given_up: 7,
            contained_panics: 1,
            ..Status::default()
        };
        let brief = status.brief().to_string();
        assert_eq!(
            brief,
            "tick 123456 (p99 12.345 ms) | 1024 players | 2000 shots/s | dropped 26"
        );
        // With the `[    1 s] ` prefix serve prints, still within 80 columns.
        assert!(brief.len() + 10 <= 80, "{} characters", brief.len());
        // The full line is the one with every detail.
        assert!(status.to_string().len() > 2 * brief.len(), "{status}");

        status.ticks = 32;
        status.skipped_ticks = 32;
        status.tick_p99 = None;
        assert_eq!(
            status.brief().to_string(),
            "tick 123456 (p99 -) | 1024 players | 2000 shots/s | dropped 26 | 32 ticks skipped"
        );
        status.shots = 3;
        assert_eq!(
            status.brief().to_string(),
            "tick 123456 (p99 -) | 1024 players | 3.0 shots/s | dropped 26 | 32 ticks skipped"
        );
        // No ticks: no rate.
        assert_eq!(Status::default().shots_per_second(), 0.0);
    }
}

//! The audit trail: every verdict as a `tracing` event, and optionally as a line of JSON
//! ([`AuditLog`], read back by [`read_audit_log`]).

use std::io::{self, BufRead, Write};

use crate::explain::Rejection;
use crate::jsonl::{LineError, TornTail, read_line};
use crate::verdict::{Verdict, VerdictOutcome};

/// The longest audit line [`read_audit_log`] reads, bytes: a verdict takes under 1 KiB.
pub const MAX_AUDIT_LINE_BYTES: usize = 64 * 1024;

/// Emits `verdict` as a `tracing` event with target `lagcomp::verdict`: INFO for confirmed
/// hits, misses and blocked shots, WARN for rejections. Called by
/// [`crate::Validator::validate`] for every verdict.
pub fn emit(verdict: &Verdict) {
    let shooter = verdict.shooter.to_bits();
    let requested = verdict.basis.requested_time.unwrap_or(f64::NAN);
    let used = verdict.basis.time_used.unwrap_or(f64::NAN);
    let latency = verdict.basis.shooter_latency.unwrap_or(f64::NAN);
    match verdict.outcome {
        VerdictOutcome::Rejected { reason } => tracing::warn!(
            target: "lagcomp::verdict",
            shooter,
            seq = verdict.seq,
            weapon = verdict.weapon.0,
            outcome = "rejected",
            reason = reason.name(),
            code = reason.code(),
            requested,
            used,
            latency,
            measured = verdict.basis.measured.map_or(f64::NAN, |m| m.value),
            allowed = verdict.basis.measured.map_or(f64::NAN, |m| m.most),
            "shot rejected: {}",
            Rejection {
                reason,
                measured: verdict.basis.measured,
            }
        ),
        VerdictOutcome::Confirmed(hit) => tracing::info!(
            target: "lagcomp::verdict",
            shooter,
            seq = verdict.seq,
            weapon = verdict.weapon.0,
            outcome = "confirmed",
            target_entity = hit.target.to_bits(),
            hitbox = hit.hitbox.0,
            damage_multiplier = hit.damage_multiplier,
            by_leeway = hit.by_leeway,
            requested,
            used,
            latency,
            "shot confirmed"
        ),
        // Not a cheat: info, as a miss is, with the refusal's stable name and code.
        VerdictOutcome::Refused {
            target, refusal, ..
        } => tracing::info!(
            target: "lagcomp::verdict",
            shooter,
            seq = verdict.seq,
            weapon = verdict.weapon.0,
            outcome = "refused",
            refusal = refusal.name(),
            code = refusal.code(),
            target_entity = target.to_bits(),
            requested,
            used,
            latency,
            "shot refused: {refusal}"
        ),
        other => tracing::info!(
            target: "lagcomp::verdict",
            shooter,
            seq = verdict.seq,
            weapon = verdict.weapon.0,
            outcome = other.label(),
            requested,
            used,
            latency,
            "shot {}",
            other.label()
        ),
    }
}

/// Writes verdicts as JSON Lines (one [`Verdict`] object per line, the same shape as
/// `lagcomp validate --json` prints).
#[derive(Debug)]
pub struct AuditLog<W: Write> {
    out: W,
    written: u64,
}

impl<W: Write> AuditLog<W> {
    /// A log writing to `out` (wrap files in a `BufWriter`).
    pub fn new(out: W) -> Self {
        Self { out, written: 0 }
    }

    /// Appends one verdict.
    ///
    /// # Errors
    /// The writer's error.
    pub fn write(&mut self, verdict: &Verdict) -> io::Result<()> {
        serde_json::to_writer(&mut self.out, verdict)?;
        self.out.write_all(b"\n")?;
        self.written += 1;
        Ok(())
    }

    /// Hands what was written so far to the writer's destination (a `BufWriter`'s file):
    /// once a server tick, so a server killed outright loses at most the tick it was in.
    ///
    /// # Errors
    /// The writer's error.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// How many verdicts were written.
    #[must_use]
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Flushes and returns the writer.
    ///
    /// # Errors
    /// The writer's error.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// An audit log read back by [`read_audit_log`].
#[derive(Debug, Clone, PartialEq)]
pub struct AuditRecords {
    /// Every complete line's verdict, in file order.
    pub verdicts: Vec<Verdict>,
    /// The incomplete last line the file ended in (a server killed while writing it), if
    /// it did.
    pub torn: Option<TornTail>,
}

/// Why an audit log could not be read. Lines are numbered from 1.
#[derive(Debug, thiserror::Error)]
pub enum AuditReadError {
    /// Reading failed.
    #[error("line {line}: {source}")]
    Io {
        /// The line being read.
        line: usize,
        /// Why.
        source: io::Error,
    },
    /// A line longer than [`MAX_AUDIT_LINE_BYTES`].
    #[error("line {line}: longer than the limit of {MAX_AUDIT_LINE_BYTES} bytes")]
    LineTooLong {
        /// The line.
        line: usize,
    },
    /// A complete line (ended by a newline) that is not a verdict.
    #[error("line {line}: not a verdict: {message}")]
    NotAVerdict {
        /// The line.
        line: usize,
        /// What the JSON parser found.
        message: String,
    },
}

/// Reads an audit log as [`AuditLog`] writes it: one verdict per line. A file that ends
/// mid-line (no newline after its last line, which is not a complete verdict: a server
/// killed while writing it) gives every verdict before it and [`AuditRecords::torn`].
///
/// ```
/// use lagcomp_validate::audit::{AuditLog, read_audit_log};
/// # use lagcomp::EntityId;
/// # use lagcomp_validate::{Basis, VerdictOutcome, Verdict, WeaponId};
/// # let verdict = Verdict {
/// #     shooter: EntityId::from_bits(1),
/// #     seq: 7,
/// #     weapon: WeaponId(1),
/// #     outcome: VerdictOutcome::Miss,
/// #     basis: Basis::default(),
/// # };
/// let mut log = AuditLog::new(Vec::new());
/// log.write(&verdict)?;
/// log.write(&verdict)?;
/// let bytes = log.finish()?;
/// // Killed halfway through the second line.
/// let read = read_audit_log(&bytes[..bytes.len() - 20])?;
/// assert_eq!(read.verdicts, [verdict]);
/// assert_eq!(read.torn.map(|t| t.line), Some(2));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`AuditReadError`]: the first line that is not a verdict (other than a torn last one),
/// one too long, or a failed read.
pub fn read_audit_log(mut input: impl BufRead) -> Result<AuditRecords, AuditReadError> {
    let mut verdicts = Vec::new();
    let mut buf = Vec::new();
    let mut line = 0;
    loop {
        line += 1;
        buf.clear();
        let ended = read_line(&mut input, &mut buf, MAX_AUDIT_LINE_BYTES).map_err(|e| match e {
            LineError::TooLong => AuditReadError::LineTooLong { line },
            LineError::Io(source) => AuditReadError::Io { line, source },
        })?;
        if buf.is_empty() && !ended {
            return Ok(AuditRecords {
                verdicts,
                torn: None,
            });
        }
        match serde_json::from_slice::<Verdict>(&buf) {
            Ok(verdict) => verdicts.push(verdict),
            // Cut short: the closing brace is missing, so it cannot parse.
            Err(_) if !ended => {
                return Ok(AuditRecords {
                    verdicts,
                    torn: Some(TornTail {
                        line,
                        bytes: buf.len(),
                    }),
                });
            }
            Err(e) => {
                return Err(AuditReadError::NotAVerdict {
                    line,
                    message: e.to_string(),
                });
            }
        }
    }
}

//! The audit trail: every verdict as a `tracing` event, and optionally as a line of JSON.

use std::io::{self, Write};

use crate::verdict::{Outcome, Verdict};

/// Emits `verdict` as a `tracing` event with target `lagcomp::verdict`: INFO for confirmed
/// hits, misses and blocked shots, WARN for rejections. Called by
/// [`crate::Validator::validate`] for every verdict.
pub fn emit(verdict: &Verdict) {
    let shooter = verdict.shooter.to_bits();
    let requested = verdict.basis.requested_time.unwrap_or(f64::NAN);
    let used = verdict.basis.time_used.unwrap_or(f64::NAN);
    let latency = verdict.basis.shooter_latency.unwrap_or(f64::NAN);
    match verdict.outcome {
        Outcome::Rejected { reason } => tracing::warn!(
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
            "shot rejected: {reason}"
        ),
        Outcome::Confirmed(hit) => tracing::info!(
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

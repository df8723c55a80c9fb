//! The tick loop: catching up after a stall, then each tick moving and recording the
//! bodies, validating the shots that arrived, and writing the outputs before any
//! verdict goes out.

use std::time::{Duration, Instant};

use lagcomp::{BoneTransform, EntityId, EntityState, Tick, Vec3};
use lagcomp_service::batch::validate_batch;
use lagcomp_validate::{ShotClaim, Verdict};
use lagcomp_wire::WireOutcome;
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

use super::GameServer;
use super::config::{MAX_CATCH_UP, MAX_STALL_REPLAY, REPLAY_LOAD, REPLAY_SNAPSHOTS, ServeError};
use crate::stats::thread_cpu_time;
use crate::transport::{Acks, Route};

impl GameServer {
    /// Runs the ticks whose deadlines have passed: more than one only after a stall, and
    /// at most [`MAX_CATCH_UP`], or every one of a stall up to [`MAX_STALL_REPLAY`] while
    /// they are cheap ([`REPLAY_LOAD`]; only the most recent of those send snapshots); a
    /// server
    /// further behind than that skips the rest (the next tick is the one due now), so an
    /// overloaded server falls behind by dropped ticks instead of sinking ever further
    /// behind the clock its clients sync to.
    pub(super) fn catch_up(&mut self, start: &Instant, dt: f64) -> Result<(), ServeError> {
        let mut ran = 0_usize;
        let mut replay_began = None;
        loop {
            let deadline = f64::from(self.next_tick) * dt;
            let began = start.elapsed().as_secs_f64();
            if began < deadline {
                return Ok(());
            }
            let replaying = ran >= MAX_CATCH_UP;
            if replaying {
                // The replay's cost is measured from its own start, in the thread's CPU
                // time where there is a clock for it (on a busy machine the wall time
                // counts the waits for a core, which say nothing of the server's load),
                // with a few ticks' grace.
                let spent = thread_cpu_time().unwrap_or(began);
                let since = spent - *replay_began.get_or_insert(spent);
                let replayed = ran as f64;
                if began - deadline > MAX_STALL_REPLAY || since > replayed * dt * REPLAY_LOAD {
                    break;
                }
            }
            let cpu_began = thread_cpu_time();
            // Inputs that arrived before the tick are in before it.
            self.pump(began, dt)?;
            let tick = Tick(self.next_tick);
            self.next_tick += 1;
            let datagrams = self.transport.datagrams();
            // A tick replaying a stall sends its snapshot only if it is recent enough for
            // a client to draw (the rest are gone by the time they would arrive), so the
            // clients have snapshots to interpolate between on both sides of their
            // present again rather than one from before the stall and one after.
            let snapshot = !replaying || began - deadline <= REPLAY_SNAPSHOTS;
            self.tick(tick, deadline, began, snapshot)?;
            ran += 1;
            let took = start.elapsed().as_secs_f64() - began;
            let send_cpu = self.send_cpu.take();
            let cpu = thread_cpu_time()
                .map(|end| end - cpu_began.unwrap_or(end) + send_cpu.unwrap_or(0.0));
            let datagrams = self.transport.datagrams() - datagrams;
            if let Some((metrics, _)) = &mut self.metrics {
                let (sent, received) = self.transport.bytes();
                metrics.tick(took, self.connections.len(), sent, received);
            }
            for counters in [&mut self.second, &mut self.total] {
                counters.ticks += 1;
                counters.times.record(took);
                counters.tick_datagrams += datagrams;
                if let Some(cpu) = cpu {
                    counters.cpu.record(cpu);
                }
                if let Some(send_cpu) = send_cpu {
                    counters.send_cpu.record(send_cpu);
                }
                if began - deadline > dt {
                    counters.late_ticks += 1;
                }
            }
        }
        let due = (start.elapsed().as_secs_f64() / dt).floor();
        if due > f64::from(self.next_tick) {
            let due = due.min(f64::from(u32::MAX)) as u32;
            let skipped = u64::from(due - self.next_tick);
            for counters in [&mut self.second, &mut self.total] {
                counters.skipped += skipped;
            }
            self.next_tick = due;
        }
        Ok(())
    }

    /// One tick: move and record, validate, answer shooters, send the snapshot.
    fn tick(&mut self, tick: Tick, time: f64, now: f64, snapshot: bool) -> Result<(), ServeError> {
        let dt = 1.0 / self.config.tick_rate;
        let began = Instant::now();
        let mut rng = Pcg64Mcg::seed_from_u64(self.config.seed ^ (u64::from(tick.0) << 20));
        let mut queue = self.core.tick(tick, time, dt, &mut rng)?;
        self.record_frame(tick, time)?;
        let recorded = Instant::now();
        self.claims.clear();
        self.prints.clear();
        for queued in queue.drain(..) {
            self.admit(queued, now);
        }
        self.core.recycle(queue);
        if !self.claims.is_empty() {
            let claims = std::mem::take(&mut self.claims);
            if self.config.parallel_validation {
                let (history, validator) = self.core.history_and_validator();
                let verdicts = validate_batch(history, validator, &claims);
                for (i, ((claim, received), verdict)) in claims.iter().zip(&verdicts).enumerate() {
                    self.settle(claim, *received, verdict, self.prints[i])?;
                }
            } else {
                for (i, (claim, received)) in claims.iter().enumerate() {
                    let verdict = self.core.validate(claim, *received);
                    self.settle(claim, *received, &verdict, self.prints[i])?;
                }
            }
            self.claims = claims;
        }
        self.flush_outputs()?;
        let validated = Instant::now();
        if snapshot {
            self.send_snapshot(tick, time, now)?;
        }
        // Renet's clock (reliable resends, its statistics) once a tick, not at every read:
        // it walks every connection.
        self.renet
            .update(Duration::from_secs_f64((now - self.renet_updated).max(0.0)));
        self.renet_updated = now;
        self.transport.maintain(&mut self.renet);
        // Renet's packets for those not yet playing (their welcome is resent until it
        // arrives; renet's acknowledgements with it) and for those renet was given a
        // message too big for a datagram this tick. Everyone else's renet packets went
        // in their snapshot's datagram.
        for connection in &mut self.connections {
            if connection.outgoing || !connection.ready {
                connection.outgoing = false;
                let acks = if connection.ready {
                    Acks::Hold
                } else {
                    Acks::Send
                };
                self.transport.send_to_client(
                    &mut self.renet,
                    connection.client,
                    acks,
                    Route::Tick,
                );
            }
        }
        // The tick ends when its last datagram is handed to the socket, on whichever thread.
        self.send_cpu = self.transport.flush();
        let sent = Instant::now();
        for counters in [&mut self.second, &mut self.total] {
            counters.record.record((recorded - began).as_secs_f64());
            counters
                .validate
                .record((validated - recorded).as_secs_f64());
            counters.send.record((sent - validated).as_secs_f64());
        }
        Ok(())
    }

    /// Hands the tick's lines (its frame, its claims and verdicts, and whatever joined or
    /// left since the last) to the files, once a tick rather than per line, and before
    /// the tick's verdicts go out: a server killed outright (SIGKILL, a crash, the power)
    /// has told no player a verdict that is not in the files, and loses at most the tick
    /// it was in. A kill in the middle of a write can still leave a torn last line; the
    /// readers use every complete line before it (`lagcomp_validate::TornTail`).
    fn flush_outputs(&mut self) -> Result<(), ServeError> {
        if let Some(writer) = &mut self.recording {
            writer.flush().map_err(ServeError::Recording)?;
        }
        if let Some(audit) = &mut self.audit {
            audit.flush().map_err(ServeError::Audit)?;
        }
        Ok(())
    }

    /// The frame and any changed timings into the recording.
    fn record_frame(&mut self, tick: Tick, time: f64) -> Result<(), ServeError> {
        let Some(writer) = &mut self.recording else {
            return Ok(());
        };
        let entities: Vec<(EntityId, EntityState, &[BoneTransform], Vec3)> =
            self.core.recorded_moving().collect();
        writer
            .frame_moving(tick, time, &entities)
            .map_err(ServeError::Recording)?;
        // The core gives the validator every measured player's timing each tick; only
        // changes need a line, since setting the same timing again changes nothing.
        for entity in self.core.players() {
            if let Some(timing) = self.core.timing(entity)
                && self.timings.get(&entity) != Some(&timing)
            {
                writer
                    .timing(entity, &timing)
                    .map_err(ServeError::Recording)?;
                self.timings.insert(entity, timing);
            }
        }
        Ok(())
    }

    /// One verdict of a claim whose fingerprint is `print`: recorded, audited, counted,
    /// sent to the shooter and remembered, to answer copies of the claim.
    fn settle(
        &mut self,
        claim: &ShotClaim,
        received: f64,
        verdict: &Verdict,
        print: u64,
    ) -> Result<(), ServeError> {
        if let Some(writer) = &mut self.recording {
            writer
                .claim(received, claim)
                .map_err(ServeError::Recording)?;
            writer.verdict(verdict).map_err(ServeError::Recording)?;
        }
        if let Some(audit) = &mut self.audit {
            audit.write(verdict).map_err(ServeError::Audit)?;
        }
        let label = verdict.outcome.label();
        if let Some((metrics, _)) = &self.metrics {
            metrics.verdict(&verdict.outcome);
        }
        for counters in [&mut self.second, &mut self.total] {
            counters.shots += 1;
            *counters.verdicts.entry(label).or_default() += 1;
        }
        if let Some(connection) = self
            .connections
            .iter_mut()
            .find(|c| c.entity == verdict.shooter)
        {
            let outcome = WireOutcome::from(&verdict.outcome);
            let given_up = connection.answer(verdict.seq, print, outcome);
            for counters in [&mut self.second, &mut self.total] {
                counters.verdicts_given_up += given_up;
            }
        }
        Ok(())
    }
}

//! The receive path: datagrams read with their arrival times, connections and
//! disconnections, inputs into the core (pings answered at once), and each shot the
//! core queued taken for validation, answered from memory, or dropped at the cap.

use std::time::Duration;

use lagcomp_game::body::BONES;
use lagcomp_game::server::QueuedShot;
use lagcomp_game::traffic::{ClientInput, fingerprint};
use lagcomp_validate::WeaponClaim;
use lagcomp_wire::datagram::DatagramRecord;
use lagcomp_wire::{ClientMessage, Penalty, ServerMessage, VerdictOutbox, Welcome};
use renet::{ClientId, ServerEvent};

use super::config::ServeError;
use super::{Connection, GameServer};
use crate::answered::{AnsweredShots, Recall};
use crate::arrival::ArrivalClock;
use crate::channel::{UNRELIABLE, WELCOME};
use crate::transport::Route;

impl GameServer {
    /// Reads the socket: connections, disconnections and inputs (answering pings at
    /// once), then sends what is queued. Each datagram's messages are read before the
    /// next datagram, with the time it arrived ([`ArrivalClock`]): a burst queued while
    /// the server was busy keeps its spacing.
    pub(super) fn pump(&mut self, now: f64, dt: f64) -> Result<(), ServeError> {
        let delta = Duration::from_secs_f64((now - self.last_update).max(0.0));
        self.last_update = now;
        // With a tick due, what arrived after its deadline waits for the tick after it:
        // after a stall, each tick replaying it reads what arrived before it
        // (`catch_up`), so its inputs and shots meet the world as it was.
        let deadline = f64::from(self.next_tick) * dt;
        let clock = ArrivalClock::at(now, self.read_until);
        let wall_until = if now < deadline {
            self.read_until = now;
            Duration::MAX
        } else {
            self.read_until = deadline;
            clock.wall_at(deadline)
        };
        self.transport.begin_receive(delta);
        loop {
            let heard = self
                .transport
                .next_payload(&mut self.renet, wall_until)
                .map_err(ServeError::Socket)?;
            self.handle_events()?;
            let Some((client, stamp)) = heard else { break };
            self.read_messages(client, clock.arrival(stamp), now)?;
        }
        self.transport.end_receive(&mut self.renet);
        let refused = self.transport.take_refused();
        for counters in [&mut self.second, &mut self.total] {
            counters.framing_drops += refused.framing;
            counters.refused_requests += refused.requests;
            counters.contained_panics += refused.panics;
        }
        self.handle_events()
    }

    /// Renet's connections and disconnections so far.
    fn handle_events(&mut self) -> Result<(), ServeError> {
        while let Some(event) = self.renet.get_event() {
            match event {
                ServerEvent::ClientConnected { client_id } => self.connect(client_id)?,
                ServerEvent::ClientDisconnected { client_id, .. } => {
                    self.disconnect(client_id)?;
                }
            }
        }
        Ok(())
    }

    /// Every message waiting from `heard`, which arrived at server time `arrival` (read
    /// at `now`): inputs into the core (a ping answered at once), malformed ones counted.
    fn read_messages(&mut self, heard: ClientId, arrival: f64, now: f64) -> Result<(), ServeError> {
        let Some(i) = self.connections.iter().position(|c| c.client == heard) else {
            return Ok(());
        };
        let Connection { client, entity, .. } = self.connections[i];
        while let Some(bytes) = self.renet.receive_message(client, UNRELIABLE) {
            self.connections[i].ready = true;
            match ClientMessage::decode(&bytes) {
                Ok(ClientMessage::Input(input)) => {
                    if let Some(received) = input.verdicts_received {
                        self.connections[i].verdicts.acknowledge(received);
                    }
                    let input = ClientInput {
                        frame: input.frame,
                        aim: input.aim,
                        ping: input.ping,
                        probe_reply: input.probe_reply.map(|r| r.id),
                        // The wire carries hitscan claims (the other kinds are the
                        // simulator's so far).
                        shots: input
                            .shots
                            .into_iter()
                            .map(|(seq, claim)| (seq, WeaponClaim::Hitscan(claim)))
                            .collect(),
                        interp_delay: input.interp_delay,
                        newest_tick: input.newest_tick,
                    };
                    if let Some(mut pong) = self.core.receive(entity, input, arrival) {
                        pong.server_send = now;
                        // At once, so its times are the ping's arrival and the answer's
                        // departure; to this client alone (everyone else's packets go
                        // out with the tick).
                        ServerMessage::Pong(pong).encode(&mut self.scratch)?;
                        self.datagram.clear();
                        if self.datagram.push(DatagramRecord::Message(&self.scratch)) {
                            self.transport.send_payload(
                                client,
                                self.datagram.as_bytes(),
                                Route::Now,
                            );
                        }
                        self.datagram.clear();
                    }
                }
                Err(error) => {
                    self.second.malformed += 1;
                    self.total.malformed += 1;
                    if let Some((metrics, _)) = &self.metrics {
                        metrics.malformed();
                    }
                    let penalty = self.guard.record(client, now);
                    if error.is_incompatible() || penalty == Penalty::Disconnect {
                        self.second.kicked += 1;
                        self.total.kicked += 1;
                        self.renet.disconnect(client);
                        break;
                    }
                }
            }
        }
        Ok(())
    }

    /// A client connected: its body, its registration, its welcome.
    fn connect(&mut self, client: ClientId) -> Result<(), ServeError> {
        let entity = self.core.join(&mut self.join_rng);
        if let Some(writer) = &mut self.recording {
            let participant = self
                .core
                .participant(entity)
                .expect("the player just joined");
            writer
                .spawn(entity, self.core.rig(), &participant)
                .map_err(ServeError::Recording)?;
        }
        let phase = self.next_phase;
        self.next_phase = (self.next_phase + 1) % self.config.send_every();
        self.connections.push(Connection {
            client,
            entity,
            ready: false,
            probed: None,
            outgoing: true,
            phase,
            verdicts: VerdictOutbox::new(),
            snapshots_since_acks: 0,
            answered: AnsweredShots::new(),
            cap_since: f64::NEG_INFINITY,
            cap_used: 0,
            capped_out: false,
        });
        self.by_client.insert(client, entity);
        self.second.joined += 1;
        self.total.joined += 1;
        let welcome = ServerMessage::Welcome(Welcome {
            you: entity,
            tick_rate: self.config.tick_rate,
            send_rate: self.config.tick_rate / f64::from(self.config.send_every()),
            max_rewind: self.config.max_rewind,
            bones: BONES as u16,
            arena_half_size: self.config.arena.half_size,
            arena_walls: self.config.arena.walls,
            arena_seed: self.config.arena.seed,
        });
        if let Some(interest) = &mut self.interest {
            interest.add_viewer(entity);
        }
        self.send(client, WELCOME, &welcome)
    }

    /// A client left: its body goes.
    fn disconnect(&mut self, client: ClientId) -> Result<(), ServeError> {
        self.guard.forget(&client);
        let Some(entity) = self.by_client.remove(&client) else {
            return Ok(());
        };
        self.connections.retain(|c| c.client != client);
        self.timings.remove(&entity);
        if let Some(interest) = &mut self.interest {
            interest.remove_viewer(entity);
        }
        if self.core.leave(entity) {
            self.second.left += 1;
            self.total.left += 1;
            if let Some(writer) = &mut self.recording {
                writer.forget(entity).map_err(ServeError::Recording)?;
                writer.despawn(entity).map_err(ServeError::Recording)?;
            }
        }
        Ok(())
    }

    /// A shot the core queued this tick, at server time `now`: taken for validation (into
    /// `claims`), answered again from memory when it is an exact copy of one answered
    /// before, or dropped when its client is past the verdict cap (a strike for the
    /// guard).
    pub(super) fn admit(&mut self, queued: QueuedShot, now: f64) {
        // Only hitscan claims come in over the wire (see `receive`).
        let WeaponClaim::Hitscan(claim) = queued.claim else {
            return;
        };
        let print = fingerprint(&claim);
        let Some(connection) = self
            .connections
            .iter_mut()
            .find(|c| c.entity == queued.shooter)
        else {
            // Not a connection's (the core drops a leaver's shots, so never): validated
            // as before, without memory or cap.
            self.claims.push((claim, queued.received));
            self.prints.push(print);
            return;
        };
        let seq = claim.seq;
        match connection.answered.recall(seq, print) {
            Recall::Unknown => {}
            Recall::Pending => {
                // A copy within the tick: the first's verdict goes out with this tick.
                for counters in [&mut self.second, &mut self.total] {
                    counters.copies_answered += 1;
                }
                return;
            }
            Recall::Answered { outcome, number } => {
                // The same verdict again, unless it is still waiting in the outbox (it
                // goes with every snapshot until acknowledged anyway).
                let outbox = &mut connection.verdicts;
                let waiting = number.wrapping_sub(outbox.first()) < outbox.len() as u32;
                if !waiting {
                    let given_up = connection.answer(seq, print, outcome);
                    for counters in [&mut self.second, &mut self.total] {
                        counters.verdicts_given_up += given_up;
                    }
                }
                for counters in [&mut self.second, &mut self.total] {
                    counters.copies_answered += 1;
                }
                return;
            }
        }
        if now - connection.cap_since >= 1.0 {
            connection.cap_since = now;
            connection.cap_used = 0;
        }
        if connection.cap_used >= self.config.max_verdicts_per_second {
            for counters in [&mut self.second, &mut self.total] {
                counters.verdicts_capped += 1;
            }
            let penalty = self.guard.record(connection.client, now);
            if penalty == Penalty::Disconnect && !connection.capped_out {
                connection.capped_out = true;
                self.renet.disconnect(connection.client);
                for counters in [&mut self.second, &mut self.total] {
                    counters.kicked += 1;
                }
            }
            return;
        }
        connection.cap_used += 1;
        connection.answered.take(seq, print);
        self.claims.push((claim, queued.received));
        self.prints.push(print);
    }
}

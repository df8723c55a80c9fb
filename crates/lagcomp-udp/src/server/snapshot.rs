//! The send path: each ready client's tick (its part of the world, its verdicts, a probe
//! when due) packed into datagrams of records.

use std::ops::Range;

use bytes::Bytes;
use lagcomp::Tick;
use lagcomp_wire::datagram::{DatagramRecord, DatagramWriter};
use lagcomp_wire::{EntityFrame, EntityPose, RttProbe, ServerMessage};
use renet::{ClientId, RenetServer};

use super::config::{ACKS_PER_SECOND, ServeError};
use super::{Connection, GameServer};
use crate::channel::UNRELIABLE;
use crate::transport::{Acks, Route, ServerTransport};

impl GameServer {
    /// Encodes `message` and queues it for `client` on `channel`.
    pub(super) fn send(
        &mut self,
        client: ClientId,
        channel: u8,
        message: &ServerMessage,
    ) -> Result<(), ServeError> {
        message.encode(&mut self.scratch)?;
        self.renet
            .send_message(client, channel, self.scratch.clone());
        Ok(())
    }

    /// The world at `tick` in parts to every ready client due one (only what is in its
    /// view, with interest management; with its shot acknowledgement, and a round-trip
    /// probe when one is due).
    pub(super) fn send_snapshot(
        &mut self,
        tick: Tick,
        time: f64,
        now: f64,
    ) -> Result<(), ServeError> {
        let every = self.config.send_every();
        let due = |c: &Connection| c.ready && tick.0.wrapping_add(c.phase).is_multiple_of(every);
        // Four probes a second to each client, as the simulator's server sends them, each
        // with a snapshot of its own (below the tick rate, a probe on a tick without one
        // would be a datagram of its own).
        let probe_every = ((self.config.tick_rate / 4.0) as u32).max(1);
        let probe_due = |c: &Connection| {
            due(c)
                && c.probed
                    .is_none_or(|at| tick.0.wrapping_sub(at) >= probe_every)
        };
        let probing = self.connections.iter().any(probe_due);
        let any_due = self.connections.iter().any(due);
        if !probing && !any_due {
            return Ok(());
        }
        // Every part of this tick, for every client, in one buffer shared by their queues:
        // a part is a slice of it, so no part is copied or allocated on its own.
        let mut buffer = Vec::with_capacity(self.encoded.last_len);
        let mut shared: Vec<Range<usize>> = Vec::new();
        if any_due {
            self.fill_frames(time);
            if let Some(interest) = &mut self.interest {
                self.encoded.bodies.clear();
                self.encoded
                    .bodies
                    .extend(self.core.bodies(time).map(|b| (b.id, b.position)));
                interest.update(tick, &self.encoded.bodies);
                self.encoded.entities.encode(tick, time, &self.frames)?;
            } else {
                for part in self.encoder.encode(tick, time, &self.frames)? {
                    let begin = buffer.len();
                    buffer.extend_from_slice(part);
                    shared.push(begin..buffer.len());
                }
            }
        }
        // Each due client's own parts (with interest management), as ranges of `buffer`.
        self.encoded.views.clear();
        self.encoded.ranges.clear();
        if let (true, Some(interest)) = (any_due, &self.interest) {
            for (c, connection) in self.connections.iter().enumerate() {
                if !due(connection) {
                    continue;
                }
                let view = interest.view(connection.entity);
                let entities = view.len() as u64;
                let view = view.iter().map(|e| (e.index, Some(e.since)));
                let first = self.encoded.ranges.len();
                for part in self.encoder.encode_view(&self.encoded.entities, view)? {
                    let begin = buffer.len();
                    buffer.extend_from_slice(part);
                    self.encoded.ranges.push(begin..buffer.len());
                }
                self.encoded
                    .views
                    .push((c, first..self.encoded.ranges.len(), entities));
            }
        }
        // Each due client's verdicts not yet acknowledged, in the same buffer: they go in
        // its snapshot's datagram.
        self.encoded.verdicts.clear();
        for (c, connection) in self.connections.iter().enumerate() {
            if due(connection) {
                let begin = buffer.len();
                if connection.verdicts.append_message(&mut buffer)? {
                    self.encoded.verdicts.push((c, begin..buffer.len()));
                }
            }
        }
        let probe = if probing {
            let id = self.core.probe(now);
            ServerMessage::RttProbe(RttProbe {
                id,
                server_time: now,
            })
            .encode(&mut self.scratch)?;
            let begin = buffer.len();
            buffer.extend_from_slice(&self.scratch);
            Some(begin..buffer.len())
        } else {
            None
        };
        self.encoded.last_len = self.encoded.last_len.max(buffer.len());
        let buffer = Bytes::from(buffer);
        let world = self.frames.len() as u64;
        let snapshots_per_ack = ((self.config.send_rate / ACKS_PER_SECOND) as u32).max(1);
        let (mut next_view, mut next_verdicts) = (0, 0);
        for i in 0..self.connections.len() {
            let connection = &mut self.connections[i];
            let (client, entity) = (connection.client, connection.entity);
            let is_due = due(connection);
            let probed = probe.is_some() && probe_due(connection);
            if probed {
                connection.probed = Some(tick.0);
            }
            if !is_due {
                continue;
            }
            // Renet's acknowledgement of its inputs with every few snapshots.
            connection.snapshots_since_acks += 1;
            let acks = connection.snapshots_since_acks >= snapshots_per_ack;
            if acks {
                connection.snapshots_since_acks = 0;
            }
            // Its own parts with interest management, or the world's shared ones.
            let (own, entities) = match self.encoded.views.get(next_view) {
                Some((c, parts, entities)) if *c == i => {
                    next_view += 1;
                    (parts.clone(), *entities)
                }
                _ => (0..0, world),
            };
            let parts = (shared.len() + own.len()) as u64;
            let verdicts = match self.encoded.verdicts.get(next_verdicts) {
                Some((c, range)) if *c == i => {
                    next_verdicts += 1;
                    Some(range.clone())
                }
                _ => None,
            };
            for counters in [&mut self.second, &mut self.total] {
                counters.snapshots += 1;
                counters.snapshot_parts += parts;
                counters.snapshot_entities += entities;
            }
            // The client's tick in as few datagrams as it fits: its parts, its verdicts,
            // the probe, its shot acknowledgement, and renet's acknowledgement now and
            // then (see `lagcomp_wire::datagram`).
            let mut out = Outgoing {
                datagram: &mut self.datagram,
                transport: &mut self.transport,
                renet: &mut self.renet,
                client,
                through_renet: false,
            };
            let probe = probe.clone().filter(|_| probed);
            for range in shared
                .iter()
                .chain(&self.encoded.ranges[own])
                .cloned()
                .chain(verdicts)
                .chain(probe)
            {
                out.message(&buffer, range);
            }
            if let Some(up_to) = self.core.shot_ack(entity) {
                ServerMessage::ShotAck { up_to }.encode(&mut self.scratch)?;
                out.message_bytes(&self.scratch);
            }
            if acks {
                ServerTransport::renet_packets(out.renet, client, Acks::Send, &mut self.packets);
                for packet in &self.packets {
                    out.packet(packet);
                }
            }
            out.finish();
            // What was too big for a datagram went to renet: out with the tick's end.
            self.connections[i].outgoing |= out.through_renet;
        }
        self.encoded.views.clear();
        self.encoded.ranges.clear();
        self.encoded.verdicts.clear();
        Ok(())
    }

    /// Every body as of the latest tick into `frames`, in place (no allocation once the
    /// frames have grown), each as its stance.
    fn fill_frames(&mut self, time: f64) {
        let bodies = self.core.bodies(time);
        self.frames.truncate(bodies.len());
        for (i, body) in bodies.enumerate() {
            if i == self.frames.len() {
                self.frames.push(EntityFrame {
                    id: body.id,
                    alive: true,
                    last_teleport: None,
                    protected: false,
                    in_view_since: None,
                    velocity: body.velocity,
                    pose: EntityPose::Bones(Vec::new()),
                });
            }
            let frame = &mut self.frames[i];
            frame.id = body.id;
            frame.alive = true;
            frame.last_teleport = body.last_teleport;
            frame.protected = body.protected;
            frame.velocity = body.velocity;
            // The stance the bones were recorded from, not the bones: 40 bytes instead of
            // 226, so a client's whole view fits one datagram (the client rebuilds the
            // bones with the same code).
            frame.pose = EntityPose::Humanoid(crate::stance::to_wire(&body.stance));
        }
    }
}

/// One client's datagrams of records as they fill: each goes when the next record does
/// not fit in it, the last at [`Outgoing::finish`].
struct Outgoing<'a> {
    datagram: &'a mut DatagramWriter,
    transport: &'a mut ServerTransport,
    renet: &'a mut RenetServer,
    client: ClientId,
    /// Whether a message too big for any datagram went to renet instead (it slices it;
    /// its packets go at the tick's end).
    through_renet: bool,
}

impl Outgoing<'_> {
    /// A message that is `range` of the tick's shared buffer.
    fn message(&mut self, buffer: &Bytes, range: Range<usize>) {
        if !self.put(DatagramRecord::Message(&buffer[range.clone()])) {
            self.renet
                .send_message(self.client, UNRELIABLE, buffer.slice(range));
            self.through_renet = true;
        }
    }

    /// A message of its own.
    fn message_bytes(&mut self, bytes: &[u8]) {
        if !self.put(DatagramRecord::Message(bytes)) {
            self.renet
                .send_message(self.client, UNRELIABLE, bytes.to_vec());
            self.through_renet = true;
        }
    }

    /// One of renet's packets.
    fn packet(&mut self, packet: &[u8]) {
        if !self.put(DatagramRecord::Transport(packet)) {
            // Renet's packets are at most about 1,200 bytes, so this does not happen; if
            // it did, renet's packet goes as it is.
            self.transport
                .send_payload(self.client, packet, Route::Tick);
        }
    }

    /// Adds a record, sending the datagram first if the record does not fit; `false` if
    /// it fits no datagram.
    fn put(&mut self, record: DatagramRecord<'_>) -> bool {
        if self.datagram.push(record) {
            return true;
        }
        if self.datagram.is_empty() {
            return false;
        }
        self.finish();
        self.datagram.push(record)
    }

    /// Sends what is in the datagram.
    pub(super) fn finish(&mut self) {
        if !self.datagram.is_empty() {
            self.transport
                .send_payload(self.client, self.datagram.as_bytes(), Route::Tick);
            self.datagram.clear();
        }
    }
}

//! A server and a client that talk only in encoded messages over a lossy, jittery link
//! (the 100/25/2% preset): the client syncs its clock with pings, draws snapshots a delay
//! in the past, and fires shots stamped with what it drew; the server rebuilds, from its
//! own history, exactly the bones the client drew for every shot that reaches it. The
//! simulator's protocol, over bytes.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use lagcomp::{
    BoneTransform, EntityId, EntityState, History, HistoryConfig, Hitbox, Quat, Rig, Shape, Tick,
    Vec3, WindowPolicy, Zone,
};
use lagcomp_net::{
    ClockConfig, ClockSync, Delivery, Fingerprint, InterpolationDelay, LinkConditioner, Pong,
    ShotReceiver, ShotSender, SnapshotBuffer, Stamp, stamp,
};
use lagcomp_validate::{RenderTime, ShotClaim, WeaponId};
use lagcomp_wire::{
    ClientMessage, EntityFrame, EntityPose, GuardConfig, Input, MalformedGuard, Penalty,
    ProbeReply, RttProbe, ServerMessage, SnapshotEncoder, Welcome,
};

const RATE: f64 = 64.0;
const BONES: u16 = 4;
/// Entity 1 (the one shot at) respawns 10 m away at this tick.
const RESPAWN: u32 = 150;

/// Entity `e`'s bones at `tick`: every bone moves and turns, with fractional bits.
fn pose(e: usize, tick: u32) -> Vec<BoneTransform> {
    let t = tick as f32 / RATE as f32;
    let jump = if e == 1 && tick >= RESPAWN { 10.0 } else { 0.0 };
    (0..BONES)
        .map(|b| {
            let b = f32::from(b);
            BoneTransform::new(
                Vec3::new(
                    e as f32 * 3.0 + (t * 1.3).sin() + jump,
                    0.4 * b + 0.01 * t,
                    t * 0.7,
                ),
                Quat::from_rotation_y(t * (1.0 + b) + e as f32).normalize(),
            )
        })
        .collect()
}

fn fingerprint(claim: &ShotClaim) -> u64 {
    Fingerprint::new()
        .bytes(format!("{claim:?}").as_bytes())
        .finish()
}

#[test]
fn shots_sent_as_bytes_rebuild_the_bones_the_client_drew() {
    let rig = Arc::new(
        Rig::new(
            BONES,
            (0..BONES)
                .map(|b| Hitbox::new(b, "box", Zone::Torso, b, Shape::cuboid(Vec3::splat(0.2))))
                .collect(),
        )
        .expect("a valid rig"),
    );
    let mut history = History::new(HistoryConfig {
        tick_rate: RATE,
        max_rewind: 1.0,
    })
    .expect("a valid history");
    let ids: Vec<EntityId> = (0..3).map(|_| history.spawn(Arc::clone(&rig))).collect();
    let me = ids[0];
    let (up, down) = lagcomp_net::preset("100/25/2%").expect("a preset").links();
    let mut to_server: LinkConditioner<Vec<u8>> = LinkConditioner::new(up, 11);
    let mut to_client: LinkConditioner<Vec<u8>> = LinkConditioner::new(down, 12);
    let client_time = |server_time: f64| server_time + 1000.0;

    // Server state.
    let mut encoder = SnapshotEncoder::new(300).expect("a valid budget");
    let mut frames: Vec<EntityFrame> = Vec::new();
    let mut out = Vec::new();
    let mut receiver = ShotReceiver::new();
    let mut guard = MalformedGuard::new(GuardConfig::default()).expect("valid");
    let mut probes: BTreeMap<u32, f64> = BTreeMap::new();
    let mut rtt_samples = 0;
    let mut last_frame = None;
    let mut stale_inputs = 0;
    let mut rebuilt = 0;

    // Client state.
    let mut welcome = None;
    let mut clock = ClockSync::new(ClockConfig::default());
    let mut delay = InterpolationDelay::default();
    let mut buffers: HashMap<EntityId, SnapshotBuffer> = HashMap::new();
    let mut newest_held: HashMap<EntityId, Tick> = HashMap::new();
    let mut teleports_seen = 0;
    let mut sender = ShotSender::new(3);
    let mut drawn_at_fire: HashMap<u32, Vec<BoneTransform>> = HashMap::new();
    let mut bones = Vec::new();
    let mut next_seq = 1;
    let mut newest_tick = None;
    let mut probe_reply = None;
    let mut up_bytes = Vec::new();

    ServerMessage::Welcome(Welcome {
        you: me,
        tick_rate: RATE,
        send_rate: RATE / 2.0,
        max_rewind: 1.0,
        bones: BONES,
        arena_half_size: 23.0,
        arena_walls: 5,
        arena_seed: 0x00a7_e4a0,
    })
    .encode(&mut out)
    .expect("valid");
    // Sent reliably in a real server; here it simply goes first, outside the lossy link.
    let welcome_bytes = out.clone();

    for tick in 0..(6 * RATE as u32) {
        let now = f64::from(tick) / RATE;
        // The server records the tick and sends every other one as a snapshot.
        {
            let mut recorder = history.begin_frame(Tick(tick), now).expect("in order");
            for (e, id) in ids.iter().enumerate() {
                let state = EntityState {
                    teleported: e == 1 && tick == RESPAWN,
                    ..EntityState::default()
                };
                recorder
                    .record(*id, &pose(e, tick), state)
                    .expect("valid bones");
            }
        }
        if tick % 2 == 0 {
            frames.resize_with(ids.len(), || EntityFrame {
                id: me,
                alive: true,
                last_teleport: None,
                protected: false,
                in_view_since: None,
                velocity: Vec3::ZERO,
                pose: EntityPose::Bones(Vec::new()),
            });
            for (e, frame) in frames.iter_mut().enumerate() {
                frame.id = ids[e];
                frame.last_teleport = (e == 1 && tick >= RESPAWN).then_some(Tick(RESPAWN));
                frame.pose = EntityPose::Bones(pose(e, tick));
            }
            for part in encoder.encode(Tick(tick), now, &frames).expect("valid") {
                to_client.send(now, part.to_vec());
            }
            ServerMessage::ShotAck {
                up_to: receiver.ack(),
            }
            .encode(&mut out)
            .expect("valid");
            to_client.send(now, out.clone());
        }
        if tick % 16 == 0 {
            probes.insert(tick, now);
            ServerMessage::RttProbe(RttProbe {
                id: tick,
                server_time: now,
            })
            .encode(&mut out)
            .expect("valid");
            to_client.send(now, out.clone());
        }

        // The client reads what arrived.
        let local = client_time(now);
        if tick == 0 {
            let ServerMessage::Welcome(w) = ServerMessage::decode(&welcome_bytes).expect("valid")
            else {
                panic!("not a welcome");
            };
            welcome = Some(w);
        }
        while let Some(bytes) = to_client.poll(now) {
            match ServerMessage::decode(&bytes).expect("the server sends valid messages") {
                ServerMessage::Snapshot(part) => {
                    if part.part == 0 {
                        delay.on_snapshot(local, part.server_time);
                    }
                    newest_tick = newest_tick.max(Some(part.tick));
                    for frame in part.entities {
                        let held = newest_held.get(&frame.id).copied();
                        if held.is_none_or(|h| part.tick > h) {
                            newest_held.insert(frame.id, part.tick);
                        }
                        let id = frame.id;
                        let snapshot =
                            frame.into_snapshot(part.tick, part.server_time, held, |_| {
                                panic!("this server sends bones")
                            });
                        teleports_seen += usize::from(snapshot.teleport);
                        buffers.entry(id).or_default().push(snapshot);
                    }
                }
                ServerMessage::Pong(pong) => {
                    clock.on_pong(pong, local);
                }
                ServerMessage::RttProbe(probe) => {
                    probe_reply = Some(ProbeReply {
                        id: probe.id,
                        client_time: local,
                    });
                }
                ServerMessage::ShotAck { up_to } => sender.ack(up_to),
                other => panic!("unexpected {other:?}"),
            }
        }

        // The client draws entity 1 and fires at it now and then.
        let target = ids[1];
        let you = welcome.expect("welcomed").you;
        if let Some(server_now) = clock.server_time(local)
            && let Some(render) = delay.render_time(server_now)
            && let Some(view) = buffers
                .get(&target)
                .and_then(|b| b.sample(render, 0.0, &mut bones))
            && let Stamp::Ticks { from, to, fraction } = stamp(&view)
            && tick % 20 == 0
        {
            let seq = next_seq;
            next_seq += 1;
            let claim = ShotClaim {
                shooter: you,
                weapon: WeaponId(1),
                seq,
                render_time: RenderTime::Ticks { from, to, fraction },
                origin: Vec3::ZERO,
                direction: Vec3::X,
                hit: None,
            };
            drawn_at_fire.insert(seq, bones.clone());
            sender.fire(seq, claim);
        }
        let ping = clock.ping_due(local).then(|| clock.ping(local));
        ClientMessage::Input(Input {
            frame: tick,
            ping,
            probe_reply: probe_reply.take(),
            aim: Quat::IDENTITY,
            interp_delay: delay.delay(),
            newest_tick,
            verdicts_received: None,
            shots: sender.packet(),
            weapon_shots: Vec::new(),
        })
        .encode(&mut up_bytes)
        .expect("valid");
        to_server.send(now, up_bytes.clone());
        // And a corrupted copy now and then, which the server must drop and count.
        if tick % 50 == 0 {
            let mut corrupt = up_bytes.clone();
            corrupt.truncate(corrupt.len() - 3);
            to_server.send(now, corrupt);
        }

        // The server reads what arrived.
        while let Some(bytes) = to_server.poll(now) {
            let input = match ClientMessage::decode(&bytes) {
                Ok(ClientMessage::Input(input)) => input,
                Err(_) => {
                    assert_eq!(guard.record(me, now), Penalty::Drop);
                    continue;
                }
            };
            // An input older than one applied has a stale view (its shots still count).
            if last_frame.is_some_and(|f| input.frame <= f) {
                stale_inputs += 1;
            } else {
                last_frame = Some(input.frame);
            }
            if let Some(ping) = input.ping {
                ServerMessage::Pong(Pong::answer(ping, now, now))
                    .encode(&mut out)
                    .expect("valid");
                to_client.send(now, out.clone());
            }
            if let Some(reply) = input.probe_reply
                && probes.remove(&reply.id).is_some()
            {
                rtt_samples += 1;
            }
            for (seq, mut claim) in input.shots {
                // The connection says who fired, not the packet.
                claim.shooter = me;
                if receiver.accept(seq, fingerprint(&claim)) != Delivery::New {
                    continue;
                }
                let RenderTime::Ticks { from, to, fraction } = claim.render_time else {
                    panic!("the client stamps ticks");
                };
                let at = history
                    .entity_at(
                        target,
                        lagcomp::RewindTarget::between(from, to, fraction),
                        WindowPolicy::Reject,
                    )
                    .expect("within the window")
                    .expect("recorded");
                let server_bones: Vec<BoneTransform> =
                    (0..BONES).map(|b| at.bone(b).expect("a bone")).collect();
                let drawn = &drawn_at_fire[&seq];
                let bits = |bones: &[BoneTransform]| -> Vec<[u32; 10]> {
                    bones.iter().map(BoneTransform::to_bits).collect()
                };
                assert_eq!(bits(&server_bones), bits(drawn), "shot {seq}");
                rebuilt += 1;
            }
        }
    }
    eprintln!(
        "{rebuilt} shots rebuilt bit for bit, {rtt_samples} probe replies, {} malformed \
         inputs dropped, {stale_inputs} reordered inputs",
        guard.total(&me)
    );
    assert!(rebuilt >= 10, "only {rebuilt} shots rebuilt");
    // The respawn reached the client as one teleport (the snapshot of tick 150 or, if
    // that was lost, the next one that arrived).
    assert_eq!(teleports_seen, 1);
    assert!(rtt_samples >= 10, "only {rtt_samples} probe replies");
    assert!(guard.total(&me) >= 3, "corrupted inputs were not counted");
    assert!(
        sender.packet().len() <= 1,
        "acknowledgements did not drain the sender"
    );
}

//! Property tests over arbitrary input (NaN and infinite times, any ids and sequence
//! numbers, any settings): nothing panics and the invariants hold.

use lagcomp::{BoneTransform, Quat, Tick, Vec3};
use lagcomp_net::{
    ClockConfig, ClockSync, Delivery, GilbertElliott, InterpolationConfig, InterpolationDelay,
    LinkConditioner, LinkConfig, Pong, Pushed, ShotReceiver, ShotSender, Snapshot, SnapshotBuffer,
    View,
};
use proptest::prelude::*;

/// Any `f64`, weighted towards the awkward ones.
fn time() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => -1.0e3..1.0e3_f64,
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(f64::NEG_INFINITY),
        1 => Just(0.0),
        1 => any::<f64>(),
    ]
}

fn small_f32() -> impl Strategy<Value = f32> {
    prop_oneof![
        6 => -100.0..100.0_f32,
        1 => Just(f32::NAN),
        1 => any::<f32>(),
    ]
}

fn snapshot() -> impl Strategy<Value = Snapshot> {
    (
        0..40_u32,
        time(),
        prop::collection::vec((small_f32(), small_f32(), 0..3_u8), 1..3),
        small_f32(),
        any::<bool>(),
    )
        .prop_map(|(tick, time, bones, v, teleport)| Snapshot {
            tick: Tick(tick),
            time,
            bones: bones
                .into_iter()
                .map(|(x, angle, scaled)| {
                    BoneTransform::new(Vec3::new(x, 0.0, 1.0), Quat::from_rotation_y(angle))
                        .with_scale(Vec3::splat(f32::from(scaled) * 0.5))
                })
                .collect(),
            velocity: Vec3::new(v, 0.0, -v),
            teleport,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn snapshot_buffers_never_panic_and_stay_ordered(
        capacity in 0..6_usize,
        snapshots in prop::collection::vec(snapshot(), 0..30),
        renders in prop::collection::vec((time(), time()), 0..20),
    ) {
        let mut buffer = SnapshotBuffer::new(capacity);
        for s in snapshots {
            let pushed = buffer.push(s.clone());
            if pushed == Pushed::Accepted {
                prop_assert_eq!(buffer.newest(), Some(&s));
            }
            prop_assert!(buffer.len() <= buffer.capacity());
            let held: Vec<&Snapshot> = buffer.snapshots().collect();
            for pair in held.windows(2) {
                prop_assert!(pair[0].tick < pair[1].tick && pair[0].time < pair[1].time);
            }
        }
        let mut out = vec![BoneTransform::IDENTITY; 7];
        for (render_time, max_extrapolation) in renders {
            match buffer.sample(render_time, max_extrapolation, &mut out) {
                None => prop_assert!(out.is_empty()),
                Some(view) => {
                    let bones = buffer.newest().unwrap().bones.len();
                    prop_assert_eq!(out.len(), bones);
                    if let View::Interpolated { fraction, .. } = view {
                        prop_assert!(fraction > 0.0 && fraction < 1.0);
                    }
                    if let View::Extrapolated { by, .. } = view {
                        prop_assert!(by > 0.0 && by <= max_extrapolation);
                    }
                }
            }
        }
    }

    #[test]
    fn clock_readings_never_decrease_whatever_arrives(
        config in (0..10_usize, 0..10_usize, time(), time(), time()),
        events in prop::collection::vec((any::<u8>(), time(), time(), time(), 0..4_u32), 0..60),
    ) {
        let (samples, min_samples, slew_rate, jump_threshold, correction_time) = config;
        let mut clock = ClockSync::new(ClockConfig {
            samples,
            min_samples,
            slew_rate,
            jump_threshold,
            correction_time,
            ..ClockConfig::default()
        });
        let mut pings = Vec::new();
        let mut last = f64::NEG_INFINITY;
        for (kind, a, b, c, pick) in events {
            match kind % 3 {
                0 => pings.push(clock.ping(a)),
                1 => {
                    // An answer to a real ping (or a made-up one), with any timestamps.
                    let pong = match pings.get(pick as usize) {
                        Some(&ping) if kind % 2 == 0 => Pong::answer(ping, a, b),
                        _ => Pong { id: pick, client_send: a, server_receive: b, server_send: c },
                    };
                    clock.on_pong(pong, c);
                }
                _ => {
                    if let Some(reading) = clock.server_time(a) {
                        prop_assert!(reading.is_finite());
                        prop_assert!(reading >= last);
                        last = reading;
                    }
                }
            }
        }
        if let Some(srtt) = clock.rtt().srtt() {
            prop_assert!(srtt.is_finite() && srtt >= 0.0);
        }
    }

    #[test]
    fn clock_readings_never_decrease_over_a_plausible_exchange(
        rounds in prop::collection::vec(
            (0.0..0.3_f64, 0.0..0.3_f64, -2.0..2.0_f64, -0.01..0.05_f64, any::<bool>()),
            1..80,
        ),
        reads in 1..20_u32,
    ) {
        // Delays up to 300 ms each way, a server clock that steps by up to 2 s between
        // rounds, a client clock that sometimes goes back by up to 10 ms, lost answers.
        let mut clock = ClockSync::new(ClockConfig::default());
        let (mut client, mut server_offset) = (100.0, 5000.0);
        let mut last = f64::NEG_INFINITY;
        for (up, down, step, advance, lost) in rounds {
            let ping = clock.ping(client);
            server_offset += step;
            let at_server = client + up + server_offset;
            client += up + down;
            if !lost {
                clock.on_pong(Pong::answer(ping, at_server, at_server), client);
            }
            for _ in 0..reads {
                client += advance / f64::from(reads);
                if let Some(reading) = clock.server_time(client) {
                    prop_assert!(reading.is_finite() && reading >= last);
                    last = reading;
                }
            }
        }
    }

    #[test]
    fn render_time_never_decreases(
        events in prop::collection::vec((any::<bool>(), time(), time()), 0..80),
        config in (time(), time(), time()),
    ) {
        let mut delay = InterpolationDelay::new(InterpolationConfig {
            min_delay: config.0,
            max_delay: config.1,
            max_rate: config.2,
            ..InterpolationConfig::default()
        });
        let mut last = f64::NEG_INFINITY;
        for (snapshot, a, b) in events {
            if snapshot {
                delay.on_snapshot(a, b);
                let c = delay.config();
                prop_assert!(delay.delay() >= c.min_delay && delay.delay() <= c.max_delay);
            } else if let Some(render) = delay.render_time(a) {
                prop_assert!(render >= last, "{} after {}", render, last);
                last = render;
            }
        }
    }

    #[test]
    fn a_shot_is_new_once_and_copies_match_what_was_delivered(
        window in 1..20_usize,
        give_up in 1..10_u32,
        shots in prop::collection::vec((0..60_u32, 0..3_u64), 0..200),
    ) {
        let mut receiver = ShotReceiver::with_limits(window, give_up);
        let mut first: std::collections::BTreeMap<u32, u64> = Default::default();
        let mut last_ack = 0;
        for (seq, fingerprint) in shots {
            let delivery = receiver.accept(seq, fingerprint);
            match delivery {
                Delivery::New => {
                    prop_assert!(first.insert(seq, fingerprint).is_none(), "{} new twice", seq);
                }
                Delivery::Copy => prop_assert_eq!(first.get(&seq), Some(&fingerprint)),
                Delivery::Conflict => {
                    prop_assert!(first.get(&seq) != Some(&fingerprint) || seq <= receiver.ack());
                }
            }
            prop_assert!(receiver.ack() >= last_ack);
            prop_assert!(receiver.ack() <= receiver.highest());
            last_ack = receiver.ack();
        }
    }

    #[test]
    fn a_sender_keeps_at_most_its_redundancy_in_order(
        redundancy in 0..6_usize,
        ops in prop::collection::vec((0..3_u8, 0..40_u32), 0..100),
    ) {
        let mut sender = ShotSender::new(redundancy);
        for (op, seq) in ops {
            match op {
                0 => { sender.fire(seq, seq); }
                1 => sender.ack(seq),
                _ => sender.ack_one(seq),
            }
            let packet = sender.packet();
            prop_assert!(packet.len() <= sender.redundancy());
            prop_assert!(packet.windows(2).all(|w| w[0].0 < w[1].0));
            prop_assert!(packet.iter().all(|&(seq, shot)| seq == shot && seq != 0));
        }
    }

    #[test]
    fn links_account_for_every_packet(
        latency in time(), jitter in time(), loss in time(), duplicate in time(), reorder in time(),
        burst in prop::option::of((time(), time(), time(), time())),
        sends in prop::collection::vec(time(), 0..100),
        seed in any::<u64>(),
    ) {
        let config = LinkConfig {
            latency,
            jitter,
            loss,
            burst: burst.map(|(a, b, c, d)| GilbertElliott {
                good_to_bad: a, bad_to_good: b, loss_in_good: c, loss_in_bad: d,
            }),
            duplicate,
            reorder,
        };
        let mut link = LinkConditioner::new(config, seed);
        for (i, now) in sends.iter().enumerate() {
            link.send(*now, i);
            if let Some(at) = link.next_delivery() {
                prop_assert!(at.is_finite());
            }
        }
        let mut delivered = 0_u64;
        while link.poll(f64::MAX).is_some() {
            delivered += 1;
        }
        let stats = link.stats();
        prop_assert_eq!(stats.delivered, delivered);
        prop_assert_eq!(stats.sent, sends.len() as u64);
        prop_assert_eq!(stats.sent - stats.dropped + stats.duplicated, stats.delivered);
    }
}

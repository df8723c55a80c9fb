//! `LinkConditioner`: statistics over 100k packets, burstiness, determinism, ordering,
//! duplication.

use lagcomp_net::{GilbertElliott, LinkConditioner, LinkConfig, preset};

/// Sends `count` numbered packets `spacing` seconds apart and drains the link; returns
/// every delivery as (time, packet), in delivery order.
fn deliveries(link: &mut LinkConditioner<u32>, count: u32, spacing: f64) -> Vec<(f64, u32)> {
    let mut out = Vec::new();
    let mut drain = |link: &mut LinkConditioner<u32>, until: f64| {
        while let Some(at) = link.next_delivery().filter(|&at| at <= until) {
            let packet = link.poll(until).expect("due");
            out.push((at, packet));
        }
    };
    for id in 0..count {
        let now = f64::from(id) * spacing;
        drain(link, now);
        link.send(now, id);
    }
    drain(link, f64::MAX);
    out
}

/// Lengths of the runs of consecutive lost packets among `0..count`.
fn loss_runs(delivered: &[(f64, u32)], count: u32) -> Vec<u32> {
    let mut arrived = vec![false; count as usize];
    for &(_, id) in delivered {
        arrived[id as usize] = true;
    }
    let mut runs = Vec::new();
    let mut run = 0;
    for got in arrived {
        if got {
            if run > 0 {
                runs.push(run);
            }
            run = 0;
        } else {
            run += 1;
        }
    }
    if run > 0 {
        runs.push(run);
    }
    runs
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0_u32), |(s, n), v| (s + v, n + 1));
    sum / f64::from(n)
}

#[test]
fn latency_and_loss_match_the_settings_over_100k_packets() {
    // Packets 30 ms apart, wider than the 25 ms jitter spread, so no packet waits behind
    // another and the delays are the drawn ones: uniform in 50 +- 12.5 ms, mean 50 ms with a
    // standard error of 7.2 ms / sqrt(n) = 0.02 ms. Independent loss of 2 %: standard
    // error 0.04 %.
    let config = LinkConfig {
        latency: 0.050,
        jitter: 0.0125,
        loss: 0.02,
        ..LinkConfig::default()
    };
    let mut link = LinkConditioner::new(config, 11);
    let n = 100_000;
    let got = deliveries(&mut link, n, 0.030);
    let delays: Vec<f64> = got
        .iter()
        .map(|&(at, id)| at - f64::from(id) * 0.030)
        .collect();
    let mean_delay = mean(delays.iter().copied());
    assert!(
        (mean_delay - 0.050).abs() < 0.0002,
        "mean delay {mean_delay}"
    );
    let (lo, hi) = delays
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &d| {
            (lo.min(d), hi.max(d))
        });
    assert!(lo >= 0.0375 - 1e-9 && hi <= 0.0625 + 1e-9, "{lo}..{hi}");
    assert!(lo < 0.038 && hi > 0.062, "the spread is used: {lo}..{hi}");
    let loss = 1.0 - got.len() as f64 / f64::from(n);
    assert!((loss - 0.02).abs() < 0.002, "loss {loss}");

    let stats = link.stats();
    assert_eq!(stats.sent, u64::from(n));
    assert_eq!(stats.dropped + stats.delivered, stats.sent);
    assert_eq!(stats.delivered, got.len() as u64);
    assert_eq!((stats.duplicated, stats.reordered), (0, 0));
    assert_eq!(link.in_flight(), 0);
}

#[test]
fn every_preset_loses_its_rate_in_each_direction() {
    // Bursts make losses correlated, so the tolerance is wider than for independent loss:
    // a few standard errors of a process with runs of two on average.
    for name in ["40/10/0.2%", "100/25/2%", "200/50/4%", "300/75/6%"] {
        let p = preset(name).unwrap();
        let (up, down) = p.links();
        for (direction, config) in [(1, up), (2, down)] {
            let mut link = LinkConditioner::new(config, direction);
            let n = 100_000;
            let got = deliveries(&mut link, n, 0.010);
            let loss = 1.0 - got.len() as f64 / f64::from(n);
            let tolerance = 0.1 * p.loss + 0.001;
            assert!((loss - p.loss).abs() < tolerance, "{name}: loss {loss}");
        }
    }
}

#[test]
fn gilbert_elliott_losses_come_in_longer_runs_than_bernoulli() {
    let n = 100_000;
    let runs_of = |config: LinkConfig| {
        let mut link = LinkConditioner::new(config, 5);
        let got = deliveries(&mut link, n, 0.001);
        let runs = loss_runs(&got, n);
        let lost: u32 = runs.iter().sum();
        (
            f64::from(lost) / f64::from(n),
            mean(runs.iter().map(|&r| f64::from(r))),
        )
    };
    let (bernoulli_loss, bernoulli_run) = runs_of(LinkConfig {
        loss: 0.05,
        ..LinkConfig::default()
    });
    let (burst_loss, burst_run) = runs_of(LinkConfig {
        burst: Some(GilbertElliott::bursts(0.05, 4.0)),
        ..LinkConfig::default()
    });
    // The same rate...
    assert!((bernoulli_loss - 0.05).abs() < 0.003, "{bernoulli_loss}");
    assert!((burst_loss - 0.05).abs() < 0.006, "{burst_loss}");
    // ...but independent losses run 1 / (1 - p) = 1.05 packets on average, bursts of a
    // chain that stays bad 4 packets on average about 4.
    assert!((bernoulli_run - 1.053).abs() < 0.03, "{bernoulli_run}");
    assert!((burst_run - 4.0).abs() < 0.4, "{burst_run}");

    // The presets' mild bursts are still visibly burstier than independent loss.
    let (_, preset_run) = runs_of(preset("300/75/6%").unwrap().link());
    assert!(preset_run > 1.3, "{preset_run}");
}

#[test]
fn the_same_seed_gives_the_same_deliveries() {
    let config = LinkConfig {
        latency: 0.04,
        jitter: 0.02,
        loss: 0.05,
        burst: Some(GilbertElliott::bursts(0.02, 3.0)),
        duplicate: 0.05,
        reorder: 0.05,
    };
    let run = |seed| deliveries(&mut LinkConditioner::new(config, seed), 20_000, 0.002);
    let (a, b, c) = (run(9), run(9), run(10));
    let as_bits = |d: &[(f64, u32)]| d.iter().map(|&(t, p)| (t.to_bits(), p)).collect::<Vec<_>>();
    assert_eq!(as_bits(&a), as_bits(&b));
    assert_ne!(as_bits(&a), as_bits(&c));
}

#[test]
fn jitter_alone_never_reorders() {
    // Packets 1 ms apart with 40 ms of jitter spread: without the queue rule most would
    // overtake each other.
    let config = LinkConfig {
        latency: 0.05,
        jitter: 0.02,
        loss: 0.1,
        burst: Some(GilbertElliott::bursts(0.05, 3.0)),
        ..LinkConfig::default()
    };
    let got = deliveries(&mut LinkConditioner::new(config, 3), 50_000, 0.001);
    assert!(got.windows(2).all(|w| w[0].1 < w[1].1), "reordered");
    assert!(
        got.windows(2).all(|w| w[0].0 <= w[1].0),
        "out of time order"
    );

    // With duplicates, copies follow their originals: the order never goes back.
    let dup = LinkConfig {
        duplicate: 0.3,
        ..config
    };
    let got = deliveries(&mut LinkConditioner::new(dup, 3), 50_000, 0.001);
    assert!(got.windows(2).all(|w| w[0].1 <= w[1].1), "reordered");
}

#[test]
fn the_reorder_knob_reorders() {
    let config = LinkConfig {
        latency: 0.03,
        jitter: 0.005,
        reorder: 0.1,
        ..LinkConfig::default()
    };
    let mut link = LinkConditioner::new(config, 4);
    let n = 50_000;
    let got = deliveries(&mut link, n, 0.005);
    assert_eq!(got.len(), n as usize, "nothing lost");
    let overtaken = got.windows(2).filter(|w| w[0].1 > w[1].1).count();
    let share = link.stats().reordered as f64 / f64::from(n);
    assert!((share - 0.1).abs() < 0.01, "{share}");
    // A held packet is overtaken by the next few: inversions appear for most of them.
    assert!(
        overtaken as f64 > 0.8 * link.stats().reordered as f64,
        "{overtaken}"
    );
    // Delivery times are still in order: reordering is by send order, not by time.
    assert!(got.windows(2).all(|w| w[0].0 <= w[1].0));
}

#[test]
fn duplicates_arrive_twice_at_most() {
    let config = LinkConfig {
        latency: 0.02,
        jitter: 0.01,
        loss: 0.05,
        duplicate: 0.2,
        ..LinkConfig::default()
    };
    let mut link = LinkConditioner::new(config, 6);
    let n = 50_000;
    let got = deliveries(&mut link, n, 0.002);
    let mut count = vec![0_u8; n as usize];
    for &(_, id) in &got {
        count[id as usize] += 1;
    }
    assert!(count.iter().all(|&c| c <= 2));
    let twice = count.iter().filter(|&&c| c == 2).count() as u64;
    let stats = link.stats();
    assert_eq!(twice, stats.duplicated);
    let share = stats.duplicated as f64 / (stats.sent - stats.dropped) as f64;
    assert!((share - 0.2).abs() < 0.01, "{share}");
    assert_eq!(
        stats.delivered,
        stats.sent - stats.dropped + stats.duplicated
    );
}

#[test]
fn ties_deliver_in_send_order_and_poll_waits_for_time() {
    let mut link = LinkConditioner::new(LinkConfig::with_latency(0.01), 0);
    for id in 0..5 {
        link.send(1.0, id);
    }
    assert_eq!(link.poll(1.0), None);
    assert_eq!(link.poll(f64::NAN), None);
    assert_eq!(link.next_delivery(), Some(1.01));
    let order: Vec<u32> = std::iter::from_fn(|| link.poll(1.01)).collect();
    assert_eq!(order, [0, 1, 2, 3, 4]);
    assert_eq!(link.next_delivery(), None);

    // Bad send times are dropped, not delivered at a nonsense time.
    link.send(f64::NAN, 9);
    link.send(f64::INFINITY, 9);
    assert_eq!(link.in_flight(), 0);
    assert_eq!(link.stats().dropped, 2);
}

#[test]
fn a_new_config_applies_to_later_packets() {
    let mut link = LinkConditioner::new(LinkConfig::with_latency(0.2), 0);
    link.send(0.0, 1);
    link.set_config(LinkConfig::with_latency(0.01));
    link.send(0.001, 2);
    // The faster link still does not let packet 2 overtake packet 1.
    assert_eq!(link.poll(0.1), None);
    assert_eq!(link.poll(0.2), Some(1));
    assert_eq!(link.poll(0.2), Some(2));
    link.send(1.0, 3);
    assert_eq!(link.next_delivery(), Some(1.01));
}

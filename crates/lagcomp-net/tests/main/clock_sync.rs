//! `ClockSync` over a simulated network: a client whose clock drifts, links with jitter,
//! loss and asymmetric delays (through the crate's own `LinkConditioner`), and a server
//! whose clock may step. Time advances in fine steps and every reading is checked.

use lagcomp_net::{
    ClockConfig, ClockSync, GilbertElliott, LinkConditioner, LinkConfig, Ping, Pong, PongOutcome,
};

/// One simulated client/server pair. `t` is true time; the server's clock reads
/// `t + server_offset(t)`, the client's `(1 + drift) · t + client_offset`.
struct Pair<S: Fn(f64) -> f64> {
    drift: f64,
    client_offset: f64,
    server_offset: S,
    up: LinkConditioner<Ping>,
    down: LinkConditioner<Pong>,
    /// Pongs waiting on the server for their send time: (true send time, pong).
    holding: Vec<(f64, Pong)>,
    clock: ClockSync,
}

impl<S: Fn(f64) -> f64> Pair<S> {
    fn new(up: LinkConfig, down: LinkConfig, drift: f64, server_offset: S, seed: u64) -> Self {
        Self {
            drift,
            client_offset: 1234.5,
            server_offset,
            up: LinkConditioner::new(up, seed),
            down: LinkConditioner::new(down, seed ^ 0x9e37_79b9),
            holding: Vec::new(),
            clock: ClockSync::new(ClockConfig::default()),
        }
    }

    fn client_time(&self, t: f64) -> f64 {
        (1.0 + self.drift) * t + self.client_offset
    }

    fn server_time(&self, t: f64) -> f64 {
        t + (self.server_offset)(t)
    }

    /// Advances to true time `t`: pings, answers (held on the server for 0 to 2 ms), pongs.
    fn step(&mut self, t: f64) {
        let client_now = self.client_time(t);
        if self.clock.ping_due(client_now) {
            let ping = self.clock.ping(client_now);
            self.up.send(t, ping);
        }
        while let Some(ping) = self.up.poll(t) {
            let received = self.server_time(t);
            // A hold that varies per ping, deterministically.
            let hold = f64::from(ping.id % 5) * 0.0005;
            let pong = Pong::answer(ping, received, received + hold);
            self.holding.push((t + hold, pong));
        }
        let mut k = 0;
        while k < self.holding.len() {
            if self.holding[k].0 <= t {
                let (_, pong) = self.holding.remove(k);
                self.down.send(t, pong);
            } else {
                k += 1;
            }
        }
        while let Some(pong) = self.down.poll(t) {
            self.clock.on_pong(pong, client_now);
        }
    }
}

fn link(latency: f64, jitter: f64, loss: f64) -> LinkConfig {
    LinkConfig {
        latency,
        jitter,
        loss,
        burst: Some(GilbertElliott::bursts(loss / 2.0, 2.0)),
        ..LinkConfig::default()
    }
}

/// What a run saw after `settle` seconds of true time.
#[derive(Debug, Default)]
struct Run {
    /// Largest |reading − true server time − bias|.
    worst: f64,
    /// Mean of the same.
    mean: f64,
    /// Extreme reading rates (reading change / client time change) between consecutive
    /// readings, excluding steps where the reading jumped or held.
    rates: (f64, f64),
}

/// Runs a pair for `seconds` at 1 ms steps, checking that readings never decrease, and
/// measures the error against `bias` once `settle` seconds have passed.
fn run<S: Fn(f64) -> f64>(pair: &mut Pair<S>, seconds: f64, settle: f64, bias: f64) -> Run {
    let steps = (seconds * 1000.0) as u32;
    let mut last: Option<(f64, f64)> = None;
    let (mut worst, mut sum, mut n) = (0.0_f64, 0.0, 0_u32);
    let mut rates = (f64::INFINITY, f64::NEG_INFINITY);
    for i in 1..=steps {
        let t = f64::from(i) * 0.001;
        pair.step(t);
        let client_now = pair.client_time(t);
        let Some(reading) = pair.clock.server_time(client_now) else {
            assert!(t < 1.0, "not synced after {t} s");
            continue;
        };
        if let Some((last_client, last_reading)) = last {
            assert!(
                reading >= last_reading,
                "went back at t = {t}: {reading} after {last_reading}"
            );
            let rate = (reading - last_reading) / (client_now - last_client);
            rates = (rates.0.min(rate), rates.1.max(rate));
        }
        last = Some((client_now, reading));
        if t >= settle {
            let error = (reading - pair.server_time(t) - bias).abs();
            worst = worst.max(error);
            sum += error;
            n += 1;
        }
    }
    Run {
        worst,
        mean: sum / f64::from(n),
        rates,
    }
}

/// Slack for what the filter does not remove within its window: the drift left over in the
/// fit and the slewing lag (a 1 s correction time at a 0.1 % drift is 1 ms before the fit
/// takes over).
const LAG_SLACK: f64 = 0.0015;

#[test]
fn converges_under_drift_jitter_and_loss() {
    // 30 ms each way, +-8 ms of jitter, 4 % loss with bursts, on both directions. The
    // offset of a sample is off by (up - down) / 2, and up and down each lie within
    // 30 +- 8 ms, so no sample is more than 8 ms off: that, plus the lag slack, is the bound.
    // The filter trusts the least-delay sample, so the mean is far better.
    for (drift, seed) in [(0.001, 1), (-0.001, 2), (0.001, 3), (-0.001, 4)] {
        let l = link(0.030, 0.008, 0.04);
        let mut pair = Pair::new(l, l, drift, |_| 1000.0, seed);
        let r = run(&mut pair, 60.0, 10.0, 0.0);
        assert!(r.worst <= 0.008 + LAG_SLACK, "drift {drift}: {r:?}");
        assert!(r.mean <= 0.002, "drift {drift}: {r:?}");
        // Once synced, the clock slews only: never faster or slower than 1 +- 5 %.
        assert!(
            r.rates.0 >= 0.95 - 1e-9 && r.rates.1 <= 1.05 + 1e-9,
            "{r:?}"
        );
        // The drift fit found the client's clock running fast or slow: server seconds per
        // client second are 1 / (1 + drift).
        let expected = 1.0 / (1.0 + drift) - 1.0;
        assert!(
            (pair.clock.drift() - expected).abs() < 0.0002,
            "fitted {} for {expected}",
            pair.clock.drift()
        );
        let srtt = pair.clock.rtt().srtt().unwrap();
        assert!((srtt - 0.060).abs() < 0.010, "srtt {srtt}");
    }
}

#[test]
fn asymmetric_routes_are_off_by_half_the_difference() {
    // 60 +- 5 ms up, 20 +- 5 ms down: every sample's offset is 20 ms too high, give or
    // take (5 + 5) / 2 ms. The reading carries that bias: no timestamp exchange can see it.
    let (up, down) = (link(0.060, 0.005, 0.02), link(0.020, 0.005, 0.02));
    let mut pair = Pair::new(up, down, 0.001, |_| -50.0, 5);
    let r = run(&mut pair, 40.0, 10.0, 0.020);
    eprintln!("{r:?}");
    assert!(r.worst <= 0.005 + LAG_SLACK, "{r:?}");
    // And within the documented bound: half the least delay (70 ms), plus the slack.
    let mut pair = Pair::new(up, down, 0.001, |_| -50.0, 5);
    let r = run(&mut pair, 40.0, 10.0, 0.0);
    assert!(r.worst <= 0.070 / 2.0 + LAG_SLACK, "{r:?}");
}

#[test]
fn never_runs_backwards_at_fine_steps() {
    // 0.1 ms steps through loss, jitter, reordering-free queueing and a server clock that
    // steps back by a second at t = 5 s: every reading is at least the previous one.
    let l = LinkConfig {
        duplicate: 0.05,
        ..link(0.050, 0.020, 0.05)
    };
    let mut pair = Pair::new(l, l, -0.001, |t| if t < 5.0 { 0.0 } else { -1.0 }, 6);
    let mut last = f64::NEG_INFINITY;
    for i in 1..=100_000_u32 {
        let t = f64::from(i) * 0.0001;
        pair.step(t);
        if let Some(reading) = pair.clock.server_time(pair.client_time(t)) {
            assert!(reading >= last, "went back at t = {t}");
            last = reading;
        }
    }
    // It did come back to the server's clock once that caught up.
    assert!((last - pair.server_time(10.0)).abs() < 0.02, "{last}");
}

#[test]
fn small_errors_are_slewed() {
    // The server's clock steps forward by 100 ms at t = 20 s: under the 250 ms threshold,
    // so the reading only speeds up (never beyond 1 + 5 %) until it has caught up.
    let l = link(0.025, 0.002, 0.0);
    let mut pair = Pair::new(l, l, 0.001, |t| if t < 20.0 { 7.0 } else { 7.1 }, 7);
    let mut last: Option<(f64, f64)> = None;
    let mut fastest = 0.0_f64;
    for i in 1..=40_000_u32 {
        let t = f64::from(i) * 0.001;
        pair.step(t);
        let client_now = pair.client_time(t);
        let Some(reading) = pair.clock.server_time(client_now) else {
            continue;
        };
        if let Some((c, r)) = last {
            let rate = (reading - r) / (client_now - c);
            assert!(
                (0.95 - 1e-9..=1.05 + 1e-9).contains(&rate),
                "rate {rate} at t = {t}"
            );
            if t > 20.0 {
                fastest = fastest.max(rate);
            }
        }
        last = Some((client_now, reading));
        if (20.0..20.5).contains(&t) {
            // Still catching up: slewing 100 ms takes seconds, not a step.
            assert!(pair.server_time(t) - reading > 0.05, "jumped at t = {t}");
        }
    }
    assert!(fastest > 1.04, "it did speed up: {fastest}");
    let (_, reading) = last.unwrap();
    assert!((reading - pair.server_time(40.0)).abs() < 0.003);
    // The step was not taken for drift.
    let expected = 1.0 / 1.001 - 1.0;
    assert!(
        (pair.clock.drift() - expected).abs() < 0.0002,
        "{}",
        pair.clock.drift()
    );
}

#[test]
fn a_route_change_moves_the_bias_not_the_rate() {
    // The route up gets 40 ms longer at t = 30 s: the offset's bias moves from 0 to
    // +20 ms (the estimate follows it by slewing; nothing can tell it from a clock step),
    // while the fitted drift keeps describing the clocks.
    let l = link(0.030, 0.003, 0.01);
    let mut pair = Pair::new(l, l, -0.001, |_| 0.0, 9);
    let before = run(&mut pair, 30.0, 15.0, 0.0);
    assert!(before.worst <= 0.003 + LAG_SLACK, "{before:?}");
    pair.up.set_config(link(0.070, 0.003, 0.01));
    let expected = 1.0 / 0.999 - 1.0;
    let mut last = None;
    let (mut worst, mut worst_drift) = (0.0_f64, 0.0_f64);
    for i in 30_001..=60_000_u32 {
        let t = f64::from(i) * 0.001;
        pair.step(t);
        let reading = pair.clock.server_time(pair.client_time(t)).unwrap();
        if let Some(r) = last {
            assert!(reading >= r);
        }
        last = Some(reading);
        // The 40 ms step stays inside the drift fit's anchors (25.6 s of them) until about
        // t = 56 s: read as drift it would add 0.1 % to the rate.
        worst_drift = worst_drift.max((pair.clock.drift() - expected).abs());
        if t > 40.0 {
            worst = worst.max((reading - pair.server_time(t) - 0.020).abs());
        }
    }
    assert!(worst_drift < 0.0003, "{worst_drift}");
    assert!(worst <= 0.002, "{worst}");
}

#[test]
fn large_errors_jump_forward() {
    let l = link(0.025, 0.002, 0.0);
    let mut pair = Pair::new(l, l, -0.001, |t| if t < 10.0 { 3.0 } else { 4.0 }, 8);
    let mut last: Option<f64> = None;
    let mut jumped_at = None;
    for i in 1..=15_000_u32 {
        let t = f64::from(i) * 0.001;
        pair.step(t);
        let Some(reading) = pair.clock.server_time(pair.client_time(t)) else {
            continue;
        };
        if let Some(r) = last
            && reading - r > 0.5
        {
            jumped_at.get_or_insert(t);
        }
        last = Some(reading);
    }
    // Two confirming samples, a ping interval apart, each a round trip late.
    let jumped_at = jumped_at.expect("a one-second step is jumped");
    assert!((10.0..10.3).contains(&jumped_at), "jumped at {jumped_at}");
    assert!((last.unwrap() - pair.server_time(15.0)).abs() < 0.003);
}

#[test]
fn the_first_reading_is_the_estimate() {
    let mut clock = ClockSync::new(ClockConfig::default());
    assert_eq!(clock.server_time(1.0), None);
    for k in 0..3 {
        let sent = f64::from(k);
        let ping = clock.ping(sent);
        let outcome = clock.on_pong(
            Pong::answer(ping, sent + 500.01, sent + 500.01),
            sent + 0.02,
        );
        assert!(
            matches!(outcome, PongOutcome::Accepted { .. }),
            "{outcome:?}"
        );
        assert_eq!(clock.is_synced(), k == 2);
    }
    let estimate = clock.estimate(3.0).unwrap();
    assert!((estimate - 503.0).abs() < 1e-9);
    assert_eq!(clock.server_time(3.0), Some(estimate));
}

#[test]
fn bad_answers_are_ignored() {
    let mut clock = ClockSync::new(ClockConfig::default());
    let ping = clock.ping(10.0);
    let good = Pong::answer(ping, 20.01, 20.011);

    let unknown = Pong { id: 99, ..good };
    assert_eq!(clock.on_pong(unknown, 10.03), PongOutcome::Unknown);
    let forged = Pong {
        client_send: 9.0,
        ..good
    };
    assert_eq!(clock.on_pong(forged, 10.03), PongOutcome::Unknown);
    let nan = Pong {
        server_receive: f64::NAN,
        ..good
    };
    assert_eq!(clock.on_pong(nan, 10.03), PongOutcome::Invalid);
    assert_eq!(clock.on_pong(good, f64::INFINITY), PongOutcome::Invalid);
    let backwards = Pong {
        server_send: 20.0,
        ..good
    };
    assert_eq!(clock.on_pong(backwards, 10.03), PongOutcome::Invalid);
    // Back before the server even let go of it: a negative delay.
    assert_eq!(clock.on_pong(good, 10.0005), PongOutcome::Invalid);

    assert!(matches!(
        clock.on_pong(good, 10.03),
        PongOutcome::Accepted { .. }
    ));
    assert_eq!(clock.on_pong(good, 10.03), PongOutcome::Duplicate);

    let late = clock.ping(11.0);
    assert_eq!(
        clock.on_pong(Pong::answer(late, 21.0, 21.0), 13.5),
        PongOutcome::Stale
    );
    assert_eq!(
        clock.rtt().samples(),
        1,
        "only the good answer was measured"
    );
    // Nothing above went into the filter but the good sample.
    assert!(!clock.is_synced());
}

#[test]
fn forgotten_pings_are_unknown() {
    let config = ClockConfig {
        max_pending: 4,
        ..ClockConfig::default()
    };
    let mut clock = ClockSync::new(config);
    let first = clock.ping(0.0);
    for k in 1..=4 {
        clock.ping(f64::from(k) * 0.01);
    }
    assert_eq!(
        clock.on_pong(Pong::answer(first, 0.01, 0.01), 0.05),
        PongOutcome::Unknown
    );
}

#[test]
fn one_wild_sample_is_suspected_two_confirm_a_step() {
    let mut clock = ClockSync::new(ClockConfig::default());
    let exchange = |clock: &mut ClockSync, at: f64, server_offset: f64| {
        let ping = clock.ping(at);
        let server = at + 0.01 + server_offset;
        clock.on_pong(Pong::answer(ping, server, server), at + 0.02)
    };
    for k in 0..8 {
        exchange(&mut clock, f64::from(k) * 0.1, 100.0);
    }
    let before = clock.estimate(1.0).unwrap();
    assert!(matches!(
        exchange(&mut clock, 0.8, 200.0),
        PongOutcome::Suspect { .. }
    ));
    assert_eq!(
        clock.estimate(1.0),
        Some(before),
        "one sample moves nothing"
    );
    assert!(matches!(
        exchange(&mut clock, 0.9, 100.0),
        PongOutcome::Accepted { .. }
    ));
    // Two in a row: the server's clock did step.
    exchange(&mut clock, 1.0, 200.0);
    assert!(matches!(
        exchange(&mut clock, 1.1, 200.0),
        PongOutcome::Accepted { .. }
    ));
    assert!((clock.estimate(1.2).unwrap() - 201.2).abs() < 1e-9);
}

#[test]
fn readings_repeat_when_the_client_clock_goes_back() {
    let mut clock = ClockSync::new(ClockConfig::default());
    for k in 0..3 {
        let at = f64::from(k) * 0.1;
        let ping = clock.ping(at);
        clock.on_pong(Pong::answer(ping, at + 5.01, at + 5.01), at + 0.02);
    }
    let a = clock.server_time(1.0).unwrap();
    assert_eq!(clock.server_time(0.5), Some(a));
    assert_eq!(clock.server_time(f64::NAN), None);
    assert!(clock.server_time(1.001).unwrap() > a);
}

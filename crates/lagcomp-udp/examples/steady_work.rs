//! What this machine does to a tick that never changes: the same arithmetic, calibrated to
//! a chosen length, run once per tick at a fixed rate with the thread asleep in between,
//! the way `lagcomp serve` spends its ticks. Prints the wall and thread-CPU times'
//! median, p99 and max, and the steal time the kernel counted meanwhile.
//!
//! Why: the load benchmark's floor is on the tick's p99. On a virtual machine the p99 of
//! work that is identical every tick is already well above its median; this measures how
//! far, so the server's own tail can be read against it.
//!
//! ```text
//! cargo run --release -p lagcomp-udp --example steady_work -- [work ms] [ticks] [tick Hz] [spin]
//! ```
//! Defaults: 2.0 ms of work, 3,840 ticks (a minute), 64 Hz, asleep between ticks. A fourth
//! argument `spin` waits for each tick by spinning on the clock instead (the core never goes
//! idle), to tell apart what waking a sleeping virtual CPU costs from what the work itself
//! suffers; a number instead sleeps until that many milliseconds before each tick and spins
//! the rest.

use std::hint::black_box;
use std::time::{Duration, Instant};

/// Work that cannot be vectorised or skipped: a dependent chain of multiply-adds.
fn work(steps: u64) -> f64 {
    let mut x = black_box(0.5_f64);
    for _ in 0..steps {
        x = x * 0.999_999 + 0.000_000_5;
    }
    black_box(x)
}

/// The thread's own CPU time, seconds.
fn thread_cpu() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// The machine's CPU time counters (USER_HZ ticks summed over all CPUs), from
/// /proc/stat's first line: user, nice, system, idle, iowait, irq, softirq, steal, ...
fn cpu_counters() -> Option<Vec<u64>> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let fields: Vec<u64> = stat
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .filter_map(|f| f.parse().ok())
        .collect();
    (fields.len() >= 8).then_some(fields)
}

/// (steal, busy, total) ticks between two readings of [`cpu_counters`].
fn cpu_between(before: &[u64], after: &[u64]) -> (u64, u64, u64) {
    let delta: Vec<u64> = after.iter().zip(before).map(|(a, b)| a - b).collect();
    let total: u64 = delta.iter().take(8).sum();
    let idle = delta[3] + delta[4];
    (delta[7], total - idle, total)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut next = |default: f64| -> f64 {
        args.next()
            .map(|a| a.parse().expect("a number"))
            .unwrap_or(default)
    };
    let work_ms = next(2.0);
    let ticks = next(3840.0) as usize;
    let rate = next(64.0);
    // How long before each tick to stop sleeping and spin: all of the wait with `spin`.
    let spin_ms = match std::env::args().nth(4).as_deref() {
        Some("spin") => f64::INFINITY,
        Some(ms) => ms.parse().expect("`spin` or milliseconds"),
        None => 0.0,
    };
    assert!(
        work_ms > 0.0 && ticks > 0 && rate > 0.0,
        "work, ticks and rate must be positive"
    );

    // Calibrate on the fastest of several tries: the work is the machine's best case.
    let probe = 2_000_000;
    let fastest = (0..20)
        .map(|_| {
            let t = Instant::now();
            work(probe);
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min);
    let steps = (probe as f64 * work_ms * 1e-3 / fastest) as u64;

    let dt = 1.0 / rate;
    let start = Instant::now();
    let counters_before = cpu_counters();
    let mut wall = Vec::with_capacity(ticks);
    let mut cpu = Vec::with_capacity(ticks);
    for tick in 0..ticks {
        let deadline = start + Duration::from_secs_f64(tick as f64 * dt);
        let wake = deadline.checked_sub(Duration::from_secs_f64((spin_ms * 1e-3).min(1.0)));
        if let Some(wait) = wake.and_then(|w| w.checked_duration_since(Instant::now())) {
            std::thread::sleep(wait);
        }
        while Instant::now() < deadline {
            std::hint::spin_loop();
        }
        let (t, c) = (Instant::now(), thread_cpu());
        work(steps);
        wall.push(t.elapsed().as_secs_f64() * 1e3);
        cpu.push((thread_cpu() - c) * 1e3);
    }
    let counters = cpu_counters()
        .zip(counters_before)
        .map(|(after, before)| cpu_between(&before, &after));
    wall.sort_by(f64::total_cmp);
    cpu.sort_by(f64::total_cmp);
    let elapsed = start.elapsed().as_secs_f64();
    println!(
        "steady work: {work_ms} ms calibrated, {ticks} ticks at {rate} Hz over {elapsed:.1} s, \
         {}",
        if spin_ms == 0.0 {
            "asleep between ticks".to_string()
        } else if spin_ms.is_infinite() {
            "spinning between ticks".to_string()
        } else {
            format!("asleep between ticks but for {spin_ms} ms spun before each")
        }
    );
    println!(
        "  wall p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms (p99/p50 {:.2})",
        percentile(&wall, 0.5),
        percentile(&wall, 0.99),
        wall[wall.len() - 1],
        percentile(&wall, 0.99) / percentile(&wall, 0.5)
    );
    println!(
        "  thread CPU p50 {:.3} ms, p99 {:.3} ms (p99/p50 {:.2})",
        percentile(&cpu, 0.5),
        percentile(&cpu, 0.99),
        percentile(&cpu, 0.99) / percentile(&cpu, 0.5)
    );
    if let Some((steal, busy, total)) = counters {
        // USER_HZ is 100 on Linux: one tick is 10 ms.
        println!(
            "  steal time counted by the kernel: {:.0} ms over all CPUs",
            steal as f64 * 10.0
        );
        println!(
            "  machine busy (all CPUs, /proc/stat): {:.1} %",
            busy as f64 * 100.0 / total.max(1) as f64
        );
    }
}

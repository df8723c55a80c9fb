//! The proxy forwards without allocating per datagram once warm: a run that forwards five
//! times as many datagrams (at the same rate, so with as many in flight) allocates no more
//! on the proxy's thread than a short one. The game server takes shots without
//! allocating per shot: eight copies of a replayed claim in every input cost its thread no
//! more allocations than one.
//!
//! A test binary of its own, because it replaces the global allocator with one that counts
//! each thread's allocations.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use lagcomp_net::LinkConfig;
use lagcomp_udp::proxy::{Proxy, ProxyConfig};
use lagcomp_udp::server::{GameServer, Outputs, ServeConfig};
use lagcomp_validate::AuditLog;

mod support;

/// The system allocator, counting allocations per thread.
struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn count() {
    // `try_with`: a thread being torn down has no counter left, and needs none.
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
}

// SAFETY: every call is passed straight to the system allocator with the caller's
// arguments, so its guarantees are the system allocator's.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller upholds `alloc`'s contract, which is `System.alloc`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` with this layout, as the caller promises.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: `ptr` came from `System` with `layout`, and the caller upholds
        // `realloc`'s contract for `new_size`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Allocations on the proxy's thread while it forwards `count` datagrams of 200 bytes, 5 a
/// millisecond, to an echo server and back, each way over 20 ± 5 ms with 10 % duplicates
/// and 5 % losses.
fn allocations_forwarding(count: u32) -> u64 {
    let server = UdpSocket::bind("127.0.0.1:0").unwrap();
    server
        .set_read_timeout(Some(Duration::from_millis(10)))
        .unwrap();
    let link = LinkConfig {
        jitter: 0.005,
        loss: 0.05,
        duplicate: 0.1,
        ..LinkConfig::with_latency(0.020)
    };
    let mut config = ProxyConfig::new("127.0.0.1:0".parse().unwrap(), server.local_addr().unwrap())
        .with_links(link, link);
    config.seed = 5;
    let proxy = Proxy::bind(config).unwrap();
    let (address, stop, stats) = (proxy.local_addr(), proxy.stop_handle(), proxy.stats());
    let running = thread::spawn(move || {
        let stats = proxy.run(None).unwrap();
        (stats, ALLOCATIONS.with(Cell::get))
    });
    let done = Arc::new(AtomicBool::new(false));
    let echoing = {
        let done = Arc::clone(&done);
        thread::spawn(move || {
            let mut buffer = [0; 512];
            while !done.load(Ordering::Acquire) {
                if let Ok((len, from)) = server.recv_from(&mut buffer) {
                    server.send_to(&buffer[..len], from).unwrap();
                }
            }
        })
    };
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    let payload = [7_u8; 200];
    for seq in 0..count {
        client.send_to(&payload, address).unwrap();
        if (seq + 1) % 5 == 0 {
            thread::sleep(Duration::from_millis(1));
        }
    }
    // Everything delivered: nothing in flight either way.
    while {
        let s = stats.snapshot();
        s.up.in_flight() + s.down.in_flight() > 0 || s.up.packets_in < u64::from(count)
    } {
        thread::sleep(Duration::from_millis(5));
    }
    stop.stop();
    let (stats, allocations) = running.join().unwrap();
    done.store(true, Ordering::Release);
    echoing.join().unwrap();
    assert!(stats.down.packets_out > u64::from(count) / 2, "{stats:?}");
    allocations
}

#[test]
fn forwarding_allocates_nothing_per_datagram_once_warm() {
    let short = allocations_forwarding(1000);
    let long = allocations_forwarding(5000);
    eprintln!("allocations on the proxy thread: {short} for 1000 datagrams, {long} for 5000");
    // One allocation per datagram would add 8,000 (4,000 more each way); a pool grown to a
    // higher mark adds one per extra buffer, a few dozen, or hundreds if a busy machine
    // stalls the proxy's thread for a while and more datagrams pile up.
    assert!(long < short + 1000, "{short} then {long}");
}

/// Allocations on the server's thread in each whole second of a run in which one client
/// sends 500 inputs a second for 6 s, each with `copies` copies of one replayed claim, to
/// a server writing a recording and an audit log (to nowhere) and keeping its metrics;
/// and how many copies it answered from memory.
fn server_allocations_per_second(copies: usize) -> (Vec<u64>, u64) {
    let mut config = ServeConfig::new("127.0.0.1:0".parse().unwrap());
    // Counting for the metrics is part of the tick's work that must not allocate.
    config.metrics = Some("127.0.0.1:0".parse().unwrap());
    let server = GameServer::bind(
        config,
        Outputs {
            audit: Some(AuditLog::new(Box::new(std::io::sink()))),
            recording: Some(Box::new(std::io::sink())),
        },
    )
    .unwrap();
    let address = server.local_addr();
    // Room for every second's count before the run, so keeping them allocates nothing.
    let seconds = Arc::new(Mutex::new(Vec::with_capacity(64)));
    let (stop, kept) = (Arc::new(AtomicBool::new(false)), Arc::clone(&seconds));
    let flag = Arc::clone(&stop);
    let running = thread::spawn(move || {
        server
            .run(&flag, None, |_| {
                let count = ALLOCATIONS.with(Cell::get);
                kept.lock().unwrap().push(count);
            })
            .unwrap()
    });
    let flood = support::flood(address, 6.0, copies, false);
    assert!(!flood.kicked, "{flood:?}");
    assert!(flood.inputs >= 1000, "{flood:?}");
    stop.store(true, Ordering::Release);
    let summary = running.join().unwrap();
    let counts = seconds.lock().unwrap().clone();
    // Each input's copies but the first (most of them, on a machine that loses a few).
    let answered = summary.status.copies_answered;
    assert!(
        answered + 1 >= flood.inputs * (copies as u64 - 1) / 2,
        "{flood:?}: {:?}",
        summary.status
    );
    (counts.windows(2).map(|w| w[1] - w[0]).collect(), answered)
}

#[test]
fn a_server_takes_copies_of_a_replayed_claim_without_allocating_per_shot() {
    let (single, _) = server_allocations_per_second(1);
    let (eight, answered) = server_allocations_per_second(8);
    eprintln!(
        "allocations a second on the server's thread: {single:?} with one copy per input, \
         {eight:?} with eight ({answered} answered from memory)"
    );
    // Seconds 2 to 4 of each run: connected and flooding, not starting or ending.
    assert!(
        single.len() >= 4 && eight.len() >= 4,
        "{single:?} {eight:?}"
    );
    let steady = |counts: &[u64]| counts[1..4].iter().sum::<u64>();
    let (single, eight) = (steady(&single), steady(&eight));
    // Seven more shots in each of 1,500 inputs: one allocation per shot would add 10,500.
    assert!(
        eight < single + single / 10 + 500,
        "{eight} allocations in three seconds of eight copies an input, {single} of one"
    );
}

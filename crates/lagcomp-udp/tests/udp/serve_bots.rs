//! The game server and the bots over loopback sockets, in one process: bots play and get
//! every verdict back, the recording re-validates to the same verdicts, malformed and
//! foreign messages get a client disconnected, bad settings are typed errors.

use std::io::{self, Write};
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::support::{FLOOD_RATE, Flood, flood, raw_client, raw_client_on_socket};
use lagcomp_game::body::ArenaSpec;
use lagcomp_game::cheat::Cheat;
use lagcomp_game::interest::InterestConfig;
use lagcomp_udp::bots::{self, BotsConfig, BotsError};
use lagcomp_udp::channel::{UNRELIABLE, new_key, unsecure_token};
use lagcomp_udp::client::ClientTransport;
use lagcomp_udp::server::{
    DEFAULT_MAX_VERDICTS_PER_SECOND, GameServer, Outputs, ServeConfig, ServeError, Status, Summary,
};
use lagcomp_validate::AuditLog;
use lagcomp_validate::recording::{Recording, revalidate};
use renet::RenetClient;
use renet_netcode::ClientAuthentication;
use renetcode::NetcodeClient;

/// A writer whose bytes the test reads afterwards.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().expect("not poisoned").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A server on 127.0.0.1 running on a thread until the flag is set.
pub(super) struct Running {
    pub(super) addr: SocketAddr,
    /// Its metrics endpoint, if it has one.
    pub(super) metrics: Option<SocketAddr>,
    stop: Arc<AtomicBool>,
    /// Players connected, as of the latest status line.
    players: Arc<Mutex<Option<usize>>>,
    thread: Option<JoinHandle<Result<Summary, ServeError>>>,
}

impl Running {
    pub(super) fn start(config: ServeConfig, outputs: Outputs) -> Self {
        let server = GameServer::bind(config, outputs).expect("the server binds");
        let addr = server.local_addr();
        let metrics = server.metrics_addr();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let players = Arc::new(Mutex::new(None));
        let seen = Arc::clone(&players);
        let thread = thread::spawn(move || {
            server.run(&flag, None, |status| {
                *seen.lock().expect("not poisoned") = Some(status.players);
            })
        });
        Self {
            addr,
            metrics,
            stop,
            players,
            thread: Some(thread),
        }
    }

    /// A default server on loopback writing its audit log and recording where the test
    /// reads them: (server, recording, audit log).
    fn recorded() -> (Self, Shared, Shared) {
        let recording = Shared::default();
        let audit = Shared::default();
        let server = Self::start(
            loopback(),
            Outputs {
                audit: Some(AuditLog::new(Box::new(audit.clone()))),
                recording: Some(Box::new(recording.clone())),
            },
        );
        (server, recording, audit)
    }

    /// Waits (at most 10 s) for a status line saying nobody is connected.
    pub(super) fn wait_until_empty(&self) {
        let start = Instant::now();
        while *self.players.lock().expect("not poisoned") != Some(0) {
            assert!(start.elapsed() < Duration::from_secs(10), "players stay");
            thread::sleep(Duration::from_millis(20));
        }
    }

    pub(super) fn stop(mut self) -> Summary {
        self.stop.store(true, Ordering::Release);
        self.thread
            .take()
            .expect("running")
            .join()
            .expect("the server thread")
            .expect("the server ran")
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

pub(super) fn loopback() -> ServeConfig {
    ServeConfig::new("127.0.0.1:0".parse().expect("an address"))
}

#[test]
fn bots_play_get_every_verdict_and_the_recording_replays_to_the_same_verdicts() {
    let (server, recording, audit) = Running::recorded();
    let mut config = BotsConfig::new(server.addr, 4, 6.0);
    config.cheats = vec![Cheat::Backtrack];
    let report = bots::run(&config).expect("the bots run");
    // The bots' goodbyes take a moment to be read.
    server.wait_until_empty();
    let summary = server.stop();

    assert_eq!(report.bots, 4);
    assert_eq!(report.connected, 4, "{report:?}");
    assert!(report.dropped.is_empty(), "{report:?}");
    assert_eq!(report.malformed, 0);
    let honest = &report.honest;
    // Three honest bots for four seconds after their warm-up: a few shots a second each.
    assert!(honest.shots_arrived >= 10, "{report:?}");
    assert!(honest.client_hits >= 3, "{report:?}");
    // Loopback, no loss: the server sees what the bots drew.
    assert!(honest.agreement >= 0.99, "{report:?}");
    assert_eq!(honest.false_confirmations, 0, "{report:?}");
    let [backtrack] = report.cheats.as_slice() else {
        panic!("one cheat class: {report:?}");
    };
    assert_eq!(backtrack.class, "backtrack");
    assert!(backtrack.attempts > 0, "{report:?}");
    assert_eq!(backtrack.accepted, 0, "{report:?}");

    let status = &summary.status;
    assert_eq!((status.joined, status.left), (4, 4), "{status:?}");
    assert_eq!(status.malformed, 0);
    assert!(status.ticks >= 6 * 64, "{status:?}");
    // Every verdict the bots tallied was given by the server, and audited.
    let tallied = honest.shots_arrived + backtrack.attempts;
    assert_eq!(status.shots, tallied + report.unexpected, "{status:?}");
    assert_eq!(summary.audited, Some(status.shots));
    let audit = audit.0.lock().expect("not poisoned").clone();
    assert_eq!(
        String::from_utf8(audit).expect("UTF-8").lines().count() as u64,
        status.shots
    );

    let bytes = recording.0.lock().expect("not poisoned").clone();
    assert_eq!(
        summary.recording_lines,
        Some(bytes.iter().filter(|&&b| b == b'\n').count())
    );
    let recording = Recording::read(bytes.as_slice()).expect("a valid recording");
    assert_eq!(recording.claims() as u64, status.shots);
    let replayed = revalidate(&recording, None, |_, _| {}).expect("it replays");
    assert_eq!(replayed.len() as u64, status.shots);
    assert!(
        replayed.iter().all(|r| !r.changed()),
        "a verdict changed on replay"
    );
}

/// Four bots firing as fast as the weapon allows for 6 s against a server set up by
/// `config`: their report and the server's figures once they have left.
fn four_bots_for_six_seconds(config: ServeConfig) -> (bots::BotsReport, Status) {
    let server = Running::start(config, Outputs::default());
    let mut bots_config = BotsConfig::new(server.addr, 4, 6.0);
    bots_config.pause = (0.0, 0.001);
    let report = bots::run(&bots_config).expect("the bots run");
    server.wait_until_empty();
    (report, server.stop().status)
}

#[test]
fn snapshots_below_the_tick_rate_are_spread_over_the_ticks_and_bots_still_agree() {
    let mut config = loopback();
    // A snapshot every 4 ticks to each client, the clients' turns spread over the 4.
    config.send_rate = 16.0;
    // The tick's datagrams handed to the socket by a second thread.
    config.send_thread = true;
    let (report, status) = four_bots_for_six_seconds(config);
    assert_eq!(report.connected, 4, "{report:?}");
    let honest = &report.honest;
    // Four bots for four seconds after their warm-up, up to ten shots a second each
    // while a target is in view.
    assert!(honest.shots_arrived >= 40, "{report:?}");
    assert!(honest.client_hits >= 10, "{report:?}");
    // Shots 100-101 ms apart in the bots' clocks are now and then closer than the
    // weapon allows in claimed time (the draw delay adapts): a few fire-rate rejections.
    assert!(honest.agreement >= 0.9, "{report:?}");
    assert_eq!(status.shots, honest.shots_arrived + report.unexpected);
    // The send thread sent them, and its time is counted.
    assert!(status.send_cpu_p50.is_some_and(|t| t > 0.0), "{status:?}");
    assert!(status.tick_datagrams >= status.snapshots, "{status:?}");
}

#[test]
fn a_busy_polling_server_ticks_on_time_and_answers_every_shot() {
    let mut config = loopback();
    config.busy_poll = true;
    config.send_rate = 32.0;
    let (report, status) = four_bots_for_six_seconds(config);
    assert_eq!(report.connected, 4, "{report:?}");
    assert!(report.honest.shots_arrived >= 40, "{report:?}");
    assert_eq!(report.unanswered, 0, "{report:?}");
    assert_eq!(
        status.shots,
        report.honest.shots_arrived + report.unexpected
    );
    // Polling, it still keeps the clock: a tick every 1/64 s, none skipped.
    assert!(status.ticks >= 6 * 64, "{status:?}");
    assert_eq!(status.skipped_ticks, 0, "{status:?}");
    // Each of the four a snapshot every other tick while it plays (most of the run).
    assert!(status.snapshots <= status.ticks * 2 + 4, "{status:?}");
    assert!(status.snapshots >= status.ticks, "{status:?}");
}

/// A renet client that connects and then sends `message` every few milliseconds until it
/// is disconnected (or `limit` passes); returns how many it sent while connected.
fn send_until_disconnected(server: SocketAddr, message: &[u8], limit: Duration) -> (u32, bool) {
    let (mut transport, mut client) = raw_client(server);
    let start = Instant::now();
    let mut last = start;
    let mut sent = 0;
    let mut was_connected = false;
    while start.elapsed() < limit {
        let now = Instant::now();
        let delta = now - last;
        last = now;
        client.update(delta);
        // An error here is the server's disconnection (or a dead socket).
        if transport.update(delta, &mut client).is_err() {
            break;
        }
        if client.is_connected() {
            was_connected = true;
            client.send_message(UNRELIABLE, message.to_vec());
            sent += 1;
        }
        if transport.send_packets(&mut client).is_err() {
            break;
        }
        thread::sleep(Duration::from_millis(5));
    }
    let disconnected = client.is_disconnected() || transport.disconnect_reason().is_some();
    (sent, was_connected && disconnected)
}

/// Connects a netcode client to `server`, sends nothing of its own, and drops it once
/// connected. Whether it connected within 5 s.
fn connect_then_fall_silent(server: SocketAddr) -> bool {
    let (mut transport, mut client) = raw_client(server);
    let start = Instant::now();
    let mut last = start;
    while start.elapsed() < Duration::from_secs(5) && !client.is_connected() {
        if !step(&mut transport, &mut client, &mut last) {
            return false;
        }
    }
    client.is_connected()
}

/// One step of a raw client's connection (`last` is when the previous one was), then
/// 5 ms of sleep: whether the connection still stands.
fn step(transport: &mut ClientTransport, client: &mut RenetClient, last: &mut Instant) -> bool {
    let now = Instant::now();
    let elapsed = now - std::mem::replace(last, now);
    client.update(elapsed);
    let alive = transport.update(elapsed, client).is_ok() && transport.send_packets(client).is_ok();
    thread::sleep(Duration::from_millis(5));
    alive
}

#[test]
fn a_client_that_falls_silent_times_out_and_leaves() {
    let server = Running::start(loopback(), Outputs::default());
    assert!(connect_then_fall_silent(server.addr), "never connected");
    let silent = Instant::now();
    let players = || *server.players.lock().expect("not poisoned");
    // The status line (once a second) counts it, then, once netcode's 15 s timeout for
    // these clients has passed, no longer: the server's keep-alive and time-out pass
    // visits each client every few ticks, so it notices within a tick or so.
    while players() != Some(1) {
        assert!(silent.elapsed() < Duration::from_secs(5), "never counted");
        thread::sleep(Duration::from_millis(20));
    }
    while players() != Some(0) {
        assert!(
            silent.elapsed() < Duration::from_secs(25),
            "still connected after 25 s"
        );
        thread::sleep(Duration::from_millis(50));
    }
    let waited = silent.elapsed();
    let summary = server.stop();
    assert!(
        waited >= Duration::from_secs(14),
        "gone after {waited:?}, before netcode's 15 s timeout"
    );
    assert_eq!((summary.status.joined, summary.status.left), (1, 1));
    assert_eq!(summary.status.kicked, 0, "{:?}", summary.status);
}

#[test]
fn a_client_sending_garbage_is_disconnected_past_the_guard_threshold() {
    let server = Running::start(loopback(), Outputs::default());
    // A lagcomp input header (this version) with nothing after it: malformed, not foreign.
    let [low, high] = lagcomp_wire::PROTOCOL_VERSION.to_le_bytes();
    let truncated = [b'L', b'W', low, high, 0x01];
    let (sent, disconnected) =
        send_until_disconnected(server.addr, &truncated, Duration::from_secs(20));
    let summary = server.stop();
    assert!(disconnected, "still connected after {sent} messages");
    let status = summary.status;
    assert_eq!(status.kicked, 1, "{status:?}");
    // The default guard allows 20 in its window and disconnects at the 21st.
    assert_eq!(status.malformed, 21, "{status:?}");
    assert!(u64::from(sent) >= status.malformed);
    assert_eq!((status.joined, status.left), (1, 1));
}

#[test]
fn a_client_of_another_protocol_version_is_disconnected_at_its_first_message() {
    let server = Running::start(loopback(), Outputs::default());
    // A well-formed header of the next version: the magic, the version, the input kind.
    let [low, high] = (lagcomp_wire::PROTOCOL_VERSION + 1).to_le_bytes();
    let foreign = [b'L', b'W', low, high, 0x01];
    let (_, disconnected) = send_until_disconnected(server.addr, &foreign, Duration::from_secs(20));
    let status = server.stop().status;
    assert!(disconnected);
    assert_eq!((status.malformed, status.kicked), (1, 1), "{status:?}");
}

#[test]
fn bots_without_a_server_report_no_welcome_instead_of_hanging() {
    // A bound socket that never answers.
    let silent = UdpSocket::bind("127.0.0.1:0").expect("a socket");
    let mut config = BotsConfig::new(silent.local_addr().expect("bound"), 2, 5.0);
    config.connect_timeout = 1.0;
    let started = Instant::now();
    let report = bots::run(&config).expect("the bots run");
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(report.connected, 0);
    assert_eq!(report.dropped.len(), 2, "{report:?}");
    assert!(report.dropped[0].contains("no welcome"), "{report:?}");
    assert_eq!(report.honest.shots_sent, 0);
    assert!(report.honest.agreement.is_nan());
}

#[test]
fn bad_settings_are_typed_errors() {
    let at = |tick_rate: f64, send_rate: f64| {
        let mut config = loopback();
        config.tick_rate = tick_rate;
        config.send_rate = send_rate;
        GameServer::bind(config, Outputs::default())
    };
    assert!(matches!(at(0.5, 0.5), Err(ServeError::TickRate(_))));
    assert!(matches!(at(129.0, 64.0), Err(ServeError::TickRate(_))));
    assert!(matches!(at(f64::NAN, 64.0), Err(ServeError::TickRate(_))));
    assert!(matches!(at(64.0, 65.0), Err(ServeError::SendRate { .. })));
    assert!(matches!(at(64.0, 0.0), Err(ServeError::SendRate { .. })));
    assert!(at(128.0, 32.0).is_ok());
    let mut config = loopback();
    config.max_clients = 2000;
    assert!(matches!(
        GameServer::bind(config, Outputs::default()),
        Err(ServeError::MaxClients(2000))
    ));
    let mut config = loopback();
    config.max_rewind = -1.0;
    assert!(matches!(
        GameServer::bind(config, Outputs::default()),
        Err(ServeError::Core(_))
    ));
    let mut config = loopback();
    config.guard.window = -1.0;
    assert!(matches!(
        GameServer::bind(config, Outputs::default()),
        Err(ServeError::Guard(_))
    ));
    let mut config = loopback();
    config.max_verdicts_per_second = 0;
    assert!(matches!(
        GameServer::bind(config, Outputs::default()),
        Err(ServeError::VerdictCap)
    ));
    let mut config = loopback();
    config.snapshot_budget = 10;
    assert!(matches!(
        GameServer::bind(config, Outputs::default()),
        Err(ServeError::Budget(_))
    ));

    let addr: SocketAddr = "127.0.0.1:9".parse().expect("an address");
    let mut config = BotsConfig::new(addr, 0, 5.0);
    assert!(matches!(bots::run(&config), Err(BotsError::Count { .. })));
    config.count = 1;
    config.cheats = vec![Cheat::Snap, Cheat::Replay];
    assert!(matches!(bots::run(&config), Err(BotsError::Count { .. })));
    config.cheats.clear();
    config.fps = 0.0;
    assert!(matches!(
        bots::run(&config),
        Err(BotsError::NotPositive { what: "fps", .. })
    ));
    config.fps = 60.0;
    config.pause = (0.5, 0.1);
    assert!(matches!(bots::run(&config), Err(BotsError::Pause(_))));
    config.pause = (0.0, 0.001);
    config.duration = f64::INFINITY;
    assert!(matches!(
        bots::run(&config),
        Err(BotsError::NotPositive {
            what: "duration",
            ..
        })
    ));
}

#[test]
fn a_crowd_on_an_arena_sized_for_it_sees_only_its_neighbours_and_every_shot_is_answered() {
    let mut config = loopback();
    // 16 players: a 65 m square with 10 walls, built by the bots from their welcome.
    config.arena = ArenaSpec::for_players(16);
    config.interest = Some(InterestConfig {
        radius: 12.0,
        hysteresis: 3.0,
    });
    let server = Running::start(config, Outputs::default());
    let mut bots_config = BotsConfig::new(server.addr, 16, 6.0);
    // Ten shots a second each from the end of the warm-up, whatever is in view.
    bots_config.fire_rate = Some(10.0);
    let report = bots::run(&bots_config).expect("the bots run");
    server.wait_until_empty();
    let status = server.stop().status;
    assert_eq!(report.connected, 16, "{report:?}");
    assert!(report.dropped.is_empty(), "{report:?}");
    let honest = &report.honest;
    // Four seconds of play after the warm-up: up to 40 shots a bot. A loaded machine
    // runs frames late, never early.
    assert!(honest.shots_sent >= 16 * 20, "{report:?}");
    assert!(honest.shots_sent <= 16 * 42, "{report:?}");
    assert_eq!(report.unanswered, 0, "{report:?}");
    assert_eq!(honest.shots_arrived, honest.shots_sent, "{report:?}");
    assert_eq!(status.shots, honest.shots_arrived + report.unexpected);
    // Bodies come in and out of view: the hits drawn are still the server's.
    assert!(honest.client_hits >= 20, "{report:?}");
    assert!(honest.agreement >= 0.97, "{report:?}");
    // The thread's own CPU time is part of the tick's wall time.
    let (cpu, wall) = (
        status.cpu_p50.expect("measured"),
        status.tick_max.expect("ticks ran"),
    );
    assert!(
        cpu > 0.0 && cpu <= wall,
        "CPU p50 {cpu} s, longest tick {wall} s"
    );
    // No send thread, no share of the CPU time for one.
    assert_eq!(status.send_cpu_p50, None);
    // Each client was sent its own body and its neighbours, not all sixteen.
    assert!(status.snapshots > 0);
    // Each body as its stance: a client's whole view in one datagram (a few more go with
    // shot results on their reliable channel and renet's acknowledgements).
    assert_eq!(status.snapshot_parts, status.snapshots, "{status:?}");
    let datagrams = status.tick_datagrams as f64 / status.snapshots as f64;
    assert!((1.0..1.6).contains(&datagrams), "{datagrams}: {status:?}");
    let per_snapshot = status.snapshot_entities as f64 / status.snapshots as f64;
    assert!(
        (1.0..8.0).contains(&per_snapshot),
        "{per_snapshot} entities a snapshot: {status:?}"
    );
}

#[test]
fn bots_refuse_a_fire_rate_faster_than_the_rifle() {
    let silent = UdpSocket::bind("127.0.0.1:0").expect("a socket");
    for rate in [0.0, -1.0, 10.5, f64::NAN] {
        let mut config = BotsConfig::new(silent.local_addr().expect("bound"), 1, 1.0);
        config.fire_rate = Some(rate);
        assert!(
            matches!(bots::run(&config), Err(BotsError::FireRate(_))),
            "{rate}"
        );
    }
}

#[test]
fn a_secure_server_lets_in_only_tokens_minted_with_its_key() {
    let key = new_key();
    let mut config = loopback();
    config.private_key = Some(key);
    let server = Running::start(config, Outputs::default());
    // Bots holding the key mint their own tokens, as a matchmaker would, and play.
    let mut keyed = BotsConfig::new(server.addr, 2, 4.0);
    keyed.private_key = Some(key);
    keyed.pause = (0.0, 0.001);
    let report = bots::run(&keyed).expect("the bots run");
    assert_eq!(report.connected, 2, "{report:?}");
    assert!(report.honest.shots_arrived >= 10, "{report:?}");
    assert_eq!(report.unanswered, 0, "{report:?}");
    let answered = report.honest.shots_arrived + report.unexpected;
    server.wait_until_empty();
    // Tokens minted with another key, and made-up (unsecure) tokens, are never welcomed.
    for private_key in [Some(new_key()), None] {
        let mut outsider = BotsConfig::new(server.addr, 2, 4.0);
        outsider.private_key = private_key;
        outsider.connect_timeout = 2.0;
        let report = bots::run(&outsider).expect("the bots run");
        assert_eq!(report.connected, 0, "{report:?}");
        assert!(
            report.dropped.iter().all(|d| d.contains("no welcome")),
            "{report:?}"
        );
    }
    // Every shot the server validated came from the keyed bots.
    assert_eq!(server.stop().status.shots, answered);
}

/// A datagram whose prefix byte claims a 9-byte sequence number (0x95: a payload, high
/// nibble 9) and 20 more bytes: renetcode 2.0.0 panics reading it from any address it
/// knows.
fn nine_byte_sequence() -> Vec<u8> {
    std::iter::once(0x95).chain([0x41; 20]).collect()
}

/// Steps a raw client's connection for `limit`: whether it was connected all along once
/// connected (and connected at the end).
fn keep_connected(
    transport: &mut ClientTransport,
    client: &mut RenetClient,
    limit: Duration,
) -> bool {
    let start = Instant::now();
    let mut last = start;
    while start.elapsed() < limit {
        if !step(transport, client, &mut last) {
            return false;
        }
    }
    client.is_connected()
}

#[test]
fn one_forged_datagram_from_a_player_or_a_half_open_address_stops_nothing() {
    let server = Running::start(loopback(), Outputs::default());
    let addr = server.addr;
    // Honest bots play throughout.
    let honest = thread::spawn(move || {
        let mut config = BotsConfig::new(addr, 4, 6.0);
        config.pause = (0.0, 0.001);
        bots::run(&config)
    });
    // A player the test can send from.
    let (mut transport, mut client, player) = raw_client_on_socket(addr);
    let connected = Instant::now();
    while !client.is_connected() {
        assert!(
            connected.elapsed() < Duration::from_secs(5),
            "never connected"
        );
        keep_connected(&mut transport, &mut client, Duration::from_millis(20));
    }
    // An address that only sent a connection request and was challenged.
    let half_open = UdpSocket::bind("127.0.0.1:0").expect("a socket");
    half_open
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("a timeout");
    let epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970");
    let mut stranger = NetcodeClient::new(
        epoch,
        ClientAuthentication::Secure {
            connect_token: unsecure_token(77, addr, epoch).expect("a token"),
        },
    )
    .expect("a netcode client");
    let (request, _) = stranger.update(Duration::ZERO).expect("a request");
    half_open.send_to(request, addr).expect("sent");
    let mut challenge = [0_u8; 1500];
    half_open.recv_from(&mut challenge).expect("a challenge");
    // The attack, from both.
    for from in [&player, &half_open] {
        from.send_to(&nine_byte_sequence(), addr).expect("sent");
    }
    // The player is still connected a second later, and so are the bots.
    assert!(
        keep_connected(&mut transport, &mut client, Duration::from_secs(1)),
        "the player was dropped"
    );
    transport.disconnect();
    let report = honest
        .join()
        .expect("the bots' thread")
        .expect("the bots run");
    server.wait_until_empty();
    let status = server.stop().status;
    assert_eq!(report.connected, 4, "{report:?}");
    assert!(report.dropped.is_empty(), "{report:?}");
    assert!(report.honest.shots_arrived >= 20, "{report:?}");
    assert_eq!(report.unanswered, 0, "{report:?}");
    // Dropped by the framing check, before netcode: never a contained panic.
    assert_eq!(status.framing_drops, 2, "{status:?}");
    assert_eq!(status.contained_panics, 0, "{status:?}");
    assert_eq!((status.joined, status.left), (5, 5), "{status:?}");
}

#[test]
fn a_forged_datagram_from_the_servers_address_does_not_stop_a_client() {
    // The "server": a socket the client is pointed at, that sends what a forger would.
    let server = UdpSocket::bind("127.0.0.1:0").expect("a socket");
    let (mut transport, mut client) = raw_client(server.local_addr().expect("bound"));
    let mut hello = [0_u8; 1500];
    server
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("a timeout");
    // The client's first connection request tells the test where it is.
    let to = loop {
        transport
            .update(Duration::from_millis(300), &mut client)
            .expect("connecting");
        if let Ok((_, from)) = server.recv_from(&mut hello) {
            break from;
        }
    };
    server.send_to(&nine_byte_sequence(), to).expect("sent");
    // An 18-byte payload with an 8-byte sequence: 9 bytes left for a 16-byte tag.
    let mut short = vec![0x85];
    short.extend([0x41; 17]);
    server.send_to(&short, to).expect("sent");
    let read = Instant::now();
    while transport.refused() < 2 {
        assert!(read.elapsed() < Duration::from_secs(5), "never read");
        transport
            .update(Duration::from_millis(1), &mut client)
            .expect("still connecting");
        thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(transport.refused(), 2);
    assert!(transport.disconnect_reason().is_none());
}

/// One match: four honest bots for 6 s, and beside them two clients flooding inputs as
/// `floods` says (copies per input, a new claim every input), on a server writing a
/// recording and an audit log. The bots' report, each flood's, the server's figures and
/// the bytes written to both files.
fn match_beside_floods(
    floods: [(usize, bool); 2],
) -> (bots::BotsReport, [Flood; 2], Status, usize) {
    let (server, recording, audit) = Running::recorded();
    let addr = server.addr;
    let flooders: Vec<_> = floods
        .into_iter()
        .map(|(copies, vary)| thread::spawn(move || flood(addr, 9.0, copies, vary)))
        .collect();
    let report = bots::run(&BotsConfig::new(server.addr, 4, 6.0)).expect("the bots run");
    let floods: Vec<Flood> = flooders
        .into_iter()
        .map(|f| f.join().expect("the flooding client"))
        .collect();
    server.wait_until_empty();
    let status = server.stop().status;
    let written = recording.0.lock().expect("not poisoned").len()
        + audit.0.lock().expect("not poisoned").len();
    (report, [floods[0], floods[1]], status, written)
}

#[test]
fn a_flood_of_replayed_copies_is_answered_from_memory_and_writes_no_more_than_a_clean_match() {
    // The clean match: the same four bots, and two clients sending as many inputs with
    // no shots in them.
    let (clean, _, clean_status, clean_bytes) = match_beside_floods([(0, false), (0, false)]);
    // One client repeats one replayed claim 8 times in each of 500 inputs a second; the
    // other sends a new claim under the replayed number in every input.
    let (flooded, [copier, varier], status, flooded_bytes) =
        match_beside_floods([(8, false), (8, true)]);
    let rate = |bytes: usize, status: &Status| bytes as f64 / status.ticks as f64;
    eprintln!(
        "clean: {clean_bytes} bytes in {} ticks; flooded: {flooded_bytes} bytes in {} ticks \
         ({copier:?}, {varier:?}); {status:?}",
        clean_status.ticks, status.ticks
    );
    // Several seconds of flood, on a loaded machine at least half the rate.
    assert!(copier.inputs as f64 >= 4.0 * FLOOD_RATE, "{copier:?}");
    // Recording and audit log grow at most half as fast again as in the clean match (per
    // tick: the two matches' lengths differ by a few ticks).
    assert!(
        rate(flooded_bytes, &status) <= 1.5 * rate(clean_bytes, &clean_status),
        "the flood grew the files by {flooded_bytes} bytes in {} ticks against {clean_bytes} \
         in {} ticks",
        status.ticks,
        clean_status.ticks
    );
    // Every copy but the first is answered from memory: validated once, written once.
    // (Inputs lost on a loaded machine's sockets would lower the count, never raise it.)
    assert!(
        !copier.kicked,
        "the copier is not a cheat past the cap: {status:?}"
    );
    assert!(
        status.copies_answered >= copier.inputs * 8 / 2,
        "{copier:?}: {status:?}"
    );
    // What the server validated beyond the bots' shots: the copier's claim once, and the
    // varier's new claims up to the cap in each second it was connected (one, or two when
    // a second's boundary fell in its flood).
    assert_eq!(flooded.unanswered, 0, "{flooded:?}");
    let flood_validated = status.shots - flooded.honest.shots_arrived - flooded.unexpected;
    assert!(
        flood_validated <= 1 + 2 * u64::from(DEFAULT_MAX_VERDICTS_PER_SECOND),
        "{flood_validated} of the floods' claims validated: {status:?}"
    );
    // New claims as fast as it can: the cap lets 50 a second through, then each is a
    // strike, and the guard's 21st disconnects it.
    assert!(varier.kicked, "{varier:?}: {status:?}");
    assert_eq!(status.kicked, 1, "{status:?}");
    assert!(status.verdicts_capped >= 21, "{status:?}");
    // The honest bots play as in the clean match: every shot answered, none rejected more.
    for report in [&clean, &flooded] {
        assert_eq!(report.connected, 4, "{report:?}");
        assert_eq!(report.unanswered, 0, "{report:?}");
        assert!(report.honest.shots_arrived >= 10, "{report:?}");
    }
    let rejected = |r: &bots::BotsReport| r.honest.rejections.values().sum::<u64>();
    assert!(
        rejected(&flooded) <= rejected(&clean),
        "honest shots rejected beside the flood: {:?} against {:?} in the clean match",
        flooded.honest.rejections,
        clean.honest.rejections
    );
}

/// A client that sends one claim at a time and collects its verdicts, acknowledging them.
struct Claimant {
    transport: ClientTransport,
    client: RenetClient,
    messages: lagcomp_udp::client::Messages,
    inbox: lagcomp_wire::VerdictInbox,
    results: Vec<lagcomp_wire::WireVerdict>,
    frame: u32,
    last: Instant,
}

impl Claimant {
    /// Connected to `server` (within 5 s).
    fn connect(server: SocketAddr) -> Self {
        let (transport, client) = raw_client(server);
        let mut claimant = Self {
            transport,
            client,
            messages: lagcomp_udp::client::Messages::default(),
            inbox: lagcomp_wire::VerdictInbox::new(),
            results: Vec::new(),
            frame: 0,
            last: Instant::now(),
        };
        let start = Instant::now();
        while !claimant.client.is_connected() {
            assert!(start.elapsed() < Duration::from_secs(5), "never connected");
            claimant.pump();
        }
        claimant
    }

    /// Reads what came, acknowledges the verdicts among it, sends what is queued.
    fn pump(&mut self) {
        let now = Instant::now();
        self.client.update(now - self.last);
        self.transport
            .update(now - self.last, &mut self.client)
            .expect("still connected");
        self.last = now;
        self.transport.take_messages(&mut self.messages);
        for bytes in self.messages.iter() {
            if let Ok(lagcomp_wire::ServerMessage::Verdicts(verdicts)) =
                lagcomp_wire::ServerMessage::decode(bytes)
            {
                self.results
                    .extend_from_slice(self.inbox.receive(&verdicts));
            }
        }
        self.transport
            .send_packets(&mut self.client)
            .expect("still connected");
        thread::sleep(Duration::from_millis(2));
    }

    /// Sends `claim` as shot `seq` and waits (at most 5 s) for one more verdict: it.
    fn claim(&mut self, seq: u32, claim: lagcomp_validate::ShotClaim) -> lagcomp_wire::WireVerdict {
        let before = self.results.len();
        self.frame += 1;
        let input = lagcomp_wire::ClientMessage::Input(lagcomp_wire::Input {
            frame: self.frame,
            ping: None,
            probe_reply: None,
            aim: lagcomp::Quat::IDENTITY,
            interp_delay: 0.1,
            newest_tick: None,
            verdicts_received: Some(self.inbox.received()),
            shots: vec![(seq, claim)],
            weapon_shots: Vec::new(),
        });
        let mut bytes = Vec::new();
        input.encode(&mut bytes).expect("an input encodes");
        self.client.send_message(UNRELIABLE, bytes);
        let start = Instant::now();
        while self.results.len() == before {
            assert!(start.elapsed() < Duration::from_secs(5), "no verdict");
            self.pump();
        }
        assert_eq!(self.results.len(), before + 1, "{:?}", self.results);
        // Acknowledged with the next inputs: the server stops repeating it.
        self.results[before]
    }
}

#[test]
fn an_answered_claim_sent_again_gets_the_same_verdict_without_being_validated_again() {
    use lagcomp_validate::{RenderTime, ShotClaim, WeaponId};

    let (server, recording, audit) = Running::recorded();
    let mut claimant = Claimant::connect(server.addr);
    let claim = ShotClaim {
        shooter: lagcomp::EntityId::from_bits(0),
        weapon: WeaponId(1),
        seq: 0,
        render_time: RenderTime::Time(0.5),
        origin: lagcomp::Vec3::new(0.0, 1.6, 0.0),
        direction: lagcomp::Vec3::Z,
        hit: None,
    };
    // Sequence number 0 is never a new shot to the server: each copy reaches validation.
    let first = claimant.claim(0, claim);
    // Sent again once the verdict was acknowledged: the same verdict, resent.
    for _ in 0..3 {
        let again = claimant.claim(0, claim);
        assert_eq!(again, first);
    }
    // The same number with a changed claim is a new claim, validated: a replay.
    let changed = ShotClaim {
        direction: lagcomp::Vec3::X,
        ..claim
    };
    let replayed = claimant.claim(0, changed);
    assert_eq!(
        replayed.outcome,
        lagcomp_wire::WireOutcome::Rejected(lagcomp_validate::RejectReason::Replayed)
    );
    claimant.transport.disconnect();
    server.wait_until_empty();
    let summary = server.stop();
    let status = summary.status;
    assert_eq!(status.shots, 2, "validated once each: {status:?}");
    assert_eq!(status.copies_answered, 3, "{status:?}");
    assert_eq!(summary.audited, Some(2));
    let audit = audit.0.lock().expect("not poisoned").clone();
    assert_eq!(audit.iter().filter(|&&b| b == b'\n').count(), 2);
    let bytes = recording.0.lock().expect("not poisoned").clone();
    let recording = Recording::read(bytes.as_slice()).expect("a valid recording");
    assert_eq!(recording.claims(), 2);
}

#[test]
fn a_fake_latency_bot_gets_no_backtracked_shot_through() {
    // It answers the server's probes 500 ms late over loopback and claims moments 250 ms
    // older than it drew: the probes alone would grant it that rewind; its snapshot
    // acknowledgements, on time, do not. The recording holds the timing the validator
    // used, so it replays to the same verdicts.
    let recording = Shared::default();
    let server = Running::start(
        loopback(),
        Outputs {
            audit: None,
            recording: Some(Box::new(recording.clone())),
        },
    );
    let mut config = BotsConfig::new(server.addr, 2, 6.0);
    config.cheats = vec![Cheat::FakeLatency];
    let report = bots::run(&config).expect("the bots run");
    server.wait_until_empty();
    server.stop();
    let bytes = recording.0.lock().expect("not poisoned").clone();
    let recording = Recording::read(bytes.as_slice()).expect("a valid recording");
    let replayed = revalidate(&recording, None, |_, _| {}).expect("it replays");
    assert!(!replayed.is_empty());
    assert!(
        replayed.iter().all(|r| !r.changed()),
        "a verdict changed on replay"
    );
    assert_eq!(report.connected, 2, "{report:?}");
    let [fake] = report.cheats.as_slice() else {
        panic!("one cheat class: {report:?}");
    };
    assert_eq!(fake.class, "fake_latency");
    assert!(fake.attempts >= 5, "{report:?}");
    assert_eq!(fake.accepted, 0, "{report:?}");
    assert_eq!(
        fake.outcomes.get("backtrack").copied(),
        Some(fake.attempts),
        "{report:?}"
    );
}

//! `lagcomp proxy` end to end: the real binary between a UDP client and an echo server on
//! 127.0.0.1.

use std::io::{BufRead, BufReader, Read};
use std::net::{SocketAddr, UdpSocket};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// A UDP echo server on a thread; returns how many datagrams it echoed.
fn echo() -> (SocketAddr, Arc<AtomicBool>, JoinHandle<usize>) {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket
        .set_read_timeout(Some(Duration::from_millis(10)))
        .unwrap();
    let addr = socket.local_addr().unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&done);
    let thread = thread::spawn(move || {
        let mut echoed = 0;
        let mut buffer = [0; 2048];
        while !flag.load(Ordering::Acquire) {
            if let Ok((len, from)) = socket.recv_from(&mut buffer) {
                socket.send_to(&buffer[..len], from).unwrap();
                echoed += 1;
            }
        }
        echoed
    });
    (addr, done, thread)
}

/// Starts `lagcomp proxy` with `args` and reads the address it listens on from its first
/// line.
fn start_proxy(args: &[&str]) -> (Child, SocketAddr, BufReader<ChildStdout>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lagcomp"))
        .arg("proxy")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    let addr = first
        .strip_prefix("lagcomp proxy: listening on ")
        .and_then(|rest| rest.split(',').next())
        .and_then(|addr| addr.parse().ok())
        .unwrap_or_else(|| panic!("no address in {first:?}"));
    (child, addr, stdout)
}

/// Sends `count` datagrams through the proxy 5 ms apart and counts the echoes.
fn ping(proxy: SocketAddr, count: u32) -> usize {
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    client
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let reader = client.try_clone().unwrap();
    let counting = thread::spawn(move || {
        let mut buffer = [0; 64];
        let mut got = 0;
        while reader.recv(&mut buffer).is_ok() {
            got += 1;
        }
        got
    });
    for seq in 0..count {
        client.send_to(&seq.to_le_bytes(), proxy).unwrap();
        thread::sleep(Duration::from_millis(5));
    }
    counting.join().unwrap()
}

#[test]
fn packets_flow_through_for_the_duration_and_it_exits_cleanly() {
    let (server, done, echoed) = echo();
    let started = Instant::now();
    let upstream = server.to_string();
    let (mut child, proxy, mut stdout) = start_proxy(&[
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        &upstream,
        "--latency",
        "5",
        "--up-loss",
        "10",
        "--seed",
        "3",
        "--duration",
        "2",
    ]);
    let echoes = ping(proxy, 100);
    let status = child.wait().unwrap();
    let took = started.elapsed();
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    done.store(true, Ordering::Release);
    let echoed = echoed.join().unwrap();

    assert!(status.success(), "{status}\n{rest}\n{stderr}");
    assert!(took < Duration::from_secs(4), "{took:?}");
    // 10 % lost on the way up, none down: Binomial(100, 0.9) is above 75 but for 1 in 10^5.
    assert!((75..100).contains(&echoes), "{echoes} echoes\n{rest}");
    assert_eq!(echoes, echoed, "every echo came back\n{rest}");
    assert!(
        rest.contains("up   (client to server): latency 5.0 ms"),
        "{rest}"
    );
    assert!(
        rest.contains("[   1 s] up: "),
        "a status line each second\n{rest}"
    );
    assert!(
        rest.contains("lagcomp proxy: stopped after 2.0 s"),
        "{rest}"
    );
    assert!(
        rest.contains(&format!(
            "  up  : 100 in (400 bytes), {echoed} out, {} lost",
            100 - echoed
        )),
        "{rest}"
    );
    assert!(rest.contains("sessions: 1 opened"), "{rest}");
    assert!(rest.contains("scheduling: "), "{rest}");
}

#[cfg(unix)]
#[test]
fn sigterm_stops_it_cleanly_with_totals() {
    let (server, done, echoed) = echo();
    let upstream = server.to_string();
    let (mut child, proxy, mut stdout) = start_proxy(&[
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        &upstream,
        "--preset",
        "LAN",
    ]);
    let echoes = ping(proxy, 20);
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    done.store(true, Ordering::Release);
    echoed.join().unwrap();

    assert!(status.success(), "{status}\n{rest}");
    assert_eq!(echoes, 20, "{rest}");
    assert!(rest.contains("  up  : 20 in"), "{rest}");
    assert!(rest.contains("  down: 20 in"), "{rest}");
}

#[test]
fn bad_settings_fail_with_a_message() {
    for (args, says) in [
        (&["--loss", "150"][..], "a percentage must be 0 to 100"),
        (&["--preset", "dial-up"], "unknown preset"),
        (
            &["--preset", "LAN", "--latency", "5"],
            "cannot be used with",
        ),
        (&["--max-datagram", "0"], "1 to 65535 bytes"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_lagcomp"))
            .args([
                "proxy",
                "--listen",
                "127.0.0.1:0",
                "--upstream",
                "127.0.0.1:9",
            ])
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

//! The server's metrics endpoint: scraped during and after a match of bots, its counters
//! agree with the bots' report and the server's own totals; requests that are not a
//! scrape get an HTTP error and leave the endpoint (and the server) working.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use crate::serve_bots::{Running, loopback};
use lagcomp_udp::bots::{self, BotsConfig};
use lagcomp_udp::server::Outputs;

/// Sends `request` to `addr` and reads the whole answer (the endpoint closes after one):
/// (status code, body).
fn http(addr: SocketAddr, request: &[u8]) -> (u16, String) {
    let mut stream =
        TcpStream::connect_timeout(&addr, Duration::from_secs(10)).expect("the endpoint accepts");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("a timeout");
    stream.write_all(request).expect("the request goes");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).expect("an answer");
    let answer = String::from_utf8(answer).expect("UTF-8");
    let (head, body) = answer.split_once("\r\n\r\n").expect("a head and a body");
    let code = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("a status line: {head:?}"));
    (code, body.to_owned())
}

/// The series of a scrape, by name with labels (`lagcomp_verdicts_total{outcome="miss",
/// reason=""}`), each checked to parse.
fn scrape(addr: SocketAddr) -> BTreeMap<String, f64> {
    let (code, body) = http(addr, b"GET /metrics HTTP/1.1\r\nHost: test\r\n\r\n");
    assert_eq!(code, 200, "{body}");
    assert!(body.ends_with("# EOF\n"), "{body}");
    body.lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| {
            let (series, value) = line.rsplit_once(' ').expect("a series and a value");
            let value = value
                .parse()
                .unwrap_or_else(|_| panic!("{line:?}: not a number"));
            (series.to_owned(), value)
        })
        .collect()
}

fn value(series: &BTreeMap<String, f64>, name: &str) -> f64 {
    *series
        .get(name)
        .unwrap_or_else(|| panic!("no {name} in {series:#?}"))
}

/// The verdict counters by their label: the outcome, or a rejection's reason.
fn verdicts(series: &BTreeMap<String, f64>) -> BTreeMap<String, u64> {
    series
        .iter()
        .filter_map(|(name, n)| {
            let labels = name.strip_prefix("lagcomp_verdicts_total{")?;
            let outcome = labels.split('"').nth(1)?;
            let reason = labels.split('"').nth(3)?;
            let label = if reason.is_empty() { outcome } else { reason };
            Some((label.to_owned(), *n as u64))
        })
        .filter(|(_, n)| *n > 0)
        .collect()
}

/// A default server on loopback with its metrics endpoint: (server, endpoint).
fn metered() -> (Running, SocketAddr) {
    let mut config = loopback();
    config.metrics = Some("127.0.0.1:0".parse().expect("an address"));
    let server = Running::start(config, Outputs::default());
    let endpoint = server.metrics.expect("a metrics endpoint");
    (server, endpoint)
}

#[test]
fn a_scrape_agrees_with_the_bots_report_and_the_servers_totals() {
    let (server, endpoint) = metered();

    let before = scrape(endpoint);
    assert_eq!(value(&before, "lagcomp_players"), 0.0);
    assert_eq!(value(&before, "lagcomp_shots_total"), 0.0);
    // Every verdict's label set is there from the start, at zero: 3 outcomes, the
    // rejection reasons and the refusals.
    let zeros = before
        .keys()
        .filter(|k| k.starts_with("lagcomp_verdicts_total{"))
        .count();
    assert_eq!(
        zeros,
        3 + lagcomp_validate::RejectReason::ALL.len() + lagcomp_validate::Refusal::ALL.len()
    );
    assert!(before.contains_key("lagcomp_verdicts_total{outcome=\"refused\",reason=\"dodged\"}"));

    let bots_config = BotsConfig::new(server.addr, 4, 5.0);
    let bots = thread::spawn(move || bots::run(&bots_config).expect("the bots run"));
    // While they play, the gauge shows all four (bounded: they join within seconds).
    let start = Instant::now();
    while value(&scrape(endpoint), "lagcomp_players") != 4.0 {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the players gauge never showed the 4 bots"
        );
        thread::sleep(Duration::from_millis(100));
    }
    let report = bots.join().expect("the bots thread");
    server.wait_until_empty();
    let start = Instant::now();
    let after = loop {
        let after = scrape(endpoint);
        if value(&after, "lagcomp_players") == 0.0 {
            break after;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "players stay");
        thread::sleep(Duration::from_millis(50));
    };
    let summary = server.stop();
    let status = &summary.status;

    assert_eq!(report.connected, 4, "{report:?}");
    let honest = &report.honest;
    assert!(honest.shots_arrived >= 10, "{report:?}");
    // Every shot the bots saw answered was counted, once.
    let shots = value(&after, "lagcomp_shots_total") as u64;
    assert_eq!(
        shots,
        honest.shots_arrived + report.unexpected,
        "{report:?}"
    );
    assert_eq!(shots, status.shots);
    let by_label = verdicts(&after);
    assert_eq!(by_label.values().sum::<u64>(), shots, "{by_label:?}");
    // By outcome, the same as the server's totals, and as the bots' tallies (up to the
    // verdicts of shots a bot had no record of).
    let expected: BTreeMap<String, u64> = status
        .verdicts
        .iter()
        .map(|(label, n)| ((*label).to_owned(), *n))
        .collect();
    assert_eq!(by_label, expected);
    let confirmed = by_label.get("confirmed").copied().unwrap_or(0);
    assert!(
        (honest.confirmed..=honest.confirmed + report.unexpected).contains(&confirmed),
        "{confirmed} confirmed: {report:?}"
    );
    for (reason, n) in &honest.rejections {
        let counted = by_label.get(reason).copied().unwrap_or(0);
        assert!(
            (*n..=*n + report.unexpected).contains(&counted),
            "{reason}: {counted} counted, {n} told: {report:?}"
        );
    }
    assert_eq!(value(&after, "lagcomp_malformed_messages_total"), 0.0);
    // Every tick is in the histogram; a 64 Hz server ran five seconds' worth at least.
    let ticks = value(&after, "lagcomp_ticks_total");
    assert!(ticks >= 5.0 * 64.0, "{ticks} ticks");
    assert_eq!(value(&after, "lagcomp_tick_work_seconds_count"), ticks);
    assert_eq!(
        value(&after, "lagcomp_tick_work_seconds_bucket{le=\"+Inf\"}"),
        ticks
    );
    let work = value(&after, "lagcomp_tick_work_seconds_sum");
    assert!(
        work > 0.0 && work < ticks,
        "{work} s of work in {ticks} ticks"
    );
    // Every datagram of the ticks carried bytes, and the bots' inputs came in.
    let sent = value(&after, "lagcomp_sent_bytes_total");
    let received = value(&after, "lagcomp_received_bytes_total");
    assert!(
        sent >= status.tick_datagrams as f64 * 16.0,
        "{sent} bytes sent"
    );
    assert!(received >= shots as f64 * 16.0, "{received} bytes received");
}

#[test]
fn requests_that_are_not_a_scrape_get_an_error_and_the_endpoint_goes_on() {
    let (server, endpoint) = metered();

    let cases: [(&[u8], u16); 5] = [
        (b"GET / HTTP/1.1\r\n\r\n", 404),
        (
            b"POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc",
            405,
        ),
        (b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\r\n\r\n", 400),
        (b"GET /metrics\r\n\r\n", 400),
        (b"GET /metrics HTTP/1.1\r\nX: \xff\xfe\r\n\r\n", 200),
    ];
    for (request, expected) in cases {
        let (code, body) = http(endpoint, request);
        assert_eq!(
            code,
            expected,
            "{:?}: {body}",
            String::from_utf8_lossy(request)
        );
    }
    // A head past the limit, with no end of line in it.
    let (code, _) = http(endpoint, &[b'A'; 20_000]);
    assert_eq!(code, 400);
    // A peer that connects and leaves without a word, and one that says half a line and
    // stops sending.
    drop(TcpStream::connect(endpoint).expect("connects"));
    let mut half = TcpStream::connect(endpoint).expect("connects");
    half.write_all(b"GET /met").expect("sent");
    half.shutdown(Shutdown::Write).expect("shut");
    let mut rest = Vec::new();
    let _ = half.read_to_end(&mut rest);

    let series = scrape(endpoint);
    assert_eq!(value(&series, "lagcomp_players"), 0.0);
    let summary = server.stop();
    assert_eq!(summary.status.malformed, 0);
}

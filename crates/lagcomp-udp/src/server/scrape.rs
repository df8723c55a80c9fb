//! The metrics' HTTP endpoint: `GET /metrics` answered with the registry in Prometheus'
//! (OpenMetrics) text format, on a thread of its own with a plain TCP listener.
//!
//! One request per connection, one connection at a time: Prometheus scrapes every few
//! seconds, and the server's thread never waits on this one. A request that is not a
//! `GET` of `/metrics` gets 404 or 405, one that is not HTTP (or whose head is longer
//! than [`MAX_REQUEST_HEAD`], or that stalls past [`IO_TIMEOUT`]) gets 400 or is dropped:
//! nothing a peer sends reaches the game server.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use prometheus_client::registry::Registry;

/// The longest request head read (request line and headers), bytes.
pub(crate) const MAX_REQUEST_HEAD: usize = 8 * 1024;

/// How long a connection may take to send its request or read the answer.
pub(crate) const IO_TIMEOUT: Duration = Duration::from_secs(2);

/// The most bytes read and dropped after an answer, and how long to wait for each read.
const MAX_DRAIN: usize = 64 * 1024;
const DRAIN_TIMEOUT: Duration = Duration::from_millis(200);

/// The content type of Prometheus' OpenMetrics text format, which
/// `prometheus_client::encoding::text` writes.
const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The endpoint's thread; stopped and joined when dropped.
#[derive(Debug)]
pub(crate) struct ScrapeEndpoint {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl ScrapeEndpoint {
    /// Listens on `addr` and answers scrapes of `registry` until dropped.
    pub(crate) fn spawn(addr: SocketAddr, registry: Arc<Registry>) -> io::Result<Self> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("lagcomp-metrics".to_owned())
            .spawn(move || serve(&listener, &registry, &flag))?;
        Ok(Self {
            addr,
            stop,
            thread: Some(thread),
        })
    }

    /// The address it listens on.
    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for ScrapeEndpoint {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // Wakes the blocked accept; if the connection fails, the thread is left to end
        // with the process rather than block the server's shutdown.
        let wake = if self.addr.ip().is_unspecified() {
            SocketAddr::new(
                match self.addr {
                    SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                    SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
                },
                self.addr.port(),
            )
        } else {
            self.addr
        };
        if TcpStream::connect_timeout(&wake, IO_TIMEOUT).is_ok()
            && let Some(thread) = self.thread.take()
        {
            let _ = thread.join();
        }
    }
}

/// Accepts connections until `stop` is set.
fn serve(listener: &TcpListener, registry: &Registry, stop: &AtomicBool) {
    let mut body = String::new();
    for stream in listener.incoming() {
        if stop.load(Ordering::Acquire) {
            return;
        }
        // A failed accept (a peer that reset first, no file descriptors left) is that
        // connection's problem only.
        if let Ok(stream) = stream {
            let _ = answer(stream, registry, &mut body);
        }
    }
}

/// What a request asks for.
#[derive(Debug, PartialEq, Eq)]
enum Request {
    Metrics,
    NotFound,
    MethodNotAllowed,
    Bad,
}

/// Reads one request from `stream` and answers it.
fn answer(mut stream: TcpStream, registry: &Registry, body: &mut String) -> io::Result<()> {
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    let mut head = [0_u8; MAX_REQUEST_HEAD];
    let mut len = 0;
    let request = loop {
        if let Some(request) = parse(&head[..len]) {
            break request;
        }
        if len == head.len() {
            break Request::Bad;
        }
        match stream.read(&mut head[len..]) {
            Ok(0) => return Ok(()),
            Ok(n) => len += n,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    };
    let (status, content_type) = match request {
        Request::Metrics => {
            body.clear();
            if prometheus_client::encoding::text::encode(body, registry).is_err() {
                body.clear();
                ("500 Internal Server Error", "text/plain; charset=utf-8")
            } else {
                ("200 OK", CONTENT_TYPE)
            }
        }
        Request::NotFound => {
            body.clear();
            body.push_str("the metrics are at GET /metrics\n");
            ("404 Not Found", "text/plain; charset=utf-8")
        }
        Request::MethodNotAllowed => {
            body.clear();
            body.push_str("only GET\n");
            ("405 Method Not Allowed", "text/plain; charset=utf-8")
        }
        Request::Bad => {
            body.clear();
            body.push_str("not an HTTP request\n");
            ("400 Bad Request", "text/plain; charset=utf-8")
        }
    };
    let allow = if request == Request::MethodNotAllowed {
        "Allow: GET\r\n"
    } else {
        ""
    };
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{allow}\
         Connection: close\r\n\r\n",
        body.len()
    )?;
    stream.write_all(body.as_bytes())?;
    stream.flush()?;
    // The peer's unread bytes (a body, the rest of an oversized head) must not turn the
    // close into a reset that loses the answer: the answer is ended, then what the peer
    // still sends is read and dropped, up to a limit and briefly.
    let _ = stream.shutdown(Shutdown::Write);
    stream.set_read_timeout(Some(DRAIN_TIMEOUT))?;
    let mut drained = 0;
    while drained < MAX_DRAIN {
        match stream.read(&mut head) {
            Ok(0) | Err(_) => break,
            Ok(n) => drained += n,
        }
    }
    Ok(())
}

/// The request in `head`, once its request line (and, for a scrape, the end of its
/// headers) has arrived; `None` while more is needed.
fn parse(head: &[u8]) -> Option<Request> {
    let line_end = head.windows(2).position(|w| w == b"\r\n")?;
    let Ok(line) = std::str::from_utf8(&head[..line_end]) else {
        return Some(Request::Bad);
    };
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Some(Request::Bad);
    };
    if !version.starts_with("HTTP/1.") || method.is_empty() || !target.starts_with('/') {
        return Some(Request::Bad);
    }
    if method != "GET" {
        return Some(Request::MethodNotAllowed);
    }
    // The path without a query string.
    let path = target.split('?').next().unwrap_or(target);
    if path != "/metrics" {
        return Some(Request::NotFound);
    }
    // The whole head read before answering, so the close does not reset it.
    head.windows(4)
        .any(|w| w == b"\r\n\r\n")
        .then_some(Request::Metrics)
}

#[cfg(test)]
mod tests {
    use super::{Request, parse};

    #[test]
    fn requests_are_told_apart() {
        let cases: [(&[u8], Option<Request>); 9] = [
            // A scrape, complete.
            (
                b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
                Some(Request::Metrics),
            ),
            // With a query string.
            (b"GET /metrics?a=b HTTP/1.0\r\n\r\n", Some(Request::Metrics)),
            // Its headers not all in yet.
            (b"GET /metrics HTTP/1.1\r\nHost: x\r\n", None),
            // Its request line not all in yet.
            (b"GET /metr", None),
            (b"GET / HTTP/1.1\r\n\r\n", Some(Request::NotFound)),
            (
                b"POST /metrics HTTP/1.1\r\n",
                Some(Request::MethodNotAllowed),
            ),
            // Not HTTP.
            (b"\x16\x03\x01\x02\x00\r\n", Some(Request::Bad)),
            (b"GET /metrics\r\n", Some(Request::Bad)),
            (b"GET metrics HTTP/1.1\r\n", Some(Request::Bad)),
        ];
        for (head, expected) in cases {
            assert_eq!(parse(head), expected, "{:?}", String::from_utf8_lossy(head));
        }
    }
}

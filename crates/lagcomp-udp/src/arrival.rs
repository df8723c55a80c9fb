//! When each datagram reached the machine, not when the server got round to reading it.
//!
//! A server that stalls (a long tick, a swap, a virtual machine losing its core for a
//! while) reads everything that queued meanwhile in one go: stamped with the read time,
//! a burst of shots sent 16 ms apart all arrive "at once", and the validator judges their
//! spacing and age by that. On Linux the kernel stamps each datagram as it is queued
//! (`SO_TIMESTAMPNS`, read back with `recvmsg(2)`); elsewhere, or if the stamp is missing,
//! the read time stands in.
//!
//! The kernel's stamp is wall-clock time (`CLOCK_REALTIME`); the server's clock is the
//! time since it started (a monotonic `Instant`). [`ArrivalClock`] maps one to the other
//! with a pair of readings taken together, once per read of the socket, and keeps the
//! result between the previous read and this one, so a wall clock stepped by NTP moves no
//! arrival outside the span in which it must have happened.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// One datagram read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Datagram {
    /// Its length (at most the buffer's).
    pub(crate) len: usize,
    /// Its sender.
    pub(crate) from: SocketAddr,
    /// When the kernel queued it, time since the Unix epoch (`None`: no stamp).
    pub(crate) stamp: Option<Duration>,
    /// Longer than the buffer: what was read is cut short.
    pub(crate) truncated: bool,
}

/// Asks the kernel to stamp each datagram `socket` receives. Whether it will (never
/// outside Linux).
pub(crate) fn stamp_arrivals(socket: &UdpSocket) -> bool {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let on: libc::c_int = 1;
        // SAFETY: the descriptor is the socket's own and open for the call; the option's
        // value is a live `c_int` whose size is passed with it.
        let result = unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_TIMESTAMPNS,
                (&raw const on).cast(),
                size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        result == 0
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = socket;
        false
    }
}

/// Reads one datagram into `buffer`, with the kernel's arrival stamp if the socket has
/// them ([`stamp_arrivals`]).
///
/// # Errors
/// The socket's (`WouldBlock` when nothing is waiting on a non-blocking socket).
pub(crate) fn receive(socket: &UdpSocket, buffer: &mut [u8]) -> io::Result<Datagram> {
    #[cfg(target_os = "linux")]
    {
        receive_stamped(socket, buffer)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let (len, from) = socket.recv_from(buffer)?;
        Ok(Datagram {
            len,
            from,
            stamp: None,
            truncated: false,
        })
    }
}

#[cfg(target_os = "linux")]
fn receive_stamped(socket: &UdpSocket, buffer: &mut [u8]) -> io::Result<Datagram> {
    use std::os::fd::AsRawFd;
    // SAFETY: all-zero bytes are a valid `sockaddr_storage` and `msghdr` (plain C
    // structs of integers and null pointers).
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut iov = libc::iovec {
        iov_base: buffer.as_mut_ptr().cast(),
        iov_len: buffer.len(),
    };
    // Room for one SCM_TIMESTAMPNS message (a 16-byte header and a 16-byte timespec),
    // aligned as a `cmsghdr` must be; anything else the kernel adds is cut (MSG_CTRUNC)
    // and ignored.
    let mut control = [0_u64; 8];
    // SAFETY: as above.
    let mut header: libc::msghdr = unsafe { std::mem::zeroed() };
    header.msg_name = (&raw mut storage).cast();
    header.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    header.msg_iov = &raw mut iov;
    header.msg_iovlen = 1;
    header.msg_control = control.as_mut_ptr().cast();
    header.msg_controllen = size_of_val(&control) as _;
    // SAFETY: every pointer in `header` points at a live local (the address storage, the
    // one iovec over `buffer`, the control array) with its true size, and they outlive
    // the call.
    let read = unsafe { libc::recvmsg(socket.as_raw_fd(), &raw mut header, 0) };
    let Ok(len) = usize::try_from(read) else {
        return Err(io::Error::last_os_error());
    };
    let mut stamp = None;
    // SAFETY: `header` is the one recvmsg filled; its control pointer and length describe
    // `control`, which is still alive.
    let mut message = unsafe { libc::CMSG_FIRSTHDR(&raw const header) };
    while !message.is_null() {
        // SAFETY: a non-null pointer from CMSG_FIRSTHDR/CMSG_NXTHDR points at a whole
        // header inside `control`.
        let cmsg = unsafe { &*message };
        if cmsg.cmsg_level == libc::SOL_SOCKET && cmsg.cmsg_type == libc::SCM_TIMESTAMPNS {
            // SAFETY: an SCM_TIMESTAMPNS message carries one `timespec`, which the kernel
            // wrote whole (or it would have cut the message and not listed it); it may
            // be unaligned, hence the unaligned read.
            let time: libc::timespec =
                unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(message).cast()) };
            if let (Ok(secs), Ok(nanos)) = (u64::try_from(time.tv_sec), u32::try_from(time.tv_nsec))
                && nanos < 1_000_000_000
            {
                stamp = Some(Duration::new(secs, nanos));
            }
        }
        // SAFETY: as for CMSG_FIRSTHDR; `message` is one of `header`'s.
        message = unsafe { libc::CMSG_NXTHDR(&raw const header, message) };
    }
    let from = socket_addr(&storage).ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidData, "a datagram from no IP address")
    })?;
    Ok(Datagram {
        len: len.min(buffer.len()),
        from,
        stamp,
        truncated: header.msg_flags & libc::MSG_TRUNC != 0,
    })
}

/// The sender's address as the kernel wrote it.
#[cfg(target_os = "linux")]
fn socket_addr(storage: &libc::sockaddr_storage) -> Option<SocketAddr> {
    use std::net::{Ipv4Addr, Ipv6Addr, SocketAddrV4, SocketAddrV6};
    match libc::c_int::from(storage.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a `sockaddr_in`, which it is
            // large and aligned enough for.
            let v4 = unsafe { &*(&raw const *storage).cast::<libc::sockaddr_in>() };
            Some(SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::from(u32::from_be(v4.sin_addr.s_addr)),
                u16::from_be(v4.sin_port),
            )))
        }
        libc::AF_INET6 => {
            // SAFETY: as above, a `sockaddr_in6`.
            let v6 = unsafe { &*(&raw const *storage).cast::<libc::sockaddr_in6>() };
            Some(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(v6.sin6_addr.s6_addr),
                u16::from_be(v6.sin6_port),
                v6.sin6_flowinfo,
                v6.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// Maps the kernel's arrival stamps to the server's clock (see the
/// [module documentation](self)).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ArrivalClock {
    /// The server's time of this read, seconds since it started.
    now: f64,
    /// Wall-clock time read together with it.
    wall: Duration,
    /// The server's time of the previous read: nothing read now arrived before it
    /// finished.
    floor: f64,
}

impl ArrivalClock {
    /// For a read of the socket at server time `now`, the previous having been at
    /// `previous`: reads the wall clock now.
    pub(crate) fn at(now: f64, previous: f64) -> Self {
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        Self::with_wall(now, previous, wall)
    }

    /// The same with the wall clock's reading given.
    pub(crate) fn with_wall(now: f64, previous: f64, wall: Duration) -> Self {
        Self {
            now,
            wall,
            floor: previous.min(now),
        }
    }

    /// The wall-clock time (since the Unix epoch) of server time `time`.
    pub(crate) fn wall_at(&self, time: f64) -> Duration {
        let ahead = time - self.now;
        if ahead >= 0.0 {
            self.wall + Duration::try_from_secs_f64(ahead).unwrap_or(Duration::MAX - self.wall)
        } else {
            self.wall
                .saturating_sub(Duration::try_from_secs_f64(-ahead).unwrap_or(Duration::MAX))
        }
    }

    /// Server time, seconds, of a datagram stamped `stamp`: the read time without one.
    pub(crate) fn arrival(&self, stamp: Option<Duration>) -> f64 {
        let Some(stamp) = stamp else {
            return self.now;
        };
        // A stamp after the wall clock's reading (the clock stepped back) reads as now.
        let ago = self.wall.saturating_sub(stamp).as_secs_f64();
        (self.now - ago).clamp(self.floor, self.now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_map_to_the_server_clock_within_the_span_since_the_last_read() {
        let wall = Duration::from_secs(1_800_000_000);
        let clock = ArrivalClock::with_wall(12.0, 9.5, wall);
        // 2 s before the read: at 10 s.
        let two_ago = clock.arrival(Some(wall - Duration::from_secs(2)));
        assert!((two_ago - 10.0).abs() < 1e-9, "{two_ago}");
        // No stamp: the read time.
        assert_eq!(clock.arrival(None), 12.0);
        // Before the previous read (a wall clock stepped forward meanwhile): no earlier
        // than it.
        assert_eq!(clock.arrival(Some(wall - Duration::from_secs(60))), 9.5);
        // After the reading (stepped back): now, never later.
        assert_eq!(clock.arrival(Some(wall + Duration::from_secs(5))), 12.0);
    }

    #[test]
    fn the_kernel_stamps_a_datagram_when_it_arrives_not_when_it_is_read() {
        let socket = UdpSocket::bind("127.0.0.1:0").expect("a socket");
        let stamped = stamp_arrivals(&socket);
        // Linux turns receive stamps on for the whole stack a moment after the first
        // socket asks (a deferred static key); until then it stamps at the read.
        std::thread::sleep(Duration::from_millis(100));
        let sender = UdpSocket::bind("127.0.0.1:0").expect("a socket");
        sender
            .send_to(b"early", socket.local_addr().expect("bound"))
            .expect("sent");
        let sent = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("after 1970");
        std::thread::sleep(Duration::from_millis(200));
        socket
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("a timeout");
        let mut buffer = [0_u8; 3];
        let datagram = receive(&socket, &mut buffer).expect("the datagram");
        assert_eq!(datagram.from, sender.local_addr().expect("bound"));
        // Five bytes into three: cut, and said so where the platform says so.
        assert_eq!(datagram.len, 3);
        assert_eq!(&buffer, b"ear");
        if cfg!(target_os = "linux") {
            assert!(stamped && datagram.truncated);
            let stamp = datagram.stamp.expect("a kernel stamp");
            // Queued about when it was sent, not 200 ms later when it was read.
            let gap = sent.as_secs_f64() - stamp.as_secs_f64();
            assert!(
                (-0.05..0.1).contains(&gap),
                "stamped {gap} s before the send"
            );
        }
    }
}

//! `--listen ADDR:PORT`: `/metrics` over HTTP for Prometheus to scrape directly.
//!
//! Requests are parsed by `httparse` (the parser under hyper: a few tens of KB) and answered
//! here with `Connection: close`: a scrape every few seconds needs none of a full HTTP server
//! crate's features (nor its async runtime).
//!
//! No client can delay another: one thread (`rtscope-http`) serves every connection without
//! blocking, from one `poll(2)` loop, so a scrape is answered as soon as its request head has
//! arrived, whatever the other connections do. Each connection has [`HEAD_DEADLINE`] from its
//! accept to send its request head (at most 8 KiB; a client sending a byte a second is cut at
//! the deadline) and [`WRITE_DEADLINE`] to take the answer. At most [`MAX_CONNECTIONS`] are
//! open: beyond it the oldest one still without a complete request is closed for the new one,
//! so a thousand idle connections cannot hold a scrape out. GET and HEAD only.

use crate::metrics::{Exposition, Format};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The largest request head read.
const MAX_HEAD: usize = 8 << 10;
/// How long a client has from its connection to a complete request head.
pub const HEAD_DEADLINE: Duration = Duration::from_secs(5);
/// How long a client has to take the answer.
pub const WRITE_DEADLINE: Duration = Duration::from_secs(5);
/// How long what a client sends after its answer is read and dropped before the close.
const LINGER: Duration = Duration::from_secs(1);
/// The most open connections.
pub const MAX_CONNECTIONS: usize = 256;

/// The shared page: the control thread updates it once per window.
pub type Page = Arc<Mutex<Exposition>>;

/// Binds `addr` (before the run starts, so a bad address or a port in use is a usage error).
pub fn bind(addr: &str) -> io::Result<TcpListener> {
    TcpListener::bind(addr)
}

/// Serves `page` on `listener` on a thread of its own (named `rtscope-http`) for the life of
/// the process. Returns the address it listens on.
pub fn serve(listener: TcpListener, page: Page) -> io::Result<SocketAddr> {
    let addr = listener.local_addr()?;
    listener.set_nonblocking(true)?;
    std::thread::Builder::new()
        .name("rtscope-http".into())
        .spawn(move || {
            let mut conns = Vec::new();
            loop {
                step(&listener, &mut conns, &page);
            }
        })?;
    Ok(addr)
}

/// Where a connection is.
enum Phase {
    /// Reading the request head (what has come so far).
    Reading(Vec<u8>),
    /// Writing the answer (from `at`).
    Writing { out: Vec<u8>, at: usize },
    /// Answered and shut for writing: reading and dropping what the client still sends (at
    /// most `left` bytes), or the kernel would answer it with a reset that can discard the
    /// answer at the client.
    Draining { left: usize },
}

/// One open connection.
struct Conn {
    s: TcpStream,
    phase: Phase,
    /// When it is closed whatever its phase.
    deadline: Instant,
}

/// One round: waits (until the nearest deadline, if any) for a connection or a client
/// to be ready, moves every ready connection on, closes those past their deadline and
/// accepts the new ones.
fn step(listener: &TcpListener, conns: &mut Vec<Conn>, page: &Page) {
    let mut fds = Vec::with_capacity(conns.len() + 1);
    fds.push(libc::pollfd {
        fd: listener.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    });
    for c in conns.iter() {
        let events = match c.phase {
            Phase::Writing { .. } => libc::POLLOUT,
            _ => libc::POLLIN,
        };
        fds.push(libc::pollfd {
            fd: c.s.as_raw_fd(),
            events,
            revents: 0,
        });
    }
    // No connection: wait for one, however long (no wake-up of an idle watch).
    let now = Instant::now();
    let timeout = conns
        .iter()
        .map(|c| c.deadline.saturating_duration_since(now))
        .min()
        .map_or(-1, |d| d.as_millis() as libc::c_int + 1);
    // SAFETY: `fds` is a valid array of `fds.len()` pollfd records for the call's duration.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
    if n < 0 {
        return;
    }
    let now = Instant::now();
    let mut keep = Vec::with_capacity(conns.len());
    for (mut c, fd) in conns.drain(..).zip(fds.iter().skip(1)) {
        let alive = if fd.revents != 0 {
            advance(&mut c, page, now)
        } else {
            true
        };
        if alive && c.deadline > now {
            keep.push(c);
        }
    }
    *conns = keep;
    if fds[0].revents != 0 {
        accept(listener, conns, now);
    }
}

/// Accepts every waiting connection, closing the oldest still-unanswered one for each beyond
/// [`MAX_CONNECTIONS`].
fn accept(listener: &TcpListener, conns: &mut Vec<Conn>, now: Instant) {
    loop {
        match listener.accept() {
            Ok((s, _)) => {
                if s.set_nonblocking(true).is_err() {
                    continue;
                }
                if conns.len() >= MAX_CONNECTIONS {
                    evict(conns);
                }
                conns.push(Conn {
                    s,
                    phase: Phase::Reading(Vec::new()),
                    deadline: now + HEAD_DEADLINE,
                });
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::ConnectionAborted => {}
            // EMFILE and the like: free a descriptor, or back off instead of spinning.
            Err(_) => {
                if conns.is_empty() {
                    std::thread::sleep(Duration::from_millis(100));
                } else {
                    evict(conns);
                }
                return;
            }
        }
    }
}

/// Closes the oldest connection still reading its request (else the oldest of all).
fn evict(conns: &mut Vec<Conn>) {
    let i = conns
        .iter()
        .position(|c| matches!(c.phase, Phase::Reading(_)))
        .unwrap_or(0);
    if i < conns.len() {
        conns.remove(i);
    }
}

/// Moves `c` on as far as it goes without blocking; whether it stays open.
fn advance(c: &mut Conn, page: &Page, now: Instant) -> bool {
    let mut chunk = [0u8; 4096];
    loop {
        match &mut c.phase {
            Phase::Reading(buf) => match c.s.read(&mut chunk) {
                Ok(0) if buf.is_empty() => return false,
                Ok(n) => {
                    let asked = if n == 0 {
                        // The client ended its side before a complete head.
                        Some(Asked::Bad)
                    } else {
                        buf.extend_from_slice(&chunk[..n]);
                        parse(buf).or((buf.len() > MAX_HEAD).then_some(Asked::Bad))
                    };
                    if let Some(a) = asked {
                        c.phase = Phase::Writing {
                            out: respond(a, page),
                            at: 0,
                        };
                        c.deadline = now + WRITE_DEADLINE;
                    }
                }
                Err(e) => return pending(&e),
            },
            Phase::Writing { out, at } => match c.s.write(&out[*at..]) {
                Ok(0) => return false,
                Ok(n) => {
                    *at += n;
                    if *at == out.len() {
                        let _ = c.s.shutdown(std::net::Shutdown::Write);
                        c.phase = Phase::Draining { left: 64 << 10 };
                        c.deadline = now + LINGER;
                    }
                }
                Err(e) => return pending(&e),
            },
            Phase::Draining { left } => match c.s.read(&mut chunk) {
                Ok(0) => return false,
                Ok(n) if n >= *left => return false,
                Ok(n) => *left -= n,
                Err(e) => return pending(&e),
            },
        }
    }
}

/// Whether `e` only says "not now" (the connection stays open).
fn pending(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
    )
}

/// What a request asks for.
#[derive(Debug, PartialEq, Eq)]
enum Asked {
    Metrics { format: Format, head_only: bool },
    Index,
    NotFound,
    BadMethod,
    Bad,
}

fn parse(buf: &[u8]) -> Option<Asked> {
    let mut headers = [httparse::EMPTY_HEADER; 48];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(buf) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => return None,
        Err(_) => return Some(Asked::Bad),
    }
    let head_only = match req.method {
        Some("GET") => false,
        Some("HEAD") => true,
        _ => return Some(Asked::BadMethod),
    };
    let path = req.path.unwrap_or("/");
    let path = path.split('?').next().unwrap_or(path);
    let accept = req
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("accept"))
        .and_then(|h| std::str::from_utf8(h.value).ok());
    Some(match path {
        "/metrics" => Asked::Metrics {
            format: Format::negotiate(accept),
            head_only,
        },
        "/" => Asked::Index,
        _ => Asked::NotFound,
    })
}

/// The whole answer to `asked`.
fn respond(asked: Asked, page: &Page) -> Vec<u8> {
    let (status, ctype, body, head_only) = match asked {
        Asked::Metrics { format, head_only } => {
            let body = page.lock().map(|p| p.render(format)).unwrap_or_default();
            ("200 OK", format.content_type(), body, head_only)
        }
        Asked::Index => (
            "200 OK",
            "text/plain; charset=utf-8",
            "rtscope watch: metrics at /metrics\n".to_string(),
            false,
        ),
        Asked::NotFound => ("404 Not Found", "text/plain", "not found\n".into(), false),
        Asked::BadMethod => (
            "405 Method Not Allowed",
            "text/plain",
            "GET or HEAD\n".into(),
            false,
        ),
        Asked::Bad => (
            "400 Bad Request",
            "text/plain",
            "bad request\n".into(),
            false,
        ),
    };
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if !head_only {
        out.extend_from_slice(body.as_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn get(addr: SocketAddr, req: &str) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(req.as_bytes()).unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn serves_metrics_in_the_format_asked_and_refuses_the_rest() {
        let page: Page = Arc::new(Mutex::new(Exposition::new("s")));
        let addr = serve(bind("127.0.0.1:0").unwrap(), page).unwrap();
        let t = get(addr, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(t.starts_with("HTTP/1.1 200 OK\r\n"), "{t}");
        assert!(
            t.contains("version=0.0.4")
                && t.contains("# TYPE rtscope_watch_latency_seconds histogram"),
            "{t}"
        );
        let om = get(
            addr,
            "GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text; version=1.0.0\r\n\r\n",
        );
        assert!(
            om.contains("application/openmetrics-text") && om.ends_with("# EOF\n"),
            "{om}"
        );
        let head = get(addr, "HEAD /metrics HTTP/1.1\r\n\r\n");
        assert!(
            head.starts_with("HTTP/1.1 200") && head.ends_with("\r\n\r\n"),
            "{head}"
        );
        assert!(get(addr, "GET /nope HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
        assert!(get(addr, "POST /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405"));
        assert!(get(addr, "\x01\x02 garbage\r\n\r\n").starts_with("HTTP/1.1 400"));
        let huge = format!("GET /metrics HTTP/1.1\r\nX: {}", "a".repeat(20_000));
        assert!(get(addr, &huge).starts_with("HTTP/1.1 400"));
    }

    /// More idle connections than the server keeps open and a client that never ends its
    /// head: a scrape is still answered, and the slow client is cut (at its deadline; the
    /// wait here is the test's own bound, not a claim about time).
    #[test]
    fn idle_and_slow_clients_do_not_hold_a_scrape_out() {
        let page: Page = Arc::new(Mutex::new(Exposition::new("s")));
        let addr = serve(bind("127.0.0.1:0").unwrap(), page).unwrap();
        let idle: Vec<TcpStream> = (0..MAX_CONNECTIONS + 50)
            .filter_map(|_| TcpStream::connect(addr).ok())
            .collect();
        assert!(idle.len() > MAX_CONNECTIONS, "{} connected", idle.len());
        let mut slow = TcpStream::connect(addr).unwrap();
        slow.write_all(b"GET /metrics HTTP/1.1\r\nX-Slow: ")
            .unwrap();
        let t = get(addr, "GET /metrics HTTP/1.1\r\n\r\n");
        assert!(
            t.starts_with("HTTP/1.1 200 OK\r\n") && t.contains("rtscope_watch_latency_seconds"),
            "{t}"
        );
        // The slow client goes on, a byte at a time, until the server closes it.
        slow.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let t0 = Instant::now();
        let cut = loop {
            assert!(t0.elapsed() < Duration::from_secs(120), "never cut");
            if slow.write_all(b"a").is_err() {
                break true;
            }
            let mut b = [0u8; 64];
            match slow.read(&mut b) {
                Ok(0) => break true,
                Ok(_) => break false,
                Err(e) if pending(&e) || e.kind() == io::ErrorKind::TimedOut => {}
                Err(_) => break true,
            }
        };
        assert!(cut, "the slow client got an answer instead of being cut");
        drop(idle);
    }
}

//! `--listen ADDR:PORT`: `/metrics` over HTTP for Prometheus to scrape directly.
//!
//! Requests are parsed by `httparse` (the parser under hyper: a few tens of KB) and answered
//! here, one connection at a time with `Connection: close`: a full HTTP server crate would cost
//! more of the board binaries' 4.0 MB budget than everything else of `watch` (scripts/
//! budgets.sh), and a scrape every few seconds needs none of its features. A client gets 5 s
//! to send its request head (at most 8 KiB) and to take the answer, so a stalled or hostile
//! client delays a scrape by at most that and never stops the watch. GET and HEAD only.

use crate::metrics::{Exposition, Format};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The largest request head read.
const MAX_HEAD: usize = 8 << 10;
/// How long a client may take to send its request or take the answer.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(5);

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
    std::thread::Builder::new()
        .name("rtscope-http".into())
        .spawn(move || {
            for conn in listener.incoming() {
                match conn {
                    Ok(s) => {
                        let _ = answer(s, &page);
                    }
                    // EMFILE and the like: back off instead of spinning.
                    Err(_) => std::thread::sleep(Duration::from_millis(100)),
                }
            }
        })?;
    Ok(addr)
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

fn read_head(s: &mut TcpStream) -> io::Result<Asked> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let n = s.read(&mut chunk)?;
        if n == 0 {
            return Ok(Asked::Bad);
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(a) = parse(&buf) {
            return Ok(a);
        }
        if buf.len() > MAX_HEAD {
            return Ok(Asked::Bad);
        }
    }
}

fn answer(mut s: TcpStream, page: &Page) -> io::Result<()> {
    s.set_read_timeout(Some(CLIENT_TIMEOUT))?;
    s.set_write_timeout(Some(CLIENT_TIMEOUT))?;
    let (status, ctype, body, head_only) = match read_head(&mut s)? {
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
    write!(
        s,
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    if !head_only {
        s.write_all(body.as_bytes())?;
    }
    s.flush()?;
    linger(s);
    Ok(())
}

/// Closes the connection after the client has the answer: what it sent beyond the head read
/// (a refused oversized head, say) is read and dropped first (up to 64 KiB, for 1 s), or the
/// kernel would answer it with a reset that can discard the answer at the client.
fn linger(mut s: TcpStream) {
    let _ = s.shutdown(std::net::Shutdown::Write);
    let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
    let mut sink = [0u8; 4096];
    let mut left = 64usize << 10;
    while left > 0 {
        match s.read(&mut sink) {
            Ok(0) | Err(_) => break,
            Ok(n) => left = left.saturating_sub(n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}

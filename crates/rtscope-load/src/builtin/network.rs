//! The network load: `threads` TCP connections over loopback (127.0.0.1); on each, a client
//! thread sends `size`-byte messages and reads each one back from an echo server thread.
//!
//! Reports `round_trips`, `bytes` (sent and received back) and `round_trip_rate` (per second).

use super::{rate, Outcome, Running, Stop, Workers};
use crate::{LoadError, Metric};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::sync::Mutex;

/// Connects `threads` client/server pairs and starts them.
pub fn start(threads: u32, size: u32, stop: &Stop) -> Result<Box<dyn Running>, LoadError> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(|e| LoadError::io("bind a TCP socket on 127.0.0.1", e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| LoadError::io("getsockname", e))?;
    let (mut clients, mut servers) = (Vec::new(), Vec::new());
    for _ in 0..threads {
        let c =
            TcpStream::connect(addr).map_err(|e| LoadError::io(format!("connect {addr}"), e))?;
        let (s, _) = listener
            .accept()
            .map_err(|e| LoadError::io(format!("accept on {addr}"), e))?;
        let _ = c.set_nodelay(true);
        let _ = s.set_nodelay(true);
        clients.push(Mutex::new(Some(c)));
        servers.push(Mutex::new(Some(s)));
    }
    let servers = Workers::spawn(threads, "net-echo", stop, move |i, _| {
        echo(take(&servers[i]));
        Ok(())
    })?;
    let size = size as usize;
    let clients = Workers::spawn(threads, "net-client", stop, move |i, stop| {
        client(take(&clients[i]), size, stop)
    })?;
    Ok(Box::new(Network {
        clients,
        servers,
        size,
    }))
}

fn take(slot: &Mutex<Option<TcpStream>>) -> TcpStream {
    let mut g = slot.lock().unwrap_or_else(|p| p.into_inner());
    g.take().expect("each stream is taken once")
}

/// Echoes until the client closes the connection.
fn echo(mut s: TcpStream) {
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if s.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
        }
    }
}

/// Sends and reads back `size`-byte messages until `stop`; returns the round trips.
fn client(mut s: TcpStream, size: usize, stop: &Stop) -> Result<u64, LoadError> {
    let msg = vec![0xC3u8; size];
    let mut back = vec![0u8; size];
    let mut trips = 0;
    while !stop.is_set() {
        s.write_all(&msg)
            .and_then(|_| s.read_exact(&mut back))
            .map_err(|e| LoadError::io("network load: loopback round trip", e))?;
        trips += 1;
    }
    Ok(trips)
}

struct Network {
    clients: Workers<u64>,
    servers: Workers<()>,
    size: usize,
}

impl Running for Network {
    fn finish(self: Box<Self>) -> Outcome {
        let (trips, error, took) = self.clients.join();
        let _ = self.servers.join(); // the clients' streams are closed: the servers end
        let trips = trips.iter().sum::<u64>() as f64;
        Outcome {
            metrics: vec![
                Metric::new("round_trips", trips, "round trips"),
                Metric::new("bytes", trips * 2.0 * self.size as f64, "bytes"),
                Metric::new("round_trip_rate", rate(trips, took), "round trips/s"),
            ],
            error,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echoes_over_loopback_until_stopped() {
        let stop = Stop::new();
        let load = start(2, 256, &stop).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(200));
        stop.set();
        let out = load.finish();
        assert!(out.error.is_none(), "{:?}", out.error);
        assert!(out.metrics[0].value > 0.0);
        assert_eq!(out.metrics[1].value, out.metrics[0].value * 512.0);
    }
}

//! An in-memory [`Gpio`] (rtscope-respond's GPIO hardware trait) for tests, never shipped:
//! lines joined by wires, edge events timestamped on CLOCK_MONOTONIC when an output changes
//! (plus an optional wire delay), a bounded kernel-like event buffer that drops the oldest
//! event when full (the sequence numbers still count it), and lines that can be marked busy or
//! missing.

use rtscope_core::Nanos;
use rtscope_respond::gpio::{
    Edge, EdgeEvent, Gpio, GpioError, InputLine, InputOptions, LineId, LineSel, OutputLine,
};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

#[derive(Default)]
struct Line {
    level: bool,
    /// Index of the input request this line belongs to.
    request: Option<usize>,
    line_seqno: u32,
    busy: Option<String>,
}

struct Req {
    queue: VecDeque<EdgeEvent>,
    capacity: usize,
    seqno: u32,
    options: InputOptions,
}

#[derive(Default)]
struct Board {
    lines: HashMap<u32, Line>,
    wires: Vec<(u32, u32)>,
    requests: Vec<Req>,
    delay: Nanos,
    writes: u64,
}

/// A simulated chip of `lines` lines; clones share the board.
#[derive(Clone)]
pub struct MockGpio {
    board: Arc<(Mutex<Board>, Condvar)>,
    size: u32,
}

impl MockGpio {
    /// A chip with offsets `0..lines`.
    pub fn new(lines: u32) -> Self {
        let mut b = Board::default();
        for i in 0..lines {
            b.lines.insert(i, Line::default());
        }
        MockGpio {
            board: Arc::new((Mutex::new(b), Condvar::new())),
            size: lines,
        }
    }

    /// Wires output `from` to input `to`.
    pub fn wire(&self, from: u32, to: u32) -> &Self {
        self.lock().wires.push((from, to));
        self
    }

    /// Delays every wire by `d` (the edge's timestamp is the write time plus `d`).
    pub fn set_delay(&self, d: Nanos) {
        self.lock().delay = d;
    }

    /// Marks a line as held by `consumer`.
    pub fn set_busy(&self, line: u32, consumer: &str) {
        if let Some(l) = self.lock().lines.get_mut(&line) {
            l.busy = Some(consumer.into());
        }
    }

    /// Drives line `line` from outside (a signal generator).
    pub fn drive(&self, line: u32, level: bool) {
        let (m, cv) = &*self.board;
        let mut b = m.lock().unwrap_or_else(|p| p.into_inner());
        change(&mut b, line, level);
        cv.notify_all();
    }

    /// The level of a line.
    pub fn level(&self, line: u32) -> bool {
        self.lock().lines.get(&line).is_some_and(|l| l.level)
    }

    /// Writes to outputs so far.
    pub fn writes(&self) -> u64 {
        self.lock().writes
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Board> {
        self.board.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn offset(&self, id: &LineId) -> Result<u32, GpioError> {
        let listing = || {
            (0..self.size)
                .map(|i| format!("\tline {i:>3}: unnamed unused input\n"))
                .collect::<String>()
        };
        match &id.line {
            LineSel::Offset(n) if *n < self.size => {
                if let Some(c) = self.lock().lines.get(n).and_then(|l| l.busy.clone()) {
                    return Err(GpioError::Busy {
                        line: id.to_string(),
                        consumer: c,
                        lines: listing(),
                    });
                }
                Ok(*n)
            }
            _ => Err(GpioError::NoLine {
                line: id.to_string(),
                lines: listing(),
            }),
        }
    }
}

/// Sets a line's level; on a change, the wired inputs (and the line itself) get an edge event.
fn change(b: &mut Board, line: u32, level: bool) {
    let now = rtscope_engine::sys::now(libc::CLOCK_MONOTONIC) + b.delay;
    let mut targets = vec![line];
    targets.extend(b.wires.iter().filter(|(f, _)| *f == line).map(|(_, t)| *t));
    for t in targets {
        let Some(l) = b.lines.get_mut(&t) else {
            continue;
        };
        if l.level == level {
            continue;
        }
        l.level = level;
        let edge = if level { Edge::Rising } else { Edge::Falling };
        let Some(ri) = l.request else { continue };
        let Some(r) = b.requests.get_mut(ri) else {
            continue;
        };
        if !r.options.edges.includes(edge) {
            continue;
        }
        let l = b.lines.get_mut(&t).expect("line exists");
        l.line_seqno += 1;
        r.seqno += 1;
        if r.queue.len() >= r.capacity {
            r.queue.pop_front();
        }
        r.queue.push_back(EdgeEvent {
            offset: t,
            edge,
            timestamp: now,
            seqno: r.seqno,
            line_seqno: l.line_seqno,
        });
    }
}

/// A mock input request.
pub struct MockInput {
    gpio: MockGpio,
    request: usize,
    offsets: Vec<u32>,
}

/// A mock output line.
pub struct MockOutput {
    gpio: MockGpio,
    line: u32,
}

impl Gpio for MockGpio {
    type Input = MockInput;
    type Output = MockOutput;

    fn request_input(
        &mut self,
        lines: &[LineId],
        options: &InputOptions,
    ) -> Result<MockInput, GpioError> {
        let offsets = lines
            .iter()
            .map(|l| self.offset(l))
            .collect::<Result<Vec<_>, _>>()?;
        let mut b = self.lock();
        let request = b.requests.len();
        b.requests.push(Req {
            queue: VecDeque::new(),
            capacity: options.kernel_buffer.unwrap_or(16).max(1) as usize * offsets.len(),
            seqno: 0,
            options: *options,
        });
        for o in &offsets {
            let l = b.lines.get_mut(o).expect("offset checked");
            l.request = Some(request);
            l.busy = Some("rtscope-respond".into());
        }
        drop(b);
        Ok(MockInput {
            gpio: self.clone(),
            request,
            offsets,
        })
    }

    fn request_output(&mut self, line: &LineId, level: bool) -> Result<MockOutput, GpioError> {
        let line = self.offset(line)?;
        self.lock()
            .lines
            .get_mut(&line)
            .expect("offset checked")
            .busy = Some("rtscope".into());
        self.drive(line, level);
        Ok(MockOutput {
            gpio: self.clone(),
            line,
        })
    }
}

impl InputLine for MockInput {
    fn wait(&mut self, timeout: Duration) -> Result<bool, GpioError> {
        let (m, cv) = &*self.gpio.board;
        let b = m.lock().unwrap_or_else(|p| p.into_inner());
        let (b, _) = cv
            .wait_timeout_while(b, timeout, |b| b.requests[self.request].queue.is_empty())
            .unwrap_or_else(|p| p.into_inner());
        Ok(!b.requests[self.request].queue.is_empty())
    }

    fn read(&mut self) -> Result<EdgeEvent, GpioError> {
        self.gpio.lock().requests[self.request]
            .queue
            .pop_front()
            .ok_or_else(|| GpioError::Io("no event to read".into()))
    }

    fn offsets(&self) -> Vec<u32> {
        self.offsets.clone()
    }
}

impl OutputLine for MockOutput {
    fn set(&mut self, level: bool) -> Result<(), GpioError> {
        self.gpio.lock().writes += 1;
        self.gpio.drive(self.line, level);
        Ok(())
    }
}

//! Parser of one ring-buffer page as read from `per_cpu/cpuN/trace_pipe_raw`.
//!
//! A page is a header (a u64 timestamp, a commit word holding the data size in its low 27 bits
//! and the "events were lost" flags in bits 31 and 30) followed by events. Each event starts with
//! a little-endian u32: `type_len` in its low 5 bits and `time_delta` (ns since the previous
//! event) in its high 27 bits.
//!
//! | type_len | meaning | size |
//! |---|---|---|
//! | 1..=28 | data of `type_len × 4` bytes | 4 + type_len × 4 |
//! | 0 | data whose length (+4) is in the next u32 | 4 + that word |
//! | 29 | padding: with delta 0 the rest of the page; else a discarded event, length in the next u32 | 4 + that word |
//! | 30 | time extend: delta = next u32 << 27 + time_delta | 8 |
//! | 31 | absolute time stamp: next u32 << 27 + time_delta, top 5 bits from the page timestamp | 8 |
//!
//! Pure code: no I/O, never panics on any input (fuzzed by `fuzz/fuzz_targets/trace_page.rs`).

use crate::format::PageLayout;
use crate::TraceError;

/// Largest page accepted (bytes): sub-buffers are at most 1 MiB.
pub const MAX_PAGE: usize = 1 << 20;
const COMMIT_MASK: u64 = (1 << 27) - 1;
const MISSED_EVENTS: u64 = 1 << 31;
const MISSED_STORED: u64 = 1 << 30;
const TS_MSB: u64 = 0xf8 << 56;
const TYPE_PADDING: u32 = 29;
const TYPE_TIME_EXTEND: u32 = 30;
const TYPE_TIME_STAMP: u32 = 31;

/// One data record of a page: its absolute time and its bytes (common fields first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    /// Timestamp on the instance's trace clock (ns; CLOCK_MONOTONIC with `trace_clock=mono`).
    pub ts: u64,
    /// The record's bytes.
    pub data: &'a [u8],
}

/// A parsed page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<'a> {
    /// Timestamp of the page (ns), the base of the first delta.
    pub timestamp: u64,
    /// The kernel dropped events before this page (overwrite mode lapped the reader).
    pub missed_events: bool,
    /// How many were dropped, when the kernel stored the count.
    pub missed_count: Option<u64>,
    /// The data records, in order.
    pub records: Vec<Record<'a>>,
}

fn read_u32(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

fn read_u64(b: &[u8], at: usize) -> Option<u64> {
    let s = b.get(at..at.checked_add(8)?)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Some(u64::from_le_bytes(a))
}

/// Parses one page (little-endian kernels).
pub fn parse_page<'a>(page: &'a [u8], layout: &PageLayout) -> Result<Page<'a>, TraceError> {
    let trunc = |what: &str| TraceError::Page(format!("page too short for its {what}"));
    if page.len() > MAX_PAGE {
        return Err(TraceError::Page(format!("page of {} bytes", page.len())));
    }
    let timestamp = read_u64(page, layout.timestamp_offset).ok_or_else(|| trunc("timestamp"))?;
    let commit = match layout.commit_size {
        4 => read_u32(page, layout.commit_offset).map(u64::from),
        _ => read_u64(page, layout.commit_offset),
    }
    .ok_or_else(|| trunc("commit"))?;
    let size = (commit & COMMIT_MASK) as usize;
    let start = layout.data_offset;
    let end = start
        .checked_add(size)
        .filter(|&e| e <= page.len())
        .ok_or_else(|| {
            TraceError::Page(format!(
                "commit size {size} beyond a page of {}",
                page.len()
            ))
        })?;
    let missed_events = commit & MISSED_EVENTS != 0;
    let missed_count = (commit & MISSED_STORED != 0)
        .then(|| match layout.commit_size {
            4 => read_u32(page, end).map(u64::from),
            _ => read_u64(page, end),
        })
        .flatten();
    let records = parse_events(&page[start..end], timestamp)?;
    Ok(Page {
        timestamp,
        missed_events,
        missed_count,
        records,
    })
}

/// Walks the events of a page's data area.
fn parse_events(data: &[u8], page_ts: u64) -> Result<Vec<Record<'_>>, TraceError> {
    let bad = |at: usize, what: &str| TraceError::Page(format!("{what} at data offset {at}"));
    let mut records = Vec::new();
    let mut ts = page_ts;
    let mut at = 0usize;
    while at + 4 <= data.len() {
        let header = read_u32(data, at).ok_or_else(|| bad(at, "truncated header"))?;
        let type_len = header & 0x1f;
        let delta = u64::from(header >> 5);
        let next_word = || read_u32(data, at + 4).ok_or_else(|| bad(at, "truncated event"));
        let len = match type_len {
            TYPE_PADDING if delta == 0 => break,
            TYPE_PADDING => {
                ts = ts.wrapping_add(delta);
                4 + next_word()? as usize
            }
            TYPE_TIME_EXTEND => {
                ts = ts.wrapping_add((u64::from(next_word()?) << 27) + delta);
                8
            }
            TYPE_TIME_STAMP => {
                ts = ((u64::from(next_word()?) << 27) | delta) | (page_ts & TS_MSB);
                8
            }
            0 => {
                let n = next_word()? as usize;
                if n == 0 && delta == 0 {
                    break; // zero fill: nothing was written here
                }
                if n < 4 {
                    return Err(bad(at, "data length below 4"));
                }
                ts = ts.wrapping_add(delta);
                let body = data
                    .get(at + 8..at + 4 + n)
                    .ok_or_else(|| bad(at, "event past the data"))?;
                records.push(Record { ts, data: body });
                4 + n
            }
            n => {
                ts = ts.wrapping_add(delta);
                let len = 4 + n as usize * 4;
                let body = data
                    .get(at + 4..at + len)
                    .ok_or_else(|| bad(at, "event past the data"))?;
                records.push(Record { ts, data: body });
                len
            }
        };
        // Every event is at least 4 bytes, so the walk always advances and ends.
        at = at
            .checked_add(len.max(4))
            .ok_or_else(|| bad(at, "length overflow"))?;
    }
    Ok(records)
}

/// Builds pages for tests and fuzz seeds.
pub mod build {
    /// Writes events into one page of `size` bytes (64-bit layout).
    pub struct PageBuilder {
        page: Vec<u8>,
        len: usize,
    }

    impl PageBuilder {
        /// An empty page with this timestamp.
        pub fn new(timestamp: u64, size: usize) -> PageBuilder {
            let mut page = vec![0u8; size.max(16)];
            page[..8].copy_from_slice(&timestamp.to_le_bytes());
            PageBuilder { page, len: 0 }
        }

        fn put(&mut self, bytes: &[u8]) {
            let at = 16 + self.len;
            self.page[at..at + bytes.len()].copy_from_slice(bytes);
            self.len += bytes.len();
        }

        fn header(type_len: u32, delta: u32) -> [u8; 4] {
            ((delta << 5) | type_len).to_le_bytes()
        }

        /// A data record `delta` ns after the previous event (padded to 4 bytes; deltas
        /// of 2^27 or more get a time-extend first).
        pub fn event(&mut self, delta: u64, body: &[u8]) -> &mut Self {
            let delta = if delta >= 1 << 27 {
                self.time_extend(delta);
                0
            } else {
                delta as u32
            };
            let padded = body.len().div_ceil(4) * 4;
            let mut b = body.to_vec();
            b.resize(padded, 0);
            if padded <= 28 * 4 && padded > 0 {
                self.put(&Self::header(padded as u32 / 4, delta));
            } else {
                self.put(&Self::header(0, delta));
                self.put(&(padded as u32 + 4).to_le_bytes());
            }
            self.put(&b);
            self
        }

        /// A time-extend event carrying `delta` ns.
        pub fn time_extend(&mut self, delta: u64) -> &mut Self {
            self.put(&Self::header(30, (delta & ((1 << 27) - 1)) as u32));
            self.put(&((delta >> 27) as u32).to_le_bytes());
            self
        }

        /// An absolute time stamp.
        pub fn time_stamp(&mut self, ts: u64) -> &mut Self {
            self.put(&Self::header(31, (ts & ((1 << 27) - 1)) as u32));
            self.put(&(((ts >> 27) & 0xffff_ffff) as u32).to_le_bytes());
            self
        }

        /// A discarded event of `len` bytes (padding with a delta).
        pub fn discarded(&mut self, delta: u32, len: usize) -> &mut Self {
            self.put(&Self::header(29, delta.max(1)));
            self.put(&(len as u32 + 4).to_le_bytes());
            self.put(&vec![0u8; len]);
            self
        }

        /// Sets the "missed events" flag.
        pub fn missed(&mut self) -> &mut Self {
            self.page[11] |= 0x80;
            self
        }

        /// The finished page: the commit word holds the data size; the rest is zero padding.
        pub fn finish(&mut self) -> Vec<u8> {
            let flags = u64::from_le_bytes(self.page[8..16].try_into().unwrap_or([0; 8]));
            let commit = (flags & !((1 << 27) - 1)) | self.len as u64;
            self.page[8..16].copy_from_slice(&commit.to_le_bytes());
            self.page.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::build::PageBuilder;
    use super::*;

    fn parse(page: &[u8]) -> Page<'_> {
        parse_page(page, &PageLayout::default()).unwrap()
    }

    #[test]
    fn deltas_accumulate_from_the_page_timestamp() {
        let page = PageBuilder::new(1_000, 4096)
            .event(5, &[1; 8])
            .event(7, &[2; 12])
            .finish();
        let p = parse(&page);
        let ts: Vec<u64> = p.records.iter().map(|r| r.ts).collect();
        assert_eq!(ts, [1_005, 1_012]);
        assert_eq!(p.records[1].data, &[2; 12]);
        assert!(!p.missed_events);
    }

    #[test]
    fn time_extend_carries_large_deltas() {
        let big = 3 * (1u64 << 27) + 17;
        let page = PageBuilder::new(10, 4096)
            .event(big, &[0; 4])
            .event(1, &[0; 4])
            .finish();
        let p = parse(&page);
        assert_eq!(p.records[0].ts, 10 + big);
        assert_eq!(p.records[1].ts, 11 + big);
    }

    #[test]
    fn absolute_time_stamps_reset_the_clock() {
        let page = PageBuilder::new(50, 4096)
            .event(1, &[0; 4])
            .time_stamp(123_456_789_012)
            .event(8, &[0; 4])
            .finish();
        let p = parse(&page);
        assert_eq!(p.records[1].ts, 123_456_789_020);
    }

    #[test]
    fn padding_ends_the_page_and_discarded_events_are_skipped() {
        let mut b = PageBuilder::new(0, 4096);
        b.event(1, &[9; 4]).discarded(2, 20).event(3, &[8; 4]);
        let page = b.finish();
        let p = parse(&page);
        assert_eq!(p.records.len(), 2);
        assert_eq!((p.records[1].ts, p.records[1].data), (6, &[8u8; 4][..]));
        // A commit size that covers trailing zero fill stops cleanly.
        let mut padded = page.clone();
        padded[8] = padded[8].wrapping_add(8);
        assert_eq!(parse(&padded).records.len(), 2);
    }

    #[test]
    fn long_records_use_the_length_word() {
        let body = [7u8; 200];
        let page = PageBuilder::new(0, 4096).event(2, &body).finish();
        assert_eq!(parse(&page).records[0].data, &body[..]);
    }

    #[test]
    fn lost_events_are_flagged() {
        let page = PageBuilder::new(0, 4096)
            .event(1, &[0; 4])
            .missed()
            .finish();
        assert!(parse(&page).missed_events);
    }

    #[test]
    fn malformed_pages_are_errors_not_panics() {
        assert!(parse_page(&[0; 10], &PageLayout::default()).is_err());
        let mut page = PageBuilder::new(0, 64).event(1, &[0; 8]).finish();
        page[8] = 200; // commit beyond the page
        assert!(parse_page(&page, &PageLayout::default()).is_err());
        let mut page = PageBuilder::new(0, 64).event(1, &[0; 8]).finish();
        page[16] = 0; // type_len 0 with a length word that points past the data
        page[20] = 250;
        assert!(parse_page(&page, &PageLayout::default()).is_err());
        let mut rng = rtscope_core::rng::XorShift64::new(7);
        for _ in 0..2000 {
            let mut page = vec![0u8; 128];
            for b in &mut page {
                *b = rng.next_u64() as u8;
            }
            page[8..16].copy_from_slice(&(rng.next_u64() % 120).to_le_bytes());
            let _ = parse_page(&page, &PageLayout::default());
        }
    }
}

//! The flight recorder's end, bounded whatever the machine's load: the reader thread is told
//! to stop and given [`READER_STOP`] to close its files (it reads no more once told: what it
//! would read then is read by nobody), then the instance is removed (retried briefly while the
//! kernel releases the files). A reader that does not stop in time, or an instance the kernel
//! will not remove, is left to the reaper, which removes it when rtscope exits, and said on
//! stderr with the instance's path: the end of a run never waits on the trace. Before (issue
//! 67), the reader drained every CPU's buffer once more after it was told to stop (grown up to
//! 32 MiB each beside a load) and the recorder waited for it without a bound: noise's end after
//! a SIGTERM in its analysis took more than 50 s under load.

use super::FlightRecorder;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

impl Drop for FlightRecorder {
    /// Bounded (this module): the reader stopped within [`READER_STOP`], the
    /// instance removed with a few retries; else left to the reaper and said on stderr.
    fn drop(&mut self) {
        let dir = &self.instance.dir;
        if !stop_reader(self.reader.take(), &self.stop, READER_STOP) {
            // Its files still open, the kernel would refuse the removal: the reaper, kept
            // running until rtscope exits, removes the instance and restores the settings.
            let why = format!(
                "the trace reader did not stop within {} s",
                READER_STOP.as_secs()
            );
            rtscope_common::error::warn(&left_behind(dir, &why));
            std::mem::forget(self.reaper.take());
            return;
        }
        if let Err(e) = self.instance.remove() {
            // The reaper, ended with the recorder, tries once more (for a bounded time).
            rtscope_common::error::warn(&left_behind(dir, &e.to_string()));
        }
        crate::timerlat::restore(&self.saved);
    }
}

/// The longest the reader thread gets to see the stop flag and end.
pub(super) const READER_STOP: Duration = Duration::from_secs(2);

/// How often the reader's end is looked for.
const LOOK_EVERY: Duration = Duration::from_millis(5);

/// Sets `stop` and waits up to `bound` for `reader` to end: true when it ended (joined), false
/// when it still runs (its handle is dropped: the thread ends by itself, or with the process).
pub(super) fn stop_reader(
    reader: Option<JoinHandle<()>>,
    stop: &AtomicBool,
    bound: Duration,
) -> bool {
    stop.store(true, Ordering::Relaxed);
    let Some(r) = reader else {
        return true;
    };
    let until = Instant::now() + bound;
    while !r.is_finished() {
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(LOOK_EVERY);
    }
    let _ = r.join();
    true
}

/// The line said on stderr when the instance `dir` is left behind, and why.
pub(super) fn left_behind(dir: &Path, why: &str) -> String {
    format!(
        "explain: the trace instance {} was left behind ({}); the reaper removes it when rtscope exits",
        dir.display().to_string().escape_debug(),
        why.escape_debug()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A reader that ends once told is joined; one that does not is given up after the bound
    /// (a bound of zero: no time is asserted), and told to stop all the same.
    #[test]
    fn a_reader_is_joined_when_it_stops_and_given_up_when_it_does_not() {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let obeys = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        assert!(stop_reader(Some(obeys), &stop, Duration::from_secs(600)));
        let (release, hold) = std::sync::mpsc::channel::<()>();
        let stuck = std::thread::spawn(move || {
            let _ = hold.recv();
        });
        let stop = AtomicBool::new(false);
        assert!(!stop_reader(Some(stuck), &stop, Duration::ZERO));
        assert!(stop.load(Ordering::Relaxed));
        drop(release);
        assert!(stop_reader(None, &stop, Duration::ZERO));
    }

    #[test]
    fn the_left_behind_line_names_the_instance_and_the_reaper() {
        let line = left_behind(
            Path::new("/sys/kernel/tracing/instances/rtscope-7-0"),
            "EBUSY",
        );
        assert!(
            line.contains("instances/rtscope-7-0 was left behind (EBUSY)"),
            "{line}"
        );
        assert!(line.contains("the reaper removes it"), "{line}");
        assert!(left_behind(Path::new("/t/a\u{1b}b"), "x").contains("a\\u{1b}b"));
    }
}

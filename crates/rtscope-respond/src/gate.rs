//! The start gate of a measurement's threads: each thread reports its set-up done and waits;
//! the controller opens the gate once every started thread is ready — or opens it at once (with
//! the failure flag set) when a thread could not even be created, so nobody waits for ever.

use std::sync::{Condvar, Mutex};

#[derive(Default)]
struct State {
    ready: usize,
    open: bool,
}

/// A one-shot start gate.
#[derive(Default)]
pub(crate) struct Gate {
    state: Mutex<State>,
    cv: Condvar,
}

impl Gate {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Called by a thread after its set-up: reports ready and waits for the gate to open.
    pub(crate) fn arrive(&self) {
        let mut s = self.lock();
        s.ready += 1;
        self.cv.notify_all();
        while !s.open {
            s = self.cv.wait(s).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Called by the controller: waits until `threads` threads arrived, then opens the gate.
    pub(crate) fn open_when_ready(&self, threads: usize) {
        let mut s = self.lock();
        while s.ready < threads {
            s = self.cv.wait(s).unwrap_or_else(|p| p.into_inner());
        }
        s.open = true;
        self.cv.notify_all();
    }

    /// Opens the gate now (a thread could not be created; the others must not wait for it).
    pub(crate) fn open_now(&self) {
        self.lock().open = true;
        self.cv.notify_all();
    }
}

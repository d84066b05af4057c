//! The SysV semaphore set of the `sysvsem` mechanism, and its keeper: a forked child that
//! creates the set and removes it (`IPC_RMID`) when rtscope ends, however it ends — SIGKILL
//! included. A SysV set outlives its processes, and unlike a shared memory segment it cannot be
//! marked for removal while in use (`IPC_RMID` on a semaphore set removes it at once and fails
//! every waiter with EIDRM), so a process of its own has to be left to remove it.
//!
//! The keeper is forked before the set exists and creates it itself, so no moment is left in
//! which rtscope holds a set nobody would remove. It holds the read end of a pipe whose only
//! write end is rtscope's (close-on-exec: no program rtscope starts inherits it); when rtscope
//! closes it — dropping the [`SemSet`], or dying — the keeper's `read` returns end of file, it
//! removes the set and exits. It leaves the session (`setsid`) and ignores the terminal's
//! signals, so a Ctrl-C reaches rtscope only. It is an [`rtscope_common::keeper::Keeper`], as the
//! trace crate's reaper of its tracefs instance is.
//!
//! The set's key is `0x52PPPPPn`: the pid of the rtscope process shifted left by two, `n`
//! 0..3 for up to four sets at once (a fifth uses `IPC_PRIVATE`), so the sets of a process can be
//! found in `/proc/sysvipc/sem` (the end-to-end test of a SIGKILLed run looks them up).

use rtscope_common::keeper::{pipe, Keeper};
use std::cell::Cell;
use std::io;
use std::os::fd::AsRawFd;

/// Semaphores per set: 0 carries the events, 1 the ready token of the handshake pacing.
pub(crate) const NSEMS: libc::c_int = 2;

/// The keys rtscope process `pid` tries for its sets, in order.
pub fn keys_of(pid: u32) -> [libc::key_t; 4] {
    let base = 0x5200_0000 | ((pid as libc::key_t & 0x3f_ffff) << 2);
    [base, base | 1, base | 2, base | 3]
}

/// A SysV semaphore set removed by its keeper when this is dropped or the process dies.
#[derive(Debug)]
pub(crate) struct SemSet {
    id: libc::c_int,
    /// The set's one remover: dropping it makes it remove the set.
    _keeper: Keeper,
}

impl SemSet {
    /// Forks the keeper, which creates a set of [`NSEMS`] semaphores (all 0, mode 0600).
    pub(crate) fn create() -> io::Result<SemSet> {
        let keys = keys_of(std::process::id());
        let (result_rx, result_tx) = pipe()?;
        // The set's id in the keeper, from its creation to its removal.
        let id = Cell::new(-1);
        // SAFETY: both closures make only system calls on memory prepared before the fork
        // (`keys`, `id`, stack buffers).
        let keeper = unsafe {
            Keeper::spawn(
                c"rtscope-semkeep",
                Some(result_tx.as_raw_fd()),
                || id.set(create_and_answer(&keys)),
                || {
                    if id.get() >= 0 {
                        libc::semctl(id.get(), 0, libc::IPC_RMID);
                    }
                },
            )
        }?;
        drop(result_tx);
        let mut answer = [0u8; 4];
        // SAFETY: reads at most 4 bytes into a live buffer from our pipe.
        let n = unsafe { libc::read(result_rx.as_raw_fd(), answer.as_mut_ptr().cast(), 4) };
        let value = i32::from_ne_bytes(answer);
        match n {
            4 if value >= 0 => Ok(SemSet {
                id: value,
                _keeper: keeper,
            }),
            4 => Err(io::Error::from_raw_os_error(-value)),
            _ => Err(io::Error::other(
                "the semaphore keeper ended without an answer",
            )),
        }
    }

    /// The set's identifier.
    pub(crate) fn id(&self) -> libc::c_int {
        self.id
    }
}

/// In the keeper: creates the set under the first free key of `keys` (else `IPC_PRIVATE`),
/// writes its id (or `-errno`) to fd 1 and closes it. Returns the id, or -1.
fn create_and_answer(keys: &[libc::key_t; 4]) -> libc::c_int {
    // SAFETY: only system calls on memory allocated before the fork (`keys`, stack values).
    unsafe {
        let flags = 0o600 | libc::IPC_CREAT | libc::IPC_EXCL;
        let mut id = -1;
        for &key in keys.iter().chain(&[libc::IPC_PRIVATE]) {
            id = libc::semget(key, NSEMS, flags);
            if id >= 0 || *libc::__errno_location() != libc::EEXIST {
                break;
            }
        }
        let answer = if id >= 0 {
            id
        } else {
            -*libc::__errno_location()
        };
        libc::write(1, answer.to_ne_bytes().as_ptr().cast(), 4);
        libc::close(1);
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the set `id` exists, from the kernel's table (the `libc` crate has no
    /// `semid_ds` for musl, so no IPC_STAT here).
    fn exists(id: libc::c_int) -> bool {
        let table = std::fs::read_to_string("/proc/sysvipc/sem").unwrap();
        let id = id.to_string();
        table
            .lines()
            .skip(1)
            .any(|l| l.split_whitespace().nth(1) == Some(id.as_str()))
    }

    #[test]
    fn the_keeper_creates_the_set_under_the_process_key_and_removes_it_on_drop() {
        let set = SemSet::create().unwrap();
        let id = set.id();
        assert!(exists(id));
        let table = std::fs::read_to_string("/proc/sysvipc/sem").unwrap();
        let keys = keys_of(std::process::id());
        let row = table
            .lines()
            .skip(1)
            .find(|l| l.split_whitespace().nth(1) == Some(&id.to_string()))
            .unwrap_or_else(|| panic!("set {id} not in {table}"));
        let key: libc::key_t = row.split_whitespace().next().unwrap().parse().unwrap();
        // Other tests of this process may hold sets at the same time: any of the process's keys
        // (or a private one, when all four are taken).
        assert!(keys.contains(&key) || key == 0, "{row}");
        drop(set);
        assert!(!exists(id), "the keeper removed set {id}");
    }

    #[test]
    fn the_keys_of_a_process_are_its_own() {
        let (a, b) = (keys_of(4_194_303), keys_of(4_194_302));
        assert!(a.iter().all(|k| !b.contains(k) && *k > 0));
        assert_eq!(keys_of(1)[0], 0x5200_0004);
    }
}

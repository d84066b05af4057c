//! The seven IPC mechanisms, each as a [`Transport`] with a non-blocking (where the mechanism has
//! a bounded queue) `send` and a blocking `recv`. This is the one module of the IPC side that
//! calls libc (with [`super::sysv`], the semaphore set's keeper).
//!
//! Between the sender's clock read and its system call, and between the receiver's wait
//! returning and its clock read, there is no other system call and no clock read: `send` makes
//! exactly one system call per event (the signal mechanism's process id is read once, at open,
//! not per event: `getpid` is a real system call in glibc), `recv` one per wake-up.

use super::sysv::SemSet;
use super::IpcKind;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering::*};

/// What one message of the data-carrying mechanisms holds: sequence number and sender time (ns).
pub(crate) const MSG_BYTES: usize = 16;

/// The result of a send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sent {
    /// Delivered to the kernel.
    Ok,
    /// The mechanism's queue is full (EAGAIN, ERANGE): the event is lost at the sender.
    Full,
}

/// What a receive returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Got {
    /// `n` events (eventfd and futex coalesce events that arrive before the receiver reads).
    Count(u64),
    /// One message with its sequence number and sender time (ns).
    Message { seq: u64, sent: u64 },
}

/// An open IPC channel shared by the sender and the receiver thread.
pub(crate) enum Transport {
    Eventfd(OwnedFd),
    Pipe {
        rx: OwnedFd,
        tx: OwnedFd,
    },
    Futex(AtomicU32),
    Mqueue {
        rx: libc::mqd_t,
        tx: libc::mqd_t,
    },
    Signal {
        pid: libc::pid_t,
        receiver_tid: AtomicI32,
        signal: libc::c_int,
    },
    SysvSem {
        set: std::sync::Arc<SemSet>,
        num: libc::c_ushort,
    },
    UnixDgram {
        rx: OwnedFd,
        tx: OwnedFd,
    },
}

fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

fn owned(fd: libc::c_int) -> io::Result<OwnedFd> {
    check(fd)?;
    // SAFETY: `fd` is a descriptor just returned by the kernel and owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The real-time signal the signal mechanism uses (the engine uses SIGRTMIN+4); the handshake's
/// ready token back to the sender uses the next one.
pub(crate) fn ipc_signal() -> libc::c_int {
    libc::SIGRTMIN() + 5
}

fn signal_set(signal: libc::c_int) -> libc::sigset_t {
    // SAFETY: sigset_t is plain data, initialised by sigemptyset right away.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid sigset_t and `signal` a valid signal number.
    unsafe {
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signal);
    }
    set
}

/// How many messages a POSIX queue holds: 10 (the kernel's default `msg_max`) or less.
fn mq_depth() -> libc::c_long {
    std::fs::read_to_string("/proc/sys/fs/mqueue/msg_max")
        .ok()
        .and_then(|t| t.trim().parse::<libc::c_long>().ok())
        .map_or(10, |m| m.clamp(1, 10))
}

fn open_mqueue() -> io::Result<Transport> {
    use std::sync::atomic::AtomicU64;
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = format!(
        "/rtscope-respond-{}-{}\0",
        std::process::id(),
        NEXT.fetch_add(1, Relaxed)
    );
    // SAFETY: mq_attr is plain data.
    let mut attr: libc::mq_attr = unsafe { std::mem::zeroed() };
    attr.mq_maxmsg = mq_depth();
    attr.mq_msgsize = MSG_BYTES as libc::c_long;
    let cname = name.as_ptr().cast::<libc::c_char>();
    // SAFETY: `cname` is NUL-terminated; `attr` is a valid mq_attr; mode 0600.
    let rx = unsafe {
        libc::mq_open(
            cname,
            libc::O_RDONLY | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC,
            0o600 as libc::mode_t,
            &attr as *const libc::mq_attr,
        )
    };
    check(rx)?;
    // SAFETY: the queue was just created under this name.
    let tx = unsafe { libc::mq_open(cname, libc::O_WRONLY | libc::O_NONBLOCK | libc::O_CLOEXEC) };
    let err = io::Error::last_os_error();
    // SAFETY: the name is ours; the open descriptors keep the queue alive.
    unsafe { libc::mq_unlink(cname) };
    if tx < 0 {
        // SAFETY: `rx` is an open queue descriptor.
        unsafe { libc::mq_close(rx) };
        return Err(err);
    }
    Ok(Transport::Mqueue { rx, tx })
}

fn signal_transport(signal: libc::c_int) -> Transport {
    Transport::Signal {
        // SAFETY: getpid has no arguments and cannot fail.
        pid: unsafe { libc::getpid() },
        receiver_tid: AtomicI32::new(0),
        signal,
    }
}

/// Sets `signal` to SIG_IGN, once per process: a ready token that arrives after the sender
/// thread ended (its id perhaps taken by another thread of rtscope) is then discarded instead
/// of ending the process. A thread that blocks the signal still receives it (the kernel queues
/// blocked signals whatever their action), as the sender does in `sigwaitinfo`.
fn ignore_unblocked(signal: libc::c_int) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: SIG_IGN for one real-time signal of rtscope's own; no handler code.
        unsafe { libc::signal(signal, libc::SIG_IGN) };
    });
}

impl Transport {
    /// Opens a channel of `kind` and, with `back`, a second one of the same kind for the ready
    /// token the receiver hands back to the sender (the handshake pacing): another queue, pipe,
    /// eventfd, futex word or socket pair, the next real-time signal, or semaphore 1 of the same
    /// SysV set.
    pub(crate) fn open_pair(
        kind: IpcKind,
        back: bool,
    ) -> io::Result<(Transport, Option<Transport>)> {
        if kind == IpcKind::SysvSem {
            let set = std::sync::Arc::new(SemSet::create()?);
            let sem = |num| Transport::SysvSem {
                set: set.clone(),
                num,
            };
            return Ok((sem(0), back.then(|| sem(1))));
        }
        let forward = Transport::open(kind)?;
        let back = match (back, kind) {
            (false, _) => None,
            (true, IpcKind::Signal) => {
                ignore_unblocked(ipc_signal() + 1);
                Some(signal_transport(ipc_signal() + 1))
            }
            (true, _) => Some(Transport::open(kind)?),
        };
        Ok((forward, back))
    }

    /// Opens a channel of `kind`.
    fn open(kind: IpcKind) -> io::Result<Transport> {
        Ok(match kind {
            IpcKind::Eventfd => {
                // SAFETY: eventfd takes plain integers.
                let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
                Transport::Eventfd(owned(fd)?)
            }
            IpcKind::Pipe => {
                let mut fds = [0; 2];
                // SAFETY: `fds` has room for the two descriptors.
                check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
                let (rx, tx) = (owned(fds[0])?, owned(fds[1])?);
                set_nonblocking(&tx)?;
                Transport::Pipe { rx, tx }
            }
            IpcKind::Futex => Transport::Futex(AtomicU32::new(0)),
            IpcKind::Mqueue => open_mqueue()?,
            IpcKind::Signal => signal_transport(ipc_signal()),
            IpcKind::SysvSem => {
                let set = std::sync::Arc::new(SemSet::create()?);
                Transport::SysvSem { set, num: 0 }
            }
            IpcKind::UnixDgram => {
                let mut fds = [0; 2];
                let ty = libc::SOCK_DGRAM | libc::SOCK_CLOEXEC;
                // SAFETY: `fds` has room for the two descriptors.
                check(unsafe { libc::socketpair(libc::AF_UNIX, ty, 0, fds.as_mut_ptr()) })?;
                Transport::UnixDgram {
                    rx: owned(fds[0])?,
                    tx: owned(fds[1])?,
                }
            }
        })
    }

    /// Whether the mechanism carries a sequence number in each message (a gap in them is a lost
    /// event); the others deliver counts.
    pub(crate) fn carries_messages(&self) -> bool {
        matches!(
            self,
            Transport::Pipe { .. } | Transport::Mqueue { .. } | Transport::UnixDgram { .. }
        )
    }

    /// Receiver set-up, on the receiver thread before its loop: the signal mechanism blocks its
    /// signal in this thread and publishes the thread id.
    pub(crate) fn prepare_receiver(&self) {
        if let Transport::Signal {
            receiver_tid,
            signal,
            ..
        } = self
        {
            let set = signal_set(*signal);
            // SAFETY: `set` is valid; SIG_BLOCK only adds the signal to this thread's mask.
            unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
            receiver_tid.store(rtscope_engine::sys::gettid(), Release);
        }
    }

    /// Sends one event with one system call. The data-carrying mechanisms send `seq` and `sent`
    /// (the sender time, ns).
    #[inline(always)]
    pub(crate) fn send(&self, seq: u64, sent: u64) -> io::Result<Sent> {
        let mut msg = [0u8; MSG_BYTES];
        msg[..8].copy_from_slice(&seq.to_ne_bytes());
        msg[8..].copy_from_slice(&sent.to_ne_bytes());
        let rc: isize = match self {
            Transport::Eventfd(fd) => {
                let one = 1u64.to_ne_bytes();
                // SAFETY: writes 8 bytes from a live buffer to an eventfd.
                unsafe { libc::write(fd.as_raw_fd(), one.as_ptr().cast(), 8) }
            }
            Transport::Pipe { tx, .. } => {
                // SAFETY: writes MSG_BYTES bytes from a live buffer.
                unsafe { libc::write(tx.as_raw_fd(), msg.as_ptr().cast(), MSG_BYTES) }
            }
            Transport::Futex(word) => {
                word.fetch_add(1, Release);
                // SAFETY: FUTEX_WAKE on the address of a live AtomicU32; no other pointers.
                unsafe {
                    libc::syscall(
                        libc::SYS_futex,
                        word.as_ptr(),
                        libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                        1,
                    ) as isize
                }
            }
            Transport::Mqueue { tx, .. } => {
                // SAFETY: sends MSG_BYTES bytes from a live buffer on an open queue.
                unsafe { libc::mq_send(*tx, msg.as_ptr().cast(), MSG_BYTES, 0) as isize }
            }
            Transport::Signal {
                pid,
                receiver_tid,
                signal,
            } => {
                let tid = receiver_tid.load(Acquire);
                // SAFETY: tgkill to a thread of this process; plain integers.
                unsafe { libc::syscall(libc::SYS_tgkill, *pid, tid, *signal) as isize }
            }
            Transport::SysvSem { set, num } => {
                let mut op = libc::sembuf {
                    sem_num: *num,
                    sem_op: 1,
                    sem_flg: libc::IPC_NOWAIT as libc::c_short,
                };
                // SAFETY: one valid sembuf on our semaphore set.
                unsafe { libc::semop(set.id(), &mut op, 1) as isize }
            }
            Transport::UnixDgram { tx, .. } => {
                // SAFETY: sends MSG_BYTES bytes from a live buffer on a connected socket.
                unsafe {
                    libc::send(
                        tx.as_raw_fd(),
                        msg.as_ptr().cast(),
                        MSG_BYTES,
                        libc::MSG_DONTWAIT,
                    )
                }
            }
        };
        if rc >= 0 {
            return Ok(Sent::Ok);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::ERANGE) => Ok(Sent::Full),
            _ => Err(e),
        }
    }

    /// Waits for the next event(s). `seen` is the receiver's futex count (ignored by the others).
    /// Returns `Ok(None)` when interrupted (EINTR) and to be called again.
    #[inline(always)]
    pub(crate) fn recv(&self, seen: &mut u32) -> io::Result<Option<Got>> {
        let mut msg = [0u8; MSG_BYTES];
        let message = |n: isize, msg: &[u8; MSG_BYTES]| {
            if n as usize != MSG_BYTES {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "short message"));
            }
            let seq = u64::from_ne_bytes(msg[..8].try_into().unwrap_or_default());
            let sent = u64::from_ne_bytes(msg[8..].try_into().unwrap_or_default());
            Ok(Some(Got::Message { seq, sent }))
        };
        let rc: isize = match self {
            Transport::Eventfd(fd) => {
                let mut v = [0u8; 8];
                // SAFETY: reads 8 bytes into a live buffer from an eventfd.
                let n = unsafe { libc::read(fd.as_raw_fd(), v.as_mut_ptr().cast(), 8) };
                if n == 8 {
                    return Ok(Some(Got::Count(u64::from_ne_bytes(v))));
                }
                n
            }
            Transport::Pipe { rx, .. } => {
                // SAFETY: reads up to MSG_BYTES bytes into a live buffer.
                let n = unsafe { libc::read(rx.as_raw_fd(), msg.as_mut_ptr().cast(), MSG_BYTES) };
                if n > 0 {
                    return message(n, &msg);
                }
                n
            }
            Transport::Futex(word) => {
                let now = word.load(Acquire);
                if now != *seen {
                    let n = now.wrapping_sub(*seen);
                    *seen = now;
                    return Ok(Some(Got::Count(u64::from(n))));
                }
                // SAFETY: FUTEX_WAIT on a live AtomicU32 with a null timeout.
                let rc = unsafe {
                    libc::syscall(
                        libc::SYS_futex,
                        word.as_ptr(),
                        libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                        *seen,
                        std::ptr::null::<libc::timespec>(),
                    )
                };
                let now = word.load(Acquire);
                if now != *seen {
                    let n = now.wrapping_sub(*seen);
                    *seen = now;
                    return Ok(Some(Got::Count(u64::from(n))));
                }
                if rc == 0 {
                    return Ok(None);
                }
                rc as isize
            }
            Transport::Mqueue { rx, .. } => {
                let mut prio = 0;
                // SAFETY: receives into a buffer of the queue's message size.
                let n =
                    unsafe { libc::mq_receive(*rx, msg.as_mut_ptr().cast(), MSG_BYTES, &mut prio) };
                if n > 0 {
                    return message(n, &msg);
                }
                n
            }
            Transport::Signal { signal, .. } => {
                let set = signal_set(*signal);
                // SAFETY: `set` is valid; a null siginfo pointer is allowed.
                let n = unsafe { libc::sigwaitinfo(&set, std::ptr::null_mut()) };
                if n == *signal {
                    return Ok(Some(Got::Count(1)));
                }
                n as isize
            }
            Transport::SysvSem { set, num } => {
                let mut op = libc::sembuf {
                    sem_num: *num,
                    sem_op: -1,
                    sem_flg: 0,
                };
                // SAFETY: one valid sembuf on our semaphore set.
                let n = unsafe { libc::semop(set.id(), &mut op, 1) };
                if n == 0 {
                    return Ok(Some(Got::Count(1)));
                }
                n as isize
            }
            Transport::UnixDgram { rx, .. } => {
                // SAFETY: receives up to MSG_BYTES bytes into a live buffer.
                let n =
                    unsafe { libc::recv(rx.as_raw_fd(), msg.as_mut_ptr().cast(), MSG_BYTES, 0) };
                if n > 0 {
                    return message(n, &msg);
                }
                n
            }
        };
        let e = if rc == 0 {
            io::Error::new(io::ErrorKind::UnexpectedEof, "channel closed")
        } else {
            io::Error::last_os_error()
        };
        match e.raw_os_error() {
            Some(libc::EINTR) | Some(libc::EAGAIN) => Ok(None),
            _ => Err(e),
        }
    }
}

fn set_nonblocking(fd: &OwnedFd) -> io::Result<()> {
    // SAFETY: F_GETFL/F_SETFL on an open descriptor.
    let flags = check(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) })?;
    // SAFETY: as above.
    check(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) })?;
    Ok(())
}

impl Drop for Transport {
    fn drop(&mut self) {
        // The semaphore set is removed by its keeper when the last transport using it is gone.
        if let Transport::Mqueue { rx, tx } = self {
            // SAFETY: both are open queue descriptors owned by this transport.
            unsafe {
                libc::mq_close(*rx);
                libc::mq_close(*tx);
            }
        }
    }
}

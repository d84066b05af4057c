//! The reader thread of the flight recorder: each traced CPU's `trace_pipe_raw` read, pinned
//! to the housekeeping CPUs at FIFO priority, into the shared per-CPU windows, the buffers grown
//! when they overflow, and the raw pages dumped where asked (`--explain-dump`).

use super::rings::Rings;
use super::*;

fn pin_to(cpus: &[usize]) {
    if cpus.is_empty() {
        return;
    }
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET and sched_setaffinity only touch
    // that local set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// Puts the calling thread at SCHED_FIFO `priority` (with `SCHED_RESET_ON_FORK`); a failure
/// leaves it as it was.
fn fifo(priority: i32) {
    // SAFETY: sched_param is plain data; zeroing covers musl's extra fields.
    let mut param: libc::sched_param = unsafe { std::mem::zeroed() };
    param.sched_priority = priority;
    // SAFETY: pthread_self() is the calling thread; `param` is a valid sched_param.
    unsafe {
        libc::pthread_setschedparam(
            libc::pthread_self(),
            libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK,
            &param,
        )
    };
}

/// Each traced CPU's `trace_pipe_raw`, open non-blocking.
pub(super) fn pipes(instance: &Instance) -> Result<Vec<(usize, File)>, TraceError> {
    let mut files = Vec::new();
    for &cpu in &instance.cpus {
        let p = instance.pipe_raw(cpu);
        let f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&p)
            .map_err(|source| TraceError::Io { path: p, source })?;
        files.push((cpu, f));
    }
    Ok(files)
}

/// The reader thread (`rtscope-trace`): [`read_loop`] over `files` until `stop`.
pub(super) fn spawn_reader(
    source: Source,
    schema: Schema,
    cfg: RecorderConfig,
    inst: Arc<Instance>,
    shared: Arc<Mutex<Shared>>,
    stop: Arc<AtomicBool>,
    bpf: Option<Arc<BpfStacks>>,
) -> Result<JoinHandle<()>, TraceError> {
    let path = inst.dir.clone();
    std::thread::Builder::new()
        .name("rtscope-trace".into())
        .spawn(move || {
            let reading = Reading {
                inst: &inst,
                schema: &schema,
                shared: &shared,
                stop: &stop,
                cfg: &cfg,
                bpf: bpf.as_deref(),
            };
            read_loop(source, reading)
        })
        .map_err(|source| TraceError::Io { path, source })
}

/// What the reader thread reads with and into.
#[derive(Clone, Copy)]
struct Reading<'a> {
    inst: &'a Instance,
    schema: &'a Schema,
    shared: &'a Mutex<Shared>,
    stop: &'a AtomicBool,
    cfg: &'a RecorderConfig,
    bpf: Option<&'a BpfStacks>,
}

/// Where the reader takes the events from.
pub(super) enum Source {
    /// Each traced CPU's `trace_pipe_raw`, open non-blocking.
    Pipes(Vec<(usize, File)>),
    /// The eBPF flight recorder's rings ([`super::rings`]).
    Rings(Rings),
}

/// Reads the `source` every poll until told to stop.
fn read_loop(mut source: Source, r: Reading) {
    let Reading {
        inst,
        shared,
        stop,
        cfg,
        bpf,
        ..
    } = r;
    pin_to(&cfg.housekeeping);
    if let Some(p) = cfg.reader_fifo {
        fifo(p);
    }
    let mut scratch = Scratch {
        buf: vec![0u8; inst.page_size],
        dump: Dump::from_env(),
    };
    let mut sizes: HashMap<usize, usize> = HashMap::new();
    // Once told to stop it reads no more: nobody reads what it would (teardown).
    while !stop.load(Ordering::Relaxed) {
        if let Some(b) = bpf {
            scratch.dump.stacks(&b.drain());
        }
        let files = match &mut source {
            Source::Pipes(files) => files,
            Source::Rings(rings) => {
                let dump = &mut scratch.dump;
                rings.drain(shared, stop, cfg, &mut |cpu, ts, lost, events| {
                    dump.page(cpu, ts, lost, events)
                });
                std::thread::sleep(cfg.poll);
                continue;
            }
        };
        for (cpu, f) in files {
            if drain_cpu(*cpu, f, &mut scratch, &r) {
                let kb = sizes.entry(*cpu).or_insert(cfg.instance.buffer_kb.max(64));
                if let Some(grown) = grow(inst, *cpu, *kb, cfg.max_buffer_kb) {
                    *kb = grown;
                    let mut s = lock(shared);
                    s.buffer_kb = s.buffer_kb.max(grown);
                }
            }
        }
        std::thread::sleep(cfg.poll);
    }
}

/// Doubles the buffer of `cpu` after it lost events (up to `max_kb`): the buffer must hold
/// what the CPU writes between two reads, and the spikes of a loaded CPU come with the most
/// events. Growing keeps what the buffer holds. The new size, or `None` when at the limit or
/// the kernel refused.
fn grow(inst: &Instance, cpu: usize, kb: usize, max_kb: usize) -> Option<usize> {
    let want = (kb * 2).min(max_kb);
    if want <= kb {
        return None;
    }
    let file = inst.dir.join(format!("per_cpu/cpu{cpu}/buffer_size_kb"));
    crate::tracefs::write_file(&file, &want.to_string())
        .ok()
        .map(|()| want)
}

/// Every page and decoded event the reader takes, as text, to the file named by the
/// environment variable `RTSCOPE_TRACE_DUMP` (a diagnostic: what rtscope's own trace held, to
/// set beside an independent instance's; tests/guest/README.md). Written by the reader thread.
struct Dump(Option<std::io::BufWriter<File>>);

impl Dump {
    fn from_env() -> Dump {
        let file = std::env::var_os("RTSCOPE_TRACE_DUMP").and_then(|p| File::create(p).ok());
        Dump(file.map(std::io::BufWriter::new))
    }

    /// The eBPF programs' stacks, as the trace's own stack entries are written, with their
    /// chain and lateness after them (`ebpf=switch lat=1600000`).
    fn stacks(&mut self, stacks: &[rtscope_bpf::StackRecord]) {
        use std::io::Write;
        let Some(w) = &mut self.0 else { return };
        for r in stacks {
            let kind = Kind::KernelStack {
                frames: r.frames.clone(),
            };
            let (chain, lat) = (r.chain.name(), r.lat);
            let _ = writeln!(
                w,
                "{} {} {} {kind:?} ebpf={chain} lat={lat}",
                r.cpu, r.ts, r.pid
            );
        }
        let _ = w.flush();
    }

    fn page(&mut self, cpu: usize, timestamp: u64, missed: bool, events: &[Event]) {
        use std::io::Write;
        let Some(w) = &mut self.0 else { return };
        let _ = writeln!(w, "page cpu={cpu} ts={timestamp} missed={missed}");
        for e in events {
            let _ = writeln!(w, "{cpu} {} {} {:?}", e.ts, e.pid, e.kind);
        }
        let _ = w.flush();
    }
}

/// The reader thread's own: its page buffer and the dump.
struct Scratch {
    buf: Vec<u8>,
    dump: Dump,
}

/// Reads what `cpu`'s buffer holds, until the reader is told to stop; true when the kernel
/// reported lost events.
fn drain_cpu(cpu: usize, f: &mut File, scratch: &mut Scratch, r: &Reading) -> bool {
    let Reading {
        inst,
        schema,
        shared,
        stop,
        cfg,
        ..
    } = *r;
    let Scratch { buf, dump } = scratch;
    // At most a buffer's worth per poll, so one busy CPU cannot starve the others.
    let max_pages = (cfg.instance.buffer_kb * 1024 / buf.len().max(1)).max(16);
    let mut lost = false;
    for _ in 0..max_pages {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let n = match f.read(buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => break, // EAGAIN: empty
        };
        let mut s = lock(shared);
        s.pages += 1;
        let Ok(page) = parse_page(&buf[..n], &inst.layout) else {
            s.bad_pages += 1;
            continue;
        };
        let events: Vec<Event> = page
            .records
            .iter()
            .filter_map(|r| schema.decode(r))
            .collect();
        dump.page(cpu, page.timestamp, page.missed_events, &events);
        let c = s.cpus.entry(cpu).or_default();
        lost |= c.take_page(
            page.timestamp,
            page.missed_events,
            events,
            cfg.instance.timerlat,
        );
        c.trim(cfg.window_ns, cfg.max_events);
        c.keep.shrink_to(cfg.kept_events / inst.cpus.len().max(1));
    }
    lost
}

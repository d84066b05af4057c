//! Where in the kernel, for time in interrupt context: the handler a spike's CPU ran the
//! longest over the spike, by the function the kernel's own events name
//! ([`crate::tracefs::HANDLER_EVENTS`]: an IPI's function call, a tasklet, a `timer_list`
//! callback).
//!
//! A hard interrupt handler runs with interrupts off, so no stack the timer interrupt or the
//! switch takes can find it; a tasklet has returned before the measured thread runs again.
//! Their events carry the function, so the time is named without a stack. Pure code on
//! decoded events, plus the names ([`Names`]), read from `/proc/kallsyms` once per new
//! function on the analysing thread.

use crate::decode::{Event, Kind};
use crate::model::{Handler, HandlerKind, Spike};
use crate::stacks::Kallsyms;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A handler's time over a spike, its function an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HandlerTime {
    /// What kind of handler.
    pub kind: HandlerKind,
    /// Its function's address.
    pub func: u64,
    /// Its time between the deadline and the wake-up, nested handlers' apart (ns).
    pub ns: u64,
    /// How many of its runs overlapped that interval.
    pub times: u32,
}

/// An open handler: what it is and whether a run of it was counted.
struct Open {
    kind: HandlerKind,
    func: u64,
    counted: bool,
}

/// Handlers nest a few deep at most (a tasklet, an IPI in it); deeper means lost exits.
const MAX_DEPTH: usize = 8;

/// The handler that ran the longest between `spike`'s deadline and its wake-up, from the
/// events of its CPU in time order; time goes to the innermost open handler. None when no
/// handler ran then. A switch closes every handler: a switch is in task context, and where a
/// tasklet runs in a thread (PREEMPT_RT) the time it is switched out is not its own.
pub fn longest(events: &[Event], spike: &Spike) -> Option<HandlerTime> {
    let (from, to) = (spike.deadline_ns, spike.wakeup_ns);
    let mut open: Vec<Open> = Vec::new();
    let mut totals: Vec<HandlerTime> = Vec::new();
    let mut charge = |open: &mut Vec<Open>, a: u64, b: u64| {
        let (a, b) = (a.max(from), b.min(to));
        let Some(o) = open.last_mut().filter(|_| b > a) else {
            return;
        };
        let i = match totals
            .iter()
            .position(|t| t.kind == o.kind && t.func == o.func)
        {
            Some(i) => i,
            None => {
                totals.push(HandlerTime {
                    kind: o.kind,
                    func: o.func,
                    ns: 0,
                    times: 0,
                });
                totals.len() - 1
            }
        };
        totals[i].ns += b - a;
        totals[i].times += u32::from(!o.counted);
        o.counted = true;
    };
    let mut prev: Option<u64> = None;
    for e in events.iter().take_while(|e| e.ts <= to) {
        if let Some(p) = prev {
            charge(&mut open, p, e.ts);
        }
        match e.kind {
            Kind::HandlerEntry { kind, func } => {
                if open.len() >= MAX_DEPTH {
                    open.remove(0);
                }
                open.push(Open {
                    kind,
                    func,
                    counted: false,
                });
            }
            Kind::HandlerExit { kind } => {
                if let Some(i) = open.iter().rposition(|o| o.kind == kind) {
                    open.truncate(i);
                }
            }
            Kind::Switch { .. } => open.clear(),
            _ => {}
        }
        prev = Some(prev.map_or(e.ts, |p| p.max(e.ts)));
    }
    if let Some(p) = prev {
        charge(&mut open, p, to);
    }
    totals
        .into_iter()
        .max_by(|a, b| a.ns.cmp(&b.ns).then(b.func.cmp(&a.func)))
}

/// The kinds of handler whose entry and exit events are among `events` (the names of the
/// events an instance enabled).
pub fn kinds<'a>(events: impl IntoIterator<Item = &'a str> + Clone) -> Vec<HandlerKind> {
    let has = |name: &str| events.clone().into_iter().any(|e| e == name);
    [
        (HandlerKind::Csd, "csd_function"),
        (HandlerKind::Tasklet, "tasklet"),
        (HandlerKind::Timer, "timer_expire"),
    ]
    .into_iter()
    .filter(|(_, stem)| has(&format!("{stem}_entry")) && has(&format!("{stem}_exit")))
    .map(|(k, _)| k)
    .collect()
}

/// The tier line's note on handlers: which kinds are named by function, and what this kernel
/// lacks (`handlers named: tasklet, timer_list; no IPI function call events on this kernel
/// (…): their time is named by vector or softirq only`: Debian 12's 6.1).
pub fn note(kinds: &[HandlerKind]) -> String {
    let all = [HandlerKind::Csd, HandlerKind::Tasklet, HandlerKind::Timer];
    let named: Vec<&str> = kinds.iter().map(|k| k.context()).collect();
    let missing: Vec<&str> = all
        .iter()
        .filter(|k| !kinds.contains(k))
        .map(|k| k.context())
        .collect();
    let named = if named.is_empty() {
        "none".to_string()
    } else {
        named.join(", ")
    };
    if missing.is_empty() {
        return format!("handlers named: {named}");
    }
    format!(
        "handlers named: {named}; no {} events on this kernel (IPI function calls: Linux 6.3): \
         their time is named by vector or softirq only",
        missing.join(" or ")
    )
}

/// What a recorder names spikes' handlers with: the kinds its instance traces, their names.
#[derive(Debug)]
pub struct Handlers {
    kinds: Vec<HandlerKind>,
    names: Names,
}

impl Handlers {
    /// For the events an instance enabled (their formats).
    pub fn new(formats: &[crate::format::EventFormat]) -> Handlers {
        Handlers {
            kinds: kinds(formats.iter().map(|f| f.name.as_str())),
            names: Names::default(),
        }
    }

    /// The [`longest`] handler over `spike`, named (with `symbols` when the run read them).
    pub fn of(&self, events: &[Event], spike: &Spike, symbols: &Kallsyms) -> Option<Handler> {
        longest(events, spike).map(|h| self.names.name(h, symbols))
    }

    /// The tier line's note ([`note`]).
    pub fn note(&self) -> String {
        note(&self.kinds)
    }
}

/// Names handler functions: with the stacks' symbols where the run read them, else from
/// `/proc/kallsyms`, parsed when a function not seen before needs it and kept: read again only
/// for a new function once the table is [`REREAD`] old (a module loaded since is named), never
/// per spike. Parsing the file for every new function (122,153 lines on this VM) held the
/// control thread for seconds under load, a stop signal waiting behind it (issue 67).
#[derive(Debug)]
pub struct Names {
    path: PathBuf,
    known: Mutex<HashMap<u64, String>>,
    table: Mutex<Option<(Instant, Option<Kallsyms>)>>,
}

/// The most functions kept by name; past it each new one is named from the table again.
const MAX_NAMES: usize = 1024;

/// How old the kept table may be before a function not seen before reads the file again.
pub const REREAD: Duration = Duration::from_secs(10);

impl Default for Names {
    fn default() -> Names {
        Names::from_file(PathBuf::from("/proc/kallsyms"))
    }
}

impl Names {
    /// Names read from `path` (a `/proc/kallsyms` text).
    pub fn from_file(path: PathBuf) -> Names {
        Names {
            path,
            known: Mutex::new(HashMap::new()),
            table: Mutex::new(None),
        }
    }

    /// `h` with its function named: from `symbols` when it has any, else from the file;
    /// `0x…` where neither can name it (no symbols, `kptr_restrict`).
    pub fn name(&self, h: HandlerTime, symbols: &Kallsyms) -> Handler {
        let function = if symbols.is_empty() {
            self.read(h.func)
        } else {
            symbols.function(h.func)
        };
        Handler {
            kind: h.kind,
            function,
            ns: h.ns,
            times: h.times,
        }
    }

    fn read(&self, func: u64) -> String {
        let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = known.get(&func) {
            return n.clone();
        }
        let mut table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        if table.as_ref().is_none_or(|(at, _)| at.elapsed() >= REREAD) {
            *table = Some((Instant::now(), Kallsyms::read(&self.path).ok()));
        }
        let name = match table.as_ref().and_then(|(_, k)| k.as_ref()) {
            Some(k) => k.function(func),
            None => format!("{func:#x}"),
        };
        if known.len() < MAX_NAMES {
            known.insert(func, name.clone());
        }
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::{Comm, TaskState};

    const D: u64 = 10_000_000;

    fn spike(latency: u64) -> Spike {
        Spike {
            cpu: 1,
            tid: 500,
            deadline_ns: D,
            wakeup_ns: D + latency,
            smis: None,
        }
    }

    fn ev(ts: u64, kind: Kind) -> Event {
        Event { ts, pid: 0, kind }
    }

    fn entry(ts: u64, kind: HandlerKind, func: u64) -> Event {
        ev(ts, Kind::HandlerEntry { kind, func })
    }

    fn exit(ts: u64, kind: HandlerKind) -> Event {
        ev(ts, Kind::HandlerExit { kind })
    }

    /// A tasklet that ran 400 µs of a 500 µs spike, an IPI's function call nested in it for
    /// 50 µs: the tasklet, with its own 350 µs; the call is counted apart.
    #[test]
    fn the_longest_handler_gets_its_own_time_nested_ones_apart() {
        use HandlerKind::{Csd, Tasklet};
        let e = [
            entry(D + 50_000, Tasklet, 0xa000),
            entry(D + 100_000, Csd, 0xb000),
            exit(D + 150_000, Csd),
            exit(D + 450_000, Tasklet),
        ];
        let h = longest(&e, &spike(500_000)).unwrap();
        assert_eq!(
            (h.kind, h.func, h.ns, h.times),
            (Tasklet, 0xa000, 350_000, 1)
        );
    }

    /// Only the spike's interval counts: a handler that began before the deadline is charged
    /// from the deadline, one after the wake-up not at all, and runs are counted.
    #[test]
    fn only_time_between_the_deadline_and_the_wake_up_is_charged() {
        use HandlerKind::Timer;
        let e = [
            entry(D - 100_000, Timer, 0xc000),
            exit(D + 30_000, Timer),
            entry(D + 40_000, Timer, 0xc000),
            exit(D + 60_000, Timer),
            entry(D + 90_000, Timer, 0xd000),
        ];
        let h = longest(&e, &spike(80_000)).unwrap();
        assert_eq!((h.func, h.ns, h.times), (0xc000, 50_000, 2));
        assert_eq!(longest(&e[..2], &spike(0)), None);
    }

    /// A switch closes what is open (a tasklet in a preempted softirq thread); no handler
    /// event at all gives none.
    #[test]
    fn a_switch_closes_open_handlers_and_no_events_give_none() {
        let e = [
            entry(D, HandlerKind::Tasklet, 0xa000),
            ev(
                D + 10_000,
                Kind::Switch {
                    prev_pid: 7,
                    prev_prio: 120,
                    prev_comm: Comm::new(b"ksoftirqd/1"),
                    prev_state: TaskState::Preempted,
                    next_pid: 500,
                    next_prio: 0,
                    next_comm: Comm::new(b"rtscope-m0"),
                },
            ),
        ];
        assert_eq!(longest(&e, &spike(100_000)).unwrap().ns, 10_000);
        assert_eq!(longest(&[], &spike(100_000)), None);
    }

    /// The kinds come from the events enabled in pairs, and the note says what is missing.
    #[test]
    fn the_kinds_named_follow_the_events_and_the_note_says_what_is_missing() {
        let all = [
            "sched_switch",
            "csd_function_entry",
            "csd_function_exit",
            "tasklet_entry",
            "tasklet_exit",
            "timer_expire_entry",
            "timer_expire_exit",
        ];
        let k = kinds(all);
        assert_eq!(k.len(), 3);
        assert_eq!(
            note(&k),
            "handlers named: IPI function call, tasklet, timer_list"
        );
        let old = kinds([
            "sched_switch",
            "timer_expire_entry",
            "timer_expire_exit",
            "tasklet_entry",
        ]);
        assert_eq!(old, vec![HandlerKind::Timer]);
        let n = note(&old);
        assert!(
            n.starts_with("handlers named: timer_list; no IPI function call or tasklet events"),
            "{n}"
        );
        let n = note(&[HandlerKind::Tasklet, HandlerKind::Timer]);
        assert!(
            n.starts_with("handlers named: tasklet, timer_list; no IPI function call events"),
            "{n}"
        );
        assert!(note(&[])
            .starts_with("handlers named: none; no IPI function call or tasklet or timer_list"));
    }

    /// Functions are named by the symbol they point into, from the file when the run read no
    /// symbols (read once and kept), `0x…` where the file has none.
    #[test]
    fn functions_are_named_from_the_symbols_or_the_file() {
        let dir = std::env::temp_dir().join(format!("rtscope-handlers-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("kallsyms");
        std::fs::write(
            &path,
            "ffffffff81000000 T _stext\nffffffffc0001000 t noisy_long_softirq\t[noisy]\n",
        )
        .unwrap();
        let h = HandlerTime {
            kind: HandlerKind::Tasklet,
            func: 0xffff_ffff_c000_1000,
            ns: 5,
            times: 1,
        };
        let names = Names::from_file(path.clone());
        let named = names.name(h, &Kallsyms::default());
        assert_eq!(named.function, "noisy_long_softirq [noisy]");
        std::fs::remove_file(&path).unwrap();
        // Kept: the file is not read again.
        assert_eq!(names.name(h, &Kallsyms::default()).function, named.function);
        let unknown = HandlerTime { func: 0x1000, ..h };
        assert_eq!(names.name(unknown, &Kallsyms::default()).function, "0x1000");
        // A function not seen before is named from the table kept from the first read (the
        // file is gone): no parse of the file per new function.
        let other = HandlerTime {
            func: 0xffff_ffff_8100_0040,
            ..h
        };
        assert_eq!(names.name(other, &Kallsyms::default()).function, "_stext");
        let syms = Kallsyms::parse("ffffffff81000100 T tasklet_fn\n");
        let h = HandlerTime {
            func: 0xffff_ffff_8100_0100,
            ..h
        };
        assert_eq!(names.name(h, &syms).function, "tasklet_fn");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

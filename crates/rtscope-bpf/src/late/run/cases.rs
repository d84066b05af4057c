//! The cases, each on every layout the loader can choose ([`VARIANTS`]: raw tracepoints or
//! trace events, with or without the held chain), each judged by the maps and the ring
//! buffer after the runs. Lateness on the switch and held chains is measured by the programs
//! against `bpf_ktime_get_ns`, so those cases place the expiry seconds before or after now
//! (never a bound that a loaded host could cross); the timer chain's lateness is the
//! interrupt's time from the context, so its threshold edge is tested to the nanosecond.

use super::rig::{self, Rig, TICK, VARIANTS, WAKEUP};
use crate::late::RING_BYTES;
use crate::{Chain, RECORD};
use rtscope_testkit::require_ok;

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

/// A late wake-up's expiry: 5 s before now, 2 ns after boot at the earliest (the held case
/// arms a timer 1 ns before it, and an expiry of 0 is the "used" mark).
fn five_seconds_ago() -> u64 {
    rig::ktime().saturating_sub(5 * S).max(2)
}

#[test]
fn a_late_switch_into_a_measured_thread_takes_the_stack_of_the_task_switched_out() {
    require_ok!(rig::available());
    for v in VARIANTS {
        let mut r = Rig::new(v, MS);
        let expires = five_seconds_ago();
        r.start(WAKEUP, expires);
        assert_eq!(r.pid_entry(r.tid), Some(expires), "{v:?}");
        assert_eq!(r.timer_entry(), Some((expires, u64::from(r.tid))), "{v:?}");
        let before = rig::ktime();
        r.switch_to("rtscope-m0", r.tid);
        let stacks = r.stacks();
        assert_eq!(stacks.len(), 1, "{v:?}");
        let s = &stacks[0];
        assert_eq!(
            (s.chain, s.tid, s.pid, s.cpu),
            (Chain::Switch, r.tid, r.tid, r.cpu)
        );
        // Late by the time since the expiry: at least what had passed before the run.
        assert!(s.lat >= before - expires, "{v:?}: {} ns", s.lat);
        // The record's time is read after the lateness: no earlier than the expiry plus it.
        assert!(s.ts >= before && s.ts - s.lat >= expires, "{v:?}");
        // bpf_get_stack of the test run's own kernel path: some frames.
        assert!(!s.frames.is_empty(), "{v:?}");
        assert_eq!(r.pid_entry(r.tid), Some(0), "{v:?}: the entry is used");
    }
}

#[test]
fn a_prompt_switch_takes_nothing_and_marks_the_sleep_used() {
    require_ok!(rig::available());
    for v in VARIANTS {
        // A threshold of 100 s: no host is that slow between two system calls.
        let mut r = Rig::new(v, 100 * S);
        r.start(WAKEUP, rig::ktime());
        r.switch_to("rtscope-m0", r.tid);
        assert_eq!(r.stacks(), [], "{v:?}");
        assert_eq!(r.pid_entry(r.tid), Some(0), "{v:?}");
    }
}

#[test]
fn a_switch_before_the_expiry_is_not_the_wake_up_and_keeps_the_entry() {
    require_ok!(rig::available());
    for v in VARIANTS {
        let mut r = Rig::new(v, MS);
        let expires = rig::ktime() + 3600 * S;
        r.start(WAKEUP, expires);
        r.switch_to("rtscope-m0", r.tid);
        assert_eq!(r.stacks(), [], "{v:?}");
        assert_eq!(r.pid_entry(r.tid), Some(expires), "{v:?}");
    }
}

#[test]
fn a_switch_into_any_other_task_changes_nothing() {
    require_ok!(rig::available());
    for v in VARIANTS {
        let mut r = Rig::new(v, MS);
        let expires = five_seconds_ago();
        r.start(WAKEUP, expires);
        // The held chain's time, which a measured thread's switch would clear.
        r.expire(WAKEUP, expires + 10);
        let woke = r.woke();
        r.start(WAKEUP, expires);
        for name in [
            "rtscope-monitor",
            "rtscope-n0",
            "rtscope-mx",
            "rtscope-",
            "bash",
        ] {
            r.switch_to(name, r.tid);
        }
        assert_eq!(r.stacks(), [], "{v:?}");
        assert_eq!(r.pid_entry(r.tid), Some(expires), "{v:?}");
        assert_eq!(r.woke(), woke, "{v:?}");
    }
}

#[test]
fn only_a_sleep_of_this_processs_measured_threads_is_followed() {
    require_ok!(rig::available());
    for v in VARIANTS {
        let mut r = Rig::new(v, MS);
        // Not a sleep: another function on the timer.
        r.start(TICK, 5);
        // Not a measured thread: the noise loop, a monitor.
        for name in ["rtscope-n0", "rtscope-monitor", "rtscope-m"] {
            rig::name_thread(name);
            r.start(WAKEUP, 5);
        }
        assert_eq!((r.pid_entry(r.tid), r.timer_entry()), (None, None), "{v:?}");
        rig::name_thread("rtscope-m7");
        r.start(WAKEUP, 5);
        assert_eq!(r.pid_entry(r.tid), Some(5), "{v:?}");
        // Another rtscope's measured threads: programs built for another process.
        let mut other = Rig::for_process(v, MS, std::process::id() + 1);
        other.start(WAKEUP, 5);
        assert_eq!(
            (other.pid_entry(other.tid), other.timer_entry()),
            (None, None)
        );
    }
}

#[test]
fn a_late_timer_interrupt_takes_a_stack_from_the_threshold_exactly() {
    require_ok!(rig::available());
    for v in VARIANTS {
        let threshold = 1_500_000;
        let mut r = Rig::new(v, threshold);
        let expires = 1_000 * S;
        let mut taken = Vec::new();
        for late in [threshold - 1, threshold, threshold + 1] {
            r.start(WAKEUP, expires);
            r.expire(WAKEUP, expires + late);
            assert_eq!(r.timer_entry(), Some((0, u64::from(r.tid))), "{v:?}: used");
            taken.extend(r.stacks().into_iter().map(|s| (s.chain, s.lat, s.tid)));
        }
        let want = [threshold, threshold + 1].map(|lat| (Chain::Timer, lat, r.tid));
        assert_eq!(taken, want, "{v:?}");
        // An interrupt before the expiry (ktime_t is signed): nothing, the entry used.
        r.start(WAKEUP, expires);
        r.expire(WAKEUP, expires - 1);
        assert_eq!(
            (r.stacks(), r.timer_entry()),
            (vec![], Some((0, u64::from(r.tid))))
        );
        // A second interrupt of the same sleep: its entry is used, nothing more.
        r.expire(WAKEUP, expires + 10 * threshold);
        assert_eq!(r.stacks(), [], "{v:?}");
        if v.held {
            assert_eq!(
                r.woke(),
                (expires - 1, u64::from(r.tid)),
                "{v:?}: the waking"
            );
        } else {
            assert_eq!(r.woke(), (0, 0), "{v:?}: no held chain");
        }
    }
}

#[test]
fn the_tick_takes_a_held_stack_while_a_woken_thread_waits_and_the_switch_ends_the_wait() {
    require_ok!(rig::available());
    for v in VARIANTS.into_iter().filter(|v| v.held) {
        let mut r = Rig::new(v, MS);
        let woken = five_seconds_ago();
        r.start(WAKEUP, woken - 1);
        r.expire(WAKEUP, woken);
        assert_eq!(r.woke(), (woken, u64::from(r.tid)), "{v:?}");
        r.stacks();
        let before = rig::ktime();
        r.expire(TICK, 0);
        let held: Vec<_> = r.stacks().into_iter().map(|s| (s.chain, s.tid)).collect();
        assert_eq!(held, [(Chain::Held, r.tid)], "{v:?}");
        // The tick that took the stack used the time: the next one takes none.
        assert_eq!(r.woke().0, 0, "{v:?}");
        r.expire(TICK, 0);
        assert_eq!(r.stacks(), [], "{v:?}");
        // Woken, then switched in before the tick: nothing held.
        r.start(WAKEUP, woken - 1);
        r.expire(WAKEUP, woken);
        r.stacks();
        r.switch_to("rtscope-m0", r.tid);
        assert_eq!(r.woke().0, 0, "{v:?}: the switch clears the waking");
        r.expire(TICK, 0);
        assert!(r.stacks().iter().all(|s| s.chain == Chain::Switch), "{v:?}");
        // A wait shorter than the threshold: nothing held, and the time is left for the
        // next tick (a tick every 1 ms or 4 ms may come before a threshold the wait reaches
        // later); the switch into the thread ends the wait.
        let mut prompt = Rig::new(v, 100 * S);
        prompt.start(WAKEUP, before);
        prompt.expire(WAKEUP, before);
        prompt.expire(TICK, 0);
        assert_eq!(prompt.stacks(), [], "{v:?}");
        assert_eq!(prompt.woke(), (before, u64::from(prompt.tid)), "{v:?}");
        prompt.switch_to("rtscope-m0", prompt.tid);
        assert_eq!(prompt.woke().0, 0, "{v:?}");
    }
}

#[test]
fn without_the_held_chain_the_tick_is_not_looked_at() {
    require_ok!(rig::available());
    for v in VARIANTS.into_iter().filter(|v| !v.held) {
        let mut r = Rig::new(v, MS);
        let woken = five_seconds_ago();
        r.start(WAKEUP, woken - 1);
        r.expire(WAKEUP, woken);
        r.stacks();
        r.expire(TICK, 0);
        assert_eq!((r.stacks(), r.woke()), (vec![], (0, 0)), "{v:?}");
    }
}

#[test]
fn a_timer_found_in_its_cpus_slot_needs_no_timer_map_and_one_not_there_is_found_in_it() {
    require_ok!(rig::available());
    for v in VARIANTS {
        // The timer map full: the update fails (E2BIG), the slot still holds the timer.
        let mut r = Rig::new(v, MS);
        r.fill_timer_map(crate::late::THREADS);
        let expires = five_seconds_ago();
        r.start(WAKEUP, expires);
        assert_eq!(r.timer_entry(), Some((expires, u64::from(r.tid))), "{v:?}");
        r.expire(WAKEUP, expires + MS);
        let timer: Vec<_> = r.stacks().into_iter().map(|s| (s.chain, s.lat)).collect();
        assert_eq!(timer, [(Chain::Timer, MS)], "{v:?}: through the slot");
        // Another measured thread armed on this CPU since: the timer is in the timer map.
        let mut two = Rig::new(v, MS);
        two.start(WAKEUP, expires);
        two.take_the_slot(0xffff_8880_0000_0040, expires, two.tid + 1);
        two.expire(WAKEUP, expires + 2 * MS);
        let taken: Vec<_> = two
            .stacks()
            .into_iter()
            .map(|s| (s.chain, s.lat, s.tid))
            .collect();
        assert_eq!(
            taken,
            [(Chain::Timer, 2 * MS, two.tid)],
            "{v:?}: through the map"
        );
        assert_eq!(
            two.timer_entry(),
            Some((0, u64::from(two.tid))),
            "{v:?}: used"
        );
        // The other thread's timer is untouched in the slot: read back whole.
        two.take_the_slot(two.timer(), 7, two.tid);
        assert_eq!(two.timer_entry(), Some((7, u64::from(two.tid))), "{v:?}");
    }
}

#[test]
fn a_timer_expiring_on_another_cpu_is_found_in_the_map_and_its_arming_cpus_slot_used_too() {
    require_ok!(rig::available());
    for v in VARIANTS {
        let mut r = Rig::new(v, MS);
        let other = rig::another_cpu(r.cpu);
        rtscope_testkit::require!(other.is_some(), "a second online CPU");
        let expires = five_seconds_ago();
        r.start(WAKEUP, expires);
        assert_eq!(
            r.timer_map_entry(),
            Some((expires, u64::from(r.tid), u64::from(r.cpu)))
        );
        // The interrupt on the other CPU (in an IPI there): its slot holds no such timer.
        r.expire_on(other, WAKEUP, expires + MS);
        let taken: Vec<_> = r
            .stacks()
            .into_iter()
            .map(|s| (s.chain, s.lat, s.tid, s.cpu))
            .collect();
        assert_eq!(taken, [(Chain::Timer, MS, r.tid, other.unwrap())], "{v:?}");
        assert_eq!(
            r.timer_map_entry().map(|e| e.0),
            Some(0),
            "{v:?}: the map's copy used"
        );
        assert_eq!(
            r.timer_entry(),
            Some((0, u64::from(r.tid))),
            "{v:?}: the slot's too"
        );
        // So an interrupt of that sleep on the arming CPU finds nothing to use.
        r.expire(WAKEUP, expires + 2 * MS);
        assert_eq!(r.stacks(), [], "{v:?}");
    }
}

#[test]
fn a_thread_beyond_the_thread_map_is_not_followed_at_the_switch_but_its_timer_is() {
    require_ok!(rig::available());
    for v in VARIANTS {
        let mut r = Rig::new(v, MS);
        let expires = five_seconds_ago();
        // Index 10000 (a fifth digit), beyond the map's 4,096 entries.
        rig::name_thread("rtscope-m10000");
        r.start(WAKEUP, expires);
        assert_eq!(r.pid_entry(r.tid), None, "{v:?}");
        r.switch_to("rtscope-m10000", r.tid);
        assert_eq!(r.stacks(), [], "{v:?}: the thread is not followed");
        r.expire(WAKEUP, expires + MS);
        let timer: Vec<_> = r.stacks().into_iter().map(|s| (s.chain, s.lat)).collect();
        assert_eq!(timer, [(Chain::Timer, MS)], "{v:?}");
        // The last index the map holds, read from four digits.
        rig::name_thread("rtscope-m4095");
        r.start(WAKEUP, expires);
        assert_eq!(r.pid_entry(r.tid), Some(expires), "{v:?}");
        r.switch_to("rtscope-m4095", r.tid);
        assert_eq!(r.stacks().len(), 1, "{v:?}");
        // Another process's thread of that index switched in: not this one's entry.
        r.start(WAKEUP, expires);
        r.switch_to("rtscope-m4095", r.tid + 1);
        assert_eq!(r.stacks(), [], "{v:?}");
        assert_eq!(
            r.pid_entry(r.tid),
            Some(expires),
            "{v:?}: left for its thread"
        );
        rig::name_thread("rtscope-m0");
    }
}

#[test]
fn a_full_ring_buffer_drops_the_stacks_it_has_no_room_for_and_the_programs_go_on() {
    require_ok!(rig::available());
    // A record's header is 8 bytes; records are 8-aligned (RECORD is).
    let room = RING_BYTES / (RECORD + 8);
    for v in [VARIANTS[0], VARIANTS[3]] {
        let mut r = Rig::new(v, MS);
        for i in 0..room as u64 + 5 {
            r.start(WAKEUP, S + i);
            r.expire(WAKEUP, S + i + MS);
        }
        let stacks = r.stacks();
        assert_eq!(stacks.len(), room, "{v:?}");
        assert!(
            stacks
                .iter()
                .all(|s| s.chain == Chain::Timer && s.lat == MS),
            "{v:?}"
        );
        r.start(WAKEUP, S);
        r.expire(WAKEUP, S + 2 * MS);
        let after: Vec<_> = r.stacks().into_iter().map(|s| s.lat).collect();
        assert_eq!(after, [2 * MS], "{v:?}: room again once read");
    }
}

#[test]
fn a_stack_taken_wakes_no_reader_so_raises_no_interrupt_on_the_measured_cpu() {
    require_ok!(rig::available());
    for v in VARIANTS {
        let mut r = Rig::new(v, MS);
        // A late interrupt's record, the reader caught up (the ring empty before it): the
        // kernel would wake the ring's waiters by an irq_work on this CPU unless told not to.
        let woke = r.woke_a_reader(|r| {
            r.start(WAKEUP, S);
            r.expire(WAKEUP, S + MS);
        });
        assert!(!woke, "{v:?}: a waiter on the ring was woken");
        let lat: Vec<_> = r.stacks().into_iter().map(|s| s.lat).collect();
        assert_eq!(
            lat,
            [MS],
            "{v:?}: the record is there for the reader's next poll"
        );
    }
}

#[test]
fn the_programs_run_compiled_where_the_jit_is_on() {
    require_ok!(rig::available());
    // The kernel gives a program's machine code's address only to who may see addresses.
    let shown =
        std::fs::read_to_string("/proc/sys/kernel/kptr_restrict").is_ok_and(|t| t.trim() != "2");
    let jit = rig::jit_enabled() && shown;
    for v in VARIANTS {
        let r = Rig::new(v, MS);
        assert_eq!(r.jited(), [jit; 3], "{v:?}");
    }
}

#[test]
fn the_programs_built_with_this_kernels_btf_layout_run_as_with_the_synthetic_one() {
    require_ok!(rig::available());
    let path = std::path::Path::new(crate::btf::VMLINUX);
    rtscope_testkit::require!(path.exists(), "a kernel with BTF ({})", path.display());
    let layout = crate::btf::Layout::read(path).expect("this kernel's BTF");
    assert!(
        layout.task_comm < 16_000 && layout.task_pid < 16_000,
        "{layout:?}"
    );
    for held in [true, false] {
        let mut r = Rig::with_layout(held, MS, layout);
        // A late switch.
        let expires = five_seconds_ago();
        r.start(WAKEUP, expires);
        assert_eq!(r.pid_entry(r.tid), Some(expires), "held {held}");
        r.switch_to("rtscope-m0", r.tid);
        let chains: Vec<_> = r.stacks().into_iter().map(|s| (s.chain, s.tid)).collect();
        assert_eq!(chains, [(Chain::Switch, r.tid)], "held {held}");
        // The timer chain at its threshold, to the nanosecond.
        r.start(WAKEUP, 1_000 * S);
        r.expire(WAKEUP, 1_000 * S + MS);
        let timer: Vec<_> = r.stacks().into_iter().map(|s| (s.chain, s.lat)).collect();
        assert_eq!(timer, [(Chain::Timer, MS)], "held {held}");
        // Another task's switch: nothing.
        r.switch_to("rtscope-n0", r.tid);
        assert_eq!(r.stacks(), [], "held {held}");
    }
}

//! The listing of every program the loader can build (three programs on each of the four
//! layouts), for one fixed setting, compared with the checked-in file
//! `tests/snapshots/late.txt`. A change to a program is then a diff a reviewer reads as
//! instructions. `UPDATE_SNAPSHOTS=1` rewrites the file after an intended change.

use super::rig::VARIANTS;
use crate::late::Maps;
use crate::listing::listing;
use std::fmt::Write;
use std::os::fd::AsRawFd;

/// The file, below the crate.
const FILE: &str = "tests/snapshots/late.txt";

/// Every program's listing, with a header line each.
fn listings() -> String {
    let m = Maps::dev_null();
    let names = [
        (m.by_thread.as_raw_fd(), "rtscope_thread"),
        (m.by_timer.as_raw_fd(), "rtscope_timer"),
        (m.per_cpu.as_raw_fd(), "rtscope_cpu"),
        (m.ring.as_raw_fd(), "rtscope_stacks"),
    ];
    let map = |fd: i32| {
        let name = names.iter().find(|n| n.0 == fd)?.1;
        Some(name.to_string())
    };
    let mut out = String::from(
        "; rtscope-bpf's late-only programs, as the loader builds them for a threshold of\n\
         ; 1000000 ns, process 4242, hrtimer_wakeup at 0xffffffff81100000 and\n\
         ; tick_sched_timer at 0xffffffff81200000. UPDATE_SNAPSHOTS=1 rewrites this file.\n",
    );
    for v in VARIANTS {
        let s = v.setting(1_000_000, 4242);
        for (name, code) in v.build(&s, &m) {
            let _ = write!(
                out,
                "\n; {name}: {}, {}: {} instructions\n{}",
                v.source().describe(),
                if v.held {
                    "held chain"
                } else {
                    "no held chain"
                },
                code.len(),
                listing(&code, map)
            );
        }
    }
    out
}

#[test]
fn every_programs_listing_matches_the_checked_in_one() {
    let actual = listings();
    crate::listing::check_snapshot(FILE, &actual, "the programs");
    // Every program ends with `r0 = 0; exit`, every map is named, every helper known.
    assert_eq!(actual.matches("exit\n").count(), 12);
    assert!(!actual.contains("map_fd") && !actual.contains("call #"));
}

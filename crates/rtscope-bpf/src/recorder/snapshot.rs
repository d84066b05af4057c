//! The listing of every recorder program (the 23 tracepoints' on the synthetic places of
//! [`super::run::Synthetic`], 4,096 records per CPU, each way of publishing and of reading
//! behind the arguments), compared with
//! the checked-in `tests/snapshots/recorder.txt`. `UPDATE_SNAPSHOTS=1` rewrites it.

use super::program::{self, Publish, Reads, TRACEPOINTS};
use super::run::Synthetic;
use crate::listing::listing;
use std::fmt::Write;

const FILE: &str = "tests/snapshots/recorder.txt";

/// The map's file descriptor in the listing (none is opened: the programs are not loaded).
const MAP_FD: i32 = 1000;

fn listings() -> String {
    let mut out = String::from(
        "; rtscope-bpf's flight recorder programs, as built for 4096 records per CPU on the\n\
         ; tests' synthetic places (task_struct.pid at 24, .prio at 8, timer_list.function at\n\
         ; 16; x86-64's arguments). UPDATE_SNAPSHOTS=1 rewrites this file.\n",
    );
    let map = |fd: i32| (fd == MAP_FD).then(|| super::ring::NAME.to_string());
    let ways = [Reads::Probe, Reads::Typed]
        .into_iter()
        .flat_map(|r| [Publish::Store, Publish::Xchg].map(|p| (p, r)));
    for (publish, reads) in ways {
        for (tp, _) in TRACEPOINTS {
            let spec = program::spec(&Synthetic, tp).expect("a spec");
            let code = program::program(&spec, MAP_FD, 4096, publish, reads).expect("a program");
            let _ = write!(
                out,
                "\n; {}: {tp}, {publish:?}, {reads:?}: {} instructions\n{}",
                super::prog_name(tp),
                code.len(),
                listing(&code, map)
            );
        }
    }
    out
}

#[test]
fn every_recorder_programs_listing_matches_the_checked_in_one() {
    let actual = listings();
    crate::listing::check_snapshot(FILE, &actual, "the recorder's programs");
    assert_eq!(actual.matches("exit\n").count(), 92);
    assert!(!actual.contains("map_fd") && !actual.contains("call #") && !actual.contains("(code"));
}

//! The floor of an in-kernel flight recorder's cost (issue 68, bench/raw-tp-floor.sh): eBPF
//! programs on the raw tracepoints `--explain`'s tracefs recorder enables, held until stdin
//! closes. `noop` returns at once (what a program on the tracepoint costs at all); `record`
//! stores the time and the tracepoint's first argument into a per-CPU ring of 256 slots (the
//! least a recorder must do per event: one helper call for the time, one map lookup).
//!
//! Usage: raw_tp_floor noop|record [TRACEPOINT,…]   (root)

use rtscope_bpf::insn::{self, Alu, Cond, Size, R0, R1, R10, R2, R6, R7, R8};
use rtscope_bpf::sys::{self, MapType, ProgType};
use std::io::Read;

/// The raw tracepoints behind the 23 trace events `--explain` enables (x86-64).
const EVENTS: &str = "sched_switch,sched_waking,irq_handler_entry,irq_handler_exit,\
softirq_entry,softirq_exit,tasklet_entry,tasklet_exit,local_timer_entry,local_timer_exit,\
reschedule_entry,reschedule_exit,call_function_entry,call_function_exit,\
call_function_single_entry,call_function_single_exit,irq_work_entry,irq_work_exit,\
nmi_handler,csd_function_entry,csd_function_exit,timer_expire_entry,timer_expire_exit";

/// `bpf_map_lookup_elem` and `bpf_ktime_get_ns`.
const LOOKUP: i32 = 1;
const KTIME: i32 = 5;

fn record(map: i32) -> Vec<insn::Insn> {
    let mut p = vec![
        insn::alu_reg(Alu::Mov, R6, R1),
        insn::call(KTIME),
        insn::alu_reg(Alu::Mov, R7, R0),
    ];
    p.push(insn::store_imm(Size::W, R10, -4, 0));
    p.extend(insn::map_fd(R1, map));
    p.push(insn::alu_reg(Alu::Mov, R2, R10));
    p.push(insn::alu_imm(Alu::Add, R2, -4));
    p.push(insn::call(LOOKUP));
    p.push(insn::jump_imm(Cond::Eq, R0, 0, 10));
    p.push(insn::alu_reg(Alu::Mov, R8, R0));
    p.push(insn::load(Size::Dw, R1, R8, 0)); // head, advanced 16 bytes per record
    p.push(insn::alu_reg(Alu::Mov, R2, R1));
    p.push(insn::alu_imm(Alu::Add, R2, 16));
    p.push(insn::store(Size::Dw, R8, 0, R2));
    p.push(insn::alu_imm(Alu::And, R1, 0xff0));
    p.push(insn::alu_reg(Alu::Add, R8, R1));
    p.push(insn::store(Size::Dw, R8, 16, R7)); // the time
    p.push(insn::load(Size::Dw, R1, R6, 0)); // args[0]
    p.push(insn::store(Size::Dw, R8, 24, R1));
    p.extend(insn::mov64(R0, 0));
    p.push(insn::exit());
    p
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map(String::as_str).unwrap_or("noop");
    let events = args.get(2).map(String::as_str).unwrap_or(EVENTS);
    let map = sys::create_map("floor_ring", MapType::PercpuArray, 4, 16 + 4096 + 16, 1)
        .unwrap_or_else(|e| panic!("map: {e}"));
    let prog = match mode {
        "noop" => [insn::mov64(R0, 0).to_vec(), vec![insn::exit()]].concat(),
        "record" => record(std::os::fd::AsRawFd::as_raw_fd(&map)),
        other => panic!("mode {other}: noop or record"),
    };
    let fd = sys::load_program("floor", ProgType::RawTracepoint, &prog)
        .unwrap_or_else(|e| panic!("load: {e}"));
    let mut held = Vec::new();
    for ev in events.split(',').filter(|e| !e.is_empty()) {
        match sys::attach_raw_tracepoint(ev, &fd) {
            Ok(a) => held.push(a),
            Err(e) => eprintln!("not attached: {ev}: {e}"),
        }
    }
    println!(
        "attached {} of {} ({mode}, {} instructions)",
        held.len(),
        events.split(',').count(),
        prog.len()
    );
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}

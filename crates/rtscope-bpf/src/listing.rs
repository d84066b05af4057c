//! A program as text: one line per instruction in the notation of the kernel's verifier log and
//! `llvm-objdump` (`r1 = *(u64 *)(r6 + 8)`, `if r1 != r2 goto +5`), each jump with the index it
//! lands on, each helper by name and each map by the name the caller gives its file
//! descriptor. The tests keep the listing of every program the loader can build as a checked-in
//! file (`tests/snapshots/late.txt`), so a change to a program shows as a diff of its text.

use crate::insn::Insn;
use std::fmt::Write;

/// The kernel helpers the programs call, by number (`include/uapi/linux/bpf.h`).
const HELPERS: &[(i32, &str)] = &[
    (1, "bpf_map_lookup_elem"),
    (2, "bpf_map_update_elem"),
    (5, "bpf_ktime_get_ns"),
    (8, "bpf_get_smp_processor_id"),
    (14, "bpf_get_current_pid_tgid"),
    (16, "bpf_get_current_comm"),
    (67, "bpf_get_stack"),
    (113, "bpf_probe_read_kernel"),
    (131, "bpf_ringbuf_reserve"),
    (132, "bpf_ringbuf_submit"),
];

/// The listing of `insns`: `index: instruction` lines. `map` names the map of a file
/// descriptor (`BPF_PSEUDO_MAP_FD`); a descriptor it does not know is listed as `map_fd N`.
pub fn listing(insns: &[Insn], map: impl Fn(i32) -> Option<String>) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < insns.len() {
        let (text, slots) = line(insns, i, &map);
        let _ = writeln!(out, "{i:4}: {text}");
        i += slots;
    }
    out
}

/// The text of the instruction at `i` and how many slots it takes (2 for a 64-bit load).
fn line(insns: &[Insn], i: usize, map: &impl Fn(i32) -> Option<String>) -> (String, usize) {
    let n = insns[i];
    let class = n.code & 0x07;
    // Loads and stores of the `BPF_MEM` mode only (not atomics, not the packet modes).
    let mem = n.code & 0xe0 == 0x60;
    let text = match class {
        0x00 if n.code == 0x18 => return ld_imm64(insns, i, map),
        0x01 if mem => format!(
            "r{} = *({} *)(r{}{})",
            n.dst,
            size(n.code),
            n.src,
            signed(n.off.into())
        ),
        0x02 if mem => format!(
            "*({} *)(r{}{}) = {}",
            size(n.code),
            n.dst,
            signed(n.off.into()),
            n.imm
        ),
        0x03 if mem => format!(
            "*({} *)(r{}{}) = r{}",
            size(n.code),
            n.dst,
            signed(n.off.into()),
            n.src
        ),
        0x03 if n.code & 0xe0 == 0xc0 => atomic(n),
        0x05 => jump(n, i),
        0x07 => alu(n),
        _ => unknown(n),
    };
    (text, 1)
}

/// `dst = imm64 ll`, or `dst = map[name] ll` for a map's file descriptor.
fn ld_imm64(insns: &[Insn], i: usize, map: &impl Fn(i32) -> Option<String>) -> (String, usize) {
    let n = insns[i];
    let Some(hi) = insns.get(i + 1) else {
        return (format!("{} (its second slot missing)", unknown(n)), 1);
    };
    let value = u64::from(n.imm as u32) | u64::from(hi.imm as u32) << 32;
    let text = match n.src {
        0 => format!("r{} = {value:#x} ll", n.dst),
        1 => match map(n.imm) {
            Some(name) => format!("r{} = map[{name}] ll", n.dst),
            None => format!("r{} = map_fd {} ll", n.dst, n.imm),
        },
        other => format!("r{} = {value:#x} ll (source {other})", n.dst),
    };
    (text, 2)
}

/// A jump, a call or the exit.
fn jump(n: Insn, i: usize) -> String {
    let op = n.code & 0xf0;
    let target = i as i64 + 1 + i64::from(n.off);
    let cond = match op {
        0x00 => return format!("goto {} <{target}>", signed_bare(n.off.into())),
        0x80 => {
            return match HELPERS.iter().find(|h| h.0 == n.imm) {
                Some((_, name)) => format!("call {name}#{}", n.imm),
                None => format!("call #{}", n.imm),
            }
        }
        0x90 => return "exit".to_string(),
        0x10 => "==",
        0x20 => ">",
        0x30 => ">=",
        0x50 => "!=",
        0xa0 => "<",
        0xb0 => "<=",
        0x60 => "s>",
        0x70 => "s>=",
        0xc0 => "s<",
        0xd0 => "s<=",
        _ => return unknown(n),
    };
    let rhs = if n.code & 0x08 != 0 {
        format!("r{}", n.src)
    } else {
        n.imm.to_string()
    };
    format!(
        "if r{} {cond} {rhs} goto {} <{target}>",
        n.dst,
        signed_bare(n.off.into())
    )
}

/// An atomic read-modify-write (`BPF_ATOMIC`) in llvm-objdump's notation; the forms the
/// programs use (fetch-add, exchange), others by their fields.
fn atomic(n: Insn) -> String {
    let op = match n.imm {
        0x01 => "atomic_fetch_add",
        0xe1 => "xchg",
        _ => return unknown(n),
    };
    format!(
        "r{} = {op}(({} *)(r{}{}), r{})",
        n.src,
        size(n.code),
        n.dst,
        signed(n.off.into()),
        n.src
    )
}

/// A 64-bit arithmetic operation.
fn alu(n: Insn) -> String {
    let op = match n.code & 0xf0 {
        0x00 => "+=",
        0x10 => "-=",
        0x20 => "*=",
        0x40 => "|=",
        0x50 => "&=",
        0x60 => "<<=",
        0x70 => ">>=",
        0xa0 => "^=",
        0xb0 => "=",
        0xc0 => "s>>=",
        _ => return unknown(n),
    };
    if n.code & 0x08 != 0 {
        format!("r{} {op} r{}", n.dst, n.src)
    } else if op == "&=" {
        format!("r{} {op} {:#x}", n.dst, n.imm)
    } else {
        format!("r{} {op} {}", n.dst, n.imm)
    }
}

/// The C type of a memory access's size bits.
fn size(code: u8) -> &'static str {
    match code & 0x18 {
        0x00 => "u32",
        0x08 => "u16",
        0x10 => "u8",
        _ => "u64",
    }
}

/// ` + 8`, ` - 16`.
fn signed(v: i32) -> String {
    if v < 0 {
        format!(" - {}", -i64::from(v))
    } else {
        format!(" + {v}")
    }
}

/// `+8`, `-16`.
fn signed_bare(v: i32) -> String {
    format!("{v:+}")
}

/// An instruction this listing has no notation for, as its fields.
fn unknown(n: Insn) -> String {
    format!(
        "(code {:#04x} dst r{} src r{} off {} imm {})",
        n.code, n.dst, n.src, n.off, n.imm
    )
}

/// Checks a listing against its checked-in snapshot `file` (relative to the crate), which
/// `UPDATE_SNAPSHOTS=1` writes instead; a difference fails naming `what` and the first line
/// that differs.
#[cfg(test)]
pub(crate) fn check_snapshot(file: &str, actual: &str, what: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(path.parent().expect("a directory")).expect("the directory");
        std::fs::write(&path, actual).expect("the snapshot written");
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_SNAPSHOTS=1 writes it)", path.display()));
    if actual != expected {
        let first = actual
            .lines()
            .zip(expected.lines())
            .position(|(a, e)| a != e)
            .unwrap_or(actual.lines().count().min(expected.lines().count()));
        panic!(
            "{what} changed from {} at line {} (UPDATE_SNAPSHOTS=1 accepts it):\n\
             now:  {:?}\nwas:  {:?}",
            path.display(),
            first + 1,
            actual.lines().nth(first),
            expected.lines().nth(first)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::insn::{self, Alu, Cond, Size, R0, R1, R10, R2, R6, R7, R9};

    #[test]
    fn each_form_the_programs_use_reads_as_the_verifier_writes_it() {
        let mut code = vec![
            insn::alu_reg(Alu::Mov, R6, R1),
            insn::load(Size::Dw, R1, R6, 8),
            insn::load(Size::B, R1, R10, -7),
            insn::store(Size::W, R10, -4, R0),
            insn::store_imm(Size::Dw, R9, 0, 0),
            insn::alu_imm(Alu::Add, R2, -16),
            insn::alu_imm(Alu::And, R1, 16),
            insn::alu_reg(Alu::Sub, R7, R0),
            insn::jump_reg(Cond::Slt, R9, R7, 3),
            insn::jump_imm(Cond::Ne, R1, 109, 1),
            insn::call(67),
            insn::call(999),
            insn::goto(0),
            insn::exit(),
        ];
        code.extend(insn::mov64(R2, 0xffff_ffff_8100_0000));
        code.extend(insn::map_fd(R1, 7));
        code.extend(insn::map_fd(R1, 8));
        let text = listing(&code, |fd| (fd == 7).then(|| "rtscope_pid".to_string()));
        let want = "   0: r6 = r1
   1: r1 = *(u64 *)(r6 + 8)
   2: r1 = *(u8 *)(r10 - 7)
   3: *(u32 *)(r10 - 4) = r0
   4: *(u64 *)(r9 + 0) = 0
   5: r2 += -16
   6: r1 &= 0x10
   7: r7 -= r0
   8: if r9 s< r7 goto +3 <12>
   9: if r1 != 109 goto +1 <11>
  10: call bpf_get_stack#67
  11: call #999
  12: goto +0 <13>
  13: exit
  14: r2 = 0xffffffff81000000 ll
  16: r1 = map[rtscope_pid] ll
  18: r1 = map_fd 8 ll
";
        assert_eq!(text, want);
    }

    #[test]
    fn an_instruction_without_a_notation_is_listed_by_its_fields_not_dropped() {
        let odd = Insn {
            code: 0xc3,
            dst: 1,
            src: 2,
            off: 4,
            imm: 0,
        };
        let half = insn::mov64(R1, 5)[0];
        let text = listing(&[odd, half], |_| None);
        assert_eq!(
            text,
            "   0: (code 0xc3 dst r1 src r2 off 4 imm 0)\n   1: (code 0x18 dst r1 src r0 off 0 imm 5) (its second slot missing)\n"
        );
    }
}

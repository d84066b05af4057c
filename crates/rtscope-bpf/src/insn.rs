//! eBPF instructions (the kernel's `struct bpf_insn`, Documentation/bpf/standardization/
//! instruction-set.rst): a builder for the few forms the programs use, each checked against
//! the encoding the kernel documents.

/// One instruction: opcode, destination and source registers, offset, immediate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Insn {
    /// The opcode byte: operation | source | class.
    pub code: u8,
    /// Destination register (low nibble of the second byte).
    pub dst: u8,
    /// Source register (high nibble).
    pub src: u8,
    /// Signed offset (memory access, jump).
    pub off: i16,
    /// Signed immediate.
    pub imm: i32,
}

/// A register: `R0` (return values), `R1`–`R5` (arguments, clobbered by calls), `R6`–`R9`
/// (kept across calls), `R10` (the read-only frame pointer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reg(pub u8);

/// The return value.
pub const R0: Reg = Reg(0);
/// First argument; the program's context on entry.
pub const R1: Reg = Reg(1);
/// Second argument.
pub const R2: Reg = Reg(2);
/// Third argument.
pub const R3: Reg = Reg(3);
/// Fourth argument.
pub const R4: Reg = Reg(4);
/// Kept across calls.
pub const R6: Reg = Reg(6);
/// Kept across calls.
pub const R7: Reg = Reg(7);
/// Kept across calls.
pub const R8: Reg = Reg(8);
/// Kept across calls.
pub const R9: Reg = Reg(9);
/// The frame pointer (512 bytes of stack below it).
pub const R10: Reg = Reg(10);

const LD: u8 = 0x00;
const LDX: u8 = 0x01;
const ST: u8 = 0x02;
const STX: u8 = 0x03;
const JMP: u8 = 0x05;
const ALU64: u8 = 0x07;
const MEM: u8 = 0x60;
const IMM: u8 = 0x00;
const K: u8 = 0x00;
const X: u8 = 0x08;
const ATOMIC: u8 = 0xc0;
/// `BPF_ADD | BPF_FETCH`.
const FETCH: i32 = 0x01;
/// `BPF_XCHG` (`0xe0 | BPF_FETCH`).
const XCHG: i32 = 0xe1;

/// An access size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    /// 1 byte.
    B,
    /// 4 bytes.
    W,
    /// 8 bytes.
    Dw,
}

impl Size {
    /// The access's width in bytes.
    pub fn bytes(self) -> usize {
        match self {
            Size::B => 1,
            Size::W => 4,
            Size::Dw => 8,
        }
    }

    /// The widest access that `len` bytes (1, 4, 8 or a multiple of 8) are read by: byte,
    /// word, else double word.
    pub fn fitting(len: i32) -> Size {
        match len {
            1 => Size::B,
            4 => Size::W,
            _ => Size::Dw,
        }
    }

    fn bits(self) -> u8 {
        match self {
            Size::W => 0x00,
            Size::B => 0x10,
            Size::Dw => 0x18,
        }
    }
}

/// A 64-bit arithmetic operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alu {
    /// dst += src.
    Add = 0x00,
    /// dst -= src.
    Sub = 0x10,
    /// dst *= src.
    Mul = 0x20,
    /// dst |= src.
    Or = 0x40,
    /// dst &= src.
    And = 0x50,
    /// dst <<= src.
    Lsh = 0x60,
    /// dst >>= src (logical).
    Rsh = 0x70,
    /// dst = src.
    Mov = 0xb0,
}

/// A conditional jump (unsigned unless named signed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cond {
    /// ==
    Eq = 0x10,
    /// > (unsigned)
    Gt = 0x20,
    /// >= (unsigned)
    Ge = 0x30,
    /// !=
    Ne = 0x50,
    /// < (unsigned)
    Lt = 0xa0,
    /// < (signed)
    Slt = 0xc0,
}

fn insn(code: u8, dst: Reg, src: Reg, off: i16, imm: i32) -> Insn {
    Insn {
        code,
        dst: dst.0,
        src: src.0,
        off,
        imm,
    }
}

/// `dst OP= imm`.
pub fn alu_imm(op: Alu, dst: Reg, imm: i32) -> Insn {
    insn(ALU64 | K | op as u8, dst, Reg(0), 0, imm)
}

/// `dst OP= src`.
pub fn alu_reg(op: Alu, dst: Reg, src: Reg) -> Insn {
    insn(ALU64 | X | op as u8, dst, src, 0, 0)
}

/// `dst = *(size *)(src + off)`.
pub fn load(size: Size, dst: Reg, src: Reg, off: i16) -> Insn {
    insn(LDX | MEM | size.bits(), dst, src, off, 0)
}

/// `*(size *)(dst + off) = src`.
pub fn store(size: Size, dst: Reg, off: i16, src: Reg) -> Insn {
    insn(STX | MEM | size.bits(), dst, src, off, 0)
}

/// `*(size *)(dst + off) = imm`.
pub fn store_imm(size: Size, dst: Reg, off: i16, imm: i32) -> Insn {
    insn(ST | MEM | size.bits(), dst, Reg(0), off, imm)
}

/// `if dst COND imm goto +off`.
pub fn jump_imm(c: Cond, dst: Reg, imm: i32, off: i16) -> Insn {
    insn(JMP | K | c as u8, dst, Reg(0), off, imm)
}

/// `if dst COND src goto +off`.
pub fn jump_reg(c: Cond, dst: Reg, src: Reg, off: i16) -> Insn {
    insn(JMP | X | c as u8, dst, src, off, 0)
}

/// `src = atomic_fetch_add((size *)(dst + off), src)` (Linux 5.12, `BPF_ATOMIC` with
/// `BPF_FETCH`): adds `src` to the memory and gives `src` the value it held before, as one
/// indivisible step; the JITs make it a full barrier (`lock xadd`, `ldaddal`).
pub fn atomic_fetch_add(size: Size, dst: Reg, off: i16, src: Reg) -> Insn {
    insn(STX | ATOMIC | size.bits(), dst, src, off, FETCH)
}

/// `src = xchg((size *)(dst + off), src)` (Linux 5.12): a store that is also a full barrier
/// (earlier stores are visible to other CPUs before it).
pub fn atomic_xchg(size: Size, dst: Reg, off: i16, src: Reg) -> Insn {
    insn(STX | ATOMIC | size.bits(), dst, src, off, XCHG)
}

/// `goto +off`.
pub fn goto(off: i16) -> Insn {
    insn(JMP, Reg(0), Reg(0), off, 0)
}

/// A call of the kernel helper numbered `helper`.
pub fn call(helper: i32) -> Insn {
    insn(JMP | 0x80, Reg(0), Reg(0), 0, helper)
}

/// `exit` (returns R0).
pub fn exit() -> Insn {
    insn(JMP | 0x90, Reg(0), Reg(0), 0, 0)
}

/// `dst = imm64`: two instruction slots; `src` 1 (`BPF_PSEUDO_MAP_FD`) makes `imm` a map's
/// file descriptor the kernel replaces with the map.
fn ld_imm64(dst: Reg, src: u8, imm: u64) -> [Insn; 2] {
    [
        insn(LD | IMM | 0x18, dst, Reg(src), 0, imm as u32 as i32),
        insn(0, Reg(0), Reg(0), 0, (imm >> 32) as u32 as i32),
    ]
}

/// `dst = imm` for any 64-bit value.
pub fn mov64(dst: Reg, imm: u64) -> [Insn; 2] {
    ld_imm64(dst, 0, imm)
}

/// `dst = the map of file descriptor fd`.
pub fn map_fd(dst: Reg, fd: i32) -> [Insn; 2] {
    ld_imm64(dst, 1, fd as u32 as u64)
}

/// The kernel's wire form: 8 bytes each, little-endian fields (the byte order of x86-64 and
/// aarch64, the targets rtscope builds for).
pub fn encode(insns: &[Insn]) -> Vec<u64> {
    insns
        .iter()
        .map(|i| {
            u64::from(i.code)
                | u64::from((i.src << 4) | (i.dst & 0x0f)) << 8
                | u64::from(i.off as u16) << 16
                | u64::from(i.imm as u32) << 32
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes of one encoded instruction, in memory order.
    fn bytes(i: Insn) -> [u8; 8] {
        encode(&[i])[0].to_le_bytes()
    }

    #[test]
    fn instructions_encode_as_the_kernel_documents() {
        // r0 = 0: BPF_ALU64 | BPF_K | BPF_MOV = 0xb7.
        assert_eq!(bytes(alu_imm(Alu::Mov, R0, 0)), [0xb7, 0, 0, 0, 0, 0, 0, 0]);
        // exit: 0x95.
        assert_eq!(bytes(exit()), [0x95, 0, 0, 0, 0, 0, 0, 0]);
        // call 14 (bpf_get_current_pid_tgid): 0x85, imm 14.
        assert_eq!(bytes(call(14)), [0x85, 0, 0, 0, 14, 0, 0, 0]);
        // r2 = *(u64 *)(r6 + 24): BPF_LDX | BPF_MEM | BPF_DW = 0x79, dst 2, src 6.
        assert_eq!(
            bytes(load(Size::Dw, R2, R6, 24)),
            [0x79, 0x62, 24, 0, 0, 0, 0, 0]
        );
        // *(u32 *)(r10 - 4) = r1: BPF_STX | BPF_MEM | BPF_W = 0x63, dst 10, src 1, off -4.
        assert_eq!(
            bytes(store(Size::W, R10, -4, R1)),
            [0x63, 0x1a, 0xfc, 0xff, 0, 0, 0, 0]
        );
        // *(u64 *)(r9 + 8) = 3: BPF_ST | BPF_MEM | BPF_DW = 0x7a.
        assert_eq!(
            bytes(store_imm(Size::Dw, R9, 8, 3)),
            [0x7a, 9, 8, 0, 3, 0, 0, 0]
        );
        // if r1 != r2 goto +5: BPF_JMP | BPF_X | BPF_JNE = 0x5d.
        assert_eq!(
            bytes(jump_reg(Cond::Ne, R1, R2, 5)),
            [0x5d, 0x21, 5, 0, 0, 0, 0, 0]
        );
        // if r0 == 0 goto +2: 0x15.
        assert_eq!(
            bytes(jump_imm(Cond::Eq, R0, 0, 2)),
            [0x15, 0, 2, 0, 0, 0, 0, 0]
        );
        // r7 -= r0: BPF_ALU64 | BPF_X | BPF_SUB = 0x1f.
        assert_eq!(
            bytes(alu_reg(Alu::Sub, R7, R0)),
            [0x1f, 0x07, 0, 0, 0, 0, 0, 0]
        );
        // r1 = *(u8 *)(r6 + 9): 0x71.
        assert_eq!(load(Size::B, R1, R6, 9).code, 0x71);
        assert_eq!(goto(-1).code, 0x05);
        assert_eq!(jump_reg(Cond::Slt, R1, R2, 0).code, 0xcd);
        assert_eq!(jump_reg(Cond::Lt, R1, R2, 0).code, 0xad);
        assert_eq!(jump_reg(Cond::Ge, R1, R2, 0).code, 0x3d);
        assert_eq!(jump_imm(Cond::Gt, R1, 9, 0).code, 0x25);
        assert_eq!(alu_imm(Alu::And, R1, 0x10).code, 0x57);
        assert_eq!(alu_imm(Alu::Rsh, R1, 32).code, 0x77);
        assert_eq!(alu_imm(Alu::Add, R1, -16).code, 0x07);
        assert_eq!(alu_imm(Alu::Lsh, R1, 5).code, 0x67);
        assert_eq!(alu_reg(Alu::Or, R1, R2).code, 0x4f);
        // lock *(u64 *)(r8 + 0) fetch-add r1: BPF_STX | BPF_ATOMIC | BPF_DW = 0xdb, imm 1.
        assert_eq!(
            bytes(atomic_fetch_add(Size::Dw, R8, 0, R1)),
            [0xdb, 0x18, 0, 0, 1, 0, 0, 0]
        );
        // xchg on a u32: 0xc3, imm 0xe1.
        assert_eq!(
            bytes(atomic_xchg(Size::W, R8, 8, R1)),
            [0xc3, 0x18, 8, 0, 0xe1, 0, 0, 0]
        );
    }

    #[test]
    fn a_64_bit_immediate_takes_two_slots_and_a_map_is_marked_by_its_source_register() {
        let [a, b] = mov64(R2, 0xffff_ffff_8110_0000);
        assert_eq!(bytes(a), [0x18, 0x02, 0, 0, 0x00, 0x00, 0x10, 0x81]);
        assert_eq!(bytes(b), [0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]);
        let [m, n] = map_fd(R1, 7);
        assert_eq!(bytes(m), [0x18, 0x11, 0, 0, 7, 0, 0, 0]);
        assert_eq!(bytes(n), [0; 8]);
    }
}

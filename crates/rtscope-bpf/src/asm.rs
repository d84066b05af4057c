//! A program under construction: instructions with named jump targets, resolved when done.

use crate::insn::Insn;
use std::collections::HashMap;

/// Instructions and the labels their jumps go to.
#[derive(Debug, Default)]
pub struct Asm {
    code: Vec<Insn>,
    jumps: Vec<(usize, &'static str)>,
    labels: HashMap<&'static str, usize>,
}

impl Asm {
    /// Appends instructions.
    pub fn op(&mut self, insns: impl IntoIterator<Item = Insn>) {
        self.code.extend(insns);
    }

    /// Appends a jump to `label` (its offset filled in by [`Asm::finish`]).
    pub fn jump(&mut self, insn: Insn, label: &'static str) {
        self.jumps.push((self.code.len(), label));
        self.code.push(insn);
    }

    /// Marks the next instruction as `label`.
    pub fn label(&mut self, label: &'static str) {
        self.labels.insert(label, self.code.len());
    }

    /// The instructions, every jump's offset resolved; `None` if a label is missing or a
    /// jump goes backwards (the programs only jump forward: no loops for the verifier).
    pub fn finish(mut self) -> Option<Vec<Insn>> {
        for (at, label) in &self.jumps {
            let to = *self.labels.get(label)?;
            let off = to.checked_sub(at + 1)?;
            self.code[*at].off = i16::try_from(off).ok()?;
        }
        Some(self.code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::insn::{alu_imm, exit, goto, jump_imm, Alu, Cond, R0};

    #[test]
    fn forward_jumps_get_the_distance_to_their_label() {
        let mut a = Asm::default();
        a.jump(jump_imm(Cond::Eq, R0, 0, 0), "out");
        a.op([alu_imm(Alu::Mov, R0, 1)]);
        a.jump(goto(0), "out");
        a.op([alu_imm(Alu::Mov, R0, 2)]);
        a.label("out");
        a.op([exit()]);
        let code = a.finish().unwrap();
        assert_eq!((code[0].off, code[2].off), (3, 1));
        let mut missing = Asm::default();
        missing.jump(goto(0), "nowhere");
        assert!(missing.finish().is_none());
        let mut back = Asm::default();
        back.label("top");
        back.jump(goto(0), "top");
        assert!(back.finish().is_none());
    }
}

//! The late-only programs run by the kernel on synthetic contexts (`BPF_PROG_TEST_RUN`): the
//! instructions the loader builds, checked by the real verifier, compiled by the real JIT and
//! calling the real helpers on real maps, then judged by what they leave in those maps and in
//! the ring buffer (docs/bpf.md, "How they are tested"). [`rig`] is the harness, [`cases`]
//! the cases, [`snapshot`] the checked-in listing of every program the loader can build.

mod cases;
pub(crate) mod rig;
mod snapshot;

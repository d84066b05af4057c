//! Release size on the boards: the static release binary drops the unwind tables of the Rust code.
//!
//! The release profile aborts on panic and strips symbols, so `.eh_frame` serves only the
//! address-only backtrace of a panic (`RUST_BACKTRACE=1`); on x86-64 it was 420 KB
//! (BENCHMARKS.md, "Release binaries"). rustc cannot leave it out under LTO
//! (`-C force-unwind-tables=no` is lost when the standard library's bitcode is linked in), so
//! the link discards the `.eh_frame` input sections of the Rust objects (`*.rcgu.o`; on 32-bit
//! ARM their `.ARM.exidx`/`.ARM.extab` unwind index and table, 66 KB); the C
//! start-up files and libc keep theirs. A panic still prints its message and location and
//! aborts (exit 134). Only for static (musl, or `+crt-static`) Linux builds with the release
//! profile, which sets `panic = "abort"` (cargo tells build scripts the profile's name, not its
//! panic strategy); linked by GNU ld or lld.

use std::env;
use std::fs;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let release = env::var("PROFILE").is_ok_and(|p| p == "release");
    let linux = env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    let musl = env::var("CARGO_CFG_TARGET_ENV").is_ok_and(|e| e == "musl");
    let static_crt = env::var("CARGO_CFG_TARGET_FEATURE")
        .is_ok_and(|features| features.split(',').any(|f| f == "crt-static"));
    if !(release && linux && (musl || static_crt)) {
        return;
    }
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let script = out.join("discard-rust-eh-frame.ld");
    fs::write(
        &script,
        "SECTIONS { /DISCARD/ : { *.rcgu.o(.eh_frame .ARM.exidx* .ARM.extab*) } } INSERT AFTER .text;\n",
    )
    .expect("OUT_DIR is writable");
    println!("cargo:rustc-link-arg-bins=-Wl,-T,{}", script.display());
}

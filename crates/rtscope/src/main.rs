//! The rtscope binary: everything lives in `rtscope-cli`, but the static build's allocator.

// The allocator is the static (musl) build's; clippy lints it on every target (`cfg(clippy)`),
// so that CI's clippy of the host covers it and the musl targets' lint is only the engine's
// target-specific code (tests/guest/ci.sh).
#[cfg(any(target_env = "musl", clippy))]
mod alloc;

fn main() -> std::process::ExitCode {
    #[cfg(any(target_env = "musl", clippy))]
    alloc::init();
    rtscope_cli::main_with_args(std::env::args_os().collect()).into()
}

//! The rtscope binary: everything lives in `rtscope-cli`, but the static build's allocator.

#[cfg(target_env = "musl")]
mod alloc;

fn main() -> std::process::ExitCode {
    #[cfg(target_env = "musl")]
    alloc::init();
    rtscope_cli::main_with_args(std::env::args_os().collect()).into()
}

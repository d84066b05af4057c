//! The rtscope binary: everything lives in `rtscope-cli`.

fn main() -> std::process::ExitCode {
    rtscope_cli::main_with_args(std::env::args_os().collect()).into()
}

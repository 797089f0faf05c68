//! Entry point: everything lives in the library; this maps its outcome to an exit code.
fn main() -> std::process::ExitCode {
    agent::main_with_args(std::env::args_os())
}

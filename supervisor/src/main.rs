//! The `agent-runner` binary: a thin layer over [`agent_runner::cli`].

fn main() -> std::process::ExitCode {
    agent_runner::cli::main()
}

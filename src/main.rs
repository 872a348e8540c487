//! `agent-dispatch`: the binary edge. Parses arguments, runs one command, maps errors to exit
//! codes (0 success, 1 dispatch failure, 2 usage error). Everything else lives in the library.

mod cli;

use clap::Parser;

fn main() -> std::process::ExitCode {
    let args = cli::Cli::parse();
    // One thread: PR_SET_PDEATHSIG fires when the *thread* that spawned a child exits, so every
    // child is spawned from this one, long-lived thread.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("agent-dispatch: cannot start the async runtime: {e}");
            return std::process::ExitCode::from(1);
        }
    };
    let outcome = runtime.block_on(cli::execute(args));
    // Do not wait for blocking reads that never end: the lifeline's read of stdin parks a
    // blocking-pool thread until the caller closes the pipe, and a caller that keeps it open
    // until our exit would otherwise wait for us forever.
    runtime.shutdown_background();
    match outcome {
        Ok(code) => code,
        Err(e) => {
            eprintln!("agent-dispatch: {e:#}");
            std::process::ExitCode::from(1)
        }
    }
}

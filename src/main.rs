use std::io::Write as _;

use clap::Parser;

fn main() {
    let cli = mongo_stress::cli::Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            // A closed stderr (`2>&1 | head`) is no reason to panic: see `console`.
            let _ = writeln!(
                std::io::stderr(),
                "error: cannot start the async runtime: {e}"
            );
            std::process::exit(mongo_stress::error::exit::ERRORS);
        }
    };
    let code = match runtime.block_on(mongo_stress::main(cli)) {
        Ok(code) => code,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "error: {e}");
            e.exit_code()
        }
    };
    // Tasks still blocked on a dead server must not delay the exit.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    std::process::exit(code);
}

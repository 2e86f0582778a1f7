use clap::Parser;

fn main() {
    let cli = mongo_stress::cli::Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            std::process::exit(mongo_stress::error::exit::ERRORS);
        }
    };
    let code = match runtime.block_on(mongo_stress::main(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            e.exit_code()
        }
    };
    // Tasks still blocked on a dead server must not delay the exit.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    std::process::exit(code);
}

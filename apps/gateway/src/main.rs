//! `gateway`: serve, work, migrate, administer.

use clap::Parser;
use gateway::cli::{Cli, Command};
use gateway::config::Config;

#[actix_web::main]
async fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let mut config = match Config::from_env() {
        Ok(config) => config,
        Err(message) => {
            eprintln!("configuration: {message}");
            return std::process::ExitCode::from(2);
        }
    };
    gateway::serve::init_logging(config.log_format);
    let result = match cli.command {
        Command::Serve { addr } => {
            if let Some(addr) = addr {
                config.addr = addr;
            }
            gateway::serve::serve(config).await
        }
        Command::Worker => gateway::serve::work(config).await,
        Command::Migrate => store::migrate::run(&config.database_url)
            .await
            .map(|ran| println!("{ran} migrations applied"))
            .map_err(|e| e.message.clone()),
        Command::Admin(admin) => {
            gateway::cli::admin::run(admin, &config).await.map(|out| println!("{out}")).map_err(|e| {
                let fields: Vec<String> = e.errors.iter().map(|(f, m)| format!("{f}: {}", m.join("; "))).collect();
                if fields.is_empty() { e.message.clone() } else { format!("{} ({})", e.message, fields.join(", ")) }
            })
        }
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            std::process::ExitCode::FAILURE
        }
    }
}

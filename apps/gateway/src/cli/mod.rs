//! The command line: `serve`, `worker`, `migrate` and `admin`.

pub mod admin;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "gateway",
    version,
    about = "Multi-tenant messaging and commerce API: HTTP gateway, workers and admin"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve HTTP and run the background workers.
    Serve {
        /// Address to listen on (default: SVC_ADDR or 127.0.0.1:8080).
        #[arg(long)]
        addr: Option<std::net::SocketAddr>,
    },
    /// Run only the background workers.
    Worker,
    /// Apply pending database migrations.
    Migrate,
    /// Operator commands: tenants, users, keys, wallet, modules, demo data.
    Admin(admin::Admin),
}

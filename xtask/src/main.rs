//! Developer and CI entry points: `cargo xtask run | test | ci | bench`.
//!
//! Depends on none of the workspace's own crates, so it builds in seconds on a clean machine.

mod bench;
mod browser;
mod ci;
mod fuzz;
mod process;
mod run;
mod test;

use std::env;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
/// The local PostgreSQL clusters (dev, test, bench).
use pg_cluster as pg;

use crate::process::Interrupts;

/// Every failure ends up as a message for a person; no caller needs to tell them apart.
pub type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

#[derive(Parser)]
#[command(name = "cargo xtask", bin_name = "cargo xtask", about = "Developer and CI entry points")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start a local PostgreSQL under target/, migrate, make a demo tenant and key, and serve
    Run {
        /// Address the gateway listens on
        #[arg(long, default_value = "127.0.0.1:8080")]
        addr: String,
    },
    /// Run every test of the workspace against a throwaway PostgreSQL cluster
    Test {
        /// Passed on to `cargo test`, e.g. `-p kernel -- --nocapture` (a `--` right after
        /// `test` is optional)
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        cargo_test_args: Vec<String>,
    },
    /// What CI runs: format check, clippy with warnings denied, then `test`
    Ci,
    /// Schemathesis over the OpenAPI description against a release gateway with seeded data:
    /// no server error, no undocumented status, no schema-violating request accepted
    Fuzz {
        /// Schemathesis's phases; `fuzzing` generates cases until the time budget is spent or
        /// each operation has `--max-examples` of them; `stateful` chains calls along the links
        /// it infers (an id a create answered, then read, changed, deleted)
        #[arg(long, default_value = "examples,coverage,fuzzing,stateful")]
        phases: String,
        /// Time budget of the schemathesis run, in seconds
        #[arg(long, default_value_t = 300)]
        max_time: u64,
        /// Cases per operation in the fuzzing phase (default: schemathesis's)
        #[arg(long)]
        max_examples: Option<u32>,
        /// Seed of the generated cases, so that a failure can be replayed
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Accept this run's failures into xtask/fuzz-baseline.json and drop those it no
        /// longer finds
        #[arg(long)]
        update_baseline: bool,
    },
    /// Build the release gateway, load a fresh database, drive the API and the same work as raw
    /// SQL, and report rates, latencies and memory against the targets (target/bench/latest.json)
    Bench {
        /// A few seconds per workload instead of 20, to check that the bench still runs
        #[arg(long)]
        quick: bool,
        /// Run workload N alone (its number in the report), after the same setup
        #[arg(long, value_name = "N")]
        only: Option<u8>,
        /// Compare each API/raw ratio with xtask/bench-baseline.json; fail when one fell by
        /// more than a third
        #[arg(long)]
        check: bool,
        /// Write this run's ratios to xtask/bench-baseline.json
        #[arg(long)]
        save_baseline: bool,
        /// Load pg_stat_statements and auto_explain into the bench's server: the statements
        /// that took most of the database's time go to target/bench/statements.md, the plans of
        /// those over 30 ms to its log
        #[arg(long)]
        explain: bool,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match dispatch(cli.command).await {
        Ok(code) => code,
        Err(error) => {
            eprintln!("xtask: error: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn dispatch(command: Command) -> Result<ExitCode> {
    // Caught before anything starts, so that Ctrl-C never kills xtask before it has cleaned up.
    let mut interrupts = Interrupts::catch()?;
    let workspace = Workspace::locate()?;
    match command {
        Command::Run { addr } => run::run(&workspace, &mut interrupts, &addr).await,
        Command::Test { cargo_test_args } => test::test(&workspace, &mut interrupts, &cargo_test_args).await,
        Command::Ci => ci::ci(&workspace, &mut interrupts).await,
        Command::Fuzz { phases, max_time, max_examples, seed, update_baseline } => {
            fuzz::fuzz(
                &workspace,
                &mut interrupts,
                fuzz::Options { phases, max_time, max_examples, seed, update_baseline },
            )
            .await
        }
        Command::Bench { quick, only, check, save_baseline, explain } => {
            let options = bench::Options { quick, only, check, save_baseline, explain };
            bench::bench(&workspace, &mut interrupts, options).await
        }
    }
}

/// Where the workspace and its build output live, and which cargo to call.
pub struct Workspace {
    pub root: PathBuf,
    pub target: PathBuf,
    cargo: OsString,
}

impl Workspace {
    fn locate() -> Result<Self> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .ok_or("xtask's manifest folder has no parent")?
            .to_path_buf();
        // Cargo reads a relative CARGO_TARGET_DIR against the current directory; so do we.
        let target = match env::var_os("CARGO_TARGET_DIR") {
            Some(dir) => env::current_dir()?.join(dir),
            None => root.join("target"),
        };
        // `cargo run` tells us which cargo started us; use the same one for the children.
        let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        Ok(Self { root, target, cargo })
    }

    /// `cargo` run from the workspace root.
    pub fn cargo(&self) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(&self.cargo);
        cmd.current_dir(&self.root);
        cmd
    }
}

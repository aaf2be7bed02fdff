//! `cargo xtask ci`: format check, clippy with warnings denied, `cargo xtask test`, then
//! `cargo xtask fuzz`'s deterministic phases.

use std::process::{Command, ExitCode, Stdio};

use crate::process::{Interrupts, exit_code};
use crate::{Result, Workspace, fuzz, test};

const CHECKS: [&[&str]; 2] =
    [&["fmt", "--all", "--check"], &["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"]];

pub async fn ci(workspace: &Workspace, interrupts: &mut Interrupts) -> Result<ExitCode> {
    ensure_rustfmt_and_clippy(workspace);
    for args in CHECKS {
        println!("xtask: cargo {}", args.join(" "));
        let status = interrupts.run(workspace.cargo().args(args)).await?;
        if !status.success() {
            eprintln!("xtask: `cargo {}` failed ({status})", args.join(" "));
            return Ok(exit_code(status));
        }
    }
    println!("xtask: cargo xtask test");
    let tested = test::test(workspace, interrupts, &[]).await?;
    if tested != ExitCode::SUCCESS {
        return Ok(tested);
    }
    println!("xtask: cargo xtask fuzz --phases {FUZZ_PHASES} --max-time {FUZZ_SECONDS}");
    let phases = FUZZ_PHASES.to_owned();
    let options = fuzz::Options { phases, max_time: FUZZ_SECONDS, max_examples: None, seed: 1, update_baseline: false };
    fuzz::fuzz(workspace, interrupts, options).await
}

/// The deterministic phases: every operation's boundary and refusal cases, derived from the
/// description, so CI's answer does not depend on how many random cases fit in its time. The
/// fuzzing phase stays out: its accepted failures (the baseline's rules) are shrunk on every
/// run, so `--max-examples` does not bound it (30 per operation still ran 31,839 cases into a
/// 900 s limit), and which cases a time budget reaches would decide CI's answer.
const FUZZ_PHASES: &str = "examples,coverage";
/// A bound, not a target: the coverage phase takes under a minute.
const FUZZ_SECONDS: u64 = 600;

/// A minimal toolchain lacks these components; rustup can add them.
fn ensure_rustfmt_and_clippy(workspace: &Workspace) {
    let works = |tool: &str| {
        workspace
            .cargo()
            .as_std_mut()
            .args([tool, "--version"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    };
    if works("fmt") && works("clippy") {
        return;
    }
    println!("xtask: rustup component add rustfmt clippy");
    // When this fails, the check itself says what is missing.
    if let Err(error) =
        Command::new("rustup").args(["component", "add", "rustfmt", "clippy"]).current_dir(&workspace.root).status()
    {
        eprintln!("xtask: cannot run rustup: {error}");
    }
}

//! Running child processes so that a signal stops them, not xtask: xtask has to outlive its
//! children to stop the PostgreSQL it started and delete the throwaway cluster.

use std::os::unix::process::ExitStatusExt;
use std::process::{ExitCode, ExitStatus, Output};
use std::task::{Context, Waker};

use tokio::process::Command;
use tokio::signal::unix::{Signal, SignalKind, signal};

use crate::Result;

/// SIGINT and SIGTERM, caught for the rest of the process.
pub struct Interrupts {
    interrupt: Signal,
    terminate: Signal,
    seen: bool,
}

impl Interrupts {
    pub fn catch() -> Result<Self> {
        Ok(Self {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
            seen: false,
        })
    }

    /// Fails once a signal has come, so that no further step starts after one.
    fn check(&mut self) -> Result<()> {
        // Poll without waiting: a signal that came between two steps is still queued here.
        let mut cx = Context::from_waker(Waker::noop());
        if self.interrupt.poll_recv(&mut cx).is_ready() || self.terminate.poll_recv(&mut cx).is_ready() {
            self.seen = true;
        }
        if self.seen { Err("interrupted".into()) } else { Ok(()) }
    }

    /// Runs `cmd` to its end with stdio as configured on it.
    pub async fn run(&mut self, cmd: &mut Command) -> Result<ExitStatus> {
        Ok(self.output(cmd).await?.status)
    }

    /// Runs `cmd` to its end; stdout/stderr are collected where `cmd` pipes them.
    ///
    /// Ctrl-C in a terminal reaches the whole foreground process group, the child included, so
    /// on SIGINT we only wait for the child to stop. SIGTERM reaches xtask alone: we pass it on.
    pub async fn output(&mut self, cmd: &mut Command) -> Result<Output> {
        self.check()?;
        let name = describe(cmd.as_std());
        let child = cmd.spawn().map_err(|e| format!("cannot start `{name}`: {e}"))?;
        let pid = child.id();
        let output = child.wait_with_output();
        tokio::pin!(output);
        loop {
            tokio::select! {
                result = &mut output => {
                    return result.map_err(|e| format!("waiting for `{name}`: {e}").into());
                }
                _ = self.interrupt.recv() => {
                    self.seen = true;
                    eprintln!("xtask: interrupted; waiting for `{name}` to stop");
                }
                _ = self.terminate.recv() => {
                    self.seen = true;
                    if let Some(pid) = pid {
                        eprintln!("xtask: terminated; passing SIGTERM on to `{name}`");
                        // Best effort: the child may have exited already.
                        let _ = std::process::Command::new("kill")
                            .args(["-TERM", &pid.to_string()])
                            .status();
                    }
                }
            }
        }
    }
}

pub use pg_cluster::describe;

/// Err naming `what` unless the child succeeded.
pub fn require_success(status: ExitStatus, what: &str) -> Result<()> {
    if status.success() { Ok(()) } else { Err(format!("`{what}` failed ({status})").into()) }
}

/// The exit code a shell would report for the child: its own, or 128 + signal.
pub fn exit_code(status: ExitStatus) -> ExitCode {
    if let Some(code) = status.code() {
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    match status.signal().and_then(|signal| u8::try_from(signal).ok()) {
        Some(signal) => ExitCode::from(128u8.saturating_add(signal)),
        None => ExitCode::FAILURE,
    }
}

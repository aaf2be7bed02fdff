//! `cargo xtask test`: every test of the workspace against a throwaway PostgreSQL cluster.

use std::fs;
use std::path::Path;
use std::process::ExitCode;

use crate::browser::Browser;
use crate::pg::{self, Cluster, Server};
use crate::process::{Interrupts, exit_code};
use crate::{Result, Workspace};

const DIR_PREFIX: &str = "test-postgres-";

pub async fn test(workspace: &Workspace, interrupts: &mut Interrupts, cargo_test_args: &[String]) -> Result<ExitCode> {
    let server = Server::locate()?;
    // Before the cluster starts: a missing browser fails the run at once, not after the build.
    let browser = Browser::locate()?;
    remove_old_clusters(&server, &workspace.target)?;

    let port = pg::free_port()?;
    let dir = workspace.target.join(format!("{DIR_PREFIX}{port}"));
    // Made before initdb, so that whatever fails from here on still cleans up.
    let mut throwaway = Throwaway(Cluster::new(&server, &dir)?);
    let cluster = &mut throwaway.0;
    cluster.init()?;
    cluster.start(port, pg::TEST_SETTINGS)?;
    cluster.wait_ready().await?;
    let url = cluster.url("postgres");
    println!("xtask: test cluster at {url} (DATABASE_URL)");

    // The crash tests run the real binary (kill it, start it again): build it first.
    let mut build = workspace.cargo();
    build.args(["build", "-p", "gateway", "--bin", "gateway"]);
    let built = interrupts.run(&mut build).await?;
    if !built.success() {
        eprintln!("xtask: building the gateway failed ({built})");
        return Ok(exit_code(built));
    }

    let mut cargo = workspace.cargo();
    cargo.arg("test");
    // `--workspace` would override a `-p` of the caller's.
    if !selects_packages(cargo_test_args) {
        cargo.arg("--workspace");
    }
    // Report every failing test binary, not only the first.
    cargo.arg("--no-fail-fast").args(cargo_test_args);
    cargo.env("DATABASE_URL", &url);
    cargo.env("SVC_GATEWAY_BIN", workspace.target.join("debug").join("gateway"));
    cargo.env("SVC_CHROMIUM", &browser.chromium);
    cargo.env("SVC_CHROMEDRIVER", &browser.chromedriver);
    let status = interrupts.run(&mut cargo).await?;
    if !status.success() {
        eprintln!("xtask: tests failed ({status})");
    }
    Ok(exit_code(status))
}

/// Stops the cluster and deletes its folder however the run ends: success, error or Ctrl-C.
struct Throwaway(Cluster);

impl Drop for Throwaway {
    fn drop(&mut self) {
        let cluster = &self.0;
        if cluster.is_running()
            && let Err(error) = cluster.stop()
        {
            eprintln!("xtask: could not stop the test cluster: {error}");
        }
        if cluster.dir().exists()
            && let Err(error) = fs::remove_dir_all(cluster.dir())
        {
            eprintln!("xtask: could not delete {}: {error}", cluster.dir().display());
        }
    }
}

/// Leftovers of runs that were killed before they could clean up. A cluster still running is
/// likely another `cargo xtask test` at work, so it stays.
fn remove_old_clusters(server: &Server, target: &Path) -> Result<()> {
    let Ok(entries) = fs::read_dir(target) else {
        return Ok(()); // no target/ yet: nothing left over
    };
    for entry in entries {
        let entry = entry?;
        let is_test_cluster = entry.file_name().to_str().is_some_and(|name| name.starts_with(DIR_PREFIX));
        if !is_test_cluster || !entry.file_type()?.is_dir() {
            continue;
        }
        let old = Cluster::new(server, &entry.path())?;
        if old.is_running() {
            println!(
                "xtask: leaving {} alone: a server runs there (stop it with `pg_ctl -D {} stop`)",
                old.dir().display(),
                old.dir().display()
            );
        } else {
            println!("xtask: removing the leftover {}", old.dir().display());
            fs::remove_dir_all(old.dir())?;
        }
    }
    Ok(())
}

/// Whether the arguments for cargo (those before a `--`) choose packages themselves.
fn selects_packages(args: &[String]) -> bool {
    args.iter().take_while(|arg| *arg != "--").any(|arg| {
        arg == "--package" || arg.starts_with("--package=") || (arg.starts_with("-p") && !arg.starts_with("--"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|arg| arg.to_string()).collect()
    }

    #[test]
    fn package_flags_replace_workspace() {
        assert!(selects_packages(&args(&["-p", "kernel"])));
        assert!(selects_packages(&args(&["-pkernel"])));
        assert!(selects_packages(&args(&["--package", "kernel"])));
        assert!(selects_packages(&args(&["--package=kernel"])));
        assert!(!selects_packages(&args(&[])));
        assert!(!selects_packages(&args(&["--release"])));
        // After `--` the arguments belong to the test binaries.
        assert!(!selects_packages(&args(&["--", "-p"])));
    }
}

//! A local PostgreSQL cluster in a folder of its own, run from the system's server binaries:
//! `cargo xtask` keeps its dev, test and bench clusters under target/, and a test that must stop
//! the database under a running gateway (the outage test) owns one too.

use std::env;
use std::fs;
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use tokio_postgres::{Client, NoTls};

pub type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// The throwaway test cluster dies with the run, so durability is switched off for speed.
pub const TEST_SETTINGS: &[&str] =
    &["fsync=off", "synchronous_commit=off", "full_page_writes=off", "max_connections=300", "shared_buffers=128MB"];

/// The dev cluster keeps its data between runs, so it keeps the safe defaults.
pub const DEV_SETTINGS: &[&str] = &["max_connections=200"];

const INSTALL_HINT: &str = "install the PostgreSQL server (Debian: apt-get install postgresql)";
const SERVER_BINARIES: [&str; 3] = ["initdb", "pg_ctl", "postgres"];

/// The server binaries, and how to run them.
#[derive(Clone)]
pub struct Server {
    bin_dir: PathBuf,
    /// initdb, pg_ctl and postgres refuse to run as root; then they run as the `postgres` user.
    as_postgres_user: bool,
}

impl Server {
    /// Finds the server binaries; as root on Debian, installs them when missing.
    pub fn locate() -> Result<Self> {
        let root = is_root()?;
        let bin_dir = match find_bin_dir() {
            Some(dir) => dir,
            None if root && is_debian() => {
                println!("xtask: PostgreSQL server not found; installing Debian's postgresql package");
                apt_install(&["postgresql"], INSTALL_HINT)?;
                find_bin_dir()
                    .ok_or_else(|| format!("the postgresql package installed no server binaries; {INSTALL_HINT}"))?
            }
            None => {
                return Err(format!(
                    "PostgreSQL server binaries ({}) are neither on PATH nor under \
                     /usr/lib/postgresql/*/bin; {INSTALL_HINT}",
                    SERVER_BINARIES.join(", ")
                )
                .into());
            }
        };
        if root {
            ensure_postgres_user()?;
        }
        Ok(Self { bin_dir, as_postgres_user: root })
    }

    fn command(&self, program: &str) -> Command {
        let program = self.bin_dir.join(program);
        let mut cmd = if self.as_postgres_user {
            let mut cmd = Command::new("runuser");
            cmd.args(["-u", "postgres", "--"]).arg(program);
            cmd
        } else {
            Command::new(program)
        };
        // The postgres user may not be allowed into our working directory; every path is absolute.
        cmd.current_dir("/");
        cmd
    }
}

/// Whether `start` launched the server or found it running already.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Started {
    Now,
    Earlier,
}

/// One cluster: its data folder and, once started, its port.
#[derive(Clone)]
pub struct Cluster {
    server: Server,
    dir: PathBuf,
    port: u16,
}

impl Cluster {
    pub fn new(server: &Server, dir: &Path) -> Result<Self> {
        Ok(Self { server: server.clone(), dir: std::path::absolute(dir)?, port: 0 })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Runs initdb unless the folder holds a cluster already.
    pub fn init(&self) -> Result<()> {
        if self.server.as_postgres_user {
            make_parents_traversable(&self.dir)?;
        }
        if self.dir.join("PG_VERSION").exists() {
            return Ok(());
        }
        self.make_empty_dir()?;
        let initdb = |locale: &str| {
            let mut cmd = self.server.command("initdb");
            cmd.arg("-D").arg(&self.dir).args(["-U", "postgres", "--auth=trust", "-E", "UTF8", locale]);
            cmd
        };
        if let Err(error) = output_checked(&mut initdb("--locale=C.UTF-8")) {
            // Not every system has the C.UTF-8 locale; the plain C locale does for our needs.
            eprintln!("xtask: initdb with C.UTF-8 failed, retrying with --no-locale: {error}");
            self.make_empty_dir()?;
            output_checked(&mut initdb("--no-locale"))?;
        }
        Ok(())
    }

    fn make_empty_dir(&self) -> Result<()> {
        if self.dir.exists() {
            fs::remove_dir_all(&self.dir)?;
        }
        fs::create_dir_all(&self.dir)?;
        if self.server.as_postgres_user {
            output_checked(Command::new("chown").arg("-R").arg("postgres:postgres").arg(&self.dir))?;
        }
        Ok(())
    }

    /// Whether a server runs on this folder (`pg_ctl status`).
    pub fn is_running(&self) -> bool {
        self.dir.join("postmaster.pid").exists()
            && self
                .server
                .command("pg_ctl")
                .arg("status")
                .arg("-D")
                .arg(&self.dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|status| status.success())
    }

    /// Starts the server on 127.0.0.1:`port` (TCP only), or reuses the one already running on
    /// this folder, whatever its port.
    pub fn start(&mut self, port: u16, settings: &[&str]) -> Result<Started> {
        if self.is_running() {
            let pid_file = fs::read_to_string(self.dir.join("postmaster.pid"))?;
            self.port = port_of_pid_file(&pid_file)
                .ok_or_else(|| format!("cannot read the port of the server running on {}", self.dir.display()))?;
            return Ok(Started::Earlier);
        }
        if port_in_use(port) {
            return Err(
                format!("port {port} on 127.0.0.1 is in use; stop what listens there or pick another port").into()
            );
        }
        let mut options = format!("-p {port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=''");
        for setting in settings {
            options.push_str(" -c ");
            options.push_str(setting);
        }
        let log = self.dir.join("server.log");
        let started = output_checked(
            self.server
                .command("pg_ctl")
                .arg("-D")
                .arg(&self.dir)
                .arg("-l")
                .arg(&log)
                .args(["-w", "-t", "60", "-o", &options, "start"]),
        );
        if let Err(error) = started {
            let log_tail = fs::read_to_string(&log).unwrap_or_default();
            let log_tail: Vec<&str> = log_tail.lines().rev().take(20).collect();
            let log_tail: Vec<&str> = log_tail.into_iter().rev().collect();
            return Err(format!(
                "PostgreSQL did not start: {error}\nlast lines of {}:\n{}",
                log.display(),
                log_tail.join("\n")
            )
            .into());
        }
        self.port = port;
        Ok(Started::Now)
    }

    /// Stops the server: fast (rolls back open transactions), immediate if that fails.
    pub fn stop(&self) -> Result<()> {
        let stop = |mode: &str| {
            output_checked(self.server.command("pg_ctl").arg("-D").arg(&self.dir).args(["-m", mode, "-w", "stop"]))
        };
        stop("fast").or_else(|error| {
            eprintln!("xtask: fast stop failed, stopping immediately: {error}");
            stop("immediate")
        })?;
        Ok(())
    }

    pub fn url(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port)
    }

    /// Creates `database` unless it exists.
    pub async fn create_database(&self, database: &str) -> Result<()> {
        let client = connect(&self.url("postgres")).await?;
        let exists = client.query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&database]).await?.is_some();
        if !exists {
            let quoted = database.replace('"', "\"\"");
            client.batch_execute(&format!("CREATE DATABASE \"{quoted}\"")).await?;
        }
        Ok(())
    }

    /// Waits until the server accepts connections (pg_ctl -w should have, but a reused
    /// server may still be starting up).
    pub async fn wait_ready(&self) -> Result<()> {
        let url = self.url("postgres");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match connect(&url).await {
                Ok(_) => return Ok(()),
                Err(_) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(error) => {
                    return Err(format!("PostgreSQL at {url} refuses connections: {error}").into());
                }
            }
        }
    }
}

async fn connect(url: &str) -> Result<Client> {
    let (client, connection) = tokio_postgres::connect(url, NoTls).await?;
    // The connection does the I/O; it ends when the client is dropped.
    tokio::spawn(connection);
    Ok(client)
}

/// A port that was free a moment ago.
pub fn free_port() -> Result<u16> {
    Ok(TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?.local_addr()?.port())
}

pub fn port_in_use(port: u16) -> bool {
    TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_err()
}

/// postmaster.pid lines: pid, data folder, start time, port, ...
fn port_of_pid_file(pid_file: &str) -> Option<u16> {
    pid_file.lines().nth(3)?.trim().parse().ok()
}

/// The folder holding initdb, pg_ctl and postgres: from PATH, else Debian's newest version.
fn find_bin_dir() -> Option<PathBuf> {
    let has_all = |dir: &Path| SERVER_BINARIES.iter().all(|name| dir.join(name).is_file());
    for dir in env::split_paths(&env::var_os("PATH").unwrap_or_default()) {
        // Follow links (e.g. /usr/local/bin/initdb) so all three come from one version.
        if let Ok(initdb) = fs::canonicalize(dir.join("initdb"))
            && let Some(bin_dir) = initdb.parent()
            && has_all(bin_dir)
        {
            return Some(bin_dir.to_path_buf());
        }
    }
    let mut versions: Vec<(Vec<u32>, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let version = parse_version(entry.file_name().to_str()?)?;
            Some((version, entry.path().join("bin")))
        })
        .filter(|(_, bin_dir)| has_all(bin_dir))
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin_dir)| bin_dir)
}

/// "15" -> [15], "9.6" -> [9, 6]: compared as numbers so that 15 beats 9.6.
fn parse_version(name: &str) -> Option<Vec<u32>> {
    name.split('.').map(|part| part.parse().ok()).collect()
}

/// Whether this process runs as root (who may install packages, and whom PostgreSQL refuses).
pub fn is_root() -> Result<bool> {
    let output = output_checked(Command::new("id").arg("-u"))?;
    Ok(String::from_utf8_lossy(&output.stdout).trim() == "0")
}

/// Whether this is a Debian machine, where [`apt_install`] can install what is missing.
pub fn is_debian() -> bool {
    Path::new("/etc/debian_version").exists()
}

/// `apt-get update`, then `apt-get install -y` of `packages`, printing each step (as root on
/// Debian: see [`is_root`], [`is_debian`]); `hint` ends every error with what to do by hand.
pub fn apt_install(packages: &[&str], hint: &str) -> Result<()> {
    let install: Vec<&str> = ["install", "-y"].into_iter().chain(packages.iter().copied()).collect();
    for args in [&["update"][..], &install[..]] {
        println!("xtask: apt-get {}", args.join(" "));
        let status = Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .map_err(|e| format!("cannot run apt-get: {e}; {hint}"))?;
        if !status.success() {
            return Err(format!("`apt-get {}` failed ({status}); {hint}", args.join(" ")).into());
        }
    }
    Ok(())
}

/// Debian's package creates the user; a hand-built server may come without it.
fn ensure_postgres_user() -> Result<()> {
    let exists =
        Command::new("id").args(["-u", "postgres"]).stdout(Stdio::null()).stderr(Stdio::null()).status()?.success();
    if !exists {
        println!("xtask: creating the system user `postgres` to run the server as");
        output_checked(Command::new("useradd").args(["--system", "--user-group", "postgres"]))?;
    }
    Ok(())
}

/// The postgres user must be able to reach its data folder through every parent.
fn make_parents_traversable(dir: &Path) -> Result<()> {
    for parent in dir.ancestors().skip(1) {
        let Ok(metadata) = fs::metadata(parent) else {
            continue; // not created yet: create_dir_all makes it 0755
        };
        let mut permissions = metadata.permissions();
        if permissions.mode() & 0o001 == 0 {
            println!(
                "xtask: letting other users traverse {} (o+x) so that the postgres user reaches \
                 its data",
                parent.display()
            );
            permissions.set_mode(permissions.mode() | 0o001);
            fs::set_permissions(parent, permissions)?;
        }
    }
    Ok(())
}

/// A command as a shell would show it (in messages).
pub fn describe(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|part| part.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs a short command, collecting its output; Err carries what it printed.
fn output_checked(cmd: &mut Command) -> Result<Output> {
    let described = describe(cmd);
    let output = cmd.stdin(Stdio::null()).output().map_err(|e| format!("cannot run `{described}`: {e}"))?;
    if output.status.success() {
        return Ok(output);
    }
    let printed = [output.stdout.as_slice(), output.stderr.as_slice()].map(String::from_utf8_lossy).join("");
    Err(format!("`{described}` failed ({}):\n{}", output.status, printed.trim_end()).into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_is_the_fourth_line_of_postmaster_pid() {
        let pid_file = "4242\n/data\n1700000000\n54329\n\n127.0.0.1\n  1234  5678\nready   \n";
        assert_eq!(port_of_pid_file(pid_file), Some(54329));
        assert_eq!(port_of_pid_file("4242\n/data\n"), None);
    }

    #[test]
    fn versions_compare_as_numbers() {
        let mut versions = vec![parse_version("9.6"), parse_version("15"), parse_version("10")];
        versions.sort();
        assert_eq!(versions.pop(), Some(Some(vec![15])));
        assert_eq!(parse_version("main"), None);
    }

    #[test]
    fn a_bound_port_is_in_use() {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind");
        let port = listener.local_addr().expect("addr").port();
        assert!(port_in_use(port));
    }
}

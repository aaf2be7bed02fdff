//! A real `gateway serve` process for the crash tests: started on the test's database with
//! the settings a test chooses, killed with SIGKILL. `cargo xtask test` builds the binary and
//! names it in `SVC_GATEWAY_BIN`.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::process::{Child, Command};

/// One `gateway serve` process on its own port, killed when dropped.
pub struct Gateway {
    child: Child,
    pub url: String,
    log: PathBuf,
}

pub fn gateway_bin() -> String {
    let bin = std::env::var("SVC_GATEWAY_BIN").unwrap_or_else(|_| {
        panic!(
            "SVC_GATEWAY_BIN must name the gateway binary; run the tests with `cargo xtask test`, which builds \
             target/debug/gateway and sets it"
        )
    });
    assert!(std::path::Path::new(&bin).is_file(), "SVC_GATEWAY_BIN={bin} is not a file; build it first");
    bin
}

/// Where the gateway of `run` writes its log (kept when the test fails).
pub fn log_path(run: u32) -> PathBuf {
    std::env::temp_dir().join(format!("svc-crash-test-{}-{run}.log", std::process::id()))
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("address").port()
}

impl Gateway {
    /// Starts `gateway serve` on the test's database with `settings` (environment variables)
    /// and waits until `/ready` answers 200.
    pub async fn start(bin: &str, database_url: &str, run: u32, settings: &[(&str, &str)]) -> Self {
        let mut gateway = Self::spawn(bin, "serve", database_url, run, settings);
        gateway.wait_ready().await;
        gateway
    }

    /// Starts `gateway worker` (no HTTP; `url` names nothing) and waits until its heartbeat
    /// row is written, so it claims work from then on.
    pub async fn worker(bin: &str, database_url: &str, run: u32, settings: &[(&str, &str)]) -> Self {
        let mut worker = Self::spawn(bin, "worker", database_url, run, settings);
        let pid = worker.child.id().expect("a running worker");
        let pool = store::pool(database_url, 1).expect("pool");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(Some(status)) = worker.child.try_wait() {
                panic!("the worker exited ({status}); log:\n{}", worker.logs());
            }
            let sql = format!("SELECT 1 AS n FROM workers WHERE pid = {pid}");
            if !api_tests::sql_rows(&pool, &sql).await.is_empty() {
                return worker;
            }
            assert!(Instant::now() < deadline, "the worker never beat; log:\n{}", worker.logs());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn spawn(bin: &str, role: &str, database_url: &str, run: u32, settings: &[(&str, &str)]) -> Self {
        let port = free_port();
        let addr = format!("127.0.0.1:{port}");
        let log = log_path(run);
        let file = std::fs::File::create(&log).expect("log file");
        let mut command = Command::new(bin);
        command
            .arg(role)
            .env("DATABASE_URL", database_url)
            .env("SVC_ADDR", &addr)
            .env("SVC_PUBLIC_URL", format!("http://{addr}"))
            .env("SVC_RUN_MIGRATIONS", "false")
            .env("SVC_HTTP_WORKERS", "1")
            .env("SVC_PROVIDER_TIMEOUT_MS", "5000")
            .env("SVC_LOG_FORMAT", "text")
            .env("RUST_LOG", "info")
            // whatever the environment of the test run says, the process's lease is its default
            // unless the test sets it
            .env_remove("SVC_JOB_LEASE_SECONDS");
        for (name, value) in settings {
            command.env(name, value);
        }
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(file))
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {bin} {role}: {e}"));
        Self { child, url: format!("http://{addr}"), log }
    }

    async fn wait_ready(&mut self) {
        let client = providers::http_client().expect("client");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "the gateway exited before it was ready ({status}); log {}:\n{}",
                    self.log.display(),
                    self.logs()
                );
            }
            let ready = client.get(format!("{}/ready", self.url)).timeout(Duration::from_secs(2)).send().await;
            if ready.is_ok_and(|r| r.status().as_u16() == 200) {
                return;
            }
            assert!(Instant::now() < deadline, "the gateway never got ready; log:\n{}", self.logs());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// SIGKILL: no shutdown, no release of jobs, open transactions cut off.
    pub async fn kill(mut self) {
        self.child.start_kill().expect("SIGKILL");
        let status = self.child.wait().await.expect("wait");
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            assert_eq!(status.signal(), Some(9), "killed by SIGKILL: {status}");
        }
        #[cfg(not(unix))]
        let _ = status;
    }

    /// Everything the process wrote to stderr so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn logs(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }
}

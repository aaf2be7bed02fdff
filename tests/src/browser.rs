//! A real headless Chromium for the tests that need a browser (cookies, forms, redirects),
//! driven over WebDriver: each [`Browser`] runs its own chromedriver on a loopback port with a
//! profile folder of its own, and kills both when dropped, also when the test panics.
//!
//! `cargo xtask test` finds (or installs) the programs and names them in SVC_CHROMIUM and
//! SVC_CHROMEDRIVER; without those, Debian's /usr/bin/chromium and /usr/bin/chromedriver.

use std::fs;
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// chromedriver answers within a second; the margin is for a machine busy building.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// A headless Chromium session; [`Browser::client`] (or deref) drives it.
pub struct Browser {
    // Declared first so it is dropped first: its last clone asks chromedriver to end the session.
    client: Client,
    driver: Driver,
}

impl Browser {
    /// Starts chromedriver on a free 127.0.0.1 port and opens a session of a fresh headless
    /// Chromium that reaches nothing but this machine's loopback. Panics when it cannot.
    pub async fn start() -> Browser {
        let chromium = program("SVC_CHROMIUM", "/usr/bin/chromium");
        let chromedriver = program("SVC_CHROMEDRIVER", "/usr/bin/chromedriver");
        // The port was free a moment ago only; another process may take it first: try again.
        let mut attempt = 1;
        let driver = loop {
            let mut driver = Driver::spawn(&chromedriver);
            match driver.wait_ready().await {
                Ok(()) => break driver,
                // It exits when another process took the port first.
                Err(error) if attempt < 3 && driver.exited() => {
                    eprintln!("browser: chromedriver on port {}: {error}; once more", driver.port)
                }
                Err(error) => panic!("chromedriver never got ready: {error}\n{}", driver.log()),
            }
            attempt += 1;
        };
        let Value::Object(capabilities) = capabilities(&chromium, &driver.dir.join("profile")) else {
            unreachable!("capabilities are a JSON object")
        };
        let client = ClientBuilder::new(HttpConnector::new())
            .capabilities(capabilities)
            .connect(&format!("http://127.0.0.1:{}", driver.port))
            .await
            .unwrap_or_else(|e| panic!("cannot open a Chromium session: {e}\n{}", driver.log()));
        Browser { client, driver }
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Ends the session the polite way (Chromium quits), then kills and removes what is left.
    pub async fn close(self) {
        let Browser { client, driver } = self;
        if let Err(error) = client.close().await {
            eprintln!("browser: closing the session: {error}\n{}", driver.log());
        }
        drop(driver);
    }
}

impl std::ops::Deref for Browser {
    type Target = Client;

    fn deref(&self) -> &Client {
        &self.client
    }
}

/// Headless Chromium on a fresh profile that talks to loopback only.
fn capabilities(chromium: &Path, profile: &Path) -> Value {
    json!({
        "browserName": "chrome",
        "goog:chromeOptions": {
            "binary": chromium,
            "args": [
                "--headless=new",
                // Root (CI) cannot run Chromium's sandbox; the tests load only their own pages.
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                // No update checks, safe-browsing lists, sync or component downloads.
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                // Containers have a small /dev/shm; Chromium would crash on it.
                "--disable-dev-shm-usage",
                // Every name but loopback's fails to resolve: no lookup leaves the machine, and a
                // page that reaches for a real host fails at once instead of waiting.
                "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE localhost , EXCLUDE 127.0.0.1",
                // A proxy named in the environment would otherwise see (or fail) the requests.
                "--no-proxy-server",
                format!("--user-data-dir={}", profile.display()),
            ],
        },
    })
}

/// One chromedriver, leader of a process group of its own that the Chromium it starts joins,
/// and its folder (Chromium's profile, chromedriver's log). Drop kills the group and removes
/// the folder, so a panicking test leaves nothing behind.
struct Driver {
    process: Child,
    port: u16,
    dir: PathBuf,
}

impl Driver {
    fn spawn(chromedriver: &Path) -> Driver {
        static STARTED: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "svc-browser-{}-{}",
            std::process::id(),
            STARTED.fetch_add(1, Ordering::Relaxed)
        ));
        // A folder left by a killed run of the same pid would hold an old profile.
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .and_then(|listener| listener.local_addr())
            .expect("a free loopback port")
            .port();
        // No --allowed-ips / --allowed-origins: with either, chromedriver would listen on every
        // interface; without, it listens on loopback and takes commands from this machine only.
        let process = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .arg(format!("--log-path={}", dir.join("chromedriver.log").display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn();
        let process = match process {
            Ok(process) => process,
            Err(error) => {
                let _ = fs::remove_dir_all(&dir);
                panic!("cannot start {}: {error}", chromedriver.display())
            }
        };
        Driver { process, port, dir }
    }

    /// Until `GET /status` answers `"ready": true`.
    async fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if let Ok(Some(status)) = self.process.try_wait() {
                return Err(format!("it exited ({status})"));
            }
            if let Ok(status) = self.status().await
                && status["value"]["ready"] == true
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!("no ready answer on /status within {READY_TIMEOUT:?}"));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn exited(&mut self) -> bool {
        matches!(self.process.try_wait(), Ok(Some(_)))
    }

    /// chromedriver's `/status`, by hand: one small HTTP/1.1 exchange needs no client library.
    async fn status(&self) -> std::io::Result<Value> {
        let mut stream = tokio::net::TcpStream::connect((Ipv4Addr::LOCALHOST, self.port)).await?;
        // chromedriver refuses HTTP/1.0.
        let request = format!("GET /status HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n", self.port);
        stream.write_all(request.as_bytes()).await?;
        let mut response = Vec::new();
        let read = async {
            let mut chunk = [0; 4096];
            loop {
                let n = stream.read(&mut chunk).await?;
                response.extend_from_slice(&chunk[..n]);
                // The whole JSON body, or all there will be.
                if n == 0 || complete_json_body(&response).is_some() {
                    return std::io::Result::Ok(());
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(2), read).await??;
        complete_json_body(&response).ok_or_else(|| std::io::Error::other("no JSON answer"))
    }

    /// chromedriver's log, for a failure's message.
    fn log(&self) -> String {
        let path = self.dir.join("chromedriver.log");
        let log = fs::read_to_string(&path).unwrap_or_default();
        // The end says what went wrong; the start is the command line and capabilities.
        let tail: Vec<&str> = log.lines().rev().take(40).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        format!("chromedriver log ({}, last lines):\n{}", path.display(), tail.join("\n"))
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        // The whole group: chromedriver and every Chromium process it started.
        let group = format!("-{}", self.process.id());
        let killed = Command::new("kill").args(["-KILL", "--", &group]).stderr(Stdio::null()).status();
        if !killed.is_ok_and(|status| status.success()) {
            let _ = self.process.kill();
        }
        let _ = self.process.wait();
        // A Chromium process killed in the middle of a write may still add a file: once more.
        if fs::remove_dir_all(&self.dir).is_err() {
            std::thread::sleep(Duration::from_millis(200));
        }
        if self.dir.exists()
            && let Err(error) = fs::remove_dir_all(&self.dir)
        {
            eprintln!("browser: could not delete {}: {error}", self.dir.display());
        }
    }
}

/// The body of an HTTP response read so far, once it parses as JSON.
fn complete_json_body(response: &[u8]) -> Option<Value> {
    let start = response.windows(4).position(|window| window == b"\r\n\r\n")? + 4;
    serde_json::from_slice(&response[start..]).ok()
}

/// The program named in `variable`, else Debian's path.
fn program(variable: &str, default: &str) -> PathBuf {
    std::env::var_os(variable).filter(|value| !value.is_empty()).map_or_else(|| default.into(), PathBuf::from)
}

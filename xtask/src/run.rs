//! `cargo xtask run`: a local PostgreSQL in target/dev-postgres, a migrated `svc` database,
//! a demo tenant and key, and the gateway serving in the foreground.

use std::env;
use std::fs;
use std::path::Path;
use std::process::{ExitCode, Stdio};

use tokio::process::Command;

use crate::pg::{self, Cluster, Server, Started};
use crate::process::{Interrupts, exit_code, require_success};
use crate::{Result, Workspace};

const DEFAULT_PORT: u16 = 54329;
const PORT_VAR: &str = "SVC_DEV_PG_PORT";
const DATABASE: &str = "svc";

pub async fn run(workspace: &Workspace, interrupts: &mut Interrupts, addr: &str) -> Result<ExitCode> {
    let port = match env::var(PORT_VAR) {
        Ok(value) => value.parse().map_err(|_| format!("{PORT_VAR}={value} is not a port number"))?,
        Err(_) => DEFAULT_PORT,
    };
    let server = Server::locate()?;
    let mut cluster = Cluster::new(&server, &workspace.target.join("dev-postgres"))?;
    cluster.init()?;
    if !cluster.is_running() && pg::port_in_use(port) {
        return Err(
            format!("port {port} on 127.0.0.1 is in use; set {PORT_VAR} to another port for the dev database").into()
        );
    }
    let started = cluster.start(port, pg::DEV_SETTINGS)?;
    // Stop only a server this run started: one found running may serve another `xtask run`.
    let _stop = (started == Started::Now).then(|| StopOnExit(cluster.clone()));
    cluster.wait_ready().await?;
    cluster.create_database(DATABASE).await?;
    let database_url = cluster.url(DATABASE);

    println!("xtask: cargo build -p gateway");
    let status = interrupts.run(workspace.cargo().args(["build", "-p", "gateway"])).await?;
    require_success(status, "cargo build -p gateway")?;
    let gateway = workspace.target.join("debug").join("gateway");
    let gateway = |args: &[&str]| {
        let mut cmd = Command::new(&gateway);
        cmd.args(args).env("DATABASE_URL", &database_url).current_dir(&workspace.root);
        cmd
    };

    let status = interrupts.run(&mut gateway(&["migrate"])).await?;
    require_success(status, "gateway migrate")?;

    let demo_file = workspace.target.join("dev-postgres-demo.json");
    let mut demo = gateway(&["admin", "demo", "--json"]);
    if let Some(key) = saved_key(&demo_file) {
        demo.args(["--key", &key]);
    }
    let output = interrupts.output(demo.stdout(Stdio::piped())).await?;
    require_success(output.status, "gateway admin demo --json")?;
    let (json, key) = parse_demo(&String::from_utf8_lossy(&output.stdout))?;
    fs::write(&demo_file, format!("{json}\n"))?;

    // a fresh MCP connection of the demo user each run (its token is shown only once)
    let account: serde_json::Value = serde_json::from_str(&json)?;
    let (tenant, user) = (account["tenant_id"].to_string(), account["user_id"].to_string());
    let connection =
        ["admin", "mcp-connection", "create", "--tenant", &tenant, "--issuer", &user, "--scopes", DEMO_MCP_SCOPES];
    let mut connection = gateway(&connection);
    connection.args(["--name", "demo"]);
    let token = crate::bench::admin(interrupts, connection).await?;
    // and a fresh password for the consent page, so an MCP client can sign in through OAuth
    let password = demo_password()?;
    let login = ["admin", "user", "set-login", "--tenant", &tenant, "--user", &user, "--email", DEMO_EMAIL];
    set_login(gateway(&login), &password).await?;

    println!("Database: {database_url}");
    println!("API key: {key}");
    println!("curl -s -H 'Authorization: Bearer {key}' http://{addr}/api/v3/me");
    // an agent task on the scripted sandbox model (docs/api.md, "Agent tasks")
    let task = r#"{"instructions": "Find the demo leads.", "mode": "sync", "tools": ["find_leads"], "input": {"script": [{"tool": "find_leads", "arguments": {}}]}}"#;
    println!(
        "curl -s -H 'Authorization: Bearer {key}' -H 'Content-Type: application/json' -d '{task}' http://{addr}/api/engine/tasks"
    );
    println!("MCP: http://{addr}/mcp (streamable HTTP), Authorization: Bearer {token} (docs/mcp.md)");
    println!("MCP over OAuth: add http://{addr}/mcp to a client and sign in as {DEMO_EMAIL} / {password}");

    let mut serve = gateway(&["serve", "--addr", addr]);
    // Local development: webhook receivers may be on this machine (never on by default).
    if std::env::var_os("SVC_WEBHOOKS_ALLOW_LOOPBACK").is_none() {
        serve.env("SVC_WEBHOOKS_ALLOW_LOOPBACK", "1");
    }
    let status = interrupts.run(&mut serve).await?;
    Ok(exit_code(status))
}

/// Stops the dev server when `run` ends; its data stays for the next run.
struct StopOnExit(Cluster);

impl Drop for StopOnExit {
    fn drop(&mut self) {
        println!("xtask: stopping the dev database (data kept in {})", self.0.dir().display());
        if let Err(error) = self.0.stop() {
            eprintln!("xtask: could not stop the dev database: {error}");
        }
    }
}

/// The demo user's sign-in on the OAuth consent page.
const DEMO_EMAIL: &str = "demo@example.com";

/// 24 random letters and digits, new on every run.
fn demo_password() -> Result<String> {
    let mut bytes = [0u8; 12];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes)
        .map_err(|_| "no system randomness for the demo password")?;
    Ok(hex::encode(bytes))
}

/// `gateway admin user set-login`, the password on its standard input.
async fn set_login(mut cmd: Command, password: &str) -> Result<()> {
    use tokio::io::AsyncWriteExt;
    let what = crate::process::describe(cmd.as_std());
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::null()).spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(format!("{password}\n").as_bytes()).await?;
    }
    require_success(child.wait().await?, &what)
}

/// What the demo's MCP connection is granted: every server built so far, writes, sends and
/// deletes included.
const DEMO_MCP_SCOPES: &str =
    "mcp:use mcp:contacts mcp:messaging mcp:commerce mcp:data mcp:overview mcp:navigate mcp:write mcp:send mcp:delete";

/// The key a previous run saved, so that it stays the same across runs while valid.
fn saved_key(demo_file: &Path) -> Option<String> {
    let saved: serde_json::Value = serde_json::from_str(&fs::read_to_string(demo_file).ok()?).ok()?;
    Some(saved.get("key")?.as_str()?.to_owned())
}

/// The JSON object `gateway admin demo --json` printed, and its key. Tolerates other lines
/// around it by taking the last line that is such an object.
fn parse_demo(stdout: &str) -> Result<(String, String)> {
    let candidates = std::iter::once(stdout.trim()).chain(stdout.lines().rev().map(str::trim));
    for candidate in candidates {
        if let Ok(serde_json::Value::Object(object)) = serde_json::from_str(candidate)
            && let Some(key) = object.get("key").and_then(|key| key.as_str())
        {
            return Ok((candidate.to_owned(), key.to_owned()));
        }
    }
    let printed = match stdout.trim() {
        "" => "nothing",
        printed => printed,
    };
    let wanted = "`gateway admin demo --json` should print a JSON object with a \"key\"";
    Err(format!("{wanted}; it printed {printed}").into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_output_is_one_json_object() {
        let printed = "{\"tenant_id\":1,\"user_id\":2,\"key\":\"sk_abc\"}\n";
        let (json, key) = parse_demo(printed).expect("parses");
        assert_eq!(json, printed.trim());
        assert_eq!(key, "sk_abc");
    }

    #[test]
    fn demo_output_may_be_pretty_or_follow_other_lines() {
        let pretty = "{\n  \"tenant_id\": 1,\n  \"key\": \"sk_abc\"\n}\n";
        assert_eq!(parse_demo(pretty).expect("parses").1, "sk_abc");
        let with_log = "migrations up to date\n{\"key\":\"sk_def\"}\n";
        assert_eq!(parse_demo(with_log).expect("parses").1, "sk_def");
        assert!(parse_demo("no json here").is_err());
    }
}

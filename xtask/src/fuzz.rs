//! `cargo xtask fuzz`: the OpenAPI description and the parser must not drift. Schemathesis
//! (installed with pip into target/fuzz-venv, version pinned) reads `/api-docs/openapi.json`
//! from a release gateway on a fresh database seeded through the API, so that path ids
//! resolve, and runs its examples, coverage and fuzzing phases with every check: no server
//! error, no undocumented status, no schema-violating request accepted, no response that
//! breaks its schema, beyond the accepted failures of `xtask/fuzz-baseline.json`. The report
//! lands in target/fuzz/.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::time::Duration;

use reqwest::{Client, Method};
use serde_json::{Value, json};
use tokio::process::{Child, Command};
use tokio::time::Instant;

use crate::bench::{StopOnExit, admin, gateway_command};
use crate::pg::{self, Cluster, Server};
use crate::process::{Interrupts, exit_code, require_success};
use crate::{Result, Workspace};

/// The schemathesis the checks are written against; a newer one may add checks or change them.
const SCHEMATHESIS: &str = "schemathesis==4.32.5";
const DATABASE: &str = "fuzz";
/// The gateway's webhook delivery timeout during a run.
const WEBHOOK_TIMEOUT_SECONDS: &str = "5";
/// Warnings schemathesis fails the run on: a description that points at nothing. The other
/// that fails it, an operation refusing most of what its schema allows (`validation_mismatch`:
/// a limit the service checks that the schema does not state), is judged here after the run,
/// because schemathesis reads that setting for the whole run only, not per operation.
const FAIL_ON: &[&str] = &["unresolvable_reference"];

/// The operations whose refusals rest on a rule no JSON Schema can state: a number valid in its
/// numbering plan, a reference that must belong to the workspace, the stored record, columns
/// defined at run time. Each with its rule, which its 422 names (docs/architecture.md,
/// "Tests"): the positive-data check takes their 422 as an answer (every other status still
/// fails it, and every other check still applies), and the warning that they refuse most
/// generated bodies is shown without failing the run. Anything added here is a rule, not a gap.
const RULES: &[(&str, &str)] = &[
    ("POST /api/v3/contact-groups", "custom field keys unique once trimmed, in either shape"),
    ("PATCH /api/v3/contact-groups/{group}", "custom field keys unique once trimmed, in either shape"),
    ("POST /api/v3/contact-groups/{group}/contacts", "a number valid in its calling code's numbering plan"),
    ("POST /api/v3/contacts/{group_id}/store", "a number valid in its calling code's numbering plan"),
    (
        "PATCH /api/v3/contact-groups/{group}/contacts/{contact}",
        "a number valid in its calling code's numbering plan (a new country_code re-reads the stored number)",
    ),
    (
        "PATCH /api/v3/contacts/{group_id}/update/{uid}",
        "a number valid in its calling code's numbering plan (a new country_code re-reads the stored number)",
    ),
    ("POST /api/v3/sms/send", "a number valid in its calling code's numbering plan"),
    (
        "POST /api/v3/chat/send",
        "a number valid in its numbering plan, a sender of the account, and what the message type needs",
    ),
    (
        "POST /api/v3/chat/templates",
        "a name, a category and content: a body (or components with a BODY), a sample for each placeholder",
    ),
    ("PATCH /api/v3/chat/templates/{id}", "a sample for each placeholder; name, language and account unchanged"),
    ("POST /api/v3/chat/templates/sync", "a business account of the workspace"),
    ("POST /api/v3/chat/templates/{id}/deployments", "business accounts of the workspace"),
    ("POST /api/v3/chat/groups", "a business number of the account; invitees valid numbers; a stored invite template"),
    ("PATCH /api/v3/chat/groups/{id}", "a subject or a description to change, on an active group"),
    ("POST /api/v3/chat/groups/{id}/invites", "numbers valid in their numbering plan; a stored template"),
    (
        "POST /api/v3/chat/groups/{id}/messages",
        "a participant's message in the last 24 hours for a free-form message; a stored, approved template",
    ),
    ("POST /api/v3/chat/groups/{id}/pin", "a message of the group"),
    ("POST /api/v3/chat/groups/{id}/join-requests/approve", "pending join requests of the group"),
    ("POST /api/v3/chat/groups/{id}/join-requests/reject", "pending join requests of the group"),
    ("DELETE /api/v3/chat/groups/{id}/participants", "chat ids or numbers valid in their numbering plan"),
    (
        "POST /api/v3/chat/forms",
        "a form definition (pages of questions of the thirteen types) or a shop of the account; a business account",
    ),
    ("PATCH /api/v3/chat/forms/{form}", "a form definition (pages of questions of the thirteen types)"),
    ("POST /api/v3/chat/forms/{form}/send", "a customer of the account; the form live on their business account"),
    ("POST /api/v3/chat/forms/{form}/deployments", "business accounts of the workspace"),
    ("POST /api/v3/sms/blacklist", "a number valid in its calling code's numbering plan"),
    ("POST /api/v3/sms/campaign", "a sender_id the account may use"),
    ("POST /api/v3/leads", "a valid number; a conversation_id, call_id or custom field of the workspace"),
    ("PATCH /api/v3/leads/{lead}", "a reason to make a lead lost or unqualified; custom fields the workspace defines"),
    ("POST /api/v3/leads/{lead}/assign", "a user of the workspace"),
    (
        "PATCH /api/v3/webhooks/{webhook}",
        "a header sent as null keeps a stored value, which must exist; filters need a lead event",
    ),
    ("POST /api/v3/catalogues/{catalogue}/orders", "an Idempotency-Key already used with another body"),
    ("PUT /api/v3/catalogues/{catalogue}/products/{product}", "sale_price not above price (the stored one)"),
    (
        "PUT /api/v3/catalogues/{catalogue}/products/by-sku/{sku}",
        "sale_price not above price; a new code needs name and price",
    ),
    ("POST /api/v3/catalogues", "a business account of the workspace to connect to (waba_id, chat)"),
    ("PATCH /api/v3/catalogues/{catalogue}", "a business account of the workspace to connect to (waba_id, chat)"),
    ("POST /api/v3/catalogues/{catalogue}/feeds", "a public address the guard allows"),
    ("POST /api/v3/shop-links", "a shop, products or a category of the workspace; a customer whose window is open"),
    (
        "POST /api/v3/catalogues/send-product",
        "a product published on the platform; a sender and customer of the account",
    ),
    ("POST /api/v3/catalogues/send-product-list", "products published on the chat catalogue; a sender and customer"),
    ("POST /api/v3/catalogues/send-catalogue", "a shop on a chat catalogue; a sender and customer of the account"),
    ("POST /api/v3/data/tables/{table}/records", "the table's columns, defined at run time"),
    ("PATCH /api/v3/data/tables/{table}/records/{record}", "the table's columns, defined at run time"),
    ("GET /api/v3/data/tables/{table}/records", "a filter naming the table's run-time columns"),
    ("GET /api/v3/data/groups/{group}/overview", "from before to"),
    ("GET /api/engine/runs", "metadata_key and metadata_value together"),
    ("POST /api/v3/voice/otp", "a recipient that is a phone number; a code or a length, not both out of range"),
    ("POST /api/v3/voice/messages", "recipients that are phone numbers; exactly one of message and audio_url"),
    ("POST /api/v3/calls", "phone numbers; exactly one of connect and ivr; one action per menu option; menu keys"),
    (
        "POST /api/v3/call-campaigns",
        "a contact group of the account; exactly one of message, audio_url and ivr; calling hours' end after start",
    ),
    (
        "POST /api/engine/tasks",
        "instructions not blank; tool and server names the workspace offers (not agents); require_approval among the tools",
    ),
];

/// What the positive-data check accepts on the operations of [`RULES`]: schemathesis's default
/// and 422.
const RULE_STATUSES: &[&str] = &["2xx", "3xx", "401", "403", "404", "409", "422", "429", "5xx"];

/// What a run takes from the command line.
pub struct Options {
    /// Schemathesis's phases, comma-separated.
    pub phases: String,
    /// Time budget of the schemathesis run, in seconds.
    pub max_time: u64,
    /// Generated cases per operation in the fuzzing phase (schemathesis's default when unset):
    /// with the seed, a bound that makes the phase repeatable.
    pub max_examples: Option<u32>,
    pub seed: u64,
    /// Record this run's failures in the baseline (and drop those it no longer finds).
    pub update_baseline: bool,
}

/// The failures accepted for now, each a known gap between the description and the service
/// (docs/architecture.md, "Tests"); a failure not in it fails the run. Kept in the repository.
const BASELINE: &str = "xtask/fuzz-baseline.json";

pub async fn fuzz(workspace: &Workspace, interrupts: &mut Interrupts, options: Options) -> Result<ExitCode> {
    let Options { phases, max_time, max_examples, seed, update_baseline } = options;
    // reqwest is built without a default TLS provider; a client needs one even for plain HTTP.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let out = workspace.target.join("fuzz");
    fs::create_dir_all(&out)?;
    let schemathesis = install(workspace, interrupts).await?;

    println!("xtask: cargo build --release -p gateway");
    let status = interrupts.run(workspace.cargo().args(["build", "--release", "-p", "gateway"])).await?;
    require_success(status, "cargo build --release -p gateway")?;
    let gateway = workspace.target.join("release").join("gateway");

    let server = Server::locate()?;
    let mut cluster = StopOnExit(Cluster::new(&server, &workspace.target.join("fuzz-postgres"))?).wiped()?;
    cluster.0.init()?;
    cluster.0.start(pg::free_port()?, pg::TEST_SETTINGS)?;
    cluster.0.wait_ready().await?;
    cluster.0.create_database(DATABASE).await?;
    let database_url = cluster.0.url(DATABASE);
    let command = |args: &[&str]| gateway_command(&gateway, &database_url, &workspace.root, args);
    require_success(interrupts.run(&mut command(&["migrate"])).await?, "gateway migrate")?;
    let demo: Value = serde_json::from_str(&admin(interrupts, command(&["admin", "demo", "--json"])).await?)?;
    let key = demo["key"].as_str().ok_or("`gateway admin demo --json` printed no key")?.to_owned();
    let tenant = demo["tenant_id"].as_i64().ok_or("`gateway admin demo --json` printed no tenant_id")?.to_string();
    let file = out.join("seed.txt");
    fs::write(&file, "a file the fuzzer may read\n")?;
    let file = file.to_string_lossy().into_owned();
    let file_id = admin(interrupts, command(&["admin", "data-file", "add", "--tenant", &tenant, &file])).await?;

    let addr = format!("127.0.0.1:{}", pg::free_port()?);
    let log = out.join("gateway.log");
    // A receiver the fuzzer points a webhook at may never answer: a test send then waits for
    // the delivery timeout, kept under schemathesis's response-time limit (10 s).
    let mut gateway = command(&["serve", "--addr", &addr]);
    gateway.env("SVC_WEBHOOKS_TIMEOUT_SECONDS", WEBHOOK_TIMEOUT_SECONDS);
    let _gateway = serve(gateway, &addr, &log).await?;
    let api = Seeder::new(&addr, &key)?;
    let ids = api.seed(&file_id).await?;
    let config = out.join("schemathesis.toml");
    fs::write(&config, config_toml(&addr, &key, &ids, seed))?;
    println!("xtask: seeded {}; schemathesis for up to {max_time} s (config {})", ids.summary(), config.display());

    // Through `tee`, so the output streams and is also kept for the judgement below.
    let output = out.join("schemathesis.out");
    let mut run = Command::new("bash");
    run.args(["-o", "pipefail", "-c", r#""$@" | tee "$FUZZ_OUTPUT""#, "schemathesis"])
        .arg(&schemathesis)
        .env("FUZZ_OUTPUT", &output)
        .arg("--config-file")
        .arg(&config)
        .arg("run")
        .arg(format!("http://{addr}/api-docs/openapi.json"))
        .args(["--phases", &phases, "--checks", "all", "--max-time", &max_time.to_string()])
        .args(max_examples.map(|n| ["--max-examples".to_owned(), n.to_string()]).into_iter().flatten())
        .args(["--report", "junit,ndjson", "--report-dir"])
        .arg(out.join("report"))
        .arg("--baseline")
        .arg(workspace.root.join(BASELINE))
        .current_dir(&out);
    if update_baseline {
        run.args(["--baseline-update", "--baseline-prune"]);
    } else if !workspace.root.join(BASELINE).exists() {
        // schemathesis would create it from this run and pass.
        return Err(format!("{BASELINE} is missing; `cargo xtask fuzz --update-baseline` makes it").into());
    }
    let status = interrupts.run(&mut run).await?;
    println!("xtask: gateway log {}, reports in {}", log.display(), out.join("report").display());
    let output = fs::read_to_string(&output)?;
    let unstated: Vec<&str> =
        mismatched(&output).into_iter().filter(|op| !RULES.iter().any(|(known, _)| known == op)).collect();
    if !unstated.is_empty() {
        eprintln!(
            "xtask: these operations refuse most of what their schema allows, and no rule in \
             `RULES` says why: {}",
            unstated.join(", ")
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(exit_code(status))
}

/// The pinned schemathesis in its own virtual environment under target/, installed on first use.
async fn install(workspace: &Workspace, interrupts: &mut Interrupts) -> Result<PathBuf> {
    let venv = workspace.target.join("fuzz-venv");
    let bin = venv.join("bin").join("schemathesis");
    let pinned = SCHEMATHESIS.rsplit("==").next().unwrap_or_default();
    let version = std::process::Command::new(&bin).arg("--version").output();
    if version.is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains(pinned)) {
        return Ok(bin);
    }
    println!("xtask: python3 -m venv {} && pip install {SCHEMATHESIS}", venv.display());
    let status = interrupts.run(Command::new("python3").args(["-m", "venv"]).arg(&venv)).await?;
    require_success(status, "python3 -m venv (Debian: apt-get install python3-venv)")?;
    let pip = venv.join("bin").join("pip");
    let status = interrupts
        .run(Command::new(&pip).args(["install", "--quiet", "--disable-pip-version-check", SCHEMATHESIS]))
        .await?;
    require_success(status, &format!("pip install {SCHEMATHESIS}"))?;
    Ok(bin)
}

/// `gateway serve` with the limiter out of the way and loopback webhook receivers allowed;
/// killed when dropped.
async fn serve(mut cmd: Command, addr: &str, log: &Path) -> Result<Child> {
    let file = fs::File::create(log)?;
    cmd.env("SVC_RATE_LIMIT_PER_MINUTE", "100000000")
        .env("SVC_WEBHOOKS_ALLOW_LOOPBACK", "1")
        .stdin(Stdio::null())
        .stdout(file.try_clone()?)
        .stderr(file)
        .process_group(0)
        .kill_on_drop(true);
    let mut child = cmd.spawn()?;
    let client = Client::builder().no_proxy().build()?;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let ready = client.get(format!("http://{addr}/ready")).send().await;
        if ready.is_ok_and(|r| r.status().is_success()) {
            return Ok(child);
        }
        if let Some(status) = child.try_wait()? {
            return Err(format!("gateway serve exited ({status}); see {}", log.display()).into());
        }
        if Instant::now() > deadline {
            return Err(format!("gateway serve was not ready within 60 s on {addr}").into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// One of each resource, made through the API, so that the fuzzer's path ids name something.
struct Seeder {
    client: Client,
    base: String,
    authorization: String,
}

/// The seeded ids, by the path parameter that names them; `scoped` holds the parameters whose
/// name means another resource under some paths (`uid` is a message, a campaign or a contact).
#[derive(Debug, Default)]
struct Ids {
    global: Vec<(&'static str, Value)>,
    scoped: Vec<(&'static str, &'static str, Value)>,
    /// What `DELETE` operations name instead: resources made to be deleted, so that the others
    /// keep theirs for the rest of the run.
    doomed: Vec<(&'static str, Value)>,
}

impl Ids {
    fn set(&mut self, name: &'static str, value: Value) {
        self.global.push((name, value));
    }

    fn set_doomed(&mut self, name: &'static str, value: Value) {
        self.doomed.push((name, value));
    }

    /// `name` is `value` on the paths `path_regex` matches.
    fn set_under(&mut self, path_regex: &'static str, name: &'static str, value: Value) {
        self.scoped.push((path_regex, name, value));
    }

    fn summary(&self) -> String {
        let global = self.global.iter().map(|(name, value)| format!("{name}={value}"));
        let scoped = self.scoped.iter().map(|(path, name, value)| format!("{name}={value} under {path}"));
        let doomed = self.doomed.iter().map(|(name, value)| format!("{name}={value} to DELETE"));
        global.chain(scoped).chain(doomed).collect::<Vec<_>>().join(", ")
    }
}

impl Seeder {
    fn new(addr: &str, key: &str) -> Result<Self> {
        let client = Client::builder().no_proxy().timeout(Duration::from_secs(30)).build()?;
        Ok(Self { client, base: format!("http://{addr}/api/v3"), authorization: format!("Bearer {key}") })
    }

    /// `data` of a 2xx answer.
    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> Result<Value> {
        let mut request = self.client.request(method.clone(), format!("{}{path}", self.base));
        request = request.header("authorization", &self.authorization);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await?;
        let status = response.status();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            return Err(format!("seeding: {method} {path} answered {status}: {body}").into());
        }
        Ok(body.get("data").cloned().unwrap_or(body))
    }

    async fn post(&self, path: &str, body: Value) -> Result<Value> {
        self.call(Method::POST, path, Some(body)).await
    }

    async fn get(&self, path: &str) -> Result<Value> {
        self.call(Method::GET, path, None).await
    }

    async fn seed(&self, file: &str) -> Result<Ids> {
        let mut ids = Ids::default();
        let member = |value: &Value, pointer: &str| -> Result<Value> {
            value.pointer(pointer).cloned().ok_or_else(|| format!("seeding: no {pointer} in {value}").into())
        };

        // First, so that the lead below has a delivery to list.
        let webhook =
            self.post("/webhooks", json!({"url": "http://127.0.0.1:9/fuzz", "events": ["lead.created"]})).await?;
        let webhook_id = member(&webhook, "/id")?;
        ids.set("webhook", webhook_id.clone());

        let group = self.post("/contact-groups", json!({"name": "Fuzz customers"})).await?;
        let group_uid = member(&group, "/uid")?;
        let group_path = group_uid.as_str().unwrap_or_default().to_owned();
        let contact = self
            .post(
                &format!("/contact-groups/{group_path}/contacts"),
                json!({"PHONE": "0712345678", "FIRST_NAME": "Amina"}),
            )
            .await?;
        ids.set("group", group_uid.clone());
        ids.set("group_id", group_uid.clone());
        ids.set("contact", member(&contact, "/uid")?);
        ids.set_under("^/api/v3/contacts/", "uid", member(&contact, "/uid")?);
        self.post("/sms/blacklist", json!({"numbers": ["+255712000002"]})).await?;
        ids.set("number", json!("+255712000002"));
        let sent = self.post("/sms/send", json!({"recipient": "+255712345679", "message": "Fuzz"})).await?;
        ids.set_under("^/api/v3/sms/", "uid", member(&sent, "/messages/0/uid")?);
        let campaign = self.post("/sms/campaign", json!({"contact_list_id": group_uid, "message": "Fuzz"})).await?;
        ids.set_under("^/api/v3/campaign/", "uid", member(&campaign, "/campaigns/0/uid")?);

        let lead = self.post("/leads", json!({"name": "Fuzz lead", "phone": "+255712000003"})).await?;
        ids.set("lead", member(&lead, "/lead/id")?);
        let label = self.post("/lead-labels", json!({"name": "fuzz"})).await?;
        ids.set("label", member(&label, "/id")?);
        let deliveries = self.get(&format!("/webhooks/{webhook_id}/deliveries")).await?;
        ids.set("delivery", member(&deliveries, "/items/0/id")?);

        let catalogue = self.post("/catalogues", json!({"name": "Fuzz shop"})).await?;
        let catalogue_id = member(&catalogue, "/id")?;
        ids.set("catalogue", catalogue_id.clone());
        let batch = json!({"products": [{"sku": "FUZZ-1", "name": "Fuzz tea", "price": 1500, "quantity": 100}]});
        let run = self.post(&format!("/catalogues/{catalogue_id}/products/batch"), batch).await?;
        ids.set("sync", member(&run, "/id")?);
        let products = self.wait_for_products(&catalogue_id).await?;
        ids.set("product", member(&products, "/items/0/id")?);
        ids.set("sku", json!("FUZZ-1"));
        let order = json!({"customer_phone": "+255712000004", "lines": [{"sku": "FUZZ-1", "quantity": 1}]});
        let order = self.post(&format!("/catalogues/{catalogue_id}/orders"), order).await?;
        ids.set("order", member(&order, "/id")?);

        // The demo's data tables (`gateway admin demo`); the data routes answer without `data`.
        let tables = self.get("/data/tables").await?;
        let table_id = member(&tables, "/tables/0/id")?;
        ids.set("table", table_id.clone());
        let records = self.get(&format!("/data/tables/{}/records", table_id.as_str().unwrap_or_default())).await?;
        ids.set("record", member(&records, "/records/0/id")?);
        let groups = self.get("/data/groups").await?;
        ids.set_under("^/api/v3/data/", "group", member(&groups, "/groups/0/id")?);
        ids.set("file", json!(file));
        self.seed_doomed(&mut ids, &group_path, &catalogue_id, &table_id).await?;
        Ok(ids)
    }

    /// One more of each resource a `DELETE` route removes.
    async fn seed_doomed(&self, ids: &mut Ids, group: &str, catalogue: &Value, table: &Value) -> Result<()> {
        let member = |value: &Value, pointers: &[&str]| -> Result<Value> {
            let found = pointers.iter().find_map(|pointer| value.pointer(pointer).cloned());
            found.ok_or_else(|| format!("seeding: none of {pointers:?} in {value}").into())
        };
        let doomed_group = self.post("/contact-groups", json!({"name": "Fuzz leavers"})).await?;
        ids.set_doomed("group", member(&doomed_group, &["/uid"])?);
        let contact = json!({"PHONE": "0712345670", "FIRST_NAME": "Baraka"});
        let contact = self.post(&format!("/contact-groups/{group}/contacts"), contact).await?;
        ids.set_doomed("contact", member(&contact, &["/uid"])?);
        ids.set_doomed("uid", member(&contact, &["/uid"])?);
        self.post("/sms/blacklist", json!({"numbers": ["+255712000006"]})).await?;
        ids.set_doomed("number", json!("+255712000006"));
        let lead = self.post("/leads", json!({"name": "Fuzz leaver", "phone": "+255712000005"})).await?;
        ids.set_doomed("lead", member(&lead, &["/lead/id"])?);
        let label = self.post("/lead-labels", json!({"name": "fuzz-leaver"})).await?;
        ids.set_doomed("label", member(&label, &["/id"])?);
        let product = json!({"name": "Fuzz coffee", "price": 2500});
        let product =
            self.call(Method::PUT, &format!("/catalogues/{catalogue}/products/by-sku/FUZZ-2"), Some(product)).await?;
        ids.set_doomed("product", member(&product, &["/id", "/product/id"])?);
        ids.set_doomed("sku", json!("FUZZ-2"));
        let webhook = json!({"url": "http://127.0.0.1:9/leaver", "events": ["lead.created"]});
        let webhook = self.post("/webhooks", webhook).await?;
        ids.set_doomed("webhook", member(&webhook, &["/id"])?);
        let table = table.as_str().unwrap_or_default();
        let record =
            self.post(&format!("/data/tables/{table}/records"), json!({"data": {"name": "Fuzz leaver"}})).await?;
        ids.set_doomed("record", member(&record, &["/id", "/record/id"])?);
        Ok(())
    }

    /// The batch's sync run applies it in the background.
    async fn wait_for_products(&self, catalogue: &Value) -> Result<Value> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let products = self.get(&format!("/catalogues/{catalogue}/products")).await?;
            if products.pointer("/items/0/id").is_some() || Instant::now() > deadline {
                return Ok(products);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// schemathesis.toml: where the API is, the key, the seed, the warnings that fail, and the
/// seeded ids for the path parameters that name them. Strings are generated without the NUL
/// character: the description says once, in its introduction, that no text may hold one (a 422
/// everywhere, tested in the API tests), rather than on each of its hundreds of strings.
fn config_toml(addr: &str, key: &str, ids: &Ids, seed: u64) -> String {
    // Schemathesis's error feedback is off: it reads a 422's "The name field is required." as a
    // rule of the body for every later case, but ours say it of a create (a product `PUT` by a
    // new code), so the update of an existing one that leaves `name` out was reported.
    let mut toml = format!(
        "base-url = \"http://{addr}\"\nseed = {seed}\nsuppress-health-check = [\"filter_too_much\"]\nheaders = {{ Authorization = \"Bearer {key}\" }}\n\
         warnings = {{ fail-on = {fail_on:?} }}\n\n[generation]\nallow-x00 = false\n\n\
         [phases.fuzzing.error-feedback]\nenabled = false\n\n[parameters]\n",
        fail_on = FAIL_ON,
    );
    for (name, value) in &ids.global {
        toml.push_str(&format!("\"path.{name}\" = {value}\n"));
    }
    // First: the first entry that matches an operation is the one that applies.
    let doomed = ids.global.iter().filter(|(name, _)| !ids.doomed.iter().any(|(d, _)| d == name)).chain(&ids.doomed);
    let doomed: Vec<String> = doomed.map(|(name, value)| format!("\"path.{name}\" = {value}")).collect();
    toml.push_str(&format!(
        "\n[[operations]]\ninclude-method = \"DELETE\"\nparameters = {{ {} }}\n",
        doomed.join(", ")
    ));
    for (path, name, value) in &ids.scoped {
        toml.push_str(&format!(
            "\n[[operations]]\ninclude-path-regex = \"{path}\"\nparameters = {{ \"path.{name}\" = {value} }}\n"
        ));
    }
    // These name only checks: the entries above still give their operations the parameters.
    for (operation, _) in RULES {
        let (method, path) = operation.split_once(' ').unwrap_or_default();
        toml.push_str(&format!(
            "\n[[operations]]\ninclude-method = \"{method}\"\ninclude-path = \"{path}\"\n\
             checks = {{ positive_data_acceptance = {{ expected-statuses = {RULE_STATUSES:?} }} }}\n"
        ));
    }
    toml
}

/// The operations a run's output lists as refusing most of what their schema allows.
fn mismatched(output: &str) -> Vec<&str> {
    output
        .lines()
        .skip_while(|line| !line.starts_with("Schema validation mismatch:"))
        .skip(1)
        .skip_while(|line| line.trim().is_empty())
        .map_while(|line| line.trim().strip_prefix("- "))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::mismatched;

    #[test]
    fn the_mismatch_warning_s_operations_are_read_from_the_output() {
        let output = "Missing test data: ...\n  - GET /a\n\nSchema validation mismatch: 2 operations mostly \
                      rejected generated data\n\n  - POST /api/v3/leads\n  - POST /api/v3/sms/send\n\n💡 Check\n  - GET /b\n";
        assert_eq!(mismatched(output), ["POST /api/v3/leads", "POST /api/v3/sms/send"]);
        assert!(mismatched("no warnings\n").is_empty());
    }
}

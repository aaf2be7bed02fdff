//! `gateway admin ...`: what an operator does, scriptable. Each command prints one value per
//! line on stdout (an id, a key), or a JSON object with `--json`.

use clap::{Args, Subcommand, ValueEnum};
use kernel::{ApiKeyId, Error, TenantId, UserId};
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use accounts::keys::KeyIssuer;
use accounts::modules::Module;
use accounts::tenants::TenantStatus;
use messaging::channels::{NewChannel, NewSender};

use crate::config::Config;

/// What `demo` puts in an empty demo wallet: 100,000.00 TZS.
const DEMO_CREDIT_MINOR: i64 = 10_000_000;

#[derive(Debug, Args)]
pub struct Admin {
    /// Print a JSON object instead of plain values.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: AdminCommand,
}

#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Tenants (accounts).
    #[command(subcommand)]
    Tenant(TenantCommand),
    /// Users: the people who issue keys.
    #[command(subcommand)]
    User(UserCommand),
    /// REST API keys.
    #[command(subcommand)]
    Key(KeyCommand),
    /// MCP connections: `svc_mcp_` credentials for language-model clients.
    #[command(subcommand)]
    McpConnection(McpConnectionCommand),
    /// OAuth grants: what people allowed MCP clients to do.
    #[command(subcommand)]
    Oauth(OauthCommand),
    /// The tenant's wallet.
    #[command(subcommand)]
    Wallet(WalletCommand),
    /// Channels: a tenant's routes to a provider.
    #[command(subcommand)]
    Channel(ChannelCommand),
    /// Sender identities on a channel.
    #[command(subcommand)]
    Sender(SenderCommand),
    /// Chat business accounts (WhatsApp Cloud API shape) and their phone numbers.
    #[command(subcommand)]
    ChatAccount(ChatAccountCommand),
    /// The SMS rate card: price per segment by destination prefix.
    #[command(subcommand)]
    Rate(RateCommand),
    /// Switch a module on or off for a tenant.
    Module {
        action: Switch,
        #[arg(long)]
        tenant: i64,
        /// leads or forms
        module: String,
    },
    /// Make (or find) the demo tenant, user and key; prints JSON.
    Demo {
        /// A key printed by an earlier run, reused while it still works.
        #[arg(long)]
        key: Option<String>,
    },
    /// Custom lead fields: what a lead's `custom_fields` accepts (listed by GET /lead-fields).
    #[command(subcommand)]
    LeadField(LeadFieldCommand),
    /// Data tables: define (create or alter) a group and its tables from a JSON file.
    #[command(subcommand)]
    DataTable(DataTableCommand),
    /// Files that data-table `file` columns refer to.
    #[command(subcommand)]
    DataFile(DataFileCommand),
    /// The keys that seal secrets at rest.
    #[command(subcommand)]
    Secrets(SecretsCommand),
    /// Shops: work that otherwise runs on a schedule.
    #[command(subcommand)]
    Commerce(CommerceCommand),
    /// The sandbox providers: act as the outside party would.
    #[command(subcommand)]
    Sandbox(SandboxCommand),
    /// Payments: ask a payer for an order's money, give money back.
    #[command(subcommand)]
    Payment(PaymentCommand),
    /// Automations: subscriptions that post business events to a callback, and schedules.
    #[command(subcommand)]
    Automation(AutomationCommand),
    /// Named operations: a workspace's own steps over the domain services.
    #[command(subcommand)]
    Operation(OperationCommand),
}

#[derive(Debug, Subcommand)]
pub enum OperationCommand {
    /// Define (or change) a named operation from a JSON file: its inputs and steps. Prints the
    /// name, version and `created`, `updated` or `unchanged`.
    Apply {
        #[arg(long)]
        tenant: i64,
        file: std::path::PathBuf,
    },
    /// Remove a named operation (its runs stay readable).
    Remove {
        #[arg(long)]
        tenant: i64,
        #[arg(long)]
        name: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum AutomationCommand {
    /// Post the named business events to `--url`, signed (Standard Webhooks). Prints the id and
    /// the secret, shown this once (`--json`: `{id, secret, events, url}`).
    Subscribe {
        #[arg(long)]
        tenant: i64,
        /// Comma-separated event names (`order.paid,lead.created`).
        #[arg(long)]
        events: String,
        #[arg(long)]
        url: String,
    },
    /// Remove a subscription and its waiting callbacks.
    Unsubscribe {
        #[arg(long)]
        tenant: i64,
        #[arg(long)]
        id: i64,
    },
    /// Emit a `scheduled.<word>` event (or run a named operation) on a cron expression, in UTC.
    /// Prints the id (`--json`: the schedule, with `next_run_at`).
    Schedule {
        #[arg(long)]
        tenant: i64,
        /// Five fields (minute hour day-of-month month day-of-week), or six with seconds first.
        #[arg(long)]
        cron: String,
        #[arg(long, conflicts_with = "event", required_unless_present = "event")]
        operation: Option<String>,
        /// The operation's input, as JSON.
        #[arg(long, requires = "operation")]
        input: Option<String>,
        #[arg(long)]
        event: Option<String>,
    },
    /// Remove a schedule.
    Unschedule {
        #[arg(long)]
        tenant: i64,
        #[arg(long)]
        id: uuid::Uuid,
    },
}

#[derive(Debug, Subcommand)]
pub enum PaymentCommand {
    /// Ask for an order's money: its checkout link, and with `--phone` a prompt on the payer's
    /// phone at once. Prints the reference (`--json`: `{id, reference, state, checkout_url}`).
    Request {
        #[arg(long)]
        tenant: i64,
        #[arg(long)]
        order: i64,
        /// The payer's number, any common form (`+255...`, `07...`).
        #[arg(long)]
        phone: Option<String>,
    },
    /// Give part or all of a settled payment back; prints the refund's reference and state.
    Refund {
        #[arg(long)]
        tenant: i64,
        /// The payment's id or reference.
        #[arg(long)]
        payment: String,
        #[arg(long)]
        amount_minor: i64,
        #[arg(long)]
        reason: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum CommerceCommand {
    /// Compare the chat catalogue's copy of every listed product with the shop's now, as the
    /// hourly check does (marks, announces, settles by `source_of_truth`); prints the report.
    CheckDrift {
        #[arg(long)]
        tenant: i64,
        /// One shop; without it, every shop of the tenant that publishes to a chat catalogue.
        #[arg(long)]
        catalogue: Option<i64>,
    },
}

#[derive(Debug, Subcommand)]
pub enum SandboxCommand {
    /// Change the sandbox chat catalogue's copy of a product, as a merchant editing in the
    /// platform's own tool would (the next drift check sees it); prints the copy.
    CatalogueEdit {
        #[arg(long)]
        tenant: i64,
        /// The shop (its id).
        #[arg(long)]
        catalogue: i64,
        #[arg(long)]
        sku: String,
        /// `field=value`, repeated: name, description, price_minor, sale_price_minor, currency,
        /// availability, image_url, brand, category, inventory (an empty value clears).
        #[arg(long = "set", value_parser = field_value, required = true)]
        set: Vec<(String, String)>,
    },
}

fn field_value(raw: &str) -> Result<(String, String), String> {
    let (field, value) = raw.split_once('=').ok_or_else(|| format!("{raw:?} is not field=value"))?;
    Ok((field.trim().to_owned(), value.to_owned()))
}

#[derive(Debug, Subcommand)]
pub enum SecretsCommand {
    /// Re-seal every sealed value (webhook secrets and header values, channel credentials)
    /// under the current key, so older keys can be dropped; prints the key id. Safe to run
    /// again: what is already under the current key is left alone.
    Rotate {
        /// Then delete the key the database keeps (only with SVC_SECRETS_KEY set).
        #[arg(long)]
        forget_stored_key: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum DataTableCommand {
    /// Create or alter a group and its tables by slug (the file format is in docs/api.md);
    /// prints the group id.
    Apply {
        #[arg(long)]
        tenant: i64,
        file: std::path::PathBuf,
    },
}

#[derive(Debug, Subcommand)]
pub enum DataFileCommand {
    /// Store a file for a tenant; prints its id (the value a `file` column takes).
    Add {
        #[arg(long)]
        tenant: i64,
        path: std::path::PathBuf,
        /// The name records show (default: the file's name).
        #[arg(long)]
        name: Option<String>,
        /// Default: guessed from the extension, else application/octet-stream.
        #[arg(long)]
        mime_type: Option<String>,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Switch {
    Enable,
    Disable,
}

#[derive(Debug, Subcommand)]
pub enum TenantCommand {
    /// Create a tenant; prints its id.
    Create {
        #[arg(long)]
        name: String,
        #[arg(long, default_value = "TZS")]
        currency: String,
    },
    /// Set a tenant's status: active, suspended or inactive.
    SetStatus { tenant: i64, status: String },
    /// Set the calling code used for contacts sent without `country_code` (default 255).
    SetCountryCode { tenant: i64, code: String },
}

#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Create a user; prints its id.
    Create {
        #[arg(long)]
        tenant: i64,
        #[arg(long)]
        name: String,
        /// `all`, or a comma-separated list of permission names.
        #[arg(long, default_value = "all")]
        permissions: String,
    },
    /// Replace a user's permissions (`all` or p1,p2,...).
    SetPermissions { user: i64, permissions: String },
    /// Deactivate a user: their keys are refused wherever a permission is checked.
    Deactivate { user: i64 },
    /// Let a user sign in to the OAuth consent page: the email given, the password read from
    /// standard input (its first line), stored only as an argon2id hash; prints the email.
    SetLogin {
        #[arg(long)]
        tenant: i64,
        #[arg(long)]
        user: i64,
        #[arg(long)]
        email: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum McpConnectionCommand {
    /// Issue a connection; prints the token (shown only this once), `{id, token, ...}` with `--json`.
    Create {
        #[arg(long)]
        tenant: i64,
        /// The user whose permissions bound every call.
        #[arg(long)]
        issuer: i64,
        /// Space- or comma-separated: `mcp:use` and the capabilities and elevations granted.
        #[arg(long)]
        scopes: String,
        #[arg(long, default_value = "MCP connection")]
        name: String,
    },
    /// Revoke a connection; it is refused from the next call on.
    Revoke { id: i64 },
}

#[derive(Debug, Subcommand)]
pub enum OauthCommand {
    /// Revoke a person's grants (every client's, or one `--client`'s): every token issued from
    /// them is refused from the next request on, and the client must ask them again. Prints
    /// how many grants were revoked.
    Revoke {
        #[arg(long)]
        user: i64,
        /// A client_id: only this client's grants.
        #[arg(long)]
        client: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Issue a key; prints the plaintext (shown only this once).
    Create {
        #[arg(long)]
        tenant: i64,
        /// The user whose permissions bound the key.
        #[arg(long, conflicts_with = "legacy", required_unless_present = "legacy")]
        issuer: Option<i64>,
        /// A key as made before 7 September 2026: no issuer, original contact paths only.
        #[arg(long)]
        legacy: bool,
        #[arg(long, default_value = "API key")]
        name: String,
        /// RFC 3339 time after which the key is refused.
        #[arg(long)]
        expires_at: Option<String>,
    },
    /// Revoke a key; it is refused from the next request on.
    Revoke { key: i64 },
    /// Issue a new key under an issuer and revoke the old one at once; prints the new plaintext.
    Rotate {
        key: i64,
        #[arg(long)]
        issuer: i64,
    },
}

#[derive(Debug, Subcommand)]
pub enum WalletCommand {
    /// Add to a tenant's balance; prints the new balance in minor units.
    Credit {
        #[arg(long)]
        tenant: i64,
        #[arg(long)]
        amount_minor: i64,
        #[arg(long)]
        note: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum ChannelCommand {
    /// Add a channel; prints its id (with --json also its code and the callback URLs to paste
    /// into the provider's dashboard).
    Add {
        #[arg(long)]
        tenant: i64,
        /// sms or chat
        #[arg(long, default_value = "sms")]
        kind: String,
        /// sandbox or africastalking
        #[arg(long, default_value = "sandbox")]
        provider: String,
        /// Unique within the tenant; generated when absent.
        #[arg(long)]
        code: Option<String>,
        #[command(flatten)]
        credentials: Credentials,
        /// Messages per second the provider account allows.
        #[arg(long)]
        throughput: Option<i32>,
    },
    /// Replace a channel's provider credentials (a new API key, or a lost secrets key).
    SetCredentials {
        #[arg(long)]
        tenant: i64,
        /// The channel's id or code.
        channel: String,
        #[command(flatten)]
        credentials: Credentials,
    },
    /// Switch a channel on or off: a disabled channel routes nothing, and messages already
    /// queued on it wait until it is active again.
    SetStatus {
        #[arg(long)]
        tenant: i64,
        /// The channel's id or code.
        channel: String,
        /// active or disabled
        status: String,
    },
}

/// A provider account, as `channel add` and `channel set-credentials` take it. Printed, it
/// shows the API key redacted.
#[derive(Clone, Default, clap::Args)]
pub struct Credentials {
    #[arg(long)]
    pub base_url: Option<String>,
    #[arg(long)]
    pub username: Option<String>,
    #[arg(long)]
    pub api_key: Option<String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("base_url", &self.base_url)
            .field("username", &self.username)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

#[derive(Debug, Subcommand)]
pub enum ChatAccountCommand {
    /// Add a business account; prints its id (with --json also its webhook URL and verify
    /// token, to paste into the provider's dashboard).
    Add {
        #[arg(long)]
        tenant: i64,
        #[arg(long)]
        waba_id: String,
        #[arg(long)]
        name: String,
        /// sandbox (default) or cloud
        #[arg(long, default_value = "sandbox")]
        provider: String,
        #[command(flatten)]
        credentials: ChatCredentials,
        /// Make it the workspace's default account (the first one is anyway).
        #[arg(long)]
        default: bool,
    },
    /// A business account's phone numbers.
    #[command(subcommand)]
    Phone(ChatPhoneCommand),
    /// Read the account's name, numbers' quality and tier, and template count from the provider.
    Refresh {
        #[arg(long)]
        tenant: i64,
        #[arg(long)]
        waba_id: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum ChatPhoneCommand {
    /// Add a phone number to a business account; prints its phone number id.
    Add {
        #[arg(long)]
        tenant: i64,
        #[arg(long)]
        waba_id: String,
        /// The provider's id of the number (what `sender_id` takes).
        #[arg(long)]
        phone_number_id: String,
        /// The number, E.164 or national.
        #[arg(long)]
        phone_number: String,
        /// The name shown for it.
        #[arg(long)]
        display: Option<String>,
        /// Make it the account's default number (the first one is anyway).
        #[arg(long)]
        default: bool,
    },
}

/// A chat provider account, as `chat-account add` takes it. Printed, it shows no secret.
#[derive(Clone, Default, clap::Args)]
pub struct ChatCredentials {
    /// The Graph API origin (cloud; default https://graph.facebook.com).
    #[arg(long)]
    pub base_url: Option<String>,
    /// The Graph API version (cloud; default v21.0).
    #[arg(long)]
    pub api_version: Option<String>,
    #[arg(long)]
    pub access_token: Option<String>,
    /// Signs the provider's webhook deliveries; one is made when absent.
    #[arg(long)]
    pub app_secret: Option<String>,
    /// Answers the provider's webhook verification; one is made when absent.
    #[arg(long)]
    pub verify_token: Option<String>,
}

impl std::fmt::Debug for ChatCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatCredentials")
            .field("base_url", &self.base_url)
            .field("api_version", &self.api_version)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Subcommand)]
pub enum SenderCommand {
    /// Add a sender identity; prints its id.
    Add {
        #[arg(long)]
        tenant: i64,
        /// The channel's id or code.
        #[arg(long)]
        channel: String,
        /// sender_id, phone_number or short_code
        #[arg(long = "type")]
        kind: String,
        #[arg(long)]
        value: String,
        #[arg(long)]
        label: Option<String>,
        /// approved (default), pending, rejected or inactive; only approved ones are usable.
        #[arg(long)]
        status: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum RateCommand {
    /// Set the price of one SMS segment (with `--voice`, of one started minute of a call) to
    /// numbers starting with a prefix (none: the default).
    Set {
        #[arg(long)]
        tenant: i64,
        /// E.164 digits, e.g. 255 or 25571.
        #[arg(long)]
        prefix: Option<String>,
        #[arg(long)]
        price_minor: i64,
        /// The voice rate per started minute rather than the SMS rate per segment.
        #[arg(long)]
        voice: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum LeadFieldCommand {
    /// Define a custom field, or redefine the one with that key; prints the key.
    Set {
        #[arg(long)]
        tenant: i64,
        /// Letters, digits and _; up to 60 characters.
        #[arg(long)]
        key: String,
        /// What people read.
        #[arg(long)]
        label: String,
        /// text, number, date, boolean or select
        #[arg(long = "type")]
        kind: String,
        /// An option key of a select field; repeat for each option.
        #[arg(long = "option")]
        options: Vec<String>,
    },
    /// Remove a custom field (values already on leads stay); prints the key.
    Remove {
        #[arg(long)]
        tenant: i64,
        #[arg(long)]
        key: String,
    },
}

/// The first line of standard input, without its line ending: a password never goes on the
/// command line, where other users of the machine and the shell's history could read it.
fn read_password() -> Result<String, Error> {
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).map_err(|e| Error::internal(format!("cannot read standard input: {e}")))?;
    Ok(line.trim_end_matches(['\n', '\r']).to_owned())
}

/// Runs one admin command and returns what to print: plain lines, or the JSON object.
pub async fn run(admin: Admin, config: &Config) -> Result<String, Error> {
    // the command's own connection, and the services' (a drift check holds one while the
    // sandbox platform reads with another)
    let pool = store::pool_with(&config.database_url, 4, config.row_security)?;
    let mut conn = store::connect_system(&pool).await?;
    let conn = &mut *conn;
    let now = OffsetDateTime::now_utc();
    let (plain, value): (String, Value) = match admin.command {
        AdminCommand::Tenant(TenantCommand::Create { name, currency }) => {
            let tenant = accounts::tenants::create(conn, &name, &currency).await?;
            (tenant.id.to_string(), json!(tenant))
        }
        AdminCommand::Tenant(TenantCommand::SetStatus { tenant, status }) => {
            let tenant = accounts::tenants::set_status(conn, TenantId(tenant), TenantStatus::parse(&status)?).await?;
            (tenant.status.clone(), json!(tenant))
        }
        AdminCommand::Tenant(TenantCommand::SetCountryCode { tenant, code }) => {
            let tenant = accounts::tenants::set_default_country_code(conn, TenantId(tenant), &code).await?;
            (tenant.default_country_code.clone(), json!(tenant))
        }
        AdminCommand::User(UserCommand::Create { tenant, name, permissions }) => {
            let permissions = accounts::users::parse_permissions(&permissions)?;
            let user = accounts::users::create(conn, TenantId(tenant), &name, &permissions).await?;
            (user.id.to_string(), json!(user))
        }
        AdminCommand::User(UserCommand::SetPermissions { user, permissions }) => {
            let permissions = accounts::users::parse_permissions(&permissions)?;
            let user = accounts::users::set_permissions(conn, UserId(user), &permissions).await?;
            (user.id.to_string(), json!(user))
        }
        AdminCommand::User(UserCommand::SetLogin { tenant, user, email }) => {
            let password = read_password()?;
            let user = accounts::sign_in::set_login(conn, TenantId(tenant), UserId(user), &email, &password).await?;
            let email = email.trim().to_lowercase();
            (email.clone(), json!({"id": user.id, "tenant_id": user.tenant_id, "email": email}))
        }
        AdminCommand::User(UserCommand::Deactivate { user }) => {
            let user = accounts::users::deactivate(conn, UserId(user)).await?;
            (user.id.to_string(), json!(user))
        }
        AdminCommand::Key(KeyCommand::Create { tenant, issuer, legacy, name, expires_at }) => {
            let issuer = match (issuer, legacy) {
                (Some(user), false) => KeyIssuer::User(UserId(user)),
                _ => KeyIssuer::Legacy,
            };
            let expires_at = expires_at
                .map(|at| OffsetDateTime::parse(&at, &Rfc3339))
                .transpose()
                .map_err(|e| Error::field("expires_at", format!("Not an RFC 3339 time: {e}")))?;
            let issued = accounts::keys::create(conn, TenantId(tenant), issuer, &name, expires_at).await?;
            (issued.plaintext.clone(), json!(issued))
        }
        AdminCommand::Key(KeyCommand::Revoke { key }) => {
            let key = accounts::keys::revoke(conn, ApiKeyId(key), now).await?;
            (key.id.to_string(), json!(key))
        }
        AdminCommand::Key(KeyCommand::Rotate { key, issuer }) => {
            let issued = accounts::keys::rotate(conn, ApiKeyId(key), UserId(issuer), now).await?;
            (issued.plaintext.clone(), json!(issued))
        }
        AdminCommand::McpConnection(McpConnectionCommand::Create { tenant, issuer, scopes, name }) => {
            let grant = ::mcp::Grant::parse(&scopes)?;
            let issued =
                accounts::mcp_connections::create(conn, TenantId(tenant), UserId(issuer), &name, &grant.scopes())
                    .await?;
            (issued.token.clone(), json!(issued))
        }
        AdminCommand::McpConnection(McpConnectionCommand::Revoke { id }) => {
            let connection = accounts::mcp_connections::revoke(conn, id, now).await?;
            (connection.id.to_string(), json!(connection))
        }
        AdminCommand::Oauth(OauthCommand::Revoke { user, client }) => {
            let revoked = accounts::oauth::revoke_grants(conn, UserId(user), client.as_deref(), now).await?;
            (revoked.to_string(), json!({"user_id": user, "revoked": revoked}))
        }
        AdminCommand::Wallet(WalletCommand::Credit { tenant, amount_minor, note }) => {
            let wallet = accounts::wallet::credit(conn, TenantId(tenant), amount_minor, note.as_deref()).await?;
            // paused campaigns look at once whether they can go on
            messaging::campaigns::wallet_topped_up(conn, TenantId(tenant)).await?;
            (wallet.balance_minor.to_string(), json!(wallet))
        }
        AdminCommand::Module { action, tenant, module } => {
            let module = Module::parse(&module)?;
            let enabled = matches!(action, Switch::Enable);
            accounts::modules::set(conn, TenantId(tenant), module, enabled).await?;
            (enabled.to_string(), json!({"tenant_id": tenant, "module": module.as_str(), "enabled": enabled}))
        }
        AdminCommand::Channel(ChannelCommand::Add { tenant, kind, provider, code, credentials, throughput }) => {
            let Credentials { base_url, username, api_key } = credentials;
            let new =
                NewChannel { kind, provider, code, base_url, username, api_key, throughput_per_second: throughput };
            let keyring = crate::keyring(&pool, &config.secrets).await?;
            let channel = messaging::channels::add(conn, &keyring, TenantId(tenant), new).await?;
            let hooks = format!("{}/hooks/sms/{}", config.public_url.trim_end_matches('/'), channel.callback_token);
            let value = json!({
                "id": channel.id,
                "code": channel.code,
                "callback_urls": {"delivery": format!("{hooks}/delivery"), "inbound": format!("{hooks}/inbound")},
            });
            (channel.id.to_string(), value)
        }
        AdminCommand::Channel(ChannelCommand::SetCredentials { tenant, channel, credentials }) => {
            let keyring = crate::keyring(&pool, &config.secrets).await?;
            let Credentials { base_url, username, api_key } = credentials;
            let new = NewChannel { base_url, username, api_key, ..NewChannel::default() };
            let channel = messaging::channels::set_credentials(conn, &keyring, TenantId(tenant), &channel, new).await?;
            (channel.id.to_string(), json!({"id": channel.id, "code": channel.code}))
        }
        AdminCommand::Channel(ChannelCommand::SetStatus { tenant, channel, status }) => {
            let channel = messaging::channels::set_status(conn, TenantId(tenant), &channel, &status).await?;
            (channel.status.clone(), json!({"id": channel.id, "code": channel.code, "status": channel.status}))
        }
        AdminCommand::ChatAccount(ChatAccountCommand::Add {
            tenant,
            waba_id,
            name,
            provider,
            credentials,
            default,
        }) => {
            let ChatCredentials { base_url, api_version, access_token, app_secret, verify_token } = credentials;
            let new = messaging::chat::NewChatAccount {
                waba_id,
                name,
                provider: Some(provider),
                base_url,
                version: api_version,
                access_token,
                app_secret,
                verify_token,
                is_default: default,
            };
            let keyring = crate::keyring(&pool, &config.secrets).await?;
            let added = messaging::chat::accounts::add(conn, &keyring, TenantId(tenant), new).await?;
            let webhook_url = format!("{}/hooks/chat/{}", config.public_url.trim_end_matches('/'), added.webhook_token);
            let value = json!({
                "id": added.id,
                "waba_id": added.waba_id,
                "webhook_url": webhook_url,
                "verify_token": added.verify_token,
            });
            (added.id.to_string(), value)
        }
        AdminCommand::ChatAccount(ChatAccountCommand::Phone(ChatPhoneCommand::Add {
            tenant,
            waba_id,
            phone_number_id,
            phone_number,
            display,
            default,
        })) => {
            let calling_code = accounts::tenants::get(conn, TenantId(tenant)).await?.default_country_code;
            let new = messaging::chat::NewPhoneNumber {
                waba_id,
                phone_number_id,
                phone_number,
                display,
                is_default: default,
            };
            let number = messaging::chat::accounts::add_phone(conn, TenantId(tenant), &calling_code, new).await?;
            (number.id.clone(), json!(number))
        }
        AdminCommand::ChatAccount(ChatAccountCommand::Refresh { tenant, waba_id }) => {
            let services = crate::Services::new(pool.clone(), kernel::Clock::system(), config).await?;
            let accounts = services.messaging.refresh_chat_account(TenantId(tenant), &waba_id).await?;
            let found = accounts.items.iter().find(|a| a.waba_id == waba_id.trim()).cloned();
            (found.as_ref().map(|a| a.name.clone()).unwrap_or_default(), json!(found))
        }
        AdminCommand::Commerce(CommerceCommand::CheckDrift { tenant, catalogue }) => {
            let services = crate::Services::new(pool.clone(), kernel::Clock::system(), config).await?;
            let shops = match catalogue {
                Some(id) => vec![commerce::CatalogueId(id)],
                None => services.commerce.chat_shops(TenantId(tenant)).await?,
            };
            let mut reports = Vec::new();
            for shop in shops {
                reports.push(services.commerce.check_drift(TenantId(tenant), shop).await?);
            }
            let drifted: usize = reports.iter().map(|r| r.drifted).sum();
            (format!("{drifted} drifted"), json!(reports))
        }
        AdminCommand::Sandbox(SandboxCommand::CatalogueEdit { tenant, catalogue, sku, set }) => {
            let services = crate::Services::new(pool.clone(), kernel::Clock::system(), config).await?;
            let shop = services.commerce.catalogue_ref(TenantId(tenant), commerce::CatalogueId(catalogue)).await?;
            let item = services.messaging.sandbox_catalogue_edit(TenantId(tenant), &shop, &sku, &set).await?;
            (item.retailer_id.clone(), json!(item))
        }
        AdminCommand::Sender(SenderCommand::Add { tenant, channel, kind, value, label, status }) => {
            let new = NewSender { channel, kind, value, label, status };
            let sender = messaging::channels::add_sender(conn, TenantId(tenant), new).await?;
            (
                sender.id.to_string(),
                json!({"id": sender.id, "type": sender.kind, "value": sender.value, "status": sender.status}),
            )
        }
        AdminCommand::Rate(RateCommand::Set { tenant, prefix, price_minor, voice }) => {
            if voice {
                messaging::voice::requests::set_rate(conn, TenantId(tenant), prefix.as_deref(), price_minor).await?;
            } else {
                messaging::channels::set_rate(conn, TenantId(tenant), prefix.as_deref(), price_minor).await?;
            }
            let kind = if voice { "voice" } else { "sms" };
            (
                price_minor.to_string(),
                json!({"tenant_id": tenant, "kind": kind, "prefix": prefix.unwrap_or_default(), "price_minor": price_minor}),
            )
        }
        AdminCommand::Demo { key } => {
            let demo = accounts::demo::ensure(conn, key.as_deref(), now).await?;
            demo_data_tables(&pool, config, TenantId(demo.tenant_id)).await?;
            // a sandbox SMS channel with a sender id, and something to spend
            let keyring = crate::keyring(&pool, &config.secrets).await?;
            messaging::channels::ensure_demo(conn, &keyring, TenantId(demo.tenant_id)).await?;
            messaging::chat::accounts::ensure_demo(conn, &keyring, TenantId(demo.tenant_id)).await?;
            if accounts::wallet::get(conn, TenantId(demo.tenant_id)).await?.balance_minor <= 0 {
                accounts::wallet::credit(conn, TenantId(demo.tenant_id), DEMO_CREDIT_MINOR, Some("demo credit"))
                    .await?;
            }
            let value = json!(demo);
            (value.to_string(), value)
        }
        AdminCommand::LeadField(LeadFieldCommand::Set { tenant, key, label, kind, options }) => {
            let field = leads::fields::set_field(conn, TenantId(tenant), &key, &label, &kind, &options).await?;
            let value = json!({"tenant_id": tenant, "key": field.key, "label": field.label, "type": field.kind, "options": field.options});
            (field.key, value)
        }
        AdminCommand::DataTable(DataTableCommand::Apply { tenant, file }) => {
            let raw = std::fs::read_to_string(&file)
                .map_err(|e| Error::field("file", format!("Cannot read {}: {e}", file.display())))?;
            let definition: Value = serde_json::from_str(&raw)
                .map_err(|e| Error::field("file", format!("{} is not JSON: {e}", file.display())))?;
            let applied = data_service(&pool, config).await?.apply(TenantId(tenant), definition).await?;
            (applied.group.id.to_string(), json!(applied))
        }
        AdminCommand::DataFile(DataFileCommand::Add { tenant, path, name, mime_type }) => {
            let bytes = std::fs::read(&path)
                .map_err(|e| Error::field("path", format!("Cannot read {}: {e}", path.display())))?;
            let name = name
                .or_else(|| path.file_name().map(|n| n.to_string_lossy().into_owned()))
                .unwrap_or_else(|| "file".to_owned());
            let mime_type = mime_type.unwrap_or_else(|| mime_of(&name).to_owned());
            let id = data_service(&pool, config).await?.store_file(TenantId(tenant), &name, &mime_type, bytes).await?;
            (id.to_string(), json!({"id": id, "name": name, "mime_type": mime_type}))
        }
        AdminCommand::Secrets(SecretsCommand::Rotate { forget_stored_key }) => {
            if forget_stored_key && config.secrets.current.is_none() {
                return Err(Error::validation(format!(
                    "--forget-stored-key needs {} set: the key the database keeps is the current one",
                    store::secrets::SecretsConfig::KEY_ENV
                )));
            }
            let services = crate::Services::new(pool.clone(), kernel::Clock::system(), config).await?;
            let (webhooks, channels) = services.reseal().await?;
            let forgotten = if forget_stored_key { store::secrets::forget_stored_keys(conn).await? } else { 0 };
            let key_id = services.keyring.current_id().to_owned();
            let value = json!({"key_id": key_id, "webhooks": webhooks, "channels": channels, "stored_keys_forgotten": forgotten});
            (key_id, value)
        }
        AdminCommand::Payment(command) => {
            let services = crate::Services::new(pool.clone(), kernel::Clock::system(), config).await?;
            let tenant = TenantId(match &command {
                PaymentCommand::Request { tenant, .. } | PaymentCommand::Refund { tenant, .. } => *tenant,
            });
            let calling_code = accounts::tenants::get(conn, tenant).await?.default_country_code;
            let operator = kernel::Caller::operator(tenant, calling_code);
            let source = payments_read::Source::Operator;
            let payment = match command {
                PaymentCommand::Request { order, phone, .. } => {
                    services
                        .payments
                        .request_for_order(&operator, commerce::OrderId(order), phone.as_deref(), source)
                        .await?
                }
                PaymentCommand::Refund { payment, amount_minor, reason, .. } => {
                    services.payments.refund(&operator, &payment, amount_minor, reason.as_deref()).await?
                }
            };
            let value = json!({"id": payment.id, "reference": payment.reference, "state": payment.state,
                "amount_minor": payment.amount_minor, "checkout_url": payment.checkout_url, "refund_of": payment.refund_of});
            (format!("{} {}", payment.reference, payment.state), value)
        }
        AdminCommand::Automation(command) => {
            let automations = crate::Services::new(pool.clone(), kernel::Clock::system(), config).await?.automations;
            match command {
                AutomationCommand::Subscribe { tenant, events, url } => {
                    let events: Vec<String> = events.split(',').map(str::to_owned).collect();
                    let made = automations.subscribe(TenantId(tenant), &events, &url, "operator").await?;
                    (format!("{}\n{}", made.id, made.secret), json!(made))
                }
                AutomationCommand::Unsubscribe { tenant, id } => {
                    automations.unsubscribe(TenantId(tenant), id).await?;
                    (id.to_string(), json!({"id": id, "removed": true}))
                }
                AutomationCommand::Schedule { tenant, cron, operation, input, event } => {
                    let target = match (operation, event) {
                        (Some(name), _) => {
                            let input = match input {
                                Some(raw) => serde_json::from_str(&raw)
                                    .map_err(|e| Error::field("input", format!("The input is not JSON: {e}")))?,
                                None => json!({}),
                            };
                            automations::schedules::Target::Operation { name, input }
                        }
                        (None, event) => automations::schedules::Target::Event(event.unwrap_or_default()),
                    };
                    let schedule = automations.schedule(TenantId(tenant), &cron, target, "operator").await?;
                    (schedule.id.to_string(), json!(schedule))
                }
                AutomationCommand::Unschedule { tenant, id } => {
                    automations.unschedule(TenantId(tenant), id).await?;
                    (id.to_string(), json!({"id": id, "removed": true}))
                }
            }
        }
        AdminCommand::Operation(command) => {
            let automations = crate::Services::new(pool.clone(), kernel::Clock::system(), config).await?.automations;
            match command {
                OperationCommand::Apply { tenant, file } => {
                    let raw = std::fs::read_to_string(&file)
                        .map_err(|e| Error::field("file", format!("Cannot read {}: {e}", file.display())))?;
                    let definition: Value = serde_json::from_str(&raw)
                        .map_err(|e| Error::field("file", format!("{} is not JSON: {e}", file.display())))?;
                    let applied = automations.apply_operation(TenantId(tenant), definition).await?;
                    (format!("{} {} {}", applied.name, applied.version, applied.outcome), json!(applied))
                }
                OperationCommand::Remove { tenant, name } => {
                    automations.remove_operation(TenantId(tenant), &name).await?;
                    (name.clone(), json!({"name": name, "removed": true}))
                }
            }
        }
        AdminCommand::LeadField(LeadFieldCommand::Remove { tenant, key }) => {
            let field = leads::fields::remove_field(conn, TenantId(tenant), &key).await?;
            (field.key.clone(), json!({"tenant_id": tenant, "key": field.key, "removed": true}))
        }
    };
    Ok(if admin.json { value.to_string() } else { plain })
}

/// The data-tables service, as the gateway composes it.
async fn data_service(pool: &store::Pool, config: &Config) -> Result<data_tables::DataService, Error> {
    Ok(crate::Services::new(pool.clone(), kernel::Clock::system(), config).await?.data)
}

/// The demo's small CRM: agents and customers, with a status column and a relation. Applying
/// again changes nothing; the sample records are added once.
async fn demo_data_tables(pool: &store::Pool, config: &Config, tenant: TenantId) -> Result<(), Error> {
    let definition: Value = serde_json::from_str(include_str!("demo_crm.json")).map_err(Error::internal)?;
    let data = data_service(pool, config).await?;
    let applied = data.apply(tenant, definition).await?;
    let calling_code =
        accounts::tenants::get(&mut *store::connect(pool, tenant).await?, tenant).await?.default_country_code;
    let operator = kernel::Caller::operator(tenant, calling_code);
    let table = |slug: &str| applied.tables.iter().find(|t| t.slug == slug).map(|t| data_tables::TableId(t.id));
    let (Some(agents), Some(customers)) = (table("agents"), table("customers")) else { return Ok(()) };
    if data.seed(&operator, agents, &[json!({"name": "Neema Mushi", "phone": "0754 000 111"})]).await? {
        let agent = data.first_record(tenant, agents).await?;
        let customers_data = [
            json!({"name": "Amina Juma", "phone": "0712 345 678", "email": "amina@example.com", "segment": "retail",
                   "score": 82.5, "credit": 150000, "tags": ["vip"], "joined": "2026-03-14", "agent": agent}),
            json!({"name": "Baraka Mollel", "phone": "0713 222 333", "segment": "wholesale", "score": 64,
                   "credit": 420000, "joined": "2026-06-02", "agent": agent}),
            json!({"name": "Zawadi Kimaro", "phone": "0765 444 555", "segment": "retail", "score": 41, "tags": ["late"]}),
        ];
        data.seed(&operator, customers, &customers_data).await?;
    }
    Ok(())
}

/// A file's media type by its extension.
fn mime_of(name: &str) -> &'static str {
    match name.rsplit_once('.').map(|(_, ext)| ext.to_ascii_lowercase()).as_deref() {
        Some("pdf") => "application/pdf",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("txt") => "text/plain",
        Some("csv") => "text/csv",
        Some("json") => "application/json",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::cli::{Cli, Command};

    #[test]
    fn both_channel_commands_take_the_credentials_and_print_the_api_key_redacted() {
        for command in ["add", "set-credentials"] {
            let mut args = vec!["gateway", "admin", "channel", command, "--tenant", "1"];
            if command == "set-credentials" {
                args.push("at");
            }
            args.extend(["--base-url", "https://api.example.com", "--username", "duka", "--api-key", "k-s3cret"]);
            let cli = Cli::try_parse_from(&args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
            let printed = format!("{cli:?}");
            assert!(matches!(cli.command, Command::Admin(_)));
            assert!(printed.contains("duka") && printed.contains("<redacted>"), "{printed}");
            assert!(!printed.contains("k-s3cret"), "{printed}");
        }
    }
}

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
    /// The tenant's wallet.
    #[command(subcommand)]
    Wallet(WalletCommand),
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

/// Runs one admin command and returns what to print: plain lines, or the JSON object.
pub async fn run(admin: Admin, database_url: &str) -> Result<String, Error> {
    let pool = store::pool(database_url, 2)?;
    let mut conn = store::connect(&pool).await?;
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
        AdminCommand::Wallet(WalletCommand::Credit { tenant, amount_minor, note }) => {
            let wallet = accounts::wallet::credit(conn, TenantId(tenant), amount_minor, note.as_deref()).await?;
            (wallet.balance_minor.to_string(), json!(wallet))
        }
        AdminCommand::Module { action, tenant, module } => {
            let module = Module::parse(&module)?;
            let enabled = matches!(action, Switch::Enable);
            accounts::modules::set(conn, TenantId(tenant), module, enabled).await?;
            (enabled.to_string(), json!({"tenant_id": tenant, "module": module.as_str(), "enabled": enabled}))
        }
        AdminCommand::Demo { key } => {
            let demo = accounts::demo::ensure(conn, key.as_deref(), now).await?;
            let value = json!(demo);
            (value.to_string(), value)
        }
    };
    Ok(if admin.json { value.to_string() } else { plain })
}

//! Chat business accounts (a WABA each) and their phone numbers (contract: `GET /chat/accounts`).
//! An account rides on a channel of kind `chat`: the provider, the sealed credentials (access
//! token, app secret, verify token) and the webhook token are the channel's.

use std::fmt;

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::{Error, TenantId};
use serde::Serialize;
use store::Conn;
use store::secrets::Keyring;
use time::OffsetDateTime;

use crate::channels::{self, Channel};
use crate::schema::{channels as channels_table, chat_accounts, chat_phone_numbers};

/// Providers a chat account can use.
pub const PROVIDERS: &[&str] = &["sandbox", "cloud"];

/// What an operator gives to add a business account (`gateway admin chat-account add`). Its
/// `Debug` leaves the secrets out.
#[derive(Clone, Default)]
pub struct NewChatAccount {
    pub waba_id: String,
    pub name: String,
    /// `sandbox` (the default) or `cloud`.
    pub provider: Option<String>,
    pub base_url: Option<String>,
    pub version: Option<String>,
    pub access_token: Option<String>,
    /// Signs the provider's webhooks; one is made when not given.
    pub app_secret: Option<String>,
    /// Answers the provider's webhook verification; one is made when not given.
    pub verify_token: Option<String>,
    pub is_default: bool,
}

impl fmt::Debug for NewChatAccount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NewChatAccount")
            .field("waba_id", &self.waba_id)
            .field("name", &self.name)
            .field("provider", &self.provider)
            .field("base_url", &self.base_url)
            .field("version", &self.version)
            .field("is_default", &self.is_default)
            .finish_non_exhaustive()
    }
}

/// A chat account's credentials, opened from its channel.
#[derive(Clone, serde::Deserialize, serde::Serialize)]
pub struct ChatCredentials {
    #[serde(default)]
    pub base_url: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub access_token: String,
    pub app_secret: String,
    pub verify_token: String,
}

impl fmt::Debug for ChatCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChatCredentials").field("base_url", &self.base_url).finish_non_exhaustive()
    }
}

impl ChatCredentials {
    pub fn open(keyring: &Keyring, channel: &Channel) -> Result<Self, Error> {
        let clear = crate::credentials::open(keyring, &channel.credentials).map_err(|e| {
            tracing::error!(channel = channel.id, error = %e.message, "a chat account's credentials cannot be opened");
            Error::internal("the chat account's credentials cannot be opened: is the key that sealed them configured?")
        })?;
        serde_json::from_value(clear).map_err(|_| Error::internal("a chat account's credentials are incomplete"))
    }
}

/// A random secret for what the operator did not give.
fn secret() -> String {
    format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple())
}

/// A business account row.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = chat_accounts)]
pub struct AccountRow {
    pub id: i64,
    pub tenant_id: i64,
    pub channel_id: i64,
    pub waba_id: String,
    pub name: String,
    pub is_default: bool,
    pub quality_rating: Option<String>,
    pub messaging_tier: Option<String>,
    pub templates_count: i32,
    pub catalogues_count: i32,
    pub last_synced_at: Option<OffsetDateTime>,
}

/// An account just added, with what the operator needs to point the provider at it.
#[derive(Debug, Clone, Serialize)]
pub struct AddedAccount {
    pub id: i64,
    pub waba_id: String,
    /// The channel's secret path token: the webhook is `/hooks/chat/{webhook_token}`.
    #[serde(skip)]
    pub webhook_token: String,
    #[serde(skip)]
    pub verify_token: String,
}

/// Adds a business account. The tenant's first account, or one added with `is_default`, is
/// the default.
pub async fn add(
    conn: &mut Conn,
    keyring: &Keyring,
    tenant: TenantId,
    new: NewChatAccount,
) -> Result<AddedAccount, Error> {
    let waba_id = new.waba_id.trim().to_owned();
    if waba_id.is_empty() || waba_id.chars().count() > 64 {
        return Err(Error::field("waba_id", "The waba_id must be 1 to 64 characters."));
    }
    let name = new.name.trim().to_owned();
    if name.is_empty() || name.chars().count() > 160 {
        return Err(Error::field("name", "The name must be 1 to 160 characters."));
    }
    let provider = new.provider.clone().unwrap_or_else(|| "sandbox".to_owned());
    if !PROVIDERS.contains(&provider.as_str()) {
        return Err(Error::field("provider", "The provider must be sandbox or cloud."));
    }
    let access_token = new.access_token.clone().filter(|t| !t.trim().is_empty());
    if provider == "cloud" && access_token.is_none() {
        return Err(Error::field("access_token", "The Cloud API needs an access token."));
    }
    let credentials = ChatCredentials {
        base_url: new.base_url.clone().unwrap_or_else(|| providers::CloudConfig::DEFAULT_BASE_URL.to_owned()),
        version: new.version.clone().unwrap_or_else(|| providers::CloudConfig::DEFAULT_VERSION.to_owned()),
        access_token: access_token.unwrap_or_default(),
        app_secret: new.app_secret.clone().filter(|s| !s.is_empty()).unwrap_or_else(secret),
        verify_token: new.verify_token.clone().filter(|s| !s.is_empty()).unwrap_or_else(secret),
    };
    let clear = serde_json::to_value(&credentials).map_err(|e| Error::internal(e.to_string()))?;
    conn.transaction(async |conn| {
        let channel =
            channels::insert(conn, keyring, tenant, ("chat", &provider), Some(format!("chat-{waba_id}")), &clear, None)
                .await?;
        let first = !any(conn, tenant).await?;
        if new.is_default {
            diesel::update(chat_accounts::table.filter(chat_accounts::tenant_id.eq(tenant.0)))
                .set(chat_accounts::is_default.eq(false))
                .execute(conn)
                .await?;
        }
        let inserted = diesel::insert_into(chat_accounts::table)
            .values((
                chat_accounts::tenant_id.eq(tenant.0),
                chat_accounts::channel_id.eq(channel.id),
                chat_accounts::waba_id.eq(&waba_id),
                chat_accounts::name.eq(&name),
                chat_accounts::is_default.eq(first || new.is_default),
            ))
            .returning(chat_accounts::id)
            .get_result::<i64>(conn)
            .await;
        let id = match inserted {
            Err(e) if store::is_unique_violation(&e, None) => {
                return Err(Error::conflict(format!("The account already has the chat business account {waba_id}.")));
            }
            other => other?,
        };
        Ok(AddedAccount {
            id,
            waba_id: waba_id.clone(),
            webhook_token: channel.callback_token,
            verify_token: credentials.verify_token.clone(),
        })
    })
    .await
}

/// What an operator gives to add a phone number (`gateway admin chat-account phone add`).
#[derive(Debug, Clone, Default)]
pub struct NewPhoneNumber {
    pub waba_id: String,
    pub phone_number_id: String,
    /// Any common form; stored E.164.
    pub phone_number: String,
    pub display: Option<String>,
    pub is_default: bool,
}

/// Adds a phone number to an account of `tenant`. The account's first number, or one added
/// with `is_default`, is its default.
pub async fn add_phone(
    conn: &mut Conn,
    tenant: TenantId,
    calling_code: &str,
    new: NewPhoneNumber,
) -> Result<ChatPhoneNumber, Error> {
    let account = by_waba(conn, tenant, &new.waba_id).await?;
    let phone_number_id = new.phone_number_id.trim().to_owned();
    if phone_number_id.is_empty() || phone_number_id.chars().count() > 64 {
        return Err(Error::field("phone_number_id", "The phone_number_id must be 1 to 64 characters."));
    }
    let Some(number) = crate::recipients::normalize(&new.phone_number, calling_code) else {
        return Err(Error::field("phone_number", "The phone_number is not a valid phone number."));
    };
    conn.transaction(async |conn| {
        let first = chat_phone_numbers::table
            .filter(chat_phone_numbers::tenant_id.eq(tenant.0))
            .filter(chat_phone_numbers::account_id.eq(account.id))
            .count()
            .get_result::<i64>(conn)
            .await?
            == 0;
        if new.is_default {
            diesel::update(chat_phone_numbers::table.filter(chat_phone_numbers::account_id.eq(account.id)))
                .set(chat_phone_numbers::is_default.eq(false))
                .execute(conn)
                .await?;
        }
        let inserted = diesel::insert_into(chat_phone_numbers::table)
            .values((
                chat_phone_numbers::tenant_id.eq(tenant.0),
                chat_phone_numbers::account_id.eq(account.id),
                chat_phone_numbers::phone_number_id.eq(&phone_number_id),
                chat_phone_numbers::phone_number.eq(&number),
                chat_phone_numbers::display.eq(new.display.as_deref().map(str::trim).filter(|d| !d.is_empty())),
                chat_phone_numbers::is_default.eq(first || new.is_default),
            ))
            .returning(PhoneRow::as_returning())
            .get_result::<PhoneRow>(conn)
            .await;
        match inserted {
            Err(e) if store::is_unique_violation(&e, None) => Err(Error::conflict(format!(
                "The account already has the chat number {number} or the phone number id {phone_number_id}."
            ))),
            other => Ok(ChatPhoneNumber::from(other?)),
        }
    })
    .await
}

async fn by_waba(conn: &mut Conn, tenant: TenantId, waba_id: &str) -> Result<AccountRow, Error> {
    chat_accounts::table
        .filter(chat_accounts::tenant_id.eq(tenant.0))
        .filter(chat_accounts::waba_id.eq(waba_id.trim()))
        .select(AccountRow::as_select())
        .first(conn)
        .await
        .optional()?
        .ok_or_else(|| Error::not_found("Chat business account"))
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = chat_phone_numbers)]
struct PhoneRow {
    account_id: i64,
    phone_number_id: String,
    phone_number: String,
    display: Option<String>,
    is_default: bool,
    quality_rating: Option<String>,
    messaging_tier: Option<String>,
}

/// A business phone number (contract: `phone_numbers[]`).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ChatPhoneNumber {
    /// The provider's phone number id: what `sender_id` takes.
    pub id: String,
    /// E.164.
    pub phone_number: String,
    pub display: Option<String>,
    pub is_default: bool,
    pub quality_rating: Option<String>,
    pub messaging_tier: Option<String>,
}

impl From<PhoneRow> for ChatPhoneNumber {
    fn from(row: PhoneRow) -> Self {
        Self {
            id: row.phone_number_id,
            phone_number: row.phone_number,
            display: row.display,
            is_default: row.is_default,
            quality_rating: row.quality_rating,
            messaging_tier: row.messaging_tier,
        }
    }
}

/// A business account as `GET /chat/accounts` lists it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ChatAccount {
    pub waba_id: String,
    pub name: String,
    /// Its channel is active (an operator can switch it off).
    pub is_active: bool,
    pub is_default: bool,
    pub phone_numbers: Vec<ChatPhoneNumber>,
    pub quality_rating: Option<String>,
    pub messaging_tier: Option<String>,
    /// As the provider counted them at the last refresh.
    pub templates_count: i32,
    pub catalogues_count: i32,
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_synced_at: Option<OffsetDateTime>,
}

/// `GET /chat/accounts`.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ChatAccounts {
    /// The number a send without `sender_id` goes from; null when there is none.
    pub default_phone_number_id: Option<String>,
    pub items: Vec<ChatAccount>,
}

/// The tenant's accounts, the default first, then by name.
pub async fn list(conn: &mut Conn, tenant: TenantId) -> Result<ChatAccounts, Error> {
    let accounts: Vec<(AccountRow, String)> = chat_accounts::table
        .inner_join(channels_table::table)
        .filter(chat_accounts::tenant_id.eq(tenant.0))
        .order((chat_accounts::is_default.desc(), chat_accounts::name, chat_accounts::id))
        .select((AccountRow::as_select(), channels_table::status))
        .load(conn)
        .await?;
    let numbers: Vec<PhoneRow> = chat_phone_numbers::table
        .filter(chat_phone_numbers::tenant_id.eq(tenant.0))
        .order((chat_phone_numbers::is_default.desc(), chat_phone_numbers::id))
        .select(PhoneRow::as_select())
        .load(conn)
        .await?;
    let default_phone_number_id = default_number(&accounts, &numbers).map(|n| n.phone_number_id.clone());
    let items = accounts
        .into_iter()
        .map(|(account, status)| ChatAccount {
            phone_numbers: numbers
                .iter()
                .filter(|n| n.account_id == account.id)
                .cloned()
                .map(ChatPhoneNumber::from)
                .collect(),
            waba_id: account.waba_id,
            name: account.name,
            is_active: status == "active",
            is_default: account.is_default,
            quality_rating: account.quality_rating,
            messaging_tier: account.messaging_tier,
            templates_count: account.templates_count,
            catalogues_count: account.catalogues_count,
            last_synced_at: account.last_synced_at,
        })
        .collect();
    Ok(ChatAccounts { default_phone_number_id, items })
}

/// The workspace default: the default account's default number (its only one will do).
fn default_number<'a>(accounts: &[(AccountRow, String)], numbers: &'a [PhoneRow]) -> Option<&'a PhoneRow> {
    let (account, _) = accounts.iter().find(|(a, _)| a.is_default)?;
    let mine: Vec<&PhoneRow> = numbers.iter().filter(|n| n.account_id == account.id).collect();
    mine.iter().find(|n| n.is_default).copied().or(match mine[..] {
        [only] => Some(only),
        _ => None,
    })
}

/// The business number a chat message goes from, with its account's channel.
#[derive(Debug, Clone)]
pub struct ChatSender {
    pub account_id: i64,
    pub channel: Channel,
    pub phone_number_id: String,
    /// E.164.
    pub phone_number: String,
}

/// Resolves `sender_id` (a phone number id, or the number itself in any common form); without
/// one, the workspace default. 422 when the account has no chat account, when the sender is
/// not one of its numbers, or when none is named and there is no default.
pub async fn sender(
    conn: &mut Conn,
    tenant: TenantId,
    calling_code: &str,
    sender_id: Option<&str>,
) -> Result<ChatSender, Error> {
    let rows: Vec<(PhoneRow, AccountRow, Channel)> = chat_phone_numbers::table
        .inner_join(chat_accounts::table.inner_join(channels_table::table))
        .filter(chat_phone_numbers::tenant_id.eq(tenant.0))
        .select((PhoneRow::as_select(), AccountRow::as_select(), Channel::as_select()))
        .load(conn)
        .await?;
    let sender = match sender_id.map(str::trim).filter(|s| !s.is_empty()) {
        Some(wanted) => {
            let as_number = crate::recipients::normalize(wanted, calling_code);
            rows.into_iter()
                .find(|(n, _, _)| n.phone_number_id == wanted || Some(&n.phone_number) == as_number.as_ref())
        }
        None => {
            let accounts: Vec<(AccountRow, String)> =
                rows.iter().map(|(_, a, c)| (a.clone(), c.status.clone())).collect();
            let numbers: Vec<PhoneRow> = rows.iter().map(|(n, _, _)| n.clone()).collect();
            let id = default_number(&accounts, &numbers).map(|n| n.phone_number_id.clone());
            rows.into_iter().find(|(n, _, _)| Some(&n.phone_number_id) == id.as_ref())
        }
    };
    match (sender, sender_id.is_some_and(|s| !s.trim().is_empty())) {
        (Some((number, account, channel)), _) => Ok(ChatSender {
            account_id: account.id,
            channel,
            phone_number_id: number.phone_number_id,
            phone_number: number.phone_number,
        }),
        (None, named) => Err(match (any(conn, tenant).await?, named) {
            (false, _) => Error::validation("No chat account is configured for this account."),
            (_, true) => Error::field(
                "sender_id",
                "The sender_id is not a chat phone number of this account: pass a phone number id or the number \
                     from GET /chat/accounts.",
            ),
            (_, false) => Error::field(
                "sender_id",
                "The sender_id is required: this account has no default chat number (GET /chat/accounts).",
            ),
        }),
    }
}

/// Whether the tenant has any chat account.
pub async fn any(conn: &mut Conn, tenant: TenantId) -> Result<bool, Error> {
    let count: i64 =
        chat_accounts::table.filter(chat_accounts::tenant_id.eq(tenant.0)).count().get_result(conn).await?;
    Ok(count > 0)
}

/// The account of a chat channel (by the channel a webhook names).
pub(crate) async fn of_channel(conn: &mut Conn, tenant: TenantId, channel: i64) -> Result<AccountRow, Error> {
    chat_accounts::table
        .filter(chat_accounts::tenant_id.eq(tenant.0))
        .filter(chat_accounts::channel_id.eq(channel))
        .select(AccountRow::as_select())
        .first(conn)
        .await
        .optional()?
        .ok_or_else(|| Error::not_found("Chat business account"))
}

/// The channel of one of the tenant's business accounts.
pub(crate) async fn channel_of(conn: &mut Conn, tenant: TenantId, account: i64) -> Result<Channel, Error> {
    chat_accounts::table
        .inner_join(channels_table::table)
        .filter(chat_accounts::tenant_id.eq(tenant.0))
        .filter(chat_accounts::id.eq(account))
        .select(Channel::as_select())
        .first(conn)
        .await
        .optional()?
        .ok_or_else(|| Error::not_found("Chat business account"))
}

/// A number of the account by its provider id.
pub(crate) async fn number_of(
    conn: &mut Conn,
    tenant: TenantId,
    account: i64,
    phone_number_id: &str,
) -> Result<Option<(String, String)>, Error> {
    Ok(chat_phone_numbers::table
        .filter(chat_phone_numbers::tenant_id.eq(tenant.0))
        .filter(chat_phone_numbers::account_id.eq(account))
        .filter(chat_phone_numbers::phone_number_id.eq(phone_number_id))
        .select((chat_phone_numbers::phone_number_id, chat_phone_numbers::phone_number))
        .first(conn)
        .await
        .optional()?)
}

impl crate::MessagingService {
    /// `GET /chat/accounts` (a tenant credential, like the SMS senders).
    pub async fn chat_accounts(&self, caller: &kernel::Caller) -> Result<ChatAccounts, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
        list(&mut conn, caller.tenant_id).await
    }

    /// Refreshes an account from its provider: its name, its numbers' quality rating and
    /// messaging tier, its template count, `last_synced_at`. No connection is held while the
    /// provider answers.
    pub async fn refresh_chat_account(&self, tenant: TenantId, waba_id: &str) -> Result<ChatAccounts, Error> {
        let (account, channel) = {
            let mut conn = self.conn(tenant).await?;
            let account = by_waba(&mut conn, tenant, waba_id).await?;
            let channel = channels::get(&mut conn, tenant, account.channel_id).await?;
            (account, channel)
        };
        let gateway = self.gateways.chat(&channel)?;
        let provider_failure =
            |e: providers::SendError| Error::new(kernel::ErrorKind::ProviderFailure, format!("The chat provider: {e}"));
        let described = gateway.account(&account.waba_id).await.map_err(provider_failure)?;
        let templates = gateway.templates(&account.waba_id).await.map_err(provider_failure)?;
        let now = self.clock.now();
        let mut conn = self.conn(tenant).await?;
        conn.transaction(async |conn| {
            for number in &described.phone_numbers {
                diesel::update(
                    chat_phone_numbers::table
                        .filter(chat_phone_numbers::tenant_id.eq(tenant.0))
                        .filter(chat_phone_numbers::account_id.eq(account.id))
                        .filter(chat_phone_numbers::phone_number_id.eq(&number.id)),
                )
                .set((
                    chat_phone_numbers::quality_rating.eq(&number.quality_rating),
                    chat_phone_numbers::messaging_tier.eq(&number.messaging_limit_tier),
                    chat_phone_numbers::updated_at.eq(now),
                ))
                .execute(conn)
                .await?;
            }
            // the provider rates numbers: the account shows the first one it lists
            let rated = <[_]>::first(&described.phone_numbers);
            diesel::update(chat_accounts::table.find(account.id))
                .set((
                    chat_accounts::name.eq(described.name.as_deref().unwrap_or(&account.name)),
                    chat_accounts::quality_rating.eq(rated.and_then(|n| n.quality_rating.clone())),
                    chat_accounts::messaging_tier.eq(rated.and_then(|n| n.messaging_limit_tier.clone())),
                    chat_accounts::templates_count.eq(i32::try_from(templates.len()).unwrap_or(i32::MAX)),
                    chat_accounts::last_synced_at.eq(now),
                    chat_accounts::updated_at.eq(now),
                ))
                .execute(conn)
                .await?;
            Ok::<_, Error>(())
        })
        .await?;
        list(&mut conn, tenant).await
    }
}

/// The demo's sandbox chat account (`gateway admin demo`): WABA `demo-waba`, number
/// `+255700000100` (id `100000000000100`), made once.
pub async fn ensure_demo(conn: &mut Conn, keyring: &Keyring, tenant: TenantId) -> Result<(), Error> {
    const WABA: &str = "demo-waba";
    if by_waba(conn, tenant, WABA).await.is_ok() {
        return Ok(());
    }
    let new = NewChatAccount { waba_id: WABA.to_owned(), name: "Demo shop".to_owned(), ..Default::default() };
    add(conn, keyring, tenant, new).await?;
    let number = NewPhoneNumber {
        waba_id: WABA.to_owned(),
        phone_number_id: "100000000000100".to_owned(),
        phone_number: "+255700000100".to_owned(),
        display: Some("Demo shop".to_owned()),
        is_default: true,
    };
    add_phone(conn, tenant, "255", number).await?;
    Ok(())
}

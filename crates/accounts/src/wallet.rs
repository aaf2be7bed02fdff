//! The wallet: a balance in minor units with a ledger of every credit and debit.

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text};
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::{Error, TenantId};
use serde::Serialize;
use store::{Conn, Prepare};

use crate::schema::{wallet_ledger, wallets};

#[derive(Debug, Clone, Queryable, Selectable, Serialize)]
#[diesel(table_name = wallets)]
pub struct Wallet {
    pub balance_minor: i64,
    pub currency: String,
    pub billing_mode: String,
}

/// What `GET /balance` answers (contract: Account).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Balance {
    /// Balance in minor units of `currency`.
    pub balance_minor: i64,
    /// The balance in major units, for display (`"1234.50"`).
    pub balance: String,
    pub currency: String,
    /// `prepaid` or `postpaid`; new tenants are prepaid.
    pub billing_mode: String,
}

impl From<Wallet> for Balance {
    fn from(wallet: Wallet) -> Self {
        Self {
            balance_minor: wallet.balance_minor,
            balance: kernel::money::format_minor(wallet.balance_minor, &wallet.currency),
            currency: wallet.currency,
            billing_mode: wallet.billing_mode,
        }
    }
}

pub async fn get(conn: &mut Conn, tenant: TenantId) -> Result<Wallet, Error> {
    wallets::table
        .find(tenant.0)
        .select(Wallet::as_select())
        .first(conn)
        .await
        .optional()?
        .ok_or_else(|| Error::not_found("Wallet"))
}

/// Adds to the balance and records the credit in the ledger, together.
pub async fn credit(conn: &mut Conn, tenant: TenantId, amount_minor: i64, note: Option<&str>) -> Result<Wallet, Error> {
    if amount_minor <= 0 {
        return Err(Error::field("amount_minor", "The amount must be a positive number of minor units."));
    }
    conn.transaction(async |conn| {
        let wallet: Wallet = diesel::update(wallets::table.find(tenant.0))
            .set((
                wallets::balance_minor.eq(wallets::balance_minor + amount_minor),
                wallets::updated_at.eq(diesel::dsl::now),
            ))
            .returning(Wallet::as_returning())
            .get_result(conn)
            .await
            .optional()?
            .ok_or_else(|| Error::not_found("Wallet"))?;
        ledger(conn, tenant, "credit", amount_minor, wallet.balance_minor, note).await?;
        Ok(wallet)
    })
    .await
}

/// A prepaid wallet that cannot pay: what was asked and what there is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shortfall {
    pub needed_minor: i64,
    pub balance_minor: i64,
}

/// Takes `amount_minor` inside the caller's transaction, with its ledger entry. A prepaid
/// wallet must hold the whole amount (nothing is taken otherwise); a postpaid one may go below
/// zero. A zero amount takes nothing and writes no entry.
pub async fn debit(
    conn: &mut Conn,
    tenant: TenantId,
    amount_minor: i64,
    note: &str,
) -> Result<Result<Wallet, Shortfall>, Error> {
    if amount_minor < 0 {
        return Err(Error::internal("a debit must not be negative"));
    }
    if amount_minor == 0 {
        return Ok(Ok(get(conn, tenant).await?));
    }
    // The debit and its ledger entry in one statement: this runs on every send.
    let taken: Option<(i64, String, String)> = diesel::sql_query(
        "WITH taken AS (
             UPDATE wallets SET balance_minor = balance_minor - $2, updated_at = now()
             WHERE tenant_id = $1 AND (billing_mode = 'postpaid' OR balance_minor >= $2)
             RETURNING balance_minor, currency, billing_mode),
         entry AS (
             INSERT INTO wallet_ledger (tenant_id, kind, amount_minor, balance_after, note)
             SELECT $1, 'debit', $2, balance_minor, $3 FROM taken)
         SELECT balance_minor, currency, billing_mode FROM taken",
    )
    .bind::<BigInt, _>(tenant.0)
    .bind::<BigInt, _>(amount_minor)
    .bind::<Text, _>(note)
    .prepared()
    .get_result::<Taken>(conn)
    .await
    .optional()?
    .map(|t| (t.balance_minor, t.currency, t.billing_mode));
    match taken {
        Some((balance_minor, currency, billing_mode)) => Ok(Ok(Wallet { balance_minor, currency, billing_mode })),
        None => {
            let wallet = get(conn, tenant).await?;
            Ok(Err(Shortfall { needed_minor: amount_minor, balance_minor: wallet.balance_minor }))
        }
    }
}

#[derive(QueryableByName)]
struct Taken {
    #[diesel(sql_type = BigInt)]
    balance_minor: i64,
    #[diesel(sql_type = Text)]
    currency: String,
    #[diesel(sql_type = Text)]
    billing_mode: String,
}

/// Takes `amount_minor` for work already done (a call's minutes after the first), even below
/// zero: the next debit of a prepaid wallet is refused until it is topped up.
pub async fn take(conn: &mut Conn, tenant: TenantId, amount_minor: i64, note: &str) -> Result<(), Error> {
    if amount_minor <= 0 {
        return Ok(());
    }
    adjust(conn, tenant, -amount_minor, "debit", note).await
}

/// Gives back what a debit took for work that was not done (a message the provider refused).
pub async fn refund(conn: &mut Conn, tenant: TenantId, amount_minor: i64, note: &str) -> Result<(), Error> {
    if amount_minor <= 0 {
        return Ok(());
    }
    adjust(conn, tenant, amount_minor, "refund", note).await
}

/// Moves the balance by `delta` unconditionally, with its ledger entry of `|delta|`.
async fn adjust(conn: &mut Conn, tenant: TenantId, delta: i64, kind: &str, note: &str) -> Result<(), Error> {
    let balance: i64 = diesel::update(wallets::table.find(tenant.0))
        .set((wallets::balance_minor.eq(wallets::balance_minor + delta), wallets::updated_at.eq(diesel::dsl::now)))
        .returning(wallets::balance_minor)
        .get_result(conn)
        .await?;
    ledger(conn, tenant, kind, delta.abs(), balance, Some(note)).await
}

/// Whether the wallet could pay `amount_minor` now (always, when postpaid).
pub async fn can_afford(conn: &mut Conn, tenant: TenantId, amount_minor: i64) -> Result<bool, Error> {
    let wallet = get(conn, tenant).await?;
    Ok(wallet.billing_mode == "postpaid" || wallet.balance_minor >= amount_minor)
}

async fn ledger(
    conn: &mut Conn,
    tenant: TenantId,
    kind: &str,
    amount_minor: i64,
    balance_after: i64,
    note: Option<&str>,
) -> Result<(), Error> {
    diesel::insert_into(wallet_ledger::table)
        .values((
            wallet_ledger::tenant_id.eq(tenant.0),
            wallet_ledger::kind.eq(kind),
            wallet_ledger::amount_minor.eq(amount_minor),
            wallet_ledger::balance_after.eq(balance_after),
            wallet_ledger::note.eq(note),
        ))
        .execute(conn)
        .await?;
    Ok(())
}

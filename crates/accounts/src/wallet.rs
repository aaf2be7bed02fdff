//! The wallet: a balance in minor units with a ledger of every credit and debit.

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::{Error, TenantId};
use serde::Serialize;

use crate::schema::{wallet_ledger, wallets};
use store::Conn;

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
        diesel::insert_into(wallet_ledger::table)
            .values((
                wallet_ledger::tenant_id.eq(tenant.0),
                wallet_ledger::kind.eq("credit"),
                wallet_ledger::amount_minor.eq(amount_minor),
                wallet_ledger::balance_after.eq(wallet.balance_minor),
                wallet_ledger::note.eq(note),
            ))
            .execute(conn)
            .await?;
        Ok(wallet)
    })
    .await
}

//! Tenants: the accounts keys belong to.

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::{Error, TenantId};
use serde::Serialize;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::schema::{tenants, wallets};
use store::Conn;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TenantStatus {
    Active,
    Suspended,
    Inactive,
}

impl TenantStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Suspended => "suspended",
            Self::Inactive => "inactive",
        }
    }

    pub fn parse(value: &str) -> Result<Self, Error> {
        match value {
            "active" => Ok(Self::Active),
            "suspended" => Ok(Self::Suspended),
            "inactive" => Ok(Self::Inactive),
            other => {
                Err(Error::field("status", format!("Unknown status {other:?}: use active, suspended or inactive.")))
            }
        }
    }
}

#[derive(Debug, Clone, Queryable, Selectable, Serialize)]
#[diesel(table_name = tenants)]
pub struct Tenant {
    pub id: i64,
    pub uid: Uuid,
    pub name: String,
    pub status: String,
    pub currency: String,
    pub default_country_code: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// A currency code as ISO 4217 writes it.
fn check_currency(currency: &str) -> Result<(), Error> {
    if currency.len() == 3 && currency.chars().all(|c| c.is_ascii_uppercase()) {
        Ok(())
    } else {
        Err(Error::field("currency", "The currency must be a three-letter ISO 4217 code, like TZS."))
    }
}

/// Creates an active tenant with an empty prepaid wallet in its currency.
pub async fn create(conn: &mut Conn, name: &str, currency: &str) -> Result<Tenant, Error> {
    let name = name.trim();
    if name.is_empty() {
        return Err(Error::field("name", "The name is required."));
    }
    check_currency(currency)?;
    create_with_uid(conn, Uuid::new_v4(), name, currency).await
}

pub(crate) async fn create_with_uid(conn: &mut Conn, uid: Uuid, name: &str, currency: &str) -> Result<Tenant, Error> {
    conn.transaction(async |conn| {
        let tenant: Tenant = diesel::insert_into(tenants::table)
            .values((tenants::uid.eq(uid), tenants::name.eq(name), tenants::currency.eq(currency)))
            .returning(Tenant::as_returning())
            .get_result(conn)
            .await?;
        diesel::insert_into(wallets::table)
            .values((wallets::tenant_id.eq(tenant.id), wallets::currency.eq(currency)))
            .execute(conn)
            .await?;
        Ok(tenant)
    })
    .await
}

pub async fn get(conn: &mut Conn, tenant: TenantId) -> Result<Tenant, Error> {
    tenants::table
        .find(tenant.0)
        .select(Tenant::as_select())
        .first(conn)
        .await
        .optional()?
        .ok_or_else(|| Error::not_found("Tenant"))
}

/// Sets the calling code used for contacts sent without `country_code` (255 by default).
pub async fn set_default_country_code(conn: &mut Conn, tenant: TenantId, code: &str) -> Result<Tenant, Error> {
    let code = code.trim().trim_start_matches('+');
    if code.is_empty() || code.len() > 3 || !code.chars().all(|c| c.is_ascii_digit()) || code.starts_with('0') {
        return Err(Error::field("country_code", "A country calling code is 1 to 3 digits, like 255."));
    }
    diesel::update(tenants::table.find(tenant.0))
        .set((tenants::default_country_code.eq(code), tenants::updated_at.eq(diesel::dsl::now)))
        .returning(Tenant::as_returning())
        .get_result(conn)
        .await
        .optional()?
        .ok_or_else(|| Error::not_found("Tenant"))
}

/// Suspension and deactivation apply to the very next request: authentication reads the status.
pub async fn set_status(conn: &mut Conn, tenant: TenantId, status: TenantStatus) -> Result<Tenant, Error> {
    diesel::update(tenants::table.find(tenant.0))
        .set((tenants::status.eq(status.as_str()), tenants::updated_at.eq(diesel::dsl::now)))
        .returning(Tenant::as_returning())
        .get_result(conn)
        .await
        .optional()?
        .ok_or_else(|| Error::not_found("Tenant"))
}

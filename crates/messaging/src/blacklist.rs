//! The account blacklist: numbers that opted out (contract: "numbers on the account
//! blacklist"). Every send consults it, not only campaigns.

use std::collections::HashSet;

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::{Caller, Error, Page, PageRequest, Permission, TenantId};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::MessagingService;
use crate::schema::{messages, sms_blacklist};

pub const PER_PAGE: i64 = 20;

/// One blacklisted number.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct BlacklistEntry {
    /// E.164 with `+`.
    pub number: String,
    pub reason: Option<String>,
    /// The inbound message that opted the number out (`STOP`), when it came that way.
    pub source_message_uid: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// `POST /sms/blacklist`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
pub struct BlacklistAdd {
    /// 1 to 1,000 numbers, each 6 to 20 digits after an optional `+` (spaces around trimmed;
    /// the reader also drops punctuation). Every one must be a valid number, or nothing is added.
    #[schema(schema_with = numbers_schema)]
    pub numbers: Vec<String>,
    /// At most 255 characters.
    #[schema(max_length = 255)]
    pub reason: Option<String>,
}

fn numbers_schema() -> utoipa::openapi::schema::Schema {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Type};
    ArrayBuilder::new()
        .items(ObjectBuilder::new().schema_type(Type::String).pattern(Some(r"^\s*\+?[0-9]{6,20}\s*$")))
        .min_items(Some(1))
        .max_items(Some(1000))
        .description(Some(
            "1 to 1,000 numbers, each 6 to 20 digits after an optional `+` (the reader also drops \
             punctuation). Every one must be a valid number, or nothing is added.",
        ))
        .into()
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct BlacklistAdded {
    /// Entries now on the list for the numbers sent (already listed ones included).
    pub items: Vec<BlacklistEntry>,
}

/// The numbers of `numbers` that are on the tenant's blacklist.
pub async fn listed(conn: &mut store::Conn, tenant: TenantId, numbers: &[String]) -> Result<HashSet<String>, Error> {
    if numbers.is_empty() {
        return Ok(HashSet::new());
    }
    let found: Vec<String> = sms_blacklist::table
        .filter(sms_blacklist::tenant_id.eq(tenant.0))
        .filter(sms_blacklist::number.eq_any(numbers))
        .select(sms_blacklist::number)
        .load(conn)
        .await?;
    Ok(found.into_iter().collect())
}

/// Every number on the tenant's list (for counting a campaign's recipients).
pub(crate) async fn all(conn: &mut store::Conn, tenant: TenantId) -> Result<Vec<String>, Error> {
    Ok(sms_blacklist::table
        .filter(sms_blacklist::tenant_id.eq(tenant.0))
        .select(sms_blacklist::number)
        .load(conn)
        .await?)
}

/// Puts `number` on the list; an existing entry keeps its first reason and proof.
pub(crate) async fn add(
    conn: &mut store::Conn,
    tenant: TenantId,
    number: &str,
    reason: Option<&str>,
    source_message_id: Option<i64>,
    now: OffsetDateTime,
) -> Result<(), Error> {
    diesel::insert_into(sms_blacklist::table)
        .values((
            sms_blacklist::tenant_id.eq(tenant.0),
            sms_blacklist::number.eq(number),
            sms_blacklist::reason.eq(reason),
            sms_blacklist::source_message_id.eq(source_message_id),
            sms_blacklist::created_at.eq(now),
        ))
        .on_conflict_do_nothing()
        .execute(conn)
        .await?;
    Ok(())
}

/// Takes `number` off the list; true when it was there.
pub(crate) async fn remove(conn: &mut store::Conn, tenant: TenantId, number: &str) -> Result<bool, Error> {
    let removed = diesel::delete(
        sms_blacklist::table.filter(sms_blacklist::tenant_id.eq(tenant.0)).filter(sms_blacklist::number.eq(number)),
    )
    .execute(conn)
    .await?;
    Ok(removed > 0)
}

type Row = (String, Option<String>, Option<String>, OffsetDateTime);

#[diesel::dsl::auto_type(no_type_alias)]
fn entries(tenant: i64) -> _ {
    sms_blacklist::table
        .left_join(messages::table.on(sms_blacklist::source_message_id.eq(messages::id.nullable())))
        .filter(sms_blacklist::tenant_id.eq(tenant))
}

#[diesel::dsl::auto_type(no_type_alias)]
fn columns() -> _ {
    (sms_blacklist::number, sms_blacklist::reason, messages::uid.nullable(), sms_blacklist::created_at)
}

fn entry((number, reason, source_message_uid, created_at): Row) -> BlacklistEntry {
    BlacklistEntry { number, reason, source_message_uid, created_at }
}

/// A number as the blacklist keeps it: E.164, or a field error naming the input.
fn number(raw: &str, calling_code: &str) -> Result<String, Error> {
    crate::recipients::normalize(raw, calling_code)
        .ok_or_else(|| Error::field("numbers", format!("{raw} is not a valid phone number.")))
}

impl MessagingService {
    /// `GET /sms/blacklist`, newest first.
    pub async fn blacklist(&self, caller: &Caller, page: PageRequest) -> Result<Page<BlacklistEntry>, Error> {
        caller.require_issuer()?;
        caller.require(Permission::CONTACTS_VIEW)?;
        let mut conn = self.conn(caller.tenant_id).await?;
        let total: i64 = entries(caller.tenant_id.0).count().get_result(&mut conn).await?;
        let rows: Vec<Row> = entries(caller.tenant_id.0)
            .order((sms_blacklist::created_at.desc(), sms_blacklist::number))
            .limit(page.per_page)
            .offset(page.offset())
            .select(columns())
            .load(&mut conn)
            .await?;
        Ok(Page::new(rows.into_iter().map(entry).collect(), page, total))
    }

    /// `POST /sms/blacklist`: every number must be valid, or nothing is added.
    pub async fn blacklist_add(&self, caller: &Caller, body: BlacklistAdd) -> Result<BlacklistAdded, Error> {
        caller.require_issuer()?;
        caller.require(Permission::CONTACTS_EDIT)?;
        if body.numbers.is_empty() {
            return Err(Error::field("numbers", "At least one number is required."));
        }
        if body.numbers.len() > 1_000 {
            return Err(Error::field("numbers", "At most 1000 numbers at a time."));
        }
        if body.reason.as_deref().is_some_and(|r| r.chars().count() > 255 || r.contains('\0')) {
            return Err(Error::field("reason", "The reason must be at most 255 characters, without NUL characters."));
        }
        let numbers = body.numbers.iter().map(|n| number(n, &caller.calling_code)).collect::<Result<Vec<_>, _>>()?;
        let now = self.clock.now();
        let tenant = caller.tenant_id;
        let mut conn = self.conn(tenant).await?;
        conn.transaction(async |conn| {
            for n in &numbers {
                add(conn, tenant, n, body.reason.as_deref(), None, now).await?;
            }
            Ok::<_, Error>(())
        })
        .await?;
        let rows: Vec<Row> = entries(tenant.0)
            .filter(sms_blacklist::number.eq_any(&numbers))
            .order(sms_blacklist::number)
            .select(columns())
            .load(&mut conn)
            .await?;
        Ok(BlacklistAdded { items: rows.into_iter().map(entry).collect() })
    }

    /// `DELETE /sms/blacklist/{number}`: 404 when the number is not listed.
    pub async fn blacklist_remove(&self, caller: &Caller, raw: &str) -> Result<(), Error> {
        caller.require_issuer()?;
        caller.require(Permission::CONTACTS_EDIT)?;
        let number = number(raw, &caller.calling_code).map_err(|_| Error::not_found("Blacklisted number"))?;
        let mut conn = self.conn(caller.tenant_id).await?;
        if remove(&mut conn, caller.tenant_id, &number).await? {
            Ok(())
        } else {
            Err(Error::not_found("Blacklisted number"))
        }
    }
}

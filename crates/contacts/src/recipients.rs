//! What another domain reads of a group's contacts to message them (a campaign's dispatch):
//! keyset pages of the contacts that have a number, always within one tenant.

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use kernel::{Error, TenantId};

use crate::schema::contacts;

/// A contact as a recipient: its number and what personalizes its message.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable)]
#[diesel(table_name = contacts)]
pub struct Recipient {
    pub id: i64,
    pub name: String,
    pub country_code: String,
    pub phone_number: String,
    /// Digits with the calling code, without `+`.
    pub full_phone_number: String,
    pub custom_field_values: serde_json::Value,
}

impl Recipient {
    /// The number in E.164 form, with `+`.
    pub fn e164(&self) -> String {
        format!("+{}", self.full_phone_number)
    }
}

/// The contacts of `group` (of `tenant`) that have a number, with `after < id <= last`.
fn with_number(tenant: TenantId, group: i64, after: i64, last: i64) -> contacts::BoxedQuery<'static, diesel::pg::Pg> {
    contacts::table
        .filter(contacts::tenant_id.eq(tenant.0))
        .filter(contacts::group_id.eq(group))
        .filter(contacts::id.gt(after))
        .filter(contacts::id.le(last))
        .filter(contacts::phone_number.ne(""))
        .into_boxed()
}

/// The highest contact id in `group` now (0 when it has none): the end of a dispatch, so
/// contacts added later are not messaged.
pub async fn last_id(conn: &mut store::Conn, tenant: TenantId, group: i64) -> Result<i64, Error> {
    let last: Option<i64> = contacts::table
        .filter(contacts::tenant_id.eq(tenant.0))
        .filter(contacts::group_id.eq(group))
        .select(diesel::dsl::max(contacts::id))
        .first(conn)
        .await?;
    Ok(last.unwrap_or(0))
}

/// Up to `limit` recipients of `group` after the contact id `after` and up to `last`, by id:
/// one indexed query per page (keyset paging; the next page starts after the last id).
pub async fn page(
    conn: &mut store::Conn,
    tenant: TenantId,
    group: i64,
    after: i64,
    last: i64,
    limit: i64,
) -> Result<Vec<Recipient>, Error> {
    Ok(with_number(tenant, group, after, last)
        .order(contacts::id)
        .limit(limit)
        .select(Recipient::as_select())
        .load(conn)
        .await?)
}

/// How many recipients `group` has up to the contact id `last`, leaving out those whose E.164
/// number (with `+`) is among `excluding` (the caller's opt-outs).
pub async fn count(
    conn: &mut store::Conn,
    tenant: TenantId,
    group: i64,
    last: i64,
    excluding: &[String],
) -> Result<i64, Error> {
    let excluded: Vec<&str> = excluding.iter().filter_map(|n| n.strip_prefix('+')).collect();
    let query = with_number(tenant, group, 0, last);
    let query = if excluded.is_empty() { query } else { query.filter(contacts::full_phone_number.ne_all(excluded)) };
    Ok(query.count().get_result(conn).await?)
}

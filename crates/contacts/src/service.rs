//! The contacts service: every rule of the contract's contact section, for REST, MCP and jobs
//! alike. Each call takes the [`Caller`] first, checks its permission and scopes every query to
//! the caller's tenant, so another tenant's ids are simply not found.

use std::collections::{BTreeMap, HashMap};

use diesel::dsl::{count_star, sql};
use diesel::pg::Pg;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool, Text};
use diesel_async::{AsyncConnection, RunQueryDsl};
use serde_json::{Map, Value};
use uuid::Uuid;

use kernel::error::FieldErrors;
use kernel::{Caller, Clock, Error, Page, PageRequest, Patch, Permission, TenantId};
use store::search::{self, EXACT_TOTAL_UP_TO};
use store::{Conn, Pool};

use crate::batch::{self, BatchReport, NewContacts};
use crate::body::ContactInput;
use crate::contact::{Contact, ContactRow, ListQuery, new_uid, page_bounds, parse_phone};
use crate::group::{
    ContactGroup, DeletedGroup, GroupPatch, GroupRow, NewGroup, check_name, check_status, find, parse_custom_fields,
};
use crate::ids::{ContactRef, GroupId, GroupRef};
use crate::schema::{contact_groups, contacts};

/// Default page size of contact-group lists (contract: 25).
pub const GROUPS_PER_PAGE: i64 = 25;

#[derive(Clone)]
pub struct ContactService {
    pool: Pool,
    clock: Clock,
}

type Condition = Box<dyn BoxableExpression<contacts::table, Pg, SqlType = Bool>>;

/// `search`/`q`: the name as a substring, and, for a term that looks like a number, the
/// national or full number with punctuation stripped (through the leakproof operators, so the
/// trigram indexes serve it under row-level security).
fn matches(term: &str) -> Condition {
    let term = term.trim();
    let by_name = sql::<Bool>(&format!("contacts.name {} ", search::ILIKE)).bind::<Text, _>(search::contains(term));
    let looks_like_number =
        term.chars().any(|c| c.is_ascii_digit()) && term.chars().all(|c| c.is_ascii_digit() || " +-().".contains(c));
    let digits = kernel::phone::digits(term);
    let national = digits.strip_prefix('0').unwrap_or(&digits);
    if looks_like_number && !national.is_empty() {
        let by_number = sql::<Bool>(&format!("contacts.full_phone_number {} ", search::LIKE))
            .bind::<Text, _>(search::contains(national));
        Box::new(by_name.or(by_number))
    } else {
        Box::new(by_name)
    }
}

fn filtered(tenant: TenantId, group: Option<GroupId>, query: &ListQuery) -> contacts::BoxedQuery<'static, Pg> {
    let mut q = contacts::table.filter(contacts::tenant_id.eq(tenant.0)).into_boxed();
    if let Some(group) = group {
        q = q.filter(contacts::group_id.eq(group));
    }
    if let Some(term) = &query.search {
        q = q.filter(matches(term));
    }
    if let Some(subscribed) = query.subscribed {
        q = q.filter(contacts::is_subscribed.eq(subscribed));
    }
    q
}

/// Custom field values after a merge: a value sets its key, null removes it.
pub(crate) fn merge_fields(
    mut stored: Map<String, Value>,
    changes: &BTreeMap<String, Patch<Value>>,
) -> Map<String, Value> {
    for (key, change) in changes {
        match change.as_ref().change() {
            None => {}
            Some(None) => {
                stored.remove(key);
            }
            Some(Some(value)) => {
                stored.insert(key.clone(), value.clone());
            }
        }
    }
    stored
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// A number the group already has: a unique-value conflict, 409 naming the field and the
/// contact that holds the number.
fn duplicate(existing_uid: &str, field: &str) -> Error {
    let message = format!("This number is already in the group as contact {existing_uid}.");
    Error::conflict(message.clone()).with_field(field, message).with_detail("contact_uid", existing_uid)
}

impl ContactService {
    pub fn new(pool: Pool, clock: Clock) -> Self {
        Self { pool, clock }
    }

    /// A connection that sees `tenant`'s rows only (row-level security).
    async fn conn(&self, tenant: kernel::TenantId) -> Result<store::PooledConn, Error> {
        store::connect(&self.pool, tenant).await
    }

    async fn group_row(conn: &mut Conn, tenant: TenantId, group: GroupRef) -> Result<GroupRow, Error> {
        find(tenant, group)
            .select(GroupRow::as_select())
            .first(conn)
            .await
            .optional()?
            .ok_or_else(|| Error::not_found("Contact group"))
    }

    /// `(contacts_count, subscribed_count)` of each group.
    async fn counts(
        conn: &mut Conn,
        tenant: TenantId,
        groups: &[GroupId],
    ) -> Result<HashMap<GroupId, (i64, i64)>, Error> {
        let rows: Vec<(GroupId, i64, i64)> = contacts::table
            .filter(contacts::tenant_id.eq(tenant.0))
            .filter(contacts::group_id.eq_any(groups))
            .group_by(contacts::group_id)
            .select((contacts::group_id, count_star(), sql::<BigInt>("count(*) FILTER (WHERE is_subscribed)")))
            .load(conn)
            .await?;
        Ok(rows.into_iter().map(|(g, all, subscribed)| (g, (all, subscribed))).collect())
    }

    async fn with_counts(conn: &mut Conn, tenant: TenantId, row: GroupRow) -> Result<ContactGroup, Error> {
        let (all, subscribed) = Self::counts(conn, tenant, &[row.id]).await?.get(&row.id).copied().unwrap_or((0, 0));
        Ok(row.into_group(all, subscribed))
    }

    // --- groups ---------------------------------------------------------------------------

    pub async fn list_groups(&self, caller: &Caller, page: PageRequest) -> Result<Page<ContactGroup>, Error> {
        caller.require(Permission::CONTACTS_VIEW)?;
        let tenant = caller.tenant_id;
        let mut conn = self.conn(tenant).await?;
        let total: i64 =
            contact_groups::table.filter(contact_groups::tenant_id.eq(tenant.0)).count().get_result(&mut conn).await?;
        let (limit, offset) = page_bounds(page);
        let rows: Vec<GroupRow> = contact_groups::table
            .filter(contact_groups::tenant_id.eq(tenant.0))
            .order(contact_groups::id.desc())
            .limit(limit)
            .offset(offset)
            .select(GroupRow::as_select())
            .load(&mut conn)
            .await?;
        let ids: Vec<GroupId> = rows.iter().map(|r| r.id).collect();
        let counts = Self::counts(&mut conn, tenant, &ids).await?;
        let items = rows
            .into_iter()
            .map(|row| {
                let (all, subscribed) = counts.get(&row.id).copied().unwrap_or((0, 0));
                row.into_group(all, subscribed)
            })
            .collect();
        Ok(Page::new(items, page, total))
    }

    pub async fn create_group(&self, caller: &Caller, input: NewGroup) -> Result<ContactGroup, Error> {
        caller.require(Permission::CONTACTS_CREATE)?;
        let mut errors = FieldErrors::new();
        let name = check_name(&input.name, &mut errors);
        let fields = input.custom_fields.map(|v| parse_custom_fields(v, &mut errors)).unwrap_or_default();
        errors.finish()?;
        let now = self.clock.now();
        let mut conn = self.conn(caller.tenant_id).await?;
        let row: GroupRow = diesel::insert_into(contact_groups::table)
            .values((
                contact_groups::uid.eq(Uuid::new_v4()),
                contact_groups::tenant_id.eq(caller.tenant_id.0),
                contact_groups::name.eq(name),
                contact_groups::custom_fields.eq(serde_json::to_value(fields).map_err(Error::internal)?),
                contact_groups::created_at.eq(now),
                contact_groups::updated_at.eq(now),
            ))
            .returning(GroupRow::as_returning())
            .get_result(&mut conn)
            .await?;
        Ok(row.into_group(0, 0))
    }

    pub async fn get_group(&self, caller: &Caller, group: GroupRef) -> Result<ContactGroup, Error> {
        caller.require(Permission::CONTACTS_VIEW)?;
        let mut conn = self.conn(caller.tenant_id).await?;
        let row = Self::group_row(&mut conn, caller.tenant_id, group).await?;
        Self::with_counts(&mut conn, caller.tenant_id, row).await
    }

    /// Renames, (de)activates, or replaces the custom field definitions; stored values stay.
    pub async fn update_group(
        &self,
        caller: &Caller,
        group: GroupRef,
        patch: GroupPatch,
    ) -> Result<ContactGroup, Error> {
        caller.require(Permission::CONTACTS_EDIT)?;
        let mut errors = FieldErrors::new();
        let name = patch.name.as_deref().map(|n| check_name(n, &mut errors));
        let status = patch.status.as_deref().and_then(|status| check_status(status, &mut errors));
        // null removes every definition
        let fields = patch.custom_fields.change().map(|v| parse_custom_fields(v.unwrap_or_default(), &mut errors));
        errors.finish()?;
        let mut conn = self.conn(caller.tenant_id).await?;
        let row = Self::group_row(&mut conn, caller.tenant_id, group).await?;
        let fields = match fields {
            Some(fields) => serde_json::to_value(fields).map_err(Error::internal)?,
            None => row.custom_fields.clone(),
        };
        let row: GroupRow =
            diesel::update(contact_groups::table.find(row.id).filter(contact_groups::tenant_id.eq(caller.tenant_id.0)))
                .set((
                    contact_groups::name.eq(name.unwrap_or(row.name)),
                    contact_groups::status.eq(status.map_or(row.status, |s| s.as_str().to_owned())),
                    contact_groups::custom_fields.eq(fields),
                    contact_groups::updated_at.eq(self.clock.now()),
                ))
                .returning(GroupRow::as_returning())
                .get_result(&mut conn)
                .await?;
        Self::with_counts(&mut conn, caller.tenant_id, row).await
    }

    /// Deletes a group with its contacts; a non-empty group needs `force` (409 with the count).
    pub async fn delete_group(&self, caller: &Caller, group: GroupRef, force: bool) -> Result<DeletedGroup, Error> {
        caller.require(Permission::CONTACTS_DELETE)?;
        let tenant = caller.tenant_id;
        let mut conn = self.conn(tenant).await?;
        conn.transaction(async |conn| {
            let row = Self::group_row(conn, tenant, group).await?;
            // Holds off concurrent adds while counting, so "empty" stays true until deleted.
            contact_groups::table
                .find(row.id)
                .filter(contact_groups::tenant_id.eq(caller.tenant_id.0))
                .select(contact_groups::id)
                .for_update()
                .first::<GroupId>(conn)
                .await?;
            let count: i64 = contacts::table.filter(contacts::group_id.eq(row.id)).count().get_result(conn).await?;
            if count > 0 && !force {
                return Err(Error::conflict(format!(
                    "The group has {count} contacts; delete them first or send ?force=true."
                ))
                .with_detail("count", count));
            }
            diesel::delete(contacts::table.filter(contacts::group_id.eq(row.id))).execute(conn).await?;
            diesel::delete(contact_groups::table.find(row.id).filter(contact_groups::tenant_id.eq(caller.tenant_id.0)))
                .execute(conn)
                .await?;
            Ok(DeletedGroup { id: row.id.0, uid: row.uid, deleted: true, contacts_deleted: count })
        })
        .await
    }

    // --- contacts -------------------------------------------------------------------------

    pub async fn list_contacts(
        &self,
        caller: &Caller,
        group: GroupRef,
        query: ListQuery,
        page: PageRequest,
    ) -> Result<Page<Contact>, Error> {
        caller.require(Permission::CONTACTS_VIEW)?;
        let tenant = caller.tenant_id;
        let mut conn = self.conn(tenant).await?;
        let group = Self::group_row(&mut conn, tenant, group).await?;
        let (limit, offset) = page_bounds(page);
        let rows: Vec<ContactRow> = filtered(tenant, Some(group.id), &query)
            .order(contacts::id.desc())
            .limit(limit)
            .offset(offset)
            .select(ContactRow::as_select())
            .load(&mut conn)
            .await?;
        let (total, estimated) = Self::total(&mut conn, tenant, Some(group.id), &query, page, rows.len()).await?;
        Ok(Page::new(rows.into_iter().map(|r| r.into_contact(group.uid)).collect(), page, total).estimated(estimated))
    }

    /// `GET /contacts`: every group of the tenant, or one.
    pub async fn search_contacts(
        &self,
        caller: &Caller,
        q: Option<String>,
        group: Option<GroupRef>,
        page: PageRequest,
    ) -> Result<Page<Contact>, Error> {
        caller.require(Permission::CONTACTS_VIEW)?;
        let tenant = caller.tenant_id;
        let mut conn = self.conn(tenant).await?;
        let group = match group {
            Some(group) => Some(Self::group_row(&mut conn, tenant, group).await?.id),
            None => None,
        };
        let query = ListQuery { search: q.filter(|s| !s.trim().is_empty()), subscribed: None };
        let (limit, offset) = page_bounds(page);
        let rows: Vec<(ContactRow, Uuid)> = filtered(tenant, group, &query)
            .inner_join(contact_groups::table)
            .order(contacts::id.desc())
            .limit(limit)
            .offset(offset)
            .select((ContactRow::as_select(), contact_groups::uid))
            .load(&mut conn)
            .await?;
        let (total, estimated) = Self::total(&mut conn, tenant, group, &query, page, rows.len()).await?;
        Ok(Page::new(rows.into_iter().map(|(r, uid)| r.into_contact(uid)).collect(), page, total).estimated(estimated))
    }

    /// A list's total and whether it is an estimate. A page short of full ends the list, so
    /// it gives the total; a search counts its matches up to [`EXACT_TOTAL_UP_TO`] and takes
    /// the planner's estimate beyond, rather than visiting every match of a large group on
    /// each page (docs/api.md, "Search totals"); other lists count.
    async fn total(
        conn: &mut Conn,
        tenant: TenantId,
        group: Option<GroupId>,
        query: &ListQuery,
        page: PageRequest,
        on_page: usize,
    ) -> Result<(i64, bool), Error> {
        let (limit, offset) = page_bounds(page);
        let on_page = on_page as i64;
        if on_page < limit && (on_page > 0 || offset == 0) {
            return Ok((offset + on_page, false));
        }
        if query.search.is_none() {
            return Ok((filtered(tenant, group, query).count().get_result(conn).await?, false));
        }
        let counted: Vec<i64> =
            filtered(tenant, group, query).select(contacts::id).limit(EXACT_TOTAL_UP_TO + 1).load(conn).await?;
        let counted = counted.len() as i64;
        if counted <= EXACT_TOTAL_UP_TO {
            return Ok((counted, false));
        }
        let estimate = search::estimate(conn, filtered(tenant, group, query).select(contacts::id)).await?;
        Ok((estimate.max(counted).max(offset + on_page), true))
    }

    async fn contact_row(
        conn: &mut Conn,
        tenant: TenantId,
        group: GroupId,
        contact: &ContactRef,
    ) -> Result<ContactRow, Error> {
        let q =
            contacts::table.filter(contacts::tenant_id.eq(tenant.0)).filter(contacts::group_id.eq(group)).into_boxed();
        let q = match contact {
            ContactRef::Id(id) => q.filter(contacts::id.eq(*id)),
            ContactRef::Uid(uid) => q.filter(contacts::uid.eq(uid.as_str().to_owned())),
        };
        q.select(ContactRow::as_select()).first(conn).await.optional()?.ok_or_else(|| Error::not_found("Contact"))
    }

    async fn uid_by_number(conn: &mut Conn, group: GroupId, full: &str) -> Result<Option<String>, Error> {
        Ok(contacts::table
            .filter(contacts::group_id.eq(group))
            .filter(contacts::full_phone_number.eq(full))
            .select(contacts::uid)
            .first(conn)
            .await
            .optional()?)
    }

    pub async fn create_contact(
        &self,
        caller: &Caller,
        group: GroupRef,
        input: ContactInput,
    ) -> Result<Contact, Error> {
        caller.require(Permission::CONTACTS_CREATE)?;
        let body = input.read()?;
        let tenant = caller.tenant_id;
        let mut conn = self.conn(tenant).await?;
        let group = Self::group_row(&mut conn, tenant, group).await?;
        // the account's calling code came with the caller (the key's lookup)
        let default_cc = caller.calling_code.as_str();
        let (phone, field) = body.phone.clone().ok_or_else(|| Error::field("PHONE", "The PHONE field is required."))?;
        let phone = parse_phone(&phone, field, body.country_code.as_deref(), default_cc)?;
        let full = phone.full();
        let now = self.clock.now();
        let values = merge_fields(Map::new(), &body.custom_fields);
        let inserted = diesel::insert_into(contacts::table)
            .values((
                contacts::uid.eq(new_uid()),
                contacts::tenant_id.eq(tenant.0),
                contacts::group_id.eq(group.id),
                contacts::name.eq(body.name.unwrap_or_else(|| full.clone())),
                contacts::country_code.eq(&phone.country_code),
                contacts::phone_number.eq(&phone.national),
                contacts::full_phone_number.eq(&full),
                contacts::is_subscribed.eq(body.is_subscribed.unwrap_or(true)),
                contacts::custom_field_values.eq(Value::Object(values)),
                contacts::created_at.eq(now),
                contacts::updated_at.eq(now),
            ))
            .on_conflict_do_nothing()
            .returning(ContactRow::as_returning())
            .get_result(&mut conn)
            .await
            .optional()?;
        match inserted {
            Some(row) => Ok(row.into_contact(group.uid)),
            // The number is already in the group (the unique index decides, so a concurrent
            // create of the same number cannot slip through either).
            None => {
                let uid = Self::uid_by_number(&mut conn, group.id, &full).await?.unwrap_or_default();
                Err(duplicate(&uid, field))
            }
        }
    }

    pub async fn get_contact(&self, caller: &Caller, group: GroupRef, contact: &ContactRef) -> Result<Contact, Error> {
        caller.require(Permission::CONTACTS_VIEW)?;
        let mut conn = self.conn(caller.tenant_id).await?;
        let group = Self::group_row(&mut conn, caller.tenant_id, group).await?;
        Ok(Self::contact_row(&mut conn, caller.tenant_id, group.id, contact).await?.into_contact(group.uid))
    }

    /// Merge-only: only the keys sent change; custom fields merge and null removes one;
    /// `PHONE` is needed only to change the number.
    pub async fn update_contact(
        &self,
        caller: &Caller,
        group: GroupRef,
        contact: &ContactRef,
        input: ContactInput,
    ) -> Result<Contact, Error> {
        caller.require(Permission::CONTACTS_EDIT)?;
        let body = input.read()?;
        let tenant = caller.tenant_id;
        let mut conn = self.conn(tenant).await?;
        let group = Self::group_row(&mut conn, tenant, group).await?;
        // the account's calling code came with the caller (the key's lookup)
        let default_cc = caller.calling_code.as_str();
        let row = Self::contact_row(&mut conn, tenant, group.id, contact).await?;
        let change = batch::apply_patch(&row_state(&row), &body, default_cc)?;
        if change.full_phone_number != row.full_phone_number
            && let Some(uid) = Self::uid_by_number(&mut conn, group.id, &change.full_phone_number).await?
        {
            return Err(duplicate(&uid, body.phone.as_ref().map_or("PHONE", |p| p.1)));
        }
        let updated = diesel::update(contacts::table.find(row.id).filter(contacts::tenant_id.eq(caller.tenant_id.0)))
            .set((
                contacts::name.eq(&change.name),
                contacts::country_code.eq(&change.country_code),
                contacts::phone_number.eq(&change.phone_number),
                contacts::full_phone_number.eq(&change.full_phone_number),
                contacts::is_subscribed.eq(change.is_subscribed),
                contacts::custom_field_values.eq(Value::Object(change.custom_field_values)),
                contacts::updated_at.eq(self.clock.now()),
            ))
            .returning(ContactRow::as_returning())
            .get_result(&mut conn)
            .await;
        match updated {
            Ok(row) => Ok(row.into_contact(group.uid)),
            Err(e) if store::is_unique_violation(&e, None) => {
                Err(Error::field("PHONE", "This number is already in the group."))
            }
            Err(e) => Err(e.into()),
        }
    }

    pub async fn delete_contact(
        &self,
        caller: &Caller,
        group: GroupRef,
        contact: &ContactRef,
    ) -> Result<Contact, Error> {
        caller.require(Permission::CONTACTS_DELETE)?;
        let mut conn = self.conn(caller.tenant_id).await?;
        let group = Self::group_row(&mut conn, caller.tenant_id, group).await?;
        let row = Self::contact_row(&mut conn, caller.tenant_id, group.id, contact).await?;
        diesel::delete(contacts::table.find(row.id).filter(contacts::tenant_id.eq(caller.tenant_id.0)))
            .execute(&mut conn)
            .await?;
        Ok(row.into_contact(group.uid))
    }

    /// Up to 500 contacts at once: existing numbers are updated (or skipped with
    /// `skip_existing`), new ones created, bad rows rejected while the others land.
    pub async fn batch(&self, caller: &Caller, group: GroupRef, input: NewContacts) -> Result<BatchReport, Error> {
        caller.require(Permission::CONTACTS_IMPORT)?;
        input.check()?;
        let skip_existing = input.skip_existing.unwrap_or(false);
        let tenant = caller.tenant_id;
        let mut conn = self.conn(tenant).await?;
        let group = Self::group_row(&mut conn, tenant, group).await?;
        // the account's calling code came with the caller (the key's lookup)
        let default_cc = caller.calling_code.as_str();
        let plan = batch::plan(input.contacts, default_cc);
        // One index probe per number: the planner would otherwise scan a young group whole.
        let existing: Vec<ContactRow> = diesel::sql_query(
            "SELECT c.* FROM unnest($2::text[]) AS n(full_phone_number)
             JOIN contacts c ON c.group_id = $1 AND c.full_phone_number = n.full_phone_number",
        )
        .bind::<BigInt, _>(group.id)
        .bind::<diesel::sql_types::Array<diesel::sql_types::Text>, _>(plan.numbers())
        .load(&mut conn)
        .await?;
        let (report, writes) = plan.resolve(group.id, skip_existing, existing);
        let now = self.clock.now();
        conn.transaction(async |conn| {
            if !writes.creates.is_empty() {
                let rows: Vec<_> = writes
                    .creates
                    .iter()
                    .map(|c| {
                        (
                            contacts::uid.eq(c.uid.clone()),
                            contacts::tenant_id.eq(tenant.0),
                            contacts::group_id.eq(group.id),
                            contacts::name.eq(c.state.name.clone()),
                            contacts::country_code.eq(c.state.country_code.clone()),
                            contacts::phone_number.eq(c.state.phone_number.clone()),
                            contacts::full_phone_number.eq(c.state.full_phone_number.clone()),
                            contacts::is_subscribed.eq(c.state.is_subscribed),
                            contacts::custom_field_values.eq(Value::Object(c.state.custom_field_values.clone())),
                            contacts::created_at.eq(now),
                            contacts::updated_at.eq(now),
                        )
                    })
                    .collect();
                // A concurrent request added one of these numbers after the plan was made.
                diesel::insert_into(contacts::table).values(rows).execute(conn).await.map_err(|e| {
                    if store::is_unique_violation(&e, None) {
                        Error::conflict(
                            "Another request changed this group's contacts at the same time; retry the batch.",
                        )
                    } else {
                        e.into()
                    }
                })?;
            }
            for (id, state) in &writes.updates {
                diesel::update(contacts::table.find(*id))
                    .set((
                        contacts::name.eq(&state.name),
                        contacts::is_subscribed.eq(state.is_subscribed),
                        contacts::custom_field_values.eq(Value::Object(state.custom_field_values.clone())),
                        contacts::updated_at.eq(now),
                    ))
                    .execute(conn)
                    .await?;
            }
            Ok::<_, Error>(())
        })
        .await?;
        Ok(report)
    }
}

/// The mutable state of a stored contact.
pub(crate) fn row_state(row: &ContactRow) -> batch::ContactState {
    batch::ContactState {
        name: row.name.clone(),
        country_code: row.country_code.clone(),
        phone_number: row.phone_number.clone(),
        full_phone_number: row.full_phone_number.clone(),
        is_subscribed: row.is_subscribed,
        custom_field_values: object(row.custom_field_values.clone()),
    }
}

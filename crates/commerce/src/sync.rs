//! Sync runs (contract: Sync report, Sync run and feed): a product batch is accepted at once
//! (202) and worked by a job in one transaction; every row's fate is in the report.

use kernel::state::{Event as _, Status as _};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Text, Timestamptz};
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::{Caller, Error, Page, PageRequest, Permission, TenantId};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use store::idempotency::{self, Answer, Key, Request};
use store::jobs::{Enqueue, Job, JobContext, JobError};
use time::OffsetDateTime;
use utoipa::__dev::ComposeSchema;
use utoipa::openapi::schema::{AnyOfBuilder, ObjectBuilder, Schema, SchemaType};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};

use crate::catalogues::Row as Shop;
use crate::products::{Cause, Change, Input, Loaded, ProductBody, default_currency, load_drafts, write};
use crate::schema::{catalogue_syncs as s, catalogues};
use crate::service::CommerceService;
use crate::status::{SyncEvent, SyncStatus};
use crate::{CatalogueId, SyncId};

/// Products in one batch (contract: Limits).
pub const MAX_PRODUCTS: usize = 5_000;
/// Problems kept in a report (contract: Limits).
pub const MAX_PROBLEMS: usize = 200;
/// A row naming a product an earlier row of the batch already named.
const DUPLICATE: &str = "duplicate sku in this batch: the earlier row for this product was used";

/// One row that did not land where it should (contract: Sync report).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
pub struct Problem {
    /// The row's code as sent, or null.
    pub sku: Option<String>,
    /// `ingest`: the row was not stored; a platform name: stored, but not shown there.
    pub stage: String,
    pub reason: String,
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = s)]
struct Row {
    id: i64,
    catalogue_id: i64,
    kind: String,
    mode: String,
    status: SyncStatus,
    received: i32,
    created: i32,
    updated: i32,
    unchanged: i32,
    rejected: i32,
    retired: i32,
    platforms: Value,
    problems: Value,
    problems_truncated: bool,
    failure: Option<String>,
    created_at: OffsetDateTime,
    started_at: Option<OffsetDateTime>,
    finished_at: Option<OffsetDateTime>,
    feed_id: Option<i64>,
}

/// A sync run's report.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Report {
    pub id: i64,
    pub catalogue_id: i64,
    /// `batch` (the API's), `feed` (a feed pull) or `import`.
    pub kind: String,
    /// The feed a `feed` run pulled.
    pub feed_id: Option<i64>,
    /// `upsert` or `replace`.
    pub mode: String,
    /// `queued`, `running`, `completed`, `failed`.
    pub status: String,
    pub received: i32,
    pub created: i32,
    pub updated: i32,
    /// Rows equal to their product.
    pub unchanged: i32,
    pub rejected: i32,
    pub retired: i32,
    /// `{<platform>: {synced, blocked}}`.
    #[schema(value_type = Object)]
    pub platforms: Value,
    /// At most 200; left out of lists and of `sync.completed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problems: Option<Vec<Problem>>,
    pub problems_truncated: bool,
    /// The answer to a repeated `Idempotency-Key`.
    pub replayed: bool,
    /// Why a failed run failed.
    pub failure: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub started_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub finished_at: Option<OffsetDateTime>,
}

impl Report {
    /// The webhooks catalogue's sample: a finished batch with a few bad rows.
    pub(crate) fn sample() -> Self {
        let at = time::macros::datetime!(2026-11-26 09:30 UTC);
        Self {
            id: 311,
            catalogue_id: 7,
            kind: "batch".to_owned(),
            feed_id: None,
            mode: "upsert".to_owned(),
            status: SyncStatus::Completed.as_str().to_owned(),
            received: 120,
            created: 8,
            updated: 101,
            unchanged: 8,
            rejected: 3,
            retired: 0,
            platforms: json!({}),
            problems: None,
            problems_truncated: false,
            replayed: false,
            failure: None,
            created_at: at,
            started_at: Some(at),
            finished_at: Some(at + time::Duration::seconds(2)),
        }
    }

    fn of(row: Row, with_problems: bool) -> Self {
        Self {
            id: row.id,
            catalogue_id: row.catalogue_id,
            kind: row.kind,
            feed_id: row.feed_id,
            mode: row.mode,
            status: row.status.as_str().to_owned(),
            received: row.received,
            created: row.created,
            updated: row.updated,
            unchanged: row.unchanged,
            rejected: row.rejected,
            retired: row.retired,
            platforms: row.platforms,
            problems: with_problems.then(|| serde_json::from_value(row.problems).unwrap_or_default()),
            problems_truncated: row.problems_truncated,
            replayed: false,
            failure: row.failure,
            created_at: row.created_at,
            started_at: row.started_at,
            finished_at: row.finished_at,
        }
    }
}

/// `POST /catalogues/{catalogue}/products/batch`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct Batch {
    /// `upsert` (default) or `replace` (the shop's products left out are retired).
    pub mode: Option<SyncMode>,
    /// 1 to 5,000 product bodies; `name` and `price` needed for new ones. Each row is read when
    /// the run works it: a bad row is rejected in the report, the others land.
    #[schema(value_type = Vec<BatchRow>, min_items = 1, max_items = 5000)]
    pub products: Vec<Value>,
}

/// A batch row: a `ProductBody`. A row that is not one (a member of the wrong type) is not
/// refused with the batch: it is rejected in the report like any bad row.
pub struct BatchRow;

impl ComposeSchema for BatchRow {
    fn compose(_: Vec<RefOr<Schema>>) -> RefOr<Schema> {
        AnyOfBuilder::new()
            .item(Ref::from_schema_name("ProductBody"))
            .item(ObjectBuilder::new().schema_type(SchemaType::AnyValue))
            .description(Some("A `ProductBody`; a row that is not one is rejected in the report."))
            .into()
    }
}

impl ToSchema for BatchRow {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((ProductBody::name().into(), ProductBody::schema()));
        <ProductBody as ToSchema>::schemas(schemas);
    }
}

/// How a batch treats the shop's products it leaves out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SyncMode {
    /// Left alone.
    #[default]
    Upsert,
    /// Retired.
    Replace,
}

impl SyncMode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Upsert => "upsert",
            Self::Replace => "replace",
        }
    }
}

/// Works one sync run.
#[derive(Debug, Serialize, Deserialize)]
pub struct RunSync {
    pub sync_id: SyncId,
}

impl Job for RunSync {
    const NAME: &'static str = "commerce.sync";
    const MAX_ATTEMPTS: i32 = 5;
    type State = CommerceService;

    async fn run(self, service: Arc<CommerceService>, ctx: JobContext) -> Result<(), JobError> {
        let tenant = ctx.tenant()?;
        match service.run_sync_attempt(tenant, self.sync_id, ctx.attempt >= Self::MAX_ATTEMPTS).await {
            Ok(()) => Ok(()),
            // the last attempt reports the failure instead of leaving the run `running`
            Err(error) if ctx.attempt >= Self::MAX_ATTEMPTS => {
                service.fail_sync(tenant, self.sync_id, &error.message).await?;
                Ok(())
            }
            Err(error) => Err(error.into()),
        }
    }
}

impl CommerceService {
    /// Accepts a batch: the report of the new run, or of the run that owns a repeated key.
    pub async fn accept_batch(
        &self,
        caller: &Caller,
        catalogue: CatalogueId,
        key: Option<Key>,
        body: Batch,
    ) -> Result<Answer<Report>, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
        let shop = self.shop(&mut conn, caller, Permission::CATALOGUE_MANAGE, catalogue).await?;
        let now = self.clock.now();
        // contract: a repeated key returns the owning run, whatever the body (so nothing of the
        // body has to match), as it is now
        let request =
            key.map(|key| Request::new(caller, &format!("commerce.batch:{}", shop.id), key, &())).transpose()?;
        let answer =
            idempotency::once(&mut conn, now, request, async |conn| accept(conn, &shop, &body, now).await).await?;
        let Answer::Replay(first) = answer else { return Ok(answer) };
        let id = first["id"].as_i64().ok_or_else(|| Error::internal("a stored sync report without its id"))?;
        let row: Row = s::table.filter(s::id.eq(id)).select(Row::as_select()).first(&mut conn).await?;
        let owner = Report { replayed: true, ..Report::of(row, true) };
        Ok(Answer::Replay(serde_json::to_value(owner).map_err(Error::internal)?))
    }

    pub async fn get_sync(&self, caller: &Caller, catalogue: CatalogueId, sync: SyncId) -> Result<Report, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
        let shop = self.shop(&mut conn, caller, Permission::CATALOGUE_VIEW, catalogue).await?;
        let row: Row = s::table
            .filter(s::id.eq(sync.0).and(s::catalogue_id.eq(shop.id)))
            .select(Row::as_select())
            .first(&mut conn)
            .await
            .optional()?
            .ok_or_else(|| Error::not_found("Sync"))?;
        Ok(Report::of(row, true))
    }

    /// Past runs, newest first, without their problems.
    pub async fn list_syncs(
        &self,
        caller: &Caller,
        catalogue: CatalogueId,
        page: PageRequest,
    ) -> Result<Page<Report>, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
        let shop = self.shop(&mut conn, caller, Permission::CATALOGUE_VIEW, catalogue).await?;
        let total: i64 = s::table.filter(s::catalogue_id.eq(shop.id)).count().get_result(&mut conn).await?;
        let rows: Vec<Row> = s::table
            .filter(s::catalogue_id.eq(shop.id))
            .order(s::id.desc())
            .limit(page.per_page)
            .offset(page.offset())
            .select(Row::as_select())
            .load(&mut conn)
            .await?;
        Ok(Page::new(rows.into_iter().map(|r| Report::of(r, false)).collect(), page, total))
    }

    /// Works a run: its rows in one transaction, then, when the shop publishes to its chat
    /// catalogue, the publish of what it wrote; the report is completed when every platform has
    /// answered. A run already finished is left alone, and a run found `running` (its worker
    /// died after the rows were written) goes on with the publish (jobs run at least once).
    pub async fn run_sync(&self, tenant: TenantId, sync: SyncId) -> Result<(), Error> {
        self.run_sync_attempt(tenant, sync, true).await
    }

    /// [`Self::run_sync`]; `last` false lets a publish that cannot finish now be an error (the
    /// job tries again), true completes the report with what the platforms said so far.
    async fn run_sync_attempt(&self, tenant: TenantId, sync: SyncId, last: bool) -> Result<(), Error> {
        let mut conn = self.conn(tenant).await?;
        let Some((catalogue, status)) = s::table
            .find(sync.0)
            .select((s::catalogue_id, s::status))
            .first::<(i64, SyncStatus)>(&mut conn)
            .await
            .optional()?
        else {
            return Ok(());
        };
        if status == SyncStatus::Queued && !self.ingest_run(&mut conn, sync).await? {
            return Ok(());
        }
        if status.is_final() {
            return Ok(());
        }
        // the publish holds connections of its own while the platform answers
        drop(conn);
        let published = self.publish(tenant, CatalogueId(catalogue)).await;
        if let Err(error) = published
            && !last
        {
            return Err(error);
        }
        let mut conn = self.conn(tenant).await?;
        match self.finish_run(&mut conn, tenant, sync, last).await? {
            Some(waiting) if !last => {
                Err(Error::unavailable(format!("{waiting} listings of sync {sync} are still being published")))
            }
            _ => Ok(()),
        }
    }

    /// Completes the shop's `running` runs whose listings have all been answered: the
    /// publisher that answers a run's last listing completes it, whichever job that was.
    pub(crate) async fn finish_answered_runs(&self, conn: &mut store::Conn, shop: &Shop) -> Result<(), Error> {
        let running: Vec<i64> = s::table
            .filter(s::catalogue_id.eq(shop.id).and(s::status.eq(SyncStatus::Running)))
            .select(s::id)
            .load(conn)
            .await?;
        for sync in running {
            self.finish_run(conn, TenantId(shop.tenant_id), SyncId(sync), false).await?;
        }
        Ok(())
    }

    /// Works a queued run's rows in one transaction: completed at once unless the chat
    /// catalogue must still be sent what it wrote (then `running`). Answers whether the run
    /// waits for that publish.
    async fn ingest_run(&self, conn: &mut store::Conn, sync: SyncId) -> Result<bool, Error> {
        let now = self.clock.now();
        conn.transaction::<_, Error, _>(async |conn| {
            let Some((catalogue, mode, status, payload)) = s::table
                .find(sync.0)
                .select((s::catalogue_id, s::mode, s::status, s::payload))
                .for_update()
                .first::<(i64, String, SyncStatus, Option<String>)>(conn)
                .await
                .optional()?
            else {
                return Ok(false);
            };
            if status != SyncStatus::Queued {
                // worked meanwhile by another attempt
                return Ok(status == SyncStatus::Running);
            }
            // one run at a time per shop: a second waits here, then sees what the first made
            let shop: Shop =
                catalogues::table.find(catalogue).select(Shop::as_select()).for_update().first(conn).await?;
            // written by `accept` from the checked batch
            let rows: Vec<Value> = match payload {
                Some(text) => serde_json::from_str(&text).map_err(Error::internal)?,
                None => Vec::new(),
            };
            let replace = mode == SyncMode::Replace.as_str();
            let outcome = ingest(conn, &shop, sync, &rows, replace, now).await?;
            let (problems, truncated) = outcome.problems_kept();
            let waits = outcome.publish;
            let status = if waits { SyncStatus::Running } else { SyncStatus::Completed };
            let (platforms, _, _) = crate::publish::run_outcome(conn, shop.tenant_id, sync.0).await?;
            let row: Row = diesel::update(s::table.find(sync.0))
                .set((
                    s::status.eq(status),
                    s::payload.eq(None::<String>),
                    s::created.eq(outcome.created),
                    s::updated.eq(outcome.updated),
                    s::unchanged.eq(outcome.unchanged),
                    s::rejected.eq(outcome.problems.len() as i32),
                    s::retired.eq(outcome.retired),
                    s::platforms.eq(platforms),
                    s::problems.eq(problems),
                    s::problems_truncated.eq(truncated),
                    s::started_at.eq(now),
                    s::finished_at.eq((!waits).then(|| self.clock.now())),
                ))
                .returning(Row::as_returning())
                .get_result(conn)
                .await?;
            diesel::update(catalogues::table.find(catalogue))
                .set(catalogues::last_synced_at.eq(now))
                .execute(conn)
                .await?;
            if !waits {
                completed(conn, &shop, row).await?;
            }
            Ok(waits)
        })
        .await
    }

    /// Completes a `running` run with what each platform did of its rows. While another
    /// publisher still holds some of them, the run is left `running` and the count of those is
    /// answered, unless `last`.
    async fn finish_run(
        &self,
        conn: &mut store::Conn,
        tenant: TenantId,
        sync: SyncId,
        last: bool,
    ) -> Result<Option<i64>, Error> {
        conn.transaction::<_, Error, _>(async |conn| {
            let row: Row = s::table.find(sync.0).select(Row::as_select()).for_update().first(conn).await?;
            if row.status != SyncStatus::Running {
                return Ok(None);
            }
            let (platforms, platform_problems, waiting) = crate::publish::run_outcome(conn, tenant.0, sync.0).await?;
            if waiting > 0 && !last {
                return Ok(Some(waiting));
            }
            let mut problems: Vec<Problem> = serde_json::from_value(row.problems.clone()).unwrap_or_default();
            problems.extend(platform_problems);
            let truncated = row.problems_truncated || problems.len() > MAX_PROBLEMS;
            problems.truncate(MAX_PROBLEMS);
            let done = SyncStatus::Running.apply(SyncEvent::Complete).map_err(Error::internal)?;
            let row: Row = diesel::update(s::table.find(sync.0))
                .set((
                    s::status.eq(done),
                    s::platforms.eq(platforms),
                    s::problems.eq(json!(problems)),
                    s::problems_truncated.eq(truncated),
                    s::finished_at.eq(self.clock.now()),
                ))
                .returning(Row::as_returning())
                .get_result(conn)
                .await?;
            let shop: Shop = catalogues::table.find(row.catalogue_id).select(Shop::as_select()).first(conn).await?;
            completed(conn, &shop, row).await?;
            Ok(None)
        })
        .await
    }

    /// Marks a run that could not be worked as failed, and says so.
    pub async fn fail_sync(&self, tenant: TenantId, sync: SyncId, why: &str) -> Result<(), Error> {
        let mut conn = self.conn(tenant).await?;
        let now = self.clock.now();
        conn.transaction::<_, Error, _>(async |conn| {
            let fail = SyncEvent::Fail;
            let failed = SyncStatus::Queued.apply(fail).map_err(Error::internal)?;
            let row: Option<Row> = diesel::update(s::table.find(sync.0).filter(s::status.eq_any(fail.sources())))
                .set((s::status.eq(failed), s::payload.eq(None::<String>), s::failure.eq(why), s::finished_at.eq(now)))
                .returning(Row::as_returning())
                .get_result(conn)
                .await
                .optional()?;
            let Some(row) = row else { return Ok(()) };
            let shop: Shop = catalogues::table.find(row.catalogue_id).select(Shop::as_select()).first(conn).await?;
            completed(conn, &shop, row).await
        })
        .await
    }
}

/// Checks a batch and queues its run.
async fn accept(conn: &mut store::Conn, shop: &Shop, body: &Batch, now: OffsetDateTime) -> Result<Report, Error> {
    let mode = body.mode.unwrap_or_default();
    let products = &body.products;
    if products.is_empty() || products.len() > MAX_PRODUCTS {
        return Err(Error::field("products", format!("Send between 1 and {MAX_PRODUCTS} products.")));
    }
    let payload = serde_json::to_string(products).map_err(Error::internal)?;
    conn.transaction::<_, Error, _>(async |conn| {
        let row: Row = diesel::insert_into(s::table)
            .values((
                s::tenant_id.eq(shop.tenant_id),
                s::catalogue_id.eq(shop.id),
                s::mode.eq(mode.as_str()),
                s::status.eq(SyncStatus::Queued),
                s::payload.eq(&payload),
                s::received.eq(products.len() as i32),
                s::created_at.eq(now),
            ))
            .returning(Row::as_returning())
            .get_result(conn)
            .await?;
        let options = Enqueue { tenant_id: Some(TenantId(shop.tenant_id)), ..Enqueue::default() };
        store::jobs::enqueue(conn, &RunSync { sync_id: SyncId(row.id) }, options).await?;
        Ok(Report::of(row, true))
    })
    .await
}

/// `sync.completed`: the report without its problems (contract: Payload shapes).
async fn completed(conn: &mut store::Conn, shop: &Shop, row: Row) -> Result<(), Error> {
    let at = row.finished_at.unwrap_or(row.created_at);
    let payload = crate::events::sync_completed(&Report::of(row, false));
    store::outbox::emit(conn, TenantId(shop.tenant_id), "sync.completed", payload, at).await?;
    Ok(())
}

/// What a run did.
#[derive(Default)]
struct Outcome {
    created: i32,
    updated: i32,
    unchanged: i32,
    retired: i32,
    problems: Vec<Problem>,
    /// What it wrote waits for the chat catalogue's publish.
    publish: bool,
}

impl Outcome {
    fn reject(&mut self, sku: Option<String>, reason: impl Into<String>) {
        self.problems.push(Problem { sku, stage: "ingest".to_owned(), reason: reason.into() });
    }

    fn problems_kept(&self) -> (Value, bool) {
        let kept: Vec<&Problem> = self.problems.iter().take(MAX_PROBLEMS).collect();
        (json!(kept), self.problems.len() > MAX_PROBLEMS)
    }
}

/// Matches each row (by code, else by name), applies it, writes every change at once, and in
/// `replace` mode retires what the payload left out.
async fn ingest(
    conn: &mut store::Conn,
    shop: &Shop,
    sync: SyncId,
    rows: &[Value],
    replace: bool,
    now: OffsetDateTime,
) -> Result<Outcome, Error> {
    let loaded = load_drafts(conn, shop.id, None, None).await?;
    let by_sku: HashMap<&str, &Loaded> = loaded.iter().map(|l| (l.sku.as_str(), l)).collect();
    let mut by_name: HashMap<String, &Loaded> = HashMap::new();
    for product in loaded.iter().filter(|l| !l.retired) {
        by_name.entry(product.name.to_lowercase()).or_insert(product);
    }
    let currency = default_currency(conn, shop).await?;
    let mut outcome = Outcome::default();
    let mut changes: Vec<Change> = Vec::new();
    // codes named by the payload (rejected rows' included: a bad row never retires its product)
    let mut present: HashSet<String> = HashSet::new();
    let mut matched: HashSet<i64> = HashSet::new();
    let mut unnamed: Vec<usize> = Vec::new();
    for row in rows {
        let sent_sku = row.get("sku").or_else(|| row.get("retailer_id")).and_then(Value::as_str).map(str::to_owned);
        let Some(object) = row.as_object() else {
            outcome.reject(None, "Each product must be an object.");
            continue;
        };
        if let Some(sku) = &sent_sku {
            present.insert(sku.trim().to_owned());
        }
        let input = match Input::read_row(row) {
            Ok(input) => input,
            Err(reason) => {
                outcome.reject(sent_sku, reason);
                continue;
            }
        };
        let code = input.sku.clone().set();
        let found = match &code {
            Some(code) => by_sku.get(code.as_str()).copied(),
            None => object
                .get("name")
                .and_then(Value::as_str)
                .and_then(|name| by_name.get(&name.trim().to_lowercase()).copied()),
        };
        if let Some(found) = found {
            if !matched.insert(found.id) {
                outcome.reject(sent_sku, DUPLICATE);
                continue;
            }
            // named by the payload, whatever happens to the row
            present.insert(found.sku.clone());
        }
        if found.is_none()
            && let Some(code) = &code
            && changes.iter().any(|c| c.id.is_none() && &c.draft.sku == code)
        {
            outcome.reject(sent_sku, DUPLICATE);
            continue;
        }
        let change = match found {
            Some(found) if !found.retired => match input.apply(found.draft()) {
                Ok(draft) if draft == found.draft() => {
                    outcome.unchanged += 1;
                    continue;
                }
                Ok(draft) => Change { id: Some(found.id), draft, old_inventory: found.inventory, revive: false },
                Err((_, reason)) => {
                    outcome.reject(sent_sku, reason);
                    continue;
                }
            },
            _ => match input.create(code.clone().unwrap_or_default(), &currency) {
                Ok(draft) => Change {
                    id: found.map(|f| f.id),
                    old_inventory: found.and_then(|f| f.inventory),
                    revive: found.is_some(),
                    draft,
                },
                Err((_, reason)) => {
                    outcome.reject(sent_sku, reason);
                    continue;
                }
            },
        };
        if code.is_none() && change.id.is_none() {
            unnamed.push(changes.len());
        }
        if change.id.is_some() && !change.revive {
            outcome.updated += 1;
        } else {
            outcome.created += 1;
        }
        present.insert(change.draft.sku.clone());
        changes.push(change);
    }
    // codes for new products sent without one
    let mut taken: HashSet<String> = loaded.iter().map(|l| l.sku.clone()).collect();
    taken.extend(changes.iter().map(|c| c.draft.sku.clone()));
    let codes = issue_codes(conn, shop, unnamed.len(), &taken).await?;
    for (index, code) in unnamed.into_iter().zip(codes) {
        present.insert(code.clone());
        changes[index].draft.sku = code;
    }
    let cause = format!("sync {sync}");
    let written =
        write(conn, shop, &changes, Cause { kind: "sync", cause: &cause, sync_id: Some(sync.0) }, now).await?;
    outcome.publish = written.publish;
    if replace {
        outcome.retired = retire_absent(conn, shop, &present, now).await?;
        // the retired products come off the chat catalogue by the run's publish
        outcome.publish |= outcome.retired > 0 && crate::publish::publishes_to_chat(shop);
    }
    Ok(outcome)
}

/// `<PREFIX>-<5 digits>` codes from the shop's counter, skipping codes already in use.
async fn issue_codes(
    conn: &mut store::Conn,
    shop: &Shop,
    count: usize,
    taken: &HashSet<String>,
) -> Result<Vec<String>, Error> {
    let prefix = shop.sku_prefix.as_deref().unwrap_or("SKU");
    let mut codes = Vec::with_capacity(count);
    while codes.len() < count {
        let wanted = (count - codes.len()) as i64;
        let last: i64 = diesel::update(catalogues::table.find(shop.id))
            .set(catalogues::sku_counter.eq(catalogues::sku_counter + wanted))
            .returning(catalogues::sku_counter)
            .get_result(conn)
            .await?;
        codes.extend(
            (last - wanted + 1..=last).map(|n| format!("{prefix}-{n:05}")).filter(|code| !taken.contains(code)),
        );
    }
    Ok(codes)
}

/// Retires the shelf products whose code the payload did not name: off the storefront at once,
/// off the chat catalogue by the run's publish.
async fn retire_absent(
    conn: &mut store::Conn,
    shop: &Shop,
    present: &HashSet<String>,
    now: OffsetDateTime,
) -> Result<i32, Error> {
    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    let present: Vec<&String> = present.iter().collect();
    let retired: Count = diesel::sql_query(
        "WITH gone AS (
             UPDATE products SET retired_at = $3, updated_at = $3
             WHERE tenant_id = $4 AND catalogue_id = $1 AND retired_at IS NULL AND NOT (sku = ANY($2))
             RETURNING id),
         unlisted AS (DELETE FROM product_listings
                      WHERE tenant_id = $4 AND platform <> 'chat' AND product_id IN (SELECT id FROM gone)),
         unsent AS (UPDATE product_listings SET state = 'pending', sync_id = NULL
                    WHERE tenant_id = $4 AND platform = 'chat' AND product_id IN (SELECT id FROM gone))
         SELECT count(*) AS n FROM gone",
    )
    .bind::<BigInt, _>(shop.id)
    .bind::<Array<Text>, _>(&present)
    .bind::<Timestamptz, _>(now)
    .bind::<BigInt, _>(shop.tenant_id)
    .get_result(conn)
    .await?;
    Ok(retired.n as i32)
}

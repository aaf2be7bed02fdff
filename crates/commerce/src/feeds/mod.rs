//! Feeds (contract: Sync run and feed): a merchant's own product file (CSV or JSON, read by
//! [`parse`]), pulled on a schedule into sync runs of kind `feed`, listed with the shop's other
//! runs. The first pull runs as soon as the feed is made; a feed is switched off after ten
//! consecutive failed pulls (a pull that cannot fetch or read the file; rows the run rejects
//! are not failures). Files are fetched through the webhooks' address guard: the same addresses
//! are refused, loopback only with `SVC_WEBHOOKS_ALLOW_LOOPBACK`.

pub(crate) mod parse;

use std::sync::Arc;
use std::time::Duration as StdDuration;

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::{Caller, Error, Page, PageRequest, Permission, TenantId};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use store::jobs::{Enqueue, Job, JobContext, JobError};
use time::{Duration, OffsetDateTime};
use utoipa::ToSchema;
use webhooks::guard::{self, Policy};

use crate::schema::{catalogue_feeds as f, catalogue_syncs as s};
use crate::service::CommerceService;
use crate::status::SyncStatus;
use crate::sync::{Report, SyncMode};
use crate::{CatalogueId, SyncId};

/// Consecutive failed pulls that switch a feed off (contract: Limits).
pub const MAX_FAILURES: i32 = 10;
/// The largest file a pull reads.
pub const MAX_BYTES: usize = 20 * 1024 * 1024;
/// A pull's whole fetch, answer included.
const FETCH_TIMEOUT: StdDuration = StdDuration::from_secs(60);
pub const SCHEDULES: &[&str] = &["hourly", "daily", "weekly", "manual"];

kernel::id!(
    /// A product feed of a shop; numeric.
    FeedId: i64
);

crate::rules::choice! {
    /// How often a feed is pulled: `hourly`, `daily` (default), `weekly`, or `manual` (only
    /// when asked).
    Schedule = SCHEDULES;
}

/// When the next scheduled pull is due after one at `at`.
fn next_pull(schedule: &str, at: OffsetDateTime) -> Option<OffsetDateTime> {
    match schedule {
        "hourly" => Some(at + Duration::HOUR),
        "daily" => Some(at + Duration::DAY),
        "weekly" => Some(at + Duration::WEEK),
        _ => None,
    }
}

/// Fetches feed files through the address guard.
#[derive(Clone)]
pub struct Fetcher {
    client: reqwest::Client,
    policy: Policy,
}

impl Fetcher {
    pub fn new(policy: Policy) -> Result<Self, Error> {
        Ok(Self { client: guard::client(policy, FETCH_TIMEOUT).map_err(Error::internal)?, policy })
    }

    /// The file at `url` and its content type, or why not (for the run's `failure`).
    async fn fetch(&self, url: &str) -> Result<(Option<String>, Vec<u8>), String> {
        let parsed = guard::check_url(url, &self.policy).map_err(|r| format!("The feed URL is refused: {r}"))?;
        let response = self.client.get(parsed).send().await.map_err(|e| match guard::refusal_of(&e) {
            Some(refusal) => format!("The feed URL is refused: {refusal}"),
            None if e.is_timeout() => "The feed did not answer in time.".to_owned(),
            None => format!("The feed could not be fetched: {e}"),
        })?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("The feed answered HTTP {}.", status.as_u16()));
        }
        let content_type =
            response.headers().get(reqwest::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let mut response = response;
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| format!("The feed could not be read: {e}"))? {
            if body.len() + chunk.len() > MAX_BYTES {
                return Err(format!("The feed is larger than {} MB.", MAX_BYTES / 1024 / 1024));
            }
            body.extend_from_slice(&chunk);
        }
        Ok((content_type, body))
    }
}

/// `POST /catalogues/{catalogue}/feeds`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct NewFeed {
    /// The file's address: https (http only to loopback in development), at most 2,048.
    #[schema(max_length = 2048)]
    pub url: String,
    /// `daily` when left out.
    #[schema(value_type = Option<Schedule>)]
    pub schedule: Option<String>,
    /// Product field -> the file's column (CSV) or member (JSON), e.g.
    /// `{"sku": "id", "name": "title"}`; unmapped fields are read from same-name columns, then
    /// the usual product-feed names (docs/api.md, "Feeds").
    #[schema(value_type = Option<Object>)]
    pub mapping: Option<Value>,
    /// `replace` (default): the shop's products the file leaves out are retired; `upsert`.
    pub mode: Option<SyncMode>,
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = f)]
struct Row {
    id: i64,
    tenant_id: i64,
    catalogue_id: i64,
    url: String,
    schedule: String,
    mapping: Value,
    mode: String,
    enabled: bool,
    consecutive_failures: i32,
    last_sync_id: Option<i64>,
    last_pulled_at: Option<OffsetDateTime>,
    last_failure: Option<String>,
    next_pull_at: Option<OffsetDateTime>,
    created_at: OffsetDateTime,
    updated_at: OffsetDateTime,
}

/// A feed, as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Feed {
    pub id: i64,
    pub catalogue_id: i64,
    pub url: String,
    pub schedule: String,
    #[schema(value_type = Object)]
    pub mapping: Value,
    pub mode: String,
    /// Off after ten consecutive failed pulls; a pull asked for by hand that succeeds turns
    /// it back on.
    pub enabled: bool,
    pub consecutive_failures: i32,
    /// The newest pull's sync run (`GET .../syncs/{sync}`).
    pub last_sync_id: Option<i64>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_pulled_at: Option<OffsetDateTime>,
    /// Why the newest pull failed; null when it did not.
    pub last_failure: Option<String>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub next_pull_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

impl From<Row> for Feed {
    fn from(row: Row) -> Self {
        Self {
            id: row.id,
            catalogue_id: row.catalogue_id,
            url: row.url,
            schedule: row.schedule,
            mapping: row.mapping,
            mode: row.mode,
            enabled: row.enabled,
            consecutive_failures: row.consecutive_failures,
            last_sync_id: row.last_sync_id,
            last_pulled_at: row.last_pulled_at,
            last_failure: row.last_failure,
            next_pull_at: row.next_pull_at,
            created_at: row.created_at,
            updated_at: row.updated_at,
        }
    }
}

/// Pulls a feed into a sync run: the run made when the pull was asked for, or (a scheduled
/// pull) one made now.
#[derive(Debug, Serialize, Deserialize)]
pub struct PullFeed {
    pub feed_id: FeedId,
    pub sync_id: Option<SyncId>,
}

impl Job for PullFeed {
    const NAME: &'static str = "commerce.pull_feed";
    const MAX_ATTEMPTS: i32 = 3;
    type State = CommerceService;

    async fn run(self, service: Arc<CommerceService>, ctx: JobContext) -> Result<(), JobError> {
        service.pull_feed(ctx.tenant()?, self.feed_id, self.sync_id).await?;
        Ok(())
    }
}

impl CommerceService {
    /// Makes a feed and asks for its first pull: the answer names the run (`last_sync_id`).
    pub async fn create_feed(&self, caller: &Caller, catalogue: CatalogueId, body: NewFeed) -> Result<Feed, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
        let shop = self.shop(&mut conn, caller, Permission::CATALOGUE_MANAGE, catalogue).await?;
        let policy = self.feeds.as_ref().map(|f| f.policy).unwrap_or_default();
        let url = body.url.trim().to_owned();
        if url.chars().count() > 2_048 {
            return Err(Error::field("url", "The url may not be greater than 2048 characters."));
        }
        guard::check_url(&url, &policy).map_err(|r| Error::field("url", format!("The url is refused: {r}.")))?;
        let mapping = body.mapping.unwrap_or_else(|| Value::Object(Default::default()));
        parse::Mapping::read(Some(&mapping)).map_err(|why| Error::field("mapping", why))?;
        let schedule = body.schedule.map(|s| s.trim().to_ascii_lowercase()).unwrap_or_else(|| "daily".to_owned());
        if !SCHEDULES.contains(&schedule.as_str()) {
            return Err(Error::field("schedule", "The schedule must be hourly, daily, weekly or manual."));
        }
        let mode = body.mode.unwrap_or(SyncMode::Replace);
        let now = self.clock.now();
        let row = conn
            .transaction::<_, Error, _>(async |conn| {
                let feed: Row = diesel::insert_into(f::table)
                    .values((
                        f::tenant_id.eq(shop.tenant_id),
                        f::catalogue_id.eq(shop.id),
                        f::url.eq(&url),
                        f::schedule.eq(&schedule),
                        f::mapping.eq(&mapping),
                        f::mode.eq(mode.as_str()),
                        f::created_at.eq(now),
                        f::updated_at.eq(now),
                    ))
                    .returning(Row::as_returning())
                    .get_result(conn)
                    .await?;
                let sync = ask_pull(conn, shop.tenant_id, &feed, now).await?;
                Ok(diesel::update(f::table.find(feed.id))
                    .set(f::last_sync_id.eq(sync.0))
                    .returning(Row::as_returning())
                    .get_result(conn)
                    .await?)
            })
            .await?;
        Ok(row.into())
    }

    /// `POST .../feeds/{feed}/run`: a pull now; the answer is its run's report (`queued`).
    pub async fn run_feed(&self, caller: &Caller, catalogue: CatalogueId, feed: FeedId) -> Result<Report, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
        let shop = self.shop(&mut conn, caller, Permission::CATALOGUE_MANAGE, catalogue).await?;
        let now = self.clock.now();
        let sync = conn
            .transaction::<_, Error, _>(async |conn| {
                let row = feed_of(conn, shop.id, feed).await?;
                let sync = ask_pull(conn, shop.tenant_id, &row, now).await?;
                diesel::update(f::table.find(row.id)).set(f::last_sync_id.eq(sync.0)).execute(conn).await?;
                Ok(sync)
            })
            .await?;
        drop(conn);
        self.get_sync(caller, catalogue, sync).await
    }

    pub async fn get_feed(&self, caller: &Caller, catalogue: CatalogueId, feed: FeedId) -> Result<Feed, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
        let shop = self.shop(&mut conn, caller, Permission::CATALOGUE_VIEW, catalogue).await?;
        Ok(feed_of(&mut conn, shop.id, feed).await?.into())
    }

    /// The shop's feeds, oldest first.
    pub async fn list_feeds(
        &self,
        caller: &Caller,
        catalogue: CatalogueId,
        page: PageRequest,
    ) -> Result<Page<Feed>, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
        let shop = self.shop(&mut conn, caller, Permission::CATALOGUE_VIEW, catalogue).await?;
        let total: i64 = f::table.filter(f::catalogue_id.eq(shop.id)).count().get_result(&mut conn).await?;
        let rows: Vec<Row> = f::table
            .filter(f::catalogue_id.eq(shop.id))
            .order(f::id.asc())
            .limit(page.per_page)
            .offset(page.offset())
            .select(Row::as_select())
            .load(&mut conn)
            .await?;
        Ok(Page::new(rows.into_iter().map(Feed::from).collect(), page, total))
    }

    /// Fetches and reads the file into the run (made now for a scheduled pull), works the run,
    /// and keeps the feed's count of consecutive failures; queues the next scheduled pull.
    pub async fn pull_feed(&self, tenant: TenantId, feed: FeedId, sync: Option<SyncId>) -> Result<(), Error> {
        let mut conn = self.conn(tenant).await?;
        let Some(row) = f::table.find(feed.0).select(Row::as_select()).first(&mut conn).await.optional()? else {
            return Ok(());
        };
        let now = self.clock.now();
        let scheduled = sync.is_none();
        // a scheduled pull is due only at the feed's own `next_pull_at`: one a pull by hand moved
        // (or a switched-off feed) is left alone
        if scheduled && (!row.enabled || row.next_pull_at.is_none_or(|at| at > now)) {
            return Ok(());
        }
        let sync = match sync {
            Some(sync) => sync,
            None => {
                conn.transaction::<_, Error, _>(async |conn| {
                    let sync = new_run(conn, tenant.0, &row, now).await?;
                    diesel::update(f::table.find(row.id)).set(f::last_sync_id.eq(sync.0)).execute(conn).await?;
                    Ok(sync)
                })
                .await?
            }
        };
        let status: SyncStatus = s::table.find(sync.0).select(s::status).first(&mut conn).await?;
        if status == SyncStatus::Queued {
            drop(conn);
            let read = self.read_feed(&row).await;
            let mut conn = self.conn(tenant).await?;
            match read {
                Ok(rows) => {
                    let payload = serde_json::to_string(&rows).map_err(Error::internal)?;
                    diesel::update(s::table.find(sync.0).filter(s::status.eq(SyncStatus::Queued)))
                        .set((s::payload.eq(payload), s::received.eq(rows.len() as i32)))
                        .execute(&mut conn)
                        .await?;
                    self.settle_pull(&mut conn, &row, None, scheduled).await?;
                }
                Err(why) => {
                    self.settle_pull(&mut conn, &row, Some(&why), scheduled).await?;
                    drop(conn);
                    return self.fail_sync(tenant, sync, &why).await;
                }
            }
        }
        self.run_sync(tenant, sync).await
    }

    async fn read_feed(&self, row: &Row) -> Result<Vec<Value>, String> {
        let fetcher = self.feeds.as_ref().ok_or("Feeds are not set up in this process.")?;
        let mapping = parse::Mapping::read(Some(&row.mapping))?;
        let (content_type, body) = fetcher.fetch(&row.url).await?;
        let format = parse::format_of(content_type.as_deref(), &row.url, &body);
        parse::rows(&body, format, &mapping)
    }

    /// Records a pull's fate on its feed: a failure counts (the tenth in a row switches the feed
    /// off), a success clears the count and (asked for by hand) switches the feed back on; the
    /// next scheduled pull is queued while the feed is on.
    async fn settle_pull(
        &self,
        conn: &mut store::Conn,
        row: &Row,
        failure: Option<&str>,
        scheduled: bool,
    ) -> Result<(), Error> {
        let now = self.clock.now();
        conn.transaction::<_, Error, _>(async |conn| {
            let current: Row = f::table.find(row.id).select(Row::as_select()).for_update().first(conn).await?;
            let (failures, enabled) = match failure {
                Some(_) => {
                    let failures = current.consecutive_failures + 1;
                    (failures, current.enabled && failures < MAX_FAILURES)
                }
                None => (0, current.enabled || !scheduled),
            };
            let next = if enabled { next_pull(&current.schedule, now) } else { None };
            diesel::update(f::table.find(row.id))
                .set((
                    f::consecutive_failures.eq(failures),
                    f::enabled.eq(enabled),
                    f::last_pulled_at.eq(now),
                    f::last_failure.eq(failure),
                    f::next_pull_at.eq(next),
                    f::updated_at.eq(now),
                ))
                .execute(conn)
                .await?;
            if let Some(at) = next {
                // one scheduled pull per feed and due time, however many pulls ask for it
                let options = Enqueue {
                    tenant_id: Some(TenantId(current.tenant_id)),
                    dedupe_key: Some(format!("{}:{}", row.id, at.unix_timestamp())),
                    run_at: Some(at),
                    ..Enqueue::default()
                };
                store::jobs::enqueue(conn, &PullFeed { feed_id: FeedId(row.id), sync_id: None }, options).await?;
            }
            Ok(())
        })
        .await
    }
}

/// Makes a queued run of kind `feed` and queues its pull.
async fn ask_pull(conn: &mut store::Conn, tenant: i64, feed: &Row, now: OffsetDateTime) -> Result<SyncId, Error> {
    let sync = new_run(conn, tenant, feed, now).await?;
    let options = Enqueue { tenant_id: Some(TenantId(tenant)), ..Enqueue::default() };
    store::jobs::enqueue(conn, &PullFeed { feed_id: FeedId(feed.id), sync_id: Some(sync) }, options).await?;
    Ok(sync)
}

/// A queued run of kind `feed`; its rows are the file's, written by the pull.
async fn new_run(conn: &mut store::Conn, tenant: i64, feed: &Row, now: OffsetDateTime) -> Result<SyncId, Error> {
    let id: i64 = diesel::insert_into(s::table)
        .values((
            s::tenant_id.eq(tenant),
            s::catalogue_id.eq(feed.catalogue_id),
            s::kind.eq("feed"),
            s::mode.eq(&feed.mode),
            s::status.eq(SyncStatus::Queued),
            s::received.eq(0),
            s::feed_id.eq(feed.id),
            s::created_at.eq(now),
        ))
        .returning(s::id)
        .get_result(conn)
        .await?;
    Ok(SyncId(id))
}

async fn feed_of(conn: &mut store::Conn, shop: i64, feed: FeedId) -> Result<Row, Error> {
    f::table
        .filter(f::id.eq(feed.0).and(f::catalogue_id.eq(shop)))
        .select(Row::as_select())
        .first(conn)
        .await
        .optional()?
        .ok_or_else(|| Error::not_found("Feed"))
}

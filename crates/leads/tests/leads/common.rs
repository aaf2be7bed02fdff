//! What the tests share: a database, a manual clock and the service per test, and callers made
//! the way the gateway makes them (a tenant, a user with permissions, their key, authenticated).

use kernel::{Caller, Clock, ErrorKind, TenantId};
use leads::{Lead, LeadService, UpsertLead, Upserted};
use serde_json::Value;
use store::idempotency::Answer;
use store::testing::TestDb;
use time::OffsetDateTime;

/// Reads and upserts, no settings, no `leads.data.all`.
pub const EDITOR: &str = "leads.view,leads.edit";
/// Every leads permission.
pub const MANAGER: &str = "leads.view,leads.edit,leads.assign,leads.delete,leads.settings,leads.data.all";

pub struct Env {
    /// Dropped with the test.
    pub _db: TestDb,
    pub pool: store::Pool,
    pub clock: Clock,
    pub leads: LeadService,
}

/// A fresh database, a manual clock at the current time (cut to microseconds, as PostgreSQL
/// keeps it) and the service on them.
pub async fn env() -> Env {
    let db = TestDb::new().await;
    let pool = db.pool();
    let now = OffsetDateTime::now_utc();
    let clock = Clock::manual(now.replace_nanosecond(now.nanosecond() / 1_000 * 1_000).expect("nanosecond"));
    let leads = LeadService::new(pool.clone(), clock.clone(), "https://app.example.com".into());
    Env { _db: db, pool, clock, leads }
}

impl Env {
    /// A new tenant and a caller holding `permissions` in it.
    pub async fn account(&self, permissions: &str) -> Caller {
        let mut conn = store::connect_system(&self.pool).await.expect("connection");
        let tenant = accounts::tenants::create(&mut conn, "Acme", "TZS").await.expect("tenant");
        drop(conn);
        self.colleague(TenantId(tenant.id), permissions).await
    }

    /// Another caller of `tenant`, holding `permissions`: a user and their key, authenticated.
    pub async fn colleague(&self, tenant: TenantId, permissions: &str) -> Caller {
        let mut conn = store::connect_system(&self.pool).await.expect("connection");
        let permissions = accounts::users::parse_permissions(permissions).expect("permissions");
        let user = accounts::users::create(&mut conn, tenant, "Neema", &permissions).await.expect("user");
        let issuer = accounts::keys::KeyIssuer::User(kernel::UserId(user.id));
        let key = accounts::keys::create(&mut conn, tenant, issuer, "Test key", None).await.expect("key");
        accounts::keys::authenticate(&mut conn, &key.plaintext, self.clock.now()).await.expect("caller")
    }

    /// An upsert without `Idempotency-Key`: what it did.
    pub async fn upsert(&self, caller: &Caller, body: Value) -> Result<Upserted, kernel::Error> {
        match self.leads.upsert(caller, upsert_body(body), None).await? {
            Answer::Done(upserted) => Ok(upserted),
            Answer::Replay(first) => panic!("a replay without a key: {first}"),
        }
    }

    /// An upsert that creates: the new lead.
    pub async fn create(&self, caller: &Caller, body: Value) -> Lead {
        let upserted = self.upsert(caller, body).await.expect("upsert");
        assert!(upserted.created, "created: {:?}", upserted.lead);
        upserted.lead
    }
}

/// A body as the gateway's reader reads it.
pub fn upsert_body(body: Value) -> UpsertLead {
    serde_json::from_value(body).expect("an upsert body")
}

/// The refusal's kind and `reason`.
#[track_caller]
pub fn assert_refused<T: std::fmt::Debug>(
    result: Result<T, kernel::Error>,
    kind: ErrorKind,
    reason: &str,
) -> kernel::Error {
    let error = result.expect_err("refused");
    assert_eq!((error.kind, error.reason.as_deref()), (kind, Some(reason)), "{error:?}");
    error
}

/// The fields a refusal names, sorted.
pub fn fields(error: &kernel::Error) -> Vec<&str> {
    error.errors.keys().map(String::as_str).collect()
}

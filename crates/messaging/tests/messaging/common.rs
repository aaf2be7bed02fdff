//! What the tests share: a database, a messaging service on the sandbox provider, tenants ready
//! to send, contact groups, and a worker that runs the queued jobs.

use std::sync::Arc;
use std::time::Duration;

use diesel::sql_types::{BigInt, Text};
use diesel_async::RunQueryDsl;
use kernel::{Caller, Clock, TenantId};
use messaging::channels::{NewChannel, NewSender};
use messaging::gateways::Gateways;
use messaging::{MessagingConfig, MessagingService};
use store::jobs::{Registry, Worker, WorkerConfig};
use store::testing::TestDb;
use store::{Pool, PooledConn};

pub struct Env {
    pub _db: TestDb,
    pub pool: Pool,
    pub service: MessagingService,
}

/// A fresh database and the messaging service, its provider the sandbox.
pub async fn env() -> Env {
    let db = TestDb::new().await;
    let pool = db.pool();
    let sandbox = Arc::new(providers::Sandbox::new(Default::default()));
    let keyring = store::secrets::Keyring::load(&mut *conn(&pool).await, &Default::default()).await.expect("keyring");
    let gateways =
        Gateways::new(providers::http_client().expect("http client"), sandbox, Duration::from_secs(5), keyring);
    let service = MessagingService::new(pool.clone(), Clock::system(), gateways, MessagingConfig::default());
    Env { _db: db, pool, service }
}

pub async fn conn(pool: &Pool) -> PooledConn {
    store::connect_system(pool).await.expect("connection")
}

/// A tenant with a sandbox SMS channel, the approved sender id `ACME`, one shilling per segment,
/// and `balance_minor` in its wallet; its caller reads national numbers under `calling_code`.
pub async fn tenant(env: &Env, calling_code: &str, balance_minor: i64) -> Caller {
    let mut conn = conn(&env.pool).await;
    let tenant = accounts::tenants::create(&mut conn, "Acme", "TZS").await.expect("tenant");
    let tenant = TenantId(tenant.id);
    let new =
        NewChannel { kind: "sms".into(), provider: "sandbox".into(), code: Some("main".into()), ..Default::default() };
    messaging::channels::add(&mut conn, env.service.gateways().keyring(), tenant, new).await.expect("channel");
    let sender =
        NewSender { channel: "main".into(), kind: "sender_id".into(), value: "ACME".into(), label: None, status: None };
    messaging::channels::add_sender(&mut conn, tenant, sender).await.expect("sender");
    messaging::channels::set_rate(&mut conn, tenant, None, 100).await.expect("rate");
    if balance_minor > 0 {
        accounts::wallet::credit(&mut conn, tenant, balance_minor, None).await.expect("credit");
    }
    Caller::operator(tenant, calling_code)
}

/// A contact group of `tenant` holding one contact per number (E.164 digits without `+`);
/// answers the group's id. Written directly: the contacts crate's rules are not under test.
pub async fn group(env: &Env, tenant: TenantId, numbers: &[&str]) -> i64 {
    let mut conn = conn(&env.pool).await;
    #[derive(diesel::QueryableByName)]
    struct Id {
        #[diesel(sql_type = BigInt)]
        id: i64,
    }
    let group: Id = diesel::sql_query(
        "INSERT INTO contact_groups (uid, tenant_id, name, created_at, updated_at)
         VALUES (gen_random_uuid(), $1, 'Customers', now(), now()) RETURNING id",
    )
    .bind::<BigInt, _>(tenant.0)
    .get_result(&mut conn)
    .await
    .expect("group");
    for (i, number) in numbers.iter().enumerate() {
        diesel::sql_query(
            "INSERT INTO contacts (uid, tenant_id, group_id, name, country_code, phone_number, full_phone_number,
                                   created_at, updated_at)
             VALUES ('ctc_' || md5(random()::text), $1, $2, $3, '255', substr($4, 4), $4, now(), now())",
        )
        .bind::<BigInt, _>(tenant.0)
        .bind::<BigInt, _>(group.id)
        .bind::<Text, _>(format!("Contact {i}"))
        .bind::<Text, _>(*number)
        .execute(&mut conn)
        .await
        .expect("contact");
    }
    group.id
}

/// Runs the queued jobs that are due until none is left.
pub async fn drain(env: &Env) {
    let mut registry = Registry::new();
    Arc::new(env.service.clone()).register_jobs(&mut registry);
    let worker = Worker::new(env.pool.clone(), Clock::system(), registry, WorkerConfig::default());
    for _ in 0..50 {
        if worker.work_once().await.expect("jobs") == 0 {
            return;
        }
    }
    panic!("the queue did not drain");
}

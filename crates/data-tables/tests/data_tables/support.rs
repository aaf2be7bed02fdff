//! A tenant with a small customers table, and the service to use it.

use data_tables::{DataService, TableId};
use kernel::{Caller, Clock, TenantId};
use serde_json::json;
use store::testing::TestDb;

pub struct Setup {
    /// Dropped last: the database goes with it.
    pub _db: TestDb,
    pub pool: store::Pool,
    pub data: DataService,
    pub caller: Caller,
    pub customers: TableId,
}

pub async fn tenant(pool: &store::Pool, name: &str) -> TenantId {
    let mut conn = store::connect_system(pool).await.expect("connection");
    TenantId(accounts::tenants::create(&mut conn, name, "TZS").await.expect("tenant").id)
}

/// `customers`: a name of at most 20 characters, a score from 0 to 100, a segment.
pub fn definition() -> serde_json::Value {
    json!({
        "group": {"slug": "crm", "name": "CRM"},
        "tables": [{"slug": "customers", "name": "Customers", "columns": [
            {"key": "name", "type": "text", "required": true, "config": {"max_length": 20}},
            {"key": "score", "type": "number", "indexed": true, "config": {"min": 0, "max": 100}},
            {"key": "segment", "type": "select", "config": {"options": ["retail", "wholesale"]}},
        ]}],
    })
}

pub async fn setup() -> Setup {
    let db = TestDb::new().await;
    let pool = db.pool();
    let tenant = tenant(&pool, "Duka").await;
    let data = DataService::new(pool.clone(), Clock::system(), "https://api.example.com");
    let applied = data.apply(tenant, definition()).await.expect("apply");
    let customers = TableId(applied.tables[0].id);
    Setup { _db: db, pool, data, caller: Caller::operator(tenant, "255"), customers }
}

//! A database, the service, and callers of fresh tenants.

use std::collections::BTreeSet;

use contacts::{ContactGroup, ContactInput, ContactService, GroupId, GroupRef, NewGroup};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use kernel::caller::Permissions;
use kernel::{ApiKeyId, Caller, Clock, CredentialKind, Issuer, TenantId, UserId};
use store::testing::TestDb;

pub struct World {
    _db: TestDb,
    pub pool: store::Pool,
    pub service: ContactService,
}

impl World {
    pub async fn new() -> Self {
        let db = TestDb::new().await;
        let pool = db.pool();
        let service = ContactService::new(pool.clone(), Clock::system());
        Self { _db: db, pool, service }
    }

    /// The operator of a new tenant whose default calling code is `calling_code`.
    pub async fn tenant(&self, calling_code: &str) -> Caller {
        let mut conn = store::connect_system(&self.pool).await.expect("conn");
        let tenant = accounts::tenants::create(&mut conn, "Acme", "TZS").await.expect("tenant");
        use accounts::schema::tenants;
        diesel::update(tenants::table.find(tenant.id))
            .set(tenants::default_country_code.eq(calling_code))
            .execute(&mut conn)
            .await
            .expect("calling code");
        Caller::operator(TenantId(tenant.id), calling_code)
    }

    pub async fn group(&self, caller: &Caller, name: &str) -> ContactGroup {
        let group = NewGroup { name: name.into(), custom_fields: None };
        self.service.create_group(caller, group).await.expect("group")
    }
}

/// A caller of the same tenant whose issuer holds only `permissions`.
pub fn with_only(caller: &Caller, permissions: &[&str]) -> Caller {
    Caller {
        tenant_id: caller.tenant_id,
        calling_code: caller.calling_code.clone(),
        key_id: ApiKeyId(1),
        key_name: "limited".into(),
        credential: CredentialKind::RestKey,
        issuer: Issuer::User {
            id: UserId(1),
            name: "Limited".into(),
            active: true,
            permissions: Permissions::Only(permissions.iter().map(|p| (*p).to_owned()).collect::<BTreeSet<_>>()),
        },
    }
}

/// A contact body, as the gateway's reader would parse it.
pub fn input(body: serde_json::Value) -> ContactInput {
    serde_json::from_value(body).expect("a contact body")
}

pub fn by_id(group: &ContactGroup) -> GroupRef {
    GroupRef::Id(GroupId(group.id))
}

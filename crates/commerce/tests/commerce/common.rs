//! What the tests share: a database, a manual clock and the service per test, tenants and
//! callers, and bodies written as JSON, read as the gateway reads them.

use std::collections::BTreeSet;

use commerce::catalogues::CatalogueSettings;
use commerce::products::{ProductBody, ProductRef};
use commerce::{CatalogueId, CommerceService, Product};
use kernel::caller::Permissions;
use kernel::{Caller, Clock, Error, ErrorKind, Issuer, Permission, TenantId};
use serde::de::DeserializeOwned;
use serde_json::Value;
use store::testing::TestDb;

pub struct Env {
    pub _db: TestDb,
    pub pool: store::Pool,
    pub clock: Clock,
    pub service: CommerceService,
}

/// A fresh database, a clock standing still at the current time, and the service on them.
pub async fn env() -> Env {
    let db = TestDb::new().await;
    let pool = db.pool();
    let clock = Clock::manual(time::OffsetDateTime::now_utc());
    let service = CommerceService::new(pool.clone(), clock.clone());
    Env { _db: db, pool, clock, service }
}

impl Env {
    /// A new tenant (TZS) and its operator, who may do everything in it.
    pub async fn tenant(&self, name: &str) -> Caller {
        let mut conn = store::connect_system(&self.pool).await.expect("connection");
        let tenant = accounts::tenants::create(&mut conn, name, "TZS").await.expect("tenant");
        Caller::operator(TenantId(tenant.id), "255")
    }

    /// A shop of `caller`'s with these settings.
    pub async fn shop(&self, caller: &Caller, settings: Value) -> CatalogueId {
        let shop = self.service.create_catalogue(caller, body::<CatalogueSettings>(settings)).await.expect("shop");
        CatalogueId(shop.id)
    }

    /// A product made by code.
    pub async fn product(&self, caller: &Caller, shop: CatalogueId, sku: &str, fields: Value) -> Product {
        let sku = ProductRef::Sku(sku.to_owned());
        self.service.put_product(caller, shop, &sku, body::<ProductBody>(fields)).await.expect("product").product
    }

    pub async fn read_product(&self, caller: &Caller, shop: CatalogueId, sku: &str) -> Product {
        self.service.get_product(caller, shop, &ProductRef::Sku(sku.to_owned())).await.expect("product")
    }
}

/// The caller with only these permissions in its tenant.
pub fn only(caller: &Caller, permissions: &[Permission]) -> Caller {
    let names: BTreeSet<String> = permissions.iter().map(|p| p.as_str().to_owned()).collect();
    let issuer = Issuer::User {
        id: kernel::UserId(1),
        name: "clerk".to_owned(),
        active: true,
        permissions: Permissions::Only(names),
    };
    Caller { issuer, ..caller.clone() }
}

/// A body as the gateway reads it.
pub fn body<T: DeserializeOwned>(json: Value) -> T {
    serde_json::from_value(json).expect("a body of the right types")
}

/// A 422 whose errors name exactly `fields`.
#[track_caller]
pub fn assert_fields(error: &Error, fields: &[&str]) {
    assert_eq!(error.kind, ErrorKind::Validation, "{error:?}");
    let named: Vec<&str> = error.errors.keys().map(String::as_str).collect();
    assert_eq!(named, fields, "{error:?}");
}

#[track_caller]
pub fn assert_kind<T: std::fmt::Debug>(result: Result<T, Error>, kind: ErrorKind) {
    match result {
        Err(error) => assert_eq!(error.kind, kind, "{error:?}"),
        Ok(value) => panic!("expected {kind:?}, got {value:?}"),
    }
}

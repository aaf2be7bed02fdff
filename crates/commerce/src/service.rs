//! The commerce service: what the REST routes (and later chat, MCP and the storefront) call.

use std::sync::Arc;

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use kernel::{Caller, Clock, Error, Permission, TenantId};

use crate::CatalogueId;
use crate::catalogues::Row;
use crate::schema::catalogues;

/// Cheap to clone.
#[derive(Clone)]
pub struct CommerceService {
    pub(crate) pool: store::Pool,
    pub(crate) clock: Clock,
}

impl CommerceService {
    pub fn new(pool: store::Pool, clock: Clock) -> Self {
        Self { pool, clock }
    }

    /// A connection that sees `tenant`'s rows only (row-level security).
    pub(crate) async fn conn(&self, tenant: kernel::TenantId) -> Result<store::PooledConn, Error> {
        store::connect(&self.pool, tenant).await
    }

    /// The shop `id` of the caller's tenant, after checking `permission`; another tenant's shop is
    /// not found.
    pub(crate) async fn shop(
        &self,
        conn: &mut store::Conn,
        caller: &Caller,
        permission: Permission,
        id: CatalogueId,
    ) -> Result<Row, Error> {
        caller.require(permission)?;
        shop_of(conn, caller.tenant_id, id).await
    }

    /// Registers the sync-run and hold-expiry jobs.
    pub fn register_jobs(self: &Arc<Self>, registry: &mut store::jobs::Registry) {
        registry.register::<crate::sync::RunSync>(self.clone());
        registry.register::<crate::orders::ExpireHold>(self.clone());
    }
}

pub(crate) async fn shop_of(conn: &mut store::Conn, tenant: TenantId, id: CatalogueId) -> Result<Row, Error> {
    catalogues::table
        .filter(catalogues::id.eq(id.0).and(catalogues::tenant_id.eq(tenant.0)))
        .select(Row::as_select())
        .first(conn)
        .await
        .optional()?
        .ok_or_else(|| Error::not_found("Catalogue"))
}

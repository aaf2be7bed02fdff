//! The commerce service: what the REST routes (and later chat, MCP and the storefront) call.

use std::sync::Arc;

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use kernel::{Caller, Clock, Error, Permission, TenantId};
use messaging::MessagingService;

use crate::CatalogueId;
use crate::catalogues::Row;
use crate::schema::catalogues;

/// Cheap to clone.
#[derive(Clone)]
pub struct CommerceService {
    pub(crate) pool: store::Pool,
    pub(crate) clock: Clock,
    /// The chat platform (catalogues, sends); without it a shop publishes to its storefront only.
    pub(crate) messaging: Option<MessagingService>,
    /// The origin of the storefront and basket pages' links (`SVC_PUBLIC_URL`).
    pub(crate) public_url: String,
    /// Fetches feeds through the webhooks' address guard.
    pub(crate) feeds: Option<crate::feeds::Fetcher>,
}

impl CommerceService {
    pub fn new(pool: store::Pool, clock: Clock) -> Self {
        Self { pool, clock, messaging: None, public_url: "http://127.0.0.1:8080".to_owned(), feeds: None }
    }

    /// The same, publishing through `messaging`'s chat accounts, with links under `public_url`
    /// and feeds fetched through the webhooks' address guard under `policy`.
    pub fn with_platforms(
        self,
        messaging: MessagingService,
        public_url: String,
        policy: webhooks::guard::Policy,
    ) -> Result<Self, Error> {
        let feeds = crate::feeds::Fetcher::new(policy)?;
        Ok(Self { messaging: Some(messaging), public_url, feeds: Some(feeds), ..self })
    }

    /// The tenant's shops that publish to a chat catalogue (the operator's drift check).
    pub async fn chat_shops(&self, tenant: TenantId) -> Result<Vec<CatalogueId>, Error> {
        let mut conn = self.conn(tenant).await?;
        let rows: Vec<Row> = catalogues::table
            .filter(catalogues::tenant_id.eq(tenant.0).and(catalogues::is_connected_to_waba))
            .order(catalogues::id)
            .select(Row::as_select())
            .load(&mut conn)
            .await?;
        Ok(rows.iter().filter(|r| crate::publish::publishes_to_chat(r)).map(|r| CatalogueId(r.id)).collect())
    }

    /// The provider catalogue id of a shop connected to a business account (422 otherwise).
    pub async fn catalogue_ref(&self, tenant: TenantId, id: CatalogueId) -> Result<String, Error> {
        let mut conn = self.conn(tenant).await?;
        shop_of(&mut conn, tenant, id)
            .await?
            .meta_catalogue_id
            .ok_or_else(|| Error::validation("The catalogue is not connected to a business account."))
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
        registry.register::<crate::publish::Publish>(self.clone());
        registry.register::<crate::drift::CheckDrift>(self.clone());
        registry.register::<crate::feeds::PullFeed>(self.clone());
        registry.register::<crate::baskets::BasketTimeout>(self.clone());
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

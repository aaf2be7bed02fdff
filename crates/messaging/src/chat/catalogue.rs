//! A business account's chat catalogue, for the shops that publish to it: the Cloud API's
//! commerce for a `cloud` account, and for a `sandbox` one a pretend platform whose copy of
//! each product lives in `sandbox_catalogue_items`, so that an operator can edit it as a
//! merchant would in the platform's own tool (`gateway admin sandbox catalogue-edit`) and the
//! shop's drift check sees the difference.
//!
//! The sandbox accepts every product but one whose name contains `BLOCKED` (refused with the
//! platform's words), makes catalogue ids `sbx-cat-<hex>`, and refuses to adopt a catalogue id
//! starting with `missing`.

use std::sync::Arc;

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use kernel::{Error, TenantId};
use providers::catalogue::{CatalogueError, CatalogueGateway, CatalogueItem, ItemOutcome};
use serde_json::Value;

use crate::MessagingService;
use crate::chat::accounts::AccountRow;
use crate::schema::{channels as channels_table, chat_accounts, sandbox_catalogue_items as items};

/// The word in a product name that makes the sandbox refuse it.
pub const SANDBOX_BLOCKED: &str = "BLOCKED";

/// The business account a shop publishes to, and its catalogue provider.
#[derive(Clone)]
pub struct ChatCatalogue {
    pub waba_id: String,
    pub gateway: Arc<dyn CatalogueGateway>,
}

impl MessagingService {
    /// The catalogue provider of the tenant's business account `waba_id`; without one named,
    /// the only account. 422 when the tenant has no chat account, when `waba_id` is not one of
    /// its accounts, or when it has several and names none.
    pub async fn chat_catalogue(&self, tenant: TenantId, waba_id: Option<&str>) -> Result<ChatCatalogue, Error> {
        let mut conn = self.conn(tenant).await?;
        let accounts: Vec<(AccountRow, crate::channels::Channel)> = chat_accounts::table
            .inner_join(channels_table::table)
            .filter(chat_accounts::tenant_id.eq(tenant.0))
            .select((AccountRow::as_select(), crate::channels::Channel::as_select()))
            .order(chat_accounts::id)
            .load(&mut conn)
            .await?;
        drop(conn);
        let (account, channel) = match waba_id {
            _ if accounts.is_empty() => {
                return Err(Error::validation("No chat account is configured for this account."));
            }
            Some(wanted) => accounts.into_iter().find(|(a, _)| a.waba_id == wanted).ok_or_else(|| {
                Error::field("waba_id", "The waba_id is not a business account of this account (GET /chat/accounts).")
            })?,
            None if accounts.len() > 1 => {
                return Err(Error::field(
                    "waba_id",
                    "This account has several business accounts: name one with waba_id (GET /chat/accounts).",
                ));
            }
            None => accounts.into_iter().next().expect("one account"),
        };
        let gateway: Arc<dyn CatalogueGateway> = match channel.provider.as_str() {
            "sandbox" => Arc::new(SandboxCatalogue { pool: self.pool.clone(), tenant, clock: self.clock.clone() }),
            _ => self.gateways.cloud(&channel)?,
        };
        Ok(ChatCatalogue { waba_id: account.waba_id, gateway })
    }

    /// `gateway admin sandbox catalogue-edit`: changes the sandbox platform's copy of a product
    /// as a merchant editing in the platform's own tool would. `set` holds `field=value` pairs
    /// of [`CatalogueItem`] members (`price_minor`, `sale_price_minor` and `inventory` are
    /// numbers; an empty value clears an optional member). Answers the copy as it now is.
    pub async fn sandbox_catalogue_edit(
        &self,
        tenant: TenantId,
        catalogue_ref: &str,
        retailer_id: &str,
        set: &[(String, String)],
    ) -> Result<CatalogueItem, Error> {
        let mut conn = self.conn(tenant).await?;
        let item: Value = items::table
            .filter(items::tenant_id.eq(tenant.0))
            .filter(items::catalogue_ref.eq(catalogue_ref).and(items::retailer_id.eq(retailer_id)))
            .select(items::item)
            .first(&mut conn)
            .await
            .optional()?
            .ok_or_else(|| Error::not_found("Sandbox catalogue item"))?;
        let mut item = item;
        for (field, value) in set {
            let numeric = matches!(field.as_str(), "price_minor" | "sale_price_minor" | "inventory");
            let value = match (value.trim(), numeric) {
                ("", _) => Value::Null,
                (n, true) => n
                    .parse::<i64>()
                    .map(Value::from)
                    .map_err(|_| Error::field(field.clone(), format!("The {field} must be a whole number.")))?,
                (text, false) => Value::from(text),
            };
            if item.get(field).is_none() {
                return Err(Error::field(field.clone(), format!("A catalogue item has no member {field}.")));
            }
            item[field] = value;
        }
        let edited: CatalogueItem = serde_json::from_value(item.clone())
            .map_err(|e| Error::validation(format!("The edited item is not a catalogue item: {e}")))?;
        diesel::update(items::table)
            .filter(items::tenant_id.eq(tenant.0))
            .filter(items::catalogue_ref.eq(catalogue_ref).and(items::retailer_id.eq(retailer_id)))
            .set((items::item.eq(item), items::updated_at.eq(self.clock.now())))
            .execute(&mut conn)
            .await?;
        Ok(edited)
    }
}

/// The sandbox's chat catalogue: the pretend platform's copy in `sandbox_catalogue_items`.
struct SandboxCatalogue {
    pool: store::Pool,
    tenant: TenantId,
    clock: kernel::Clock,
}

impl SandboxCatalogue {
    async fn conn(&self) -> Result<store::PooledConn, CatalogueError> {
        store::connect(&self.pool, self.tenant).await.map_err(failed)
    }
}

/// A database failure seen through the platform's eyes: the platform could not be reached.
fn failed(error: impl std::fmt::Display) -> CatalogueError {
    CatalogueError::Failed(providers::SendError::Transport(error.to_string()))
}

#[async_trait::async_trait]
impl CatalogueGateway for SandboxCatalogue {
    async fn create_catalogue(&self, _waba_id: &str, _name: &str) -> Result<String, CatalogueError> {
        Ok(format!("sbx-cat-{}", &uuid::Uuid::new_v4().simple().to_string()[..12]))
    }

    async fn connect_catalogue(&self, _waba_id: &str, catalogue_id: &str) -> Result<(), CatalogueError> {
        if catalogue_id.starts_with("missing") {
            return Err(CatalogueError::Refused {
                reason: format!("Unsupported post request. Object with ID '{catalogue_id}' does not exist."),
            });
        }
        Ok(())
    }

    async fn upsert_items(
        &self,
        catalogue_id: &str,
        batch: &[CatalogueItem],
    ) -> Result<Vec<ItemOutcome>, CatalogueError> {
        let now = self.clock.now();
        let mut outcomes = Vec::with_capacity(batch.len());
        let mut rows = Vec::new();
        for item in batch {
            if item.name.contains(SANDBOX_BLOCKED) {
                outcomes.push(ItemOutcome::Refused {
                    reason:
                        "The item was rejected: it does not comply with the Commerce Policies (prohibited content)."
                            .to_owned(),
                });
                continue;
            }
            outcomes.push(ItemOutcome::Accepted);
            let copy = serde_json::to_value(item).map_err(failed)?;
            rows.push((
                items::tenant_id.eq(self.tenant.0),
                items::catalogue_ref.eq(catalogue_id.to_owned()),
                items::retailer_id.eq(item.retailer_id.clone()),
                items::item.eq(copy),
                items::updated_at.eq(now),
            ));
        }
        if !rows.is_empty() {
            let mut conn = self.conn().await?;
            // five parameters a row: well under PostgreSQL's 65,535 a statement
            for chunk in rows.chunks(1_000) {
                diesel::insert_into(items::table)
                    .values(chunk)
                    .on_conflict((items::catalogue_ref, items::retailer_id, items::tenant_id))
                    .do_update()
                    .set((
                        items::item.eq(diesel::upsert::excluded(items::item)),
                        items::updated_at.eq(diesel::upsert::excluded(items::updated_at)),
                    ))
                    .execute(&mut conn)
                    .await
                    .map_err(failed)?;
            }
        }
        Ok(outcomes)
    }

    async fn delete_items(&self, catalogue_id: &str, retailer_ids: &[String]) -> Result<(), CatalogueError> {
        let mut conn = self.conn().await?;
        diesel::delete(items::table)
            .filter(items::tenant_id.eq(self.tenant.0))
            .filter(items::catalogue_ref.eq(catalogue_id).and(items::retailer_id.eq_any(retailer_ids)))
            .execute(&mut conn)
            .await
            .map_err(failed)?;
        Ok(())
    }

    async fn items(&self, catalogue_id: &str, retailer_ids: &[String]) -> Result<Vec<CatalogueItem>, CatalogueError> {
        let mut conn = self.conn().await?;
        let copies: Vec<Value> = items::table
            .filter(items::tenant_id.eq(self.tenant.0))
            .filter(items::catalogue_ref.eq(catalogue_id).and(items::retailer_id.eq_any(retailer_ids)))
            .select(items::item)
            .load(&mut conn)
            .await
            .map_err(failed)?;
        copies.into_iter().map(|copy| serde_json::from_value(copy).map_err(failed)).collect()
    }
}

//! Module switches per tenant. A module is on until an operator switches it off.

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use kernel::{Error, TenantId};

use crate::schema::tenant_modules;
use store::Conn;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Module {
    Leads,
    Forms,
}

impl Module {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Leads => "leads",
            Self::Forms => "forms",
        }
    }

    pub fn parse(value: &str) -> Result<Self, Error> {
        match value {
            "leads" => Ok(Self::Leads),
            "forms" => Ok(Self::Forms),
            other => Err(Error::field("module", format!("Unknown module {other:?}: use leads or forms."))),
        }
    }
}

pub async fn set(conn: &mut Conn, tenant: TenantId, module: Module, enabled: bool) -> Result<(), Error> {
    crate::tenants::get(conn, tenant).await?;
    diesel::insert_into(tenant_modules::table)
        .values((
            tenant_modules::tenant_id.eq(tenant.0),
            tenant_modules::module.eq(module.as_str()),
            tenant_modules::enabled.eq(enabled),
        ))
        .on_conflict((tenant_modules::tenant_id, tenant_modules::module))
        .do_update()
        .set((tenant_modules::enabled.eq(enabled), tenant_modules::updated_at.eq(diesel::dsl::now)))
        .execute(conn)
        .await?;
    Ok(())
}

pub async fn is_enabled(conn: &mut Conn, tenant: TenantId, module: Module) -> Result<bool, Error> {
    let enabled: Option<bool> = tenant_modules::table
        .find((tenant.0, module.as_str()))
        .select(tenant_modules::enabled)
        .first(conn)
        .await
        .optional()?;
    Ok(enabled.unwrap_or(true))
}

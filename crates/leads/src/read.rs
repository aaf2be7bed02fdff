//! Reading one lead (contract: `GET /leads/{lead}`), within the issuer's visibility.

use crate::LeadId;
use kernel::{Caller, Error, Permission};

use crate::lead::{self, Lead};
use crate::service::LeadService;

impl LeadService {
    /// The full record, with identities and a possible duplicate. A lead the issuer may not see
    /// is not found.
    pub async fn get(&self, caller: &Caller, id: LeadId) -> Result<Lead, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
        let actor = self.access(&mut conn, caller, Permission::LEADS_VIEW).await?;
        let row = lead::row(&mut conn, caller.tenant_id, id).await?;
        if !actor.sees(row.assigned_to, &row.created_by_kind, row.created_by_id) {
            return Err(Error::not_found("Lead"));
        }
        lead::full(&mut conn, row, &self.public_url, self.clock.now()).await
    }
}

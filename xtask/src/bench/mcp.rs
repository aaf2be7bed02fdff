//! Workload 14: MCP `tools/call` against the REST route that runs the same service method, on
//! the same database and gateway (issue 16). Two rows: `get_lead` against `GET /leads/{lead}`,
//! and `upsert_lead` against `POST /leads` (the upserts of workload 9, half new people, half
//! found by another form of their number). The "raw" side of these rows is REST, so API/raw
//! reads as MCP/REST: what the JSON-RPC framing, the stateless transport and the connection's
//! lookup cost on top of the route.

use std::sync::Arc;

use serde_json::json;

use super::load::drive;
use super::report::{self, Outcome};
use super::{Gateway, Run, Work, Workload, data, sql};
use crate::Result;

/// MCP/REST wanted: what REST does plus a JSON-RPC frame and the connection's lookup.
pub const MIN_RATIO: f64 = 0.7;
pub const MAX_P99_MS: f64 = 30.0;

/// The second row of 14.
static UPSERT_ROW: Workload = Workload {
    number: 14,
    name: "MCP tools/call upsert_lead (REST POST /leads as raw)",
    work: Work::Mcp,
    connections: report::CONNECTIONS,
    min_ratio: Some(MIN_RATIO),
    min_rate: None,
    max_p99_ms: Some(MAX_P99_MS),
    max_rss_mb: report::RSS_LIMIT_MB,
    max_seconds: None,
    open_loop_p99_ms: None,
    raw_sql: "the REST route: POST /api/v3/leads with the same body, the same key's issuer",
};

pub const RAW_GET: &str = "the REST route: GET /api/v3/leads/{lead} for the same leads, the same key's issuer";

impl Run<'_> {
    /// The tenant's leads replaced by workload 9's preloaded ones: the ids of the first 1,000.
    async fn preloaded_leads(&self) -> Result<Vec<String>> {
        sql::preload_leads(self.db, self.setup.tenant, self.key_hash).await?;
        let query = "SELECT id::text FROM leads WHERE tenant_id = $1 ORDER BY id LIMIT 1000";
        Ok(self.db.query(query, &[&self.setup.tenant]).await?.iter().map(|r| r.get(0)).collect())
    }

    /// Workload 14 (see the module's documentation).
    pub(super) async fn mcp(&self, workload: &'static Workload) -> Result<Vec<Outcome>> {
        let (n, timing) = (workload.connections, self.timing);
        let mut outcomes = Vec::new();
        for row in [workload, &UPSERT_ROW] {
            let leads = Arc::new(self.preloaded_leads().await?);
            let gateway = Gateway::start(self.setup, workload.limiter(), self.api).await?;
            let upserts = std::ptr::eq(row, &UPSERT_ROW);

            let label = format!("{}. {} · MCP", row.number, row.name);
            let before = self.meter.read(gateway.pid);
            let (api, ids) = (Arc::clone(self.api), Arc::clone(&leads));
            let mcp = drive(&label, n, timing, move |op| {
                let (api, ids) = (Arc::clone(&api), Arc::clone(&ids));
                async move {
                    if upserts {
                        let upsert = data::lead_upsert(op.seq);
                        let args = json!({"name": upsert.name, "phone": upsert.phone, "company": upsert.company});
                        api.mcp_tool("upsert_lead", args).await
                    } else {
                        api.mcp_tool("get_lead", json!({"lead": ids[op.seq as usize % ids.len()]})).await
                    }
                }
            })
            .await?;
            let mcp_cpu = self.meter.share(&before, &self.meter.read(gateway.pid));
            let rss_mb = super::sys::peak_rss_mb(gateway.pid).ok();
            super::print_run(&label, &mcp, &mcp_cpu);

            // the same people again, as new and found as on the MCP side
            let leads = Arc::new(self.preloaded_leads().await?);
            let label = format!("{}. {} · REST", row.number, row.name);
            let before = self.meter.read(gateway.pid);
            let (api, ids) = (Arc::clone(self.api), Arc::clone(&leads));
            let rest = drive(&label, n, timing, move |op| {
                let (api, ids) = (Arc::clone(&api), Arc::clone(&ids));
                async move {
                    if upserts {
                        api.lead_upsert(op.seq).await
                    } else {
                        api.get_lead(&ids[op.seq as usize % ids.len()]).await
                    }
                }
            })
            .await?;
            let rest_cpu = self.meter.share(&before, &self.meter.read(gateway.pid));
            super::print_run(&label, &rest, &rest_cpu);
            gateway.stop().await?;
            outcomes.push(Outcome {
                workload: row,
                api: mcp,
                raw: rest,
                rss_mb,
                api_cpu: mcp_cpu,
                raw_cpu: rest_cpu,
                facts: None,
                open: None,
            });
        }
        Ok(outcomes)
    }
}

//! Searches that keep their indexes under row-level security.
//!
//! PostgreSQL checks a table's policy before any condition that is not leakproof, and such a
//! condition can then be neither an index condition nor estimated from the statistics. Text
//! `LIKE`/`ILIKE`, `lower()` and the `jsonb` operators are not leakproof, so every search in
//! the service matches through [`LIKE`] and [`ILIKE`], the leakproof operators the migrations
//! make (`2026-11-27-000043_leakproof_search`; docs/operations.md, "Searches under row-level
//! security"), on search texts the migrations also make leakproof (`svc_record_text`,
//! `svc_words`).

use diesel::pg::Pg;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::sql_types::Json;
use diesel_async::RunQueryDsl;

use crate::Conn;

/// `text LIKE pattern`, leakproof (served by the `svc_trgm_ops` trigram indexes).
pub const LIKE: &str = "~~~";
/// `text ILIKE pattern`, leakproof.
pub const ILIKE: &str = "~~~*";

/// A search's total is counted exactly up to this many matches; beyond it, it is the
/// planner's estimate (docs/api.md, "Search totals").
pub const EXACT_TOTAL_UP_TO: i64 = 1_000;

/// `term` with `LIKE`'s own wildcards and escape character escaped.
pub fn like_escape(term: &str) -> String {
    let mut out = String::with_capacity(term.len());
    for c in term.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The pattern matching `term` anywhere in a text.
pub fn contains(term: &str) -> String {
    format!("%{}%", like_escape(term))
}

/// The pattern matching a text that starts with `term`.
pub fn starts_with(term: &str) -> String {
    format!("{}%", like_escape(term))
}

/// The trigram operator class serving [`LIKE`] and [`ILIKE`]: `svc_trgm_ops` where the
/// migrations could make it (as a superuser), else pg_trgm's own, which serves them once
/// PostgreSQL has inlined them back to `LIKE` and `ILIKE`.
pub async fn trigram_opclass(conn: &mut Conn) -> Result<&'static str, kernel::Error> {
    #[derive(diesel::QueryableByName)]
    struct Present {
        #[diesel(sql_type = diesel::sql_types::Bool)]
        present: bool,
    }
    let found: Present =
        diesel::sql_query("SELECT EXISTS (SELECT 1 FROM pg_opclass WHERE opcname = 'svc_trgm_ops') AS present")
            .get_result(conn)
            .await?;
    Ok(if found.present { "svc_trgm_ops" } else { "gin_trgm_ops" })
}

/// `EXPLAIN (FORMAT JSON)` of a query: the planner's plan, not its rows.
#[derive(QueryId)]
struct Explain<Q>(Q);

impl<Q: QueryFragment<Pg>> QueryFragment<Pg> for Explain<Q> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> diesel::QueryResult<()> {
        out.unsafe_to_cache_prepared();
        out.push_sql("EXPLAIN (FORMAT JSON) ");
        self.0.walk_ast(out.reborrow())
    }
}

impl<Q> Query for Explain<Q> {
    type SqlType = Json;
}

/// How many rows the planner expects `query` to return, without running it.
pub async fn estimate<Q>(conn: &mut Conn, query: Q) -> Result<i64, kernel::Error>
where
    Q: QueryFragment<Pg> + QueryId + Send,
{
    let plan: serde_json::Value = Explain(query).get_result(conn).await?;
    let rows = plan.pointer("/0/Plan/Plan Rows").and_then(serde_json::Value::as_f64).unwrap_or_default();
    Ok(rows.round() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_the_term_literally() {
        assert_eq!(contains("50%_off\\"), "%50\\%\\_off\\\\%");
        assert_eq!(starts_with("a_b"), "a\\_b%");
    }
}

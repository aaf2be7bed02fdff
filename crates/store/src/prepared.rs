//! Statements prepared once per connection.
//!
//! diesel keeps a connection's prepared statements for its typed queries, but prepares a
//! `sql_query`, or a query with a `sql()` fragment, anew on every call: one more round trip
//! (Parse/Describe) and a parse and plan each time. [`prepared`] marks such a statement as
//! one to keep, by its SQL text, as the typed ones are: only for SQL whose text is the same on
//! every call (values bound, never written in), or each variant would be kept for the life of
//! the connection.

use diesel::QueryResult;
use diesel::pg::Pg;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};

/// `query.prepared()`: the query, kept prepared on its connection (see the module's
/// documentation).
pub trait Prepare: Sized {
    fn prepared(self) -> Prepared<Self> {
        Prepared(self)
    }
}

impl<Q> Prepare for Q {}

#[derive(Debug, Clone, Copy)]
pub struct Prepared<Q>(Q);

impl<Q: QueryFragment<Pg>> QueryFragment<Pg> for Prepared<Q> {
    fn walk_ast<'b>(&'b self, pass: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        self.0.walk_ast(pass)
    }

    fn is_safe_to_cache_prepared(&self, _backend: &Pg) -> QueryResult<bool> {
        Ok(true)
    }
}

impl<Q: Query> Query for Prepared<Q> {
    type SqlType = Q::SqlType;
}

/// Kept by its SQL text (no type of its own to key it by).
impl<Q> QueryId for Prepared<Q> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

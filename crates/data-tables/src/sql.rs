//! Record queries are built at run time (a filter tree, a sort, a search over the table's own
//! columns), so their text is assembled here with numbered binds. Column keys and table ids are
//! written into the text: keys are checked names (`definition::is_name`) and ids are UUIDs, and
//! the planner needs them as literals to use the per-table partial indexes.

use diesel::pg::Pg;
use diesel::query_builder::BoxedSqlQuery;
use diesel::sql_types::{Array, BigInt, Jsonb, Text, Timestamptz, Uuid as SqlUuid};
use serde_json::Value;
use time::OffsetDateTime;
use uuid::Uuid;

#[derive(Debug, Clone)]
pub enum Bind {
    Json(Value),
    Jsons(Vec<Value>),
    Text(String),
    Texts(Vec<String>),
    Uuid(Uuid),
    Uuids(Vec<Uuid>),
    Time(OffsetDateTime),
    Int(i64),
}

/// Query text and its binds, in order.
#[derive(Debug, Default, Clone)]
pub struct Sql {
    text: String,
    binds: Vec<Bind>,
}

impl Sql {
    pub fn new(text: &str) -> Self {
        Self { text: text.to_owned(), binds: Vec::new() }
    }

    pub fn push(&mut self, text: &str) -> &mut Self {
        self.text.push_str(text);
        self
    }

    /// Adds a bind and returns its placeholder, cast to its type (`$3::jsonb`).
    pub fn bind(&mut self, bind: Bind) -> String {
        let cast = match &bind {
            Bind::Json(_) => "jsonb",
            Bind::Jsons(_) => "jsonb[]",
            Bind::Text(_) => "text",
            Bind::Texts(_) => "text[]",
            Bind::Uuid(_) => "uuid",
            Bind::Uuids(_) => "uuid[]",
            Bind::Time(_) => "timestamptz",
            Bind::Int(_) => "bigint",
        };
        self.binds.push(bind);
        format!("${}::{cast}", self.binds.len())
    }

    /// `SELECT <columns>` before this text (a `FROM ... WHERE ...`), with the same binds.
    pub fn select(&self, columns: &str) -> Self {
        Self { text: format!("SELECT {columns} {}", self.text), binds: self.binds.clone() }
    }

    /// Ends the query with its order and a bound limit.
    pub fn order_limit(mut self, order: &str, limit: i64) -> Self {
        let limit = self.bind(Bind::Int(limit));
        self.push(&format!(" ORDER BY {order} LIMIT {limit}"));
        self
    }

    /// The query, ready to load rows of any `QueryableByName` type.
    pub fn query(self) -> BoxedSqlQuery<'static, Pg, diesel::query_builder::SqlQuery> {
        let mut query = diesel::sql_query(self.text).into_boxed::<Pg>();
        for bind in self.binds {
            query = match bind {
                Bind::Json(v) => query.bind::<Jsonb, _>(v),
                Bind::Jsons(v) => query.bind::<Array<Jsonb>, _>(v),
                Bind::Text(v) => query.bind::<Text, _>(v),
                Bind::Texts(v) => query.bind::<Array<Text>, _>(v),
                Bind::Uuid(v) => query.bind::<SqlUuid, _>(v),
                Bind::Uuids(v) => query.bind::<Array<SqlUuid>, _>(v),
                Bind::Time(v) => query.bind::<Timestamptz, _>(v),
                Bind::Int(v) => query.bind::<BigInt, _>(v),
            };
        }
        query
    }
}

/// `data->'key'`: a column's stored JSON value (SQL NULL when empty).
pub fn value_of(key: &str) -> String {
    format!("data->'{key}'")
}

/// `data->>'key'`: a column's value as text.
pub fn text_of(key: &str) -> String {
    format!("data->>'{key}'")
}

/// What `q` matches: the search columns' text, lower-cased and joined by spaces, through the
/// migrations' leakproof `svc_record_text` (store::search). The search index of the table is
/// built on exactly this expression.
pub fn search_expression(keys: &[&str]) -> String {
    format!("svc_record_text(data, '{{{}}}')", keys.join(","))
}

/// The rows of a table's live records, with the table id as a literal.
pub fn live(table: Uuid) -> String {
    format!("table_id = '{table}' AND deleted_at IS NULL")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binds_are_numbered_and_cast() {
        let mut sql = Sql::new("SELECT 1 WHERE ");
        let a = sql.bind(Bind::Text("x".into()));
        let b = sql.bind(Bind::Json(Value::Null));
        assert_eq!((a.as_str(), b.as_str()), ("$1::text", "$2::jsonb"));
    }

    #[test]
    fn search_expression_names_the_keys() {
        assert_eq!(search_expression(&["name", "phone"]), "svc_record_text(data, '{name,phone}')");
    }
}

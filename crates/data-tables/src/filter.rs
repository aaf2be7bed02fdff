//! Condition trees (contract: Data tables, record list query): `{all:[...]}`, `{any:[...]}`,
//! leaves `{column, op, value}`, at most 40 leaves and depth six (a leaf is depth 1). Parsing
//! checks the shape alone; [`compile`] then reads each leaf against the table's columns and
//! writes SQL.

use kernel::{Error, Result};
use serde_json::{Map, Value};

use crate::definition::{ColumnType, Definition};
use crate::sql::{self, Bind, Sql};
use crate::values;

pub const MAX_LEAVES: usize = 40;
pub const MAX_DEPTH: usize = 6;
/// Values of one `in` leaf.
pub const MAX_IN: usize = 100;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    Equals,
    NotEquals,
    Contains,
    StartsWith,
    GreaterThan,
    LessThan,
    Between,
    In,
    IsEmpty,
    IsNotEmpty,
}

impl Op {
    pub const ALL: [Self; 10] = [
        Self::Equals,
        Self::NotEquals,
        Self::Contains,
        Self::StartsWith,
        Self::GreaterThan,
        Self::LessThan,
        Self::Between,
        Self::In,
        Self::IsEmpty,
        Self::IsNotEmpty,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Equals => "equals",
            Self::NotEquals => "not_equals",
            Self::Contains => "contains",
            Self::StartsWith => "starts_with",
            Self::GreaterThan => "greater_than",
            Self::LessThan => "less_than",
            Self::Between => "between",
            Self::In => "in",
            Self::IsEmpty => "is_empty",
            Self::IsNotEmpty => "is_not_empty",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|op| op.as_str() == name)
    }
}

impl serde::Serialize for Op {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Leaf {
    pub column: String,
    pub op: Op,
    pub value: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Tree {
    All(Vec<Tree>),
    Any(Vec<Tree>),
    Leaf(Leaf),
}

impl Tree {
    /// The tree of a `filter` parameter; `None` selects all (`{}` or nothing).
    pub fn parse_param(raw: Option<&str>) -> Result<Option<Self>> {
        let Some(raw) = raw.map(str::trim).filter(|r| !r.is_empty()) else { return Ok(None) };
        let value: Value = serde_json::from_str(raw).map_err(|_| {
            Error::field("filter", "The filter is not valid JSON (send a URL-encoded JSON condition tree).")
        })?;
        Self::parse(&value)
    }

    /// Checks the shape and the limits; `{}` selects all.
    pub fn parse(value: &Value) -> Result<Option<Self>> {
        if value.as_object().is_some_and(Map::is_empty) {
            return Ok(None);
        }
        let mut leaves = 0;
        let tree = node(value, 1, &mut leaves).map_err(|message| Error::field("filter", message))?;
        Ok(Some(tree))
    }

    pub fn depth(&self) -> usize {
        match self {
            Self::Leaf(_) => 1,
            Self::All(nodes) | Self::Any(nodes) => 1 + nodes.iter().map(Self::depth).max().unwrap_or(0),
        }
    }

    pub fn leaves(&self) -> usize {
        match self {
            Self::Leaf(_) => 1,
            Self::All(nodes) | Self::Any(nodes) => nodes.iter().map(Self::leaves).sum(),
        }
    }

    /// Every leaf, depth first.
    pub fn each_leaf<'a>(&'a self, out: &mut Vec<&'a Leaf>) {
        match self {
            Self::Leaf(leaf) => out.push(leaf),
            Self::All(nodes) | Self::Any(nodes) => nodes.iter().for_each(|n| n.each_leaf(out)),
        }
    }
}

fn node(value: &Value, depth: usize, leaves: &mut usize) -> std::result::Result<Tree, String> {
    if depth > MAX_DEPTH {
        return Err(format!(
            "The filter is deeper than {MAX_DEPTH} levels (a leaf is one level, each all/any adds one)."
        ));
    }
    let Value::Object(object) = value else {
        return Err("Each condition is an object: {all:[...]}, {any:[...]} or {column, op, value}.".into());
    };
    for group in ["all", "any"] {
        if let Some(children) = object.get(group) {
            if object.len() > 1 {
                return Err(format!("A {{{group}:[...]}} condition has no other members."));
            }
            let Value::Array(children) = children else { return Err(format!("{group} takes an array of conditions.")) };
            let nodes = children.iter().map(|c| node(c, depth + 1, leaves)).collect::<std::result::Result<_, _>>()?;
            return Ok(if group == "all" { Tree::All(nodes) } else { Tree::Any(nodes) });
        }
    }
    if let Some(unknown) = object.keys().find(|k| !matches!(k.as_str(), "column" | "op" | "value")) {
        return Err(format!("Unknown member {unknown:?} in a condition: a leaf is {{column, op, value}}."));
    }
    *leaves += 1;
    if *leaves > MAX_LEAVES {
        return Err(format!("The filter has more than {MAX_LEAVES} conditions."));
    }
    let column = object.get("column").and_then(Value::as_str).filter(|c| !c.is_empty());
    let Some(column) = column else { return Err("Each condition names its column.".into()) };
    let Some(name) = object.get("op").and_then(Value::as_str) else {
        return Err("Each condition names its op.".into());
    };
    let Some(op) = Op::parse(name) else {
        let names: Vec<&str> = Op::ALL.iter().map(|o| o.as_str()).collect();
        return Err(format!("Unknown operator {name:?}: use one of {}.", names.join(", ")));
    };
    let value = object.get("value").cloned().unwrap_or(Value::Null);
    match op {
        Op::IsEmpty | Op::IsNotEmpty if !value.is_null() => return Err(format!("{name} takes no value.")),
        Op::Between if value.as_array().is_none_or(|v| v.len() != 2) => {
            return Err("between takes two endpoints: [low, high].".into());
        }
        Op::In if value.as_array().is_none_or(|v| v.is_empty() || v.len() > MAX_IN) => {
            return Err(format!("in takes an array of 1 to {MAX_IN} values."));
        }
        Op::IsEmpty | Op::IsNotEmpty | Op::Between | Op::In => {}
        _ if value.is_null() || value.is_array() => return Err(format!("{name} takes one value.")),
        _ => {}
    }
    Ok(Tree::Leaf(Leaf { column: column.to_owned(), op, value }))
}

/// The system columns every table has, with the SQL they read and their operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum System {
    Id,
    CreatedAt,
    UpdatedAt,
    Source,
}

impl System {
    pub const ALL: [Self; 4] = [Self::Id, Self::CreatedAt, Self::UpdatedAt, Self::Source];

    pub fn key(self) -> &'static str {
        match self {
            Self::Id => "$id",
            Self::CreatedAt => "$created_at",
            Self::UpdatedAt => "$updated_at",
            Self::Source => "$source",
        }
    }

    pub fn parse(key: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.key() == key)
    }

    pub fn sql(self) -> &'static str {
        match self {
            Self::Id => "id",
            Self::CreatedAt => "created_at",
            Self::UpdatedAt => "updated_at",
            Self::Source => "source",
        }
    }

    pub fn kind(self) -> &'static str {
        match self {
            Self::Id => "uuid",
            Self::CreatedAt | Self::UpdatedAt => "datetime",
            Self::Source => "text",
        }
    }

    pub fn operators(self) -> &'static [Op] {
        use Op::*;
        match self {
            Self::Id | Self::Source => &[Equals, NotEquals, In],
            Self::CreatedAt | Self::UpdatedAt => &[Equals, NotEquals, GreaterThan, LessThan, Between],
        }
    }

    pub fn sortable(self) -> bool {
        matches!(self, Self::CreatedAt | Self::UpdatedAt)
    }
}

fn not_supported(op: Op, what: &str) -> Error {
    Error::not_supported(format!("The operator {} is not supported on {what}.", op.as_str()))
        .with_reason("operator_not_supported")
}

/// Writes `tree` as a SQL condition. `masked` columns may not be filtered by (403).
pub fn compile(tree: &Tree, definition: &Definition, masked: &[String], sql: &mut Sql) -> Result<()> {
    match tree {
        Tree::All(nodes) | Tree::Any(nodes) if nodes.is_empty() => {
            sql.push(if matches!(tree, Tree::All(_)) { "TRUE" } else { "FALSE" });
        }
        Tree::All(nodes) | Tree::Any(nodes) => {
            let joiner = if matches!(tree, Tree::All(_)) { " AND " } else { " OR " };
            sql.push("(");
            for (i, node) in nodes.iter().enumerate() {
                if i > 0 {
                    sql.push(joiner);
                }
                compile(node, definition, masked, sql)?;
            }
            sql.push(")");
        }
        Tree::Leaf(leaf) => leaf_sql(leaf, definition, masked, sql)?,
    }
    Ok(())
}

fn bad_value(leaf: &Leaf, message: &str) -> Error {
    Error::field("filter", format!("The value for {} {}: {message}", leaf.column, leaf.op.as_str()))
}

fn leaf_sql(leaf: &Leaf, definition: &Definition, masked: &[String], sql: &mut Sql) -> Result<()> {
    if let Some(system) = System::parse(&leaf.column) {
        return system_sql(system, leaf, sql);
    }
    let Some(column) = definition.column(&leaf.column) else {
        return Err(Error::field("filter", format!("No column {:?} in this table.", leaf.column)));
    };
    if masked.contains(&column.key) {
        return Err(Error::forbidden(format!("You may not filter by the column {}.", column.key)));
    }
    let kind = column.kind;
    if !kind.operators().contains(&leaf.op) {
        return Err(not_supported(leaf.op, &format!("a {} column", kind.as_str())));
    }
    let json = sql::value_of(&column.key);
    let text = sql::text_of(&column.key);
    // one value read by the column's type (auto numbers are plain integers here)
    let typed = |value: &Value| -> Result<Value> {
        let read = if kind == ColumnType::AutoNumber {
            values::parse_number(value).map(|n| Some(values::number_value(n.trunc())))
        } else {
            values::read(column, value)
        };
        read.map_err(|m| bad_value(leaf, &m))?.ok_or_else(|| bad_value(leaf, "must not be empty."))
    };
    let lower = |value: &Value| -> Result<String> {
        match typed(value)? {
            Value::String(s) => Ok(s.to_lowercase()),
            other => Ok(other.to_string().to_lowercase()),
        }
    };
    let condition = match leaf.op {
        Op::IsEmpty => format!("{json} IS NULL"),
        Op::IsNotEmpty => format!("{json} IS NOT NULL"),
        Op::Contains if kind == ColumnType::MultiSelect => {
            let value = typed(&leaf.value)?;
            format!("{json} @> {}", sql.bind(Bind::Json(value)))
        }
        Op::In if kind == ColumnType::MultiSelect => {
            let mut options = Vec::new();
            for item in leaf.value.as_array().into_iter().flatten() {
                // one option read as a list of one
                let read = typed(item)?;
                options.extend(read.as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_owned));
            }
            format!("{json} ?| {}", sql.bind(Bind::Texts(options)))
        }
        Op::Contains | Op::StartsWith => {
            let needle = leaf.value.as_str().map(str::trim).filter(|s| !s.is_empty());
            let needle = needle.ok_or_else(|| bad_value(leaf, "must be a non-empty string."))?;
            let pattern = match leaf.op {
                Op::Contains => store::search::contains(needle),
                _ => store::search::starts_with(needle),
            };
            // the leakproof ILIKE (store::search), so row-level security leaves it estimable
            format!("{text} {} {}", store::search::ILIKE, sql.bind(Bind::Text(pattern)))
        }
        // text compares without case
        Op::In if kind.is_textual() => {
            let items = leaf.value.as_array().into_iter().flatten().map(lower).collect::<Result<Vec<_>>>()?;
            format!("lower({text}) = ANY({})", sql.bind(Bind::Texts(items)))
        }
        Op::Equals | Op::NotEquals if kind.is_textual() => {
            let operator = if leaf.op == Op::Equals { "=" } else { "IS DISTINCT FROM" };
            format!("lower({text}) {operator} {}", sql.bind(Bind::Text(lower(&leaf.value)?)))
        }
        Op::In => {
            let items = leaf.value.as_array().into_iter().flatten().map(typed).collect::<Result<Vec<_>>>()?;
            format!("{json} = ANY({})", sql.bind(Bind::Jsons(items)))
        }
        Op::Between => {
            let ends = leaf.value.as_array().map(Vec::as_slice).unwrap_or_default();
            let (low, high) = (typed(&ends[0])?, typed(&ends[1])?);
            let low = sql.bind(Bind::Json(low));
            let high = sql.bind(Bind::Json(high));
            format!("{json} BETWEEN {low} AND {high}")
        }
        Op::Equals | Op::NotEquals | Op::GreaterThan | Op::LessThan => {
            let operator = match leaf.op {
                Op::Equals => "=",
                Op::NotEquals => "IS DISTINCT FROM",
                Op::GreaterThan => ">",
                _ => "<",
            };
            let value = typed(&leaf.value)?;
            format!("{json} {operator} {}", sql.bind(Bind::Json(value)))
        }
    };
    sql.push(&condition);
    Ok(())
}

fn system_sql(system: System, leaf: &Leaf, sql: &mut Sql) -> Result<()> {
    if !system.operators().contains(&leaf.op) {
        return Err(not_supported(leaf.op, &format!("the system column {}", system.key())));
    }
    let bind = |value: &Value| -> Result<Bind> {
        match system {
            System::Id => values::reference(value, "a record id").map(Bind::Uuid).map_err(|m| bad_value(leaf, &m)),
            System::Source => {
                value.as_str().map(|s| Bind::Text(s.to_owned())).ok_or_else(|| bad_value(leaf, "must be a string."))
            }
            System::CreatedAt | System::UpdatedAt => {
                values::instant(value).map(Bind::Time).map_err(|m| bad_value(leaf, &m))
            }
        }
    };
    let column = system.sql();
    let items = || leaf.value.as_array().into_iter().flatten();
    let condition = match leaf.op {
        Op::In => {
            let binds = items().map(bind).collect::<Result<Vec<_>>>()?;
            let array = match system {
                System::Id => Bind::Uuids(
                    binds.into_iter().filter_map(|b| if let Bind::Uuid(u) = b { Some(u) } else { None }).collect(),
                ),
                _ => Bind::Texts(
                    binds.into_iter().filter_map(|b| if let Bind::Text(t) = b { Some(t) } else { None }).collect(),
                ),
            };
            format!("{column} = ANY({})", sql.bind(array))
        }
        Op::Between => {
            let ends: Vec<&Value> = items().collect();
            let low = bind(ends[0])?;
            let high = bind(ends[1])?;
            let low = sql.bind(low);
            let high = sql.bind(high);
            format!("{column} BETWEEN {low} AND {high}")
        }
        op => {
            let operator = match op {
                Op::Equals => "=",
                Op::NotEquals => "<>",
                Op::GreaterThan => ">",
                _ => "<",
            };
            let value = bind(&leaf.value)?;
            format!("{column} {operator} {}", sql.bind(value))
        }
    };
    sql.push(&condition);
    Ok(())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    fn leaf() -> Value {
        json!({"column": "name", "op": "equals", "value": "a"})
    }

    /// A tree `depth` levels deep: `depth - 1` nested `all`s around one leaf.
    fn nested(depth: usize) -> Value {
        (1..depth).fold(leaf(), |inner, _| json!({ "all": [inner] }))
    }

    #[test]
    fn depth_counts_a_leaf_as_one() {
        assert_eq!(Tree::parse(&leaf()).expect("leaf").expect("tree").depth(), 1);
        assert_eq!(Tree::parse(&nested(2)).expect("two").expect("tree").depth(), 2);
        assert!(Tree::parse(&nested(6)).is_ok());
        assert!(Tree::parse(&nested(7)).is_err());
        assert_eq!(Tree::parse(&json!({})).expect("empty"), None);
    }

    #[test]
    fn leaves_are_capped_at_forty() {
        let forty = json!({ "any": vec![leaf(); 40] });
        assert_eq!(Tree::parse(&forty).expect("40").expect("tree").leaves(), 40);
        assert!(Tree::parse(&json!({ "any": vec![leaf(); 41] })).is_err());
    }

    #[test]
    fn shapes_and_operators_are_checked() {
        for bad in [
            json!([]),
            json!({"all": {}}),
            json!({"all": [], "any": []}),
            json!({"column": "a", "op": "like", "value": "x"}),
            json!({"column": "a", "op": "between", "value": [1]}),
            json!({"column": "a", "op": "in", "value": []}),
            json!({"column": "a", "op": "is_empty", "value": 1}),
            json!({"column": "a", "op": "equals", "value": "x", "extra": 1}),
            json!({"op": "equals", "value": "x"}),
            json!({"all": [{}]}),
        ] {
            assert!(Tree::parse(&bad).is_err(), "{bad}");
        }
    }

    /// Random trees of bounded size, as JSON, with their true depth and leaf count.
    fn tree() -> impl Strategy<Value = (Value, usize, usize)> {
        let leaf = ("[a-z]{1,8}", prop::sample::select(Op::ALL.to_vec())).prop_map(|(column, op)| {
            let value = match op {
                Op::IsEmpty | Op::IsNotEmpty => Value::Null,
                Op::Between => json!([1, 2]),
                Op::In => json!(["x"]),
                _ => json!("x"),
            };
            (json!({"column": column, "op": op.as_str(), "value": value}), 1, 1)
        });
        leaf.prop_recursive(9, 120, 6, |inner| {
            (prop::bool::ANY, prop::collection::vec(inner, 0..6)).prop_map(|(all, children)| {
                let depth = 1 + children.iter().map(|c| c.1).max().unwrap_or(0);
                let leaves = children.iter().map(|c| c.2).sum();
                let nodes: Vec<Value> = children.into_iter().map(|c| c.0).collect();
                (if all { json!({ "all": nodes }) } else { json!({ "any": nodes }) }, depth, leaves)
            })
        })
    }

    proptest! {
        #[test]
        fn trees_within_the_limits_parse_and_others_are_refused((value, depth, leaves) in tree()) {
            let parsed = Tree::parse(&value);
            if depth <= MAX_DEPTH && leaves <= MAX_LEAVES {
                let tree = parsed.expect("within limits").expect("a tree");
                prop_assert_eq!(tree.depth(), depth);
                prop_assert_eq!(tree.leaves(), leaves);
            } else {
                prop_assert!(parsed.is_err());
            }
        }

        #[test]
        fn any_json_is_parsed_or_refused_without_panicking(raw in "\\PC{0,200}") {
            let _ = Tree::parse_param(Some(&raw));
        }
    }
}

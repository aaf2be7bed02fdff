//! A table's definition: its columns with their types and configuration, who may read and
//! write it, its unique sets and limits. It is stored as JSONB on the table (`definition`) in
//! exactly the shape the schema route shows, defaults filled in.

use std::collections::BTreeMap;

use kernel::Permission;
use kernel::error::FieldErrors;
use serde::{Deserialize, Serialize};

use crate::filter::Op;

/// The types a column may have (contract: Data table, column and record).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ColumnType {
    Text,
    LongText,
    Number,
    Currency,
    Boolean,
    Date,
    Datetime,
    Phone,
    Email,
    Select,
    MultiSelect,
    Status,
    Relation,
    File,
    AutoNumber,
}

impl ColumnType {
    pub const ALL: [Self; 15] = [
        Self::Text,
        Self::LongText,
        Self::Number,
        Self::Currency,
        Self::Boolean,
        Self::Date,
        Self::Datetime,
        Self::Phone,
        Self::Email,
        Self::Select,
        Self::MultiSelect,
        Self::Status,
        Self::Relation,
        Self::File,
        Self::AutoNumber,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Text => "text",
            Self::LongText => "long_text",
            Self::Number => "number",
            Self::Currency => "currency",
            Self::Boolean => "boolean",
            Self::Date => "date",
            Self::Datetime => "datetime",
            Self::Phone => "phone",
            Self::Email => "email",
            Self::Select => "select",
            Self::MultiSelect => "multi_select",
            Self::Status => "status",
            Self::Relation => "relation",
            Self::File => "file",
            Self::AutoNumber => "auto_number",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == name)
    }

    /// Compared without case, searched by `q`, filtered by substring.
    pub fn is_textual(self) -> bool {
        matches!(self, Self::Text | Self::LongText | Self::Phone | Self::Email)
    }

    /// Compared by order (`greater_than`, `between`).
    pub fn is_ordered(self) -> bool {
        matches!(self, Self::Number | Self::Currency | Self::AutoNumber | Self::Date | Self::Datetime)
    }

    /// The filter operators the type advertises in the schema's `types` block.
    pub fn operators(self) -> &'static [Op] {
        use Op::*;
        match self {
            _ if self.is_textual() => &[Equals, NotEquals, Contains, StartsWith, In, IsEmpty, IsNotEmpty],
            _ if self.is_ordered() => &[Equals, NotEquals, GreaterThan, LessThan, Between, In, IsEmpty, IsNotEmpty],
            Self::Boolean => &[Equals, NotEquals, IsEmpty, IsNotEmpty],
            Self::MultiSelect => &[Contains, In, IsEmpty, IsNotEmpty],
            Self::File => &[IsEmpty, IsNotEmpty],
            _ => &[Equals, NotEquals, In, IsEmpty, IsNotEmpty],
        }
    }

    pub fn sortable(self) -> bool {
        !matches!(self, Self::MultiSelect | Self::File)
    }

    fn can_be_unique(self) -> bool {
        !matches!(self, Self::AutoNumber | Self::File | Self::MultiSelect | Self::LongText | Self::Boolean)
    }

    /// What a value of the type looks like, for the schema's `types` block.
    pub fn value(self) -> &'static str {
        match self {
            Self::Text | Self::LongText => "string",
            Self::Number => "number (a JSON number or a numeric string)",
            Self::Currency => "number in main units (not minor units)",
            Self::Boolean => "true or false",
            Self::Date => "YYYY-MM-DD",
            Self::Datetime => "RFC 3339 with Z or an offset; returned in UTC",
            Self::Phone => "phone number; returned in E.164",
            Self::Email => "email address; returned in lower case",
            Self::Select => "one of the column's options",
            Self::MultiSelect => "a list of the column's options",
            Self::Status => "a state key of the column, under its state rules",
            Self::Relation => "a record id of the related table, or {id}",
            Self::File => "a file id or {id}, or a list of them; returned with signed URLs",
            Self::AutoNumber => "integer assigned by the service; not writable",
        }
    }
}

/// One state of a status column.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct State {
    pub key: String,
    #[serde(default)]
    pub label: String,
}

/// A declared move between two states, optionally gated by a permission.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Move {
    pub from: String,
    pub to: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission: Option<String>,
}

/// A column's configuration; which keys apply depends on the type (docs/api.md lists them).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decimals: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub states: Vec<State>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub initial: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub moves: Vec<Move>,
    /// The slug of a relation's target table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multiple: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Column {
    pub key: String,
    pub label: String,
    #[serde(rename = "type")]
    pub kind: ColumnType,
    pub required: bool,
    pub unique: bool,
    pub indexed: bool,
    pub config: Config,
}

impl Column {
    /// The most characters a text value may have (the type's default unless configured).
    pub fn max_length(&self) -> u32 {
        self.config.max_length.unwrap_or(if self.kind == ColumnType::LongText { 8_000 } else { 255 })
    }

    pub fn strict(&self) -> bool {
        self.config.strict.unwrap_or(true)
    }

    pub fn state(&self, key: &str) -> Option<&State> {
        self.config.states.iter().find(|s| s.key == key)
    }
}

/// A column's own permissions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnAccess {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Access {
    #[serde(default = "default_read")]
    pub read: String,
    #[serde(default = "default_write")]
    pub write: String,
    #[serde(default)]
    pub columns: BTreeMap<String, ColumnAccess>,
}

fn default_read() -> String {
    Permission::DATA_VIEW.as_str().to_owned()
}

fn default_write() -> String {
    Permission::DATA_RECORDS_EDIT.as_str().to_owned()
}

impl Default for Access {
    fn default() -> Self {
        Self { read: default_read(), write: default_write(), columns: BTreeMap::new() }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// At most this many live records; none by default.
    #[serde(default)]
    pub records: Option<i64>,
}

/// Everything about a table but its identity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Definition {
    pub columns: Vec<Column>,
    pub access: Access,
    pub unique_sets: Vec<Vec<String>>,
    pub limits: Limits,
}

impl Definition {
    /// Phone columns without a `region` read national numbers in `region` (the account's).
    pub fn default_region(&mut self, region: &str) {
        for column in self.columns.iter_mut().filter(|c| c.kind == ColumnType::Phone) {
            column.config.region.get_or_insert_with(|| region.to_owned());
        }
    }

    pub fn column(&self, key: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.key == key)
    }

    /// The first text column: its value is a record's `title`.
    pub fn title_column(&self) -> Option<&Column> {
        self.columns.iter().find(|c| c.kind == ColumnType::Text)
    }

    /// The columns `q` searches: the first six text, long_text, phone and email columns.
    pub fn search_columns(&self) -> Vec<&Column> {
        self.columns.iter().filter(|c| c.kind.is_textual()).take(crate::SEARCH_COLUMNS).collect()
    }

    /// The names of the uniqueness keys: each unique column's key, each set's keys joined by `+`.
    pub fn unique_keys(&self) -> Vec<(String, Vec<&Column>)> {
        let columns = self.columns.iter().filter(|c| c.unique).map(|c| (c.key.clone(), vec![c]));
        let sets =
            self.unique_sets.iter().map(|set| (set.join("+"), set.iter().filter_map(|k| self.column(k)).collect()));
        columns.chain(sets).collect()
    }
}

/// A slug or a column key: a lower-case letter, then lower-case letters, digits or `_`.
pub fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && name.len() <= 63
}

fn label_of(key: &str) -> String {
    let spaced = key.replace('_', " ");
    let mut chars = spaced.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

/// A column as the definition file writes it: type as text, config and flags optional.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnFile {
    pub key: String,
    #[serde(default)]
    pub label: Option<String>,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub required: bool,
    #[serde(default)]
    pub unique: bool,
    #[serde(default)]
    pub indexed: bool,
    #[serde(default)]
    pub config: Config,
}

fn check_permission(name: &str, field: String, errors: &mut FieldErrors) {
    if !Permission::is_grantable(name) {
        errors.add(
            field,
            format!("{name:?} is not a permission: use one of the contract's or a name beginning with data."),
        );
    }
}

/// Checks the columns, access, unique sets and limits of one table, filling in defaults.
/// `tables` are the slugs the relation columns may point at; `at` prefixes field paths.
pub fn build(
    columns: Vec<ColumnFile>,
    access: Access,
    unique_sets: Vec<Vec<String>>,
    limits: Limits,
    tables: &[&str],
    at: &str,
    errors: &mut FieldErrors,
) -> Definition {
    let mut built: Vec<Column> = Vec::new();
    if columns.is_empty() {
        errors.add(format!("{at}.columns"), "A table needs at least one column.");
    }
    for (i, file) in columns.into_iter().enumerate() {
        let path = format!("{at}.columns[{i}]");
        if !is_name(&file.key) {
            errors.add(
                format!("{path}.key"),
                "A column key is a lower-case letter, then letters, digits or _ (at most 63).",
            );
        } else if built.iter().any(|c| c.key == file.key) {
            errors.add(format!("{path}.key"), format!("The column key {:?} is used twice.", file.key));
        }
        let Some(kind) = ColumnType::parse(&file.kind) else {
            let names: Vec<&str> = ColumnType::ALL.iter().map(|t| t.as_str()).collect();
            errors
                .add(format!("{path}.type"), format!("Unknown type {:?}: use one of {}.", file.kind, names.join(", ")));
            continue;
        };
        let column = Column {
            label: file.label.filter(|l| !l.trim().is_empty()).unwrap_or_else(|| label_of(&file.key)),
            key: file.key,
            kind,
            required: file.required,
            unique: file.unique,
            indexed: file.indexed,
            config: file.config,
        };
        built.push(check_column(column, tables, &path, errors));
    }
    for (key, rules) in &access.columns {
        if !built.iter().any(|c| &c.key == key) {
            errors.add(format!("{at}.access.columns.{key}"), format!("No column {key:?} in this table."));
        }
        for name in rules.read.iter().chain(&rules.write) {
            check_permission(name, format!("{at}.access.columns.{key}"), errors);
        }
    }
    check_permission(&access.read, format!("{at}.access.read"), errors);
    check_permission(&access.write, format!("{at}.access.write"), errors);
    for (i, set) in unique_sets.iter().enumerate() {
        let path = format!("{at}.unique_sets[{i}]");
        if set.len() < 2 {
            errors.add(&path, "A unique set names at least two columns (use `unique` on a column for one).");
        }
        for key in set {
            match built.iter().find(|c| &c.key == key) {
                None => errors.add(&path, format!("No column {key:?} in this table.")),
                Some(c) if !c.kind.can_be_unique() => {
                    errors.add(&path, format!("A {} column cannot be part of a unique set.", c.kind.as_str()))
                }
                Some(_) => {}
            }
        }
    }
    if limits.records.is_some_and(|n| n < 1) {
        errors.add(format!("{at}.limits.records"), "The records limit is at least 1.");
    }
    Definition { columns: built, access, unique_sets, limits }
}

/// One column's rules, with its configuration's defaults filled in.
fn check_column(mut column: Column, tables: &[&str], path: &str, errors: &mut FieldErrors) -> Column {
    use ColumnType::*;
    let kind = column.kind;
    if column.unique && !kind.can_be_unique() {
        errors.add(format!("{path}.unique"), format!("A {} column cannot be unique.", kind.as_str()));
    }
    if column.indexed && !kind.sortable() {
        errors.add(format!("{path}.indexed"), format!("A {} column cannot be indexed.", kind.as_str()));
    }
    if column.required && kind == AutoNumber {
        errors.add(
            format!("{path}.required"),
            "An auto_number column is assigned by the service; it cannot be required.",
        );
    }
    let max_length = column.max_length();
    let config = &mut column.config;
    let mut wrong = |key: &str, message: String| errors.add(format!("{path}.config.{key}"), message);
    // Keys that do not belong to the type are refused, so a typo does not pass silently.
    let allowed: &[&str] = match kind {
        Text => &["min_length", "max_length"],
        LongText => &["max_length"],
        Number => &["min", "max", "precision"],
        Currency => &["currency", "decimals", "min", "max"],
        Phone => &["region"],
        Select | MultiSelect => &["options"],
        Status => &["states", "initial", "strict", "moves"],
        Relation => &["table"],
        File => &["multiple"],
        Boolean | Date | Datetime | Email | AutoNumber => &[],
    };
    if let Ok(serde_json::Value::Object(set)) = serde_json::to_value(&*config) {
        for key in set.keys().filter(|k| !allowed.contains(&k.as_str())) {
            wrong(key, format!("{key} does not apply to a {} column.", kind.as_str()));
        }
    }
    match kind {
        Text | LongText => {
            if !(1..=crate::RECORD_BYTES as u32).contains(&max_length) {
                wrong("max_length", "max_length is between 1 and 8192.".into());
            }
            if config.min_length.is_some_and(|min| min > max_length) {
                wrong("min_length", "min_length is at most max_length.".into());
            }
            config.max_length = Some(max_length);
        }
        Number | Currency => {
            if let (Some(min), Some(max)) = (config.min, config.max)
                && min > max
            {
                wrong("min", "min is at most max.".into());
            }
            if kind == Currency {
                let code = config.currency.get_or_insert_with(|| "TZS".to_owned());
                if code.len() != 3 || !code.chars().all(|c| c.is_ascii_uppercase()) {
                    wrong("currency", "currency is an ISO 4217 code such as TZS.".into());
                }
                config.decimals.get_or_insert(0);
            }
            if config.precision.or(config.decimals).is_some_and(|p| p > 12) {
                wrong("precision", "At most 12 decimal places.".into());
            }
        }
        Phone => {
            // absent, it is the account's own (`Definition::default_region`, at apply)
            if config.region.as_deref().is_some_and(|region| !kernel::phone::is_region(region)) {
                wrong("region", "region is a two-letter country code such as TZ.".into());
            }
        }
        Select | MultiSelect => {
            if config.options.is_empty() {
                wrong("options", "A select column needs its options.".into());
            }
            let mut seen = std::collections::HashSet::new();
            if config.options.iter().any(|o| o.trim().is_empty() || !seen.insert(o)) {
                wrong("options", "Options are distinct, non-empty strings.".into());
            }
        }
        Status => check_states(config, &mut wrong),
        Relation => match config.table.as_deref() {
            None => wrong("table", "A relation column names its target table's slug.".into()),
            Some(slug) if !tables.contains(&slug) => {
                wrong("table", format!("No table {slug:?} in this tenant or this file."))
            }
            Some(_) => {}
        },
        File => {
            config.multiple.get_or_insert(true);
        }
        Boolean | Date | Datetime | Email | AutoNumber => {}
    }
    column
}

fn check_states(config: &mut Config, wrong: &mut impl FnMut(&str, String)) {
    if config.states.is_empty() {
        wrong("states", "A status column needs its states.".into());
    }
    let mut seen = std::collections::HashSet::new();
    for state in &mut config.states {
        if !is_name(&state.key) || !seen.insert(state.key.clone()) {
            wrong("states", format!("State keys are distinct names (lower-case letters, digits, _): {:?}.", state.key));
        }
        if state.label.trim().is_empty() {
            state.label = label_of(&state.key);
        }
    }
    let known = |key: &str| config.states.iter().any(|s| s.key == key);
    if let Some(bad) = config.initial.iter().find(|k| !known(k)) {
        wrong("initial", format!("{bad:?} is not one of the states."));
    }
    for step in &config.moves {
        if !known(&step.from) || !known(&step.to) || step.from == step.to {
            wrong("moves", format!("A move goes between two different declared states: {} -> {}.", step.from, step.to));
        }
        if let Some(p) = &step.permission
            && !Permission::is_grantable(p)
        {
            wrong("moves", format!("{p:?} is not a permission: use a name beginning with data."));
        }
    }
    if config.initial.is_empty() {
        config.initial = config.states.iter().map(|s| s.key.clone()).collect();
    }
    config.strict.get_or_insert(true);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn columns(value: serde_json::Value) -> Vec<ColumnFile> {
        serde_json::from_value(value).expect("columns")
    }

    #[test]
    fn defaults_are_filled_in() {
        let mut errors = FieldErrors::new();
        let def = build(
            columns(serde_json::json!([
                {"key": "first_name", "type": "text"},
                {"key": "credit", "type": "currency"},
                {"key": "stage", "type": "status", "config": {"states": [{"key": "new"}, {"key": "done"}]}}
            ])),
            Access::default(),
            vec![],
            Limits::default(),
            &[],
            "tables[0]",
            &mut errors,
        );
        assert!(errors.is_empty(), "{:?}", errors.into_map());
        assert_eq!(def.columns[0].label, "First name");
        assert_eq!(def.columns[0].config.max_length, Some(255));
        assert_eq!(def.columns[1].config.currency.as_deref(), Some("TZS"));
        assert_eq!(def.columns[2].config.initial, ["new", "done"]);
        assert_eq!(def.columns[2].config.states[1].label, "Done");
        assert!(def.columns[2].strict());
    }

    #[test]
    fn mistakes_are_named_by_path() {
        let mut errors = FieldErrors::new();
        build(
            columns(serde_json::json!([
                {"key": "Name", "type": "text"},
                {"key": "kind", "type": "select"},
                {"key": "agent", "type": "relation", "config": {"table": "nowhere"}},
                {"key": "n", "type": "number", "config": {"options": ["a"]}},
                {"key": "f", "type": "file", "unique": true}
            ])),
            Access::default(),
            vec![vec!["kind".into(), "missing".into()]],
            Limits::default(),
            &["agents"],
            "tables[0]",
            &mut errors,
        );
        let errors = errors.into_map();
        for field in [
            "tables[0].columns[0].key",
            "tables[0].columns[1].config.options",
            "tables[0].columns[2].config.table",
            "tables[0].columns[3].config.options",
            "tables[0].columns[4].unique",
            "tables[0].unique_sets[0]",
        ] {
            assert!(errors.contains_key(field), "{field} in {errors:?}");
        }
    }
}

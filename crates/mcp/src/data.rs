//! The `data` tools: tables, schema, states, records (list with the filter tree, create, patch, delete), history, groups and overview, over `data_tables::DataService`.

use crate::tool::Tool;

/// This domain's tools.
pub fn tools() -> Vec<Tool> {
    Vec::new()
}

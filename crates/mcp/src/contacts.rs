//! The contacts tools (on `contacts` and `/mcp`): groups, contacts, search, create and update, over `contacts::ContactService`.

use crate::tool::Tool;

/// This domain's tools.
pub fn tools() -> Vec<Tool> {
    Vec::new()
}

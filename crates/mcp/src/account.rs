//! The `account` and `overview` tools: who am I, the balance, counts per domain.

use crate::tool::Tool;

/// This domain's tools.
pub fn tools() -> Vec<Tool> {
    Vec::new()
}

//! The `orders` tools: list, read, create, set status, over `commerce::CommerceService`.

use crate::tool::Tool;

/// This domain's tools.
pub fn tools() -> Vec<Tool> {
    Vec::new()
}

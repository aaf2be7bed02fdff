//! The `shop` tools: catalogues, products by sku, stock levels, inventory push, product batches and their sync reports, over `commerce::CommerceService`.

use crate::tool::Tool;

/// This domain's tools.
pub fn tools() -> Vec<Tool> {
    Vec::new()
}

//! The `messaging` tools: send SMS, read and list messages, create and read campaigns, the blacklist, over `messaging::MessagingService`.

use crate::tool::Tool;

/// This domain's tools.
pub fn tools() -> Vec<Tool> {
    Vec::new()
}

//! The `shop` tools through the SDK's client.

//! The `messaging` tools through the SDK's client.

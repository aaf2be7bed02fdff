//! The `data` tools through the SDK's client.

//! The `account` tools through the SDK's client.

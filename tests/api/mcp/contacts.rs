//! The `contacts` tools through the SDK's client.

//! The `orders` tools through the SDK's client.

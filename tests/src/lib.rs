//! api tests support

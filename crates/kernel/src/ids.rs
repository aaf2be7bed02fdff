//! Id newtypes, so a tenant id never gets passed where a user id belongs.

use serde::{Deserialize, Serialize};

macro_rules! id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub i64);

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

id!(
    /// An account: the tenant a key belongs to.
    TenantId
);
id!(
    /// A person who issues keys; their permissions bound what the keys may do.
    UserId
);
id!(
    /// A REST API key.
    ApiKeyId
);

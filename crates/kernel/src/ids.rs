//! Id newtypes, so a tenant id never gets passed where a user id belongs.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::Error;

/// An id kind as it stands in a request path (`/catalogues/{catalogue}`).
pub trait PathId: Sized {
    fn from_path(raw: &str) -> Option<Self>;
}

/// Numeric ids are positive integers.
impl PathId for i64 {
    fn from_path(raw: &str) -> Option<Self> {
        raw.parse::<i64>().ok().filter(|id| *id > 0)
    }
}

impl PathId for Uuid {
    fn from_path(raw: &str) -> Option<Self> {
        Uuid::parse_str(raw).ok()
    }
}

/// The one way to read a path id: a malformed id names nothing, so it answers the same 404 as
/// an id that names nothing of the caller's (`what` names the resource: "Catalogue").
pub fn parse_id<T: PathId>(raw: &str, what: &str) -> Result<T, Error> {
    T::from_path(raw.trim()).ok_or_else(|| Error::not_found(what))
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_malformed_path_id_is_not_found() {
        assert_eq!(parse_id::<i64>(" 7 ", "Order").ok(), Some(7));
        for raw in ["0", "-1", "x", "", "1.5", "99999999999999999999"] {
            let error = parse_id::<i64>(raw, "Order").expect_err(raw);
            assert_eq!(error.kind, crate::ErrorKind::NotFound, "{raw}");
            assert!(error.message.contains("Order"), "{raw}: {}", error.message);
        }
        let id = Uuid::new_v4();
        assert_eq!(parse_id::<Uuid>(&id.to_string(), "Lead").ok(), Some(id));
        assert_eq!(parse_id::<Uuid>("not-a-uuid", "Lead").expect_err("malformed").kind, crate::ErrorKind::NotFound);
    }
}

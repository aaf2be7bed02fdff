//! Id newtypes, so a tenant id never gets passed where a user id belongs.

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

/// Declares an id kind: a newtype over `i64` (a numeric id) or `Uuid`, read from a path with
/// [`parse_id`], stored by diesel as its column type, written to JSON and the OpenAPI document
/// as the bare value. Each domain declares its own kinds beside its services:
///
/// ```
/// kernel::id!(
///     /// A contact group.
///     GroupId: i64
/// );
/// let id: GroupId = kernel::parse_id("12", "Group").unwrap();
/// assert_eq!(id, GroupId(12));
/// assert_eq!(serde_json::to_string(&id).unwrap(), "12");
/// ```
#[macro_export]
macro_rules! id {
    ($(#[$doc:meta])* $name:ident : i64) => {
        $crate::id!(@kind $(#[$doc])* $name, i64, BigInt);
    };
    ($(#[$doc:meta])* $name:ident : Uuid) => {
        $crate::id!(@kind $(#[$doc])* $name, $crate::ids::reexport::Uuid, Uuid);
    };
    (@kind $(#[$doc:meta])* $name:ident, $inner:ty, $sql:ident) => {
        $(#[$doc])*
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord,
            $crate::ids::reexport::Serialize, $crate::ids::reexport::Deserialize,
            $crate::ids::reexport::AsExpression, $crate::ids::reexport::FromSqlRow,
        )]
        #[serde(crate = "kernel::ids::reexport::serde", transparent)]
        #[diesel(sql_type = $crate::ids::reexport::sql_types::$sql)]
        pub struct $name(pub $inner);

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                self.0.fmt(f)
            }
        }

        impl $crate::ids::PathId for $name {
            fn from_path(raw: &str) -> Option<Self> {
                <$inner as $crate::ids::PathId>::from_path(raw).map(Self)
            }
        }

        impl $crate::ids::reexport::ToSql<$crate::ids::reexport::sql_types::$sql, $crate::ids::reexport::Pg> for $name {
            fn to_sql<'b>(
                &'b self,
                out: &mut $crate::ids::reexport::Output<'b, '_, $crate::ids::reexport::Pg>,
            ) -> $crate::ids::reexport::serialize::Result {
                $crate::ids::reexport::ToSql::<$crate::ids::reexport::sql_types::$sql, $crate::ids::reexport::Pg>::to_sql(&self.0, out)
            }
        }

        impl $crate::ids::reexport::FromSql<$crate::ids::reexport::sql_types::$sql, $crate::ids::reexport::Pg> for $name {
            fn from_sql(
                bytes: <$crate::ids::reexport::Pg as $crate::ids::reexport::Backend>::RawValue<'_>,
            ) -> $crate::ids::reexport::deserialize::Result<Self> {
                <$inner as $crate::ids::reexport::FromSql<$crate::ids::reexport::sql_types::$sql, $crate::ids::reexport::Pg>>::from_sql(bytes).map(Self)
            }
        }

        /// Described as the bare value it is on the wire.
        impl $crate::ids::reexport::PartialSchema for $name {
            fn schema() -> $crate::ids::reexport::RefOr<$crate::ids::reexport::Schema> {
                <$inner as $crate::ids::BareSchema>::bare()
            }
        }

        impl $crate::ids::reexport::ToSchema for $name {}
    };
}

/// The schema of an id's inner value: utoipa describes `Uuid` only inside its derive, so the
/// macro cannot ask it for one.
#[doc(hidden)]
pub trait BareSchema {
    fn bare() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>;
}

impl BareSchema for i64 {
    fn bare() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        <i64 as utoipa::PartialSchema>::schema()
    }
}

impl BareSchema for Uuid {
    fn bare() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
        ObjectBuilder::new().schema_type(Type::String).format(Some(SchemaFormat::KnownFormat(KnownFormat::Uuid))).into()
    }
}

/// What [`id!`] expands to, so a domain crate needs no dependency of its own to declare an id.
#[doc(hidden)]
pub mod reexport {
    pub use diesel::backend::Backend;
    pub use diesel::deserialize::{self, FromSql, FromSqlRow};
    pub use diesel::expression::AsExpression;
    pub use diesel::pg::Pg;
    pub use diesel::serialize::{self, Output, ToSql};
    pub use diesel::sql_types;
    pub use serde::{self, Deserialize, Serialize};
    pub use utoipa::openapi::{RefOr, schema::Schema};
    pub use utoipa::{PartialSchema, ToSchema};
    pub use uuid::Uuid;
}

crate::id!(
    /// An account: the tenant a key belongs to.
    TenantId: i64
);
crate::id!(
    /// A person who issues keys; their permissions bound what the keys may do.
    UserId: i64
);
crate::id!(
    /// A REST API key.
    ApiKeyId: i64
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

    crate::id!(
        /// A UUID kind, as a domain declares one.
        ThingId: Uuid
    );

    #[test]
    fn a_uuid_kind_is_described_as_a_uuid_string() {
        let schema = serde_json::to_value(<ThingId as utoipa::PartialSchema>::schema()).expect("schema");
        assert_eq!((&schema["type"], &schema["format"]), (&serde_json::json!("string"), &serde_json::json!("uuid")));
        let id = Uuid::new_v4();
        assert_eq!(parse_id::<ThingId>(&id.to_string(), "Thing").ok(), Some(ThingId(id)));
    }
}

//! A JSON object read as a struct, and nothing else.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

/// A value that must be a JSON object: serde's derive would also read a struct from an array
/// of its members (`[null, null]`). Reads `T` from the object, its members' paths kept for the
/// reader's 422. The gateway's body reader refuses a body that is no object; a row of a batch
/// read on its own (`commerce`'s products) goes through this.
#[derive(Debug, Clone, Default)]
pub struct Object<T>(pub T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Read<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Read<T> {
            type Value = Object<T>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }

            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Object<T>, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map)).map(Object)
            }
        }
        deserializer.deserialize_map(Read(std::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_is_read_and_an_array_refused() {
        #[derive(Debug, Deserialize)]
        struct Body {
            #[serde(default)]
            name: Option<String>,
        }
        let read = |body: &str| serde_json::from_str::<Object<Body>>(body).map(|b| b.0.name);
        assert_eq!(read(r#"{"name": "x"}"#).ok(), Some(Some("x".to_owned())));
        assert!(read("[null]").is_err());
        assert!(read("[]").is_err());
    }
}

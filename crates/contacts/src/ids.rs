//! The contacts id kinds and how a path names them (contract: "Identifiers and list
//! conventions"): a group by its numeric id or its UUID, a contact by its numeric id or its
//! `ctc_` uid. A malformed id names nothing: [`kernel::parse_id`] answers the resource's 404.

use kernel::ids::PathId;
use uuid::Uuid;

kernel::id!(
    /// A contact group's numeric id.
    GroupId: i64
);
kernel::id!(
    /// A contact's numeric id.
    ContactId: i64
);

/// A contact's public uid: `ctc_` and letters or digits (`ctc_3f2a…`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ContactUid(String);

impl ContactUid {
    /// The prefix every contact uid carries.
    pub const PREFIX: &'static str = "ctc_";
    /// The longest uid a path may hold.
    const MAX_CHARS: usize = 64;

    /// A new random uid.
    pub fn generate() -> Self {
        Self(format!("{}{}", Self::PREFIX, Uuid::new_v4().simple()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for ContactUid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl PathId for ContactUid {
    fn from_path(raw: &str) -> Option<Self> {
        let rest = raw.strip_prefix(Self::PREFIX)?;
        let well_formed = !rest.is_empty()
            && raw.len() <= Self::MAX_CHARS
            && rest.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        well_formed.then(|| Self(raw.to_owned()))
    }
}

/// A group in a path: its numeric id or its UUID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupRef {
    Id(GroupId),
    Uid(Uuid),
}

impl GroupRef {
    /// Reads a group the way a path does; anything else is the group's 404.
    pub fn parse(raw: &str) -> Result<Self, kernel::Error> {
        kernel::parse_id(raw, "Contact group")
    }
}

impl PathId for GroupRef {
    fn from_path(raw: &str) -> Option<Self> {
        GroupId::from_path(raw).map(Self::Id).or_else(|| Uuid::from_path(raw).map(Self::Uid))
    }
}

impl From<GroupId> for GroupRef {
    fn from(id: GroupId) -> Self {
        Self::Id(id)
    }
}

/// A contact in a path: its numeric id or its `ctc_` uid, only within its own group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContactRef {
    Id(ContactId),
    Uid(ContactUid),
}

impl ContactRef {
    /// Reads a contact the way a path does; anything else is the contact's 404.
    pub fn parse(raw: &str) -> Result<Self, kernel::Error> {
        kernel::parse_id(raw, "Contact")
    }
}

impl PathId for ContactRef {
    fn from_path(raw: &str) -> Option<Self> {
        ContactId::from_path(raw).map(Self::Id).or_else(|| ContactUid::from_path(raw).map(Self::Uid))
    }
}

impl From<ContactId> for ContactRef {
    fn from(id: ContactId) -> Self {
        Self::Id(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernel::ErrorKind;

    #[test]
    fn groups_are_named_by_a_positive_id_or_a_uuid() {
        assert_eq!(GroupRef::parse("12").ok(), Some(GroupRef::Id(GroupId(12))));
        let uid = Uuid::new_v4();
        assert_eq!(GroupRef::parse(&uid.to_string()).ok(), Some(GroupRef::Uid(uid)));
        for raw in ["0", "-3", "abc", "", "12a"] {
            let error = GroupRef::parse(raw).expect_err(raw);
            assert_eq!((error.kind, error.message.contains("Contact group")), (ErrorKind::NotFound, true), "{raw}");
        }
    }

    #[test]
    fn contacts_are_named_by_a_positive_id_or_a_ctc_uid() {
        assert_eq!(ContactRef::parse("7").ok(), Some(ContactRef::Id(ContactId(7))));
        let uid = ContactUid::generate();
        assert_eq!(ContactRef::parse(uid.as_str()).ok(), Some(ContactRef::Uid(uid)));
        assert!(ContactRef::parse("ctc_missing").is_ok(), "well formed, if unknown");
        for raw in ["0", "ctc_", "msg_abc", "ctc_a b", "ctc_\u{0}", &format!("ctc_{}", "a".repeat(61))] {
            assert_eq!(ContactRef::parse(raw).expect_err(raw).kind, ErrorKind::NotFound, "{raw}");
        }
    }
}

//! The id kinds of messaging (contract: Identifiers): a message, a campaign, a call or a call
//! campaign is named in a path by its numeric id or by its public uid (`msg_…`, `cmp_…`,
//! `call_…`, `ccmp_…`). Read them with [`kernel::parse_id`]: anything else names nothing, the
//! resource's 404.
//!
//! ```
//! use messaging::ids::{CampaignRef, MessageId, MessageRef};
//! assert_eq!(kernel::parse_id::<MessageRef>("42", "Message").unwrap(), MessageRef::Id(MessageId(42)));
//! assert!(matches!(kernel::parse_id::<MessageRef>("msg_0a1b", "Message"), Ok(MessageRef::Uid(_))));
//! assert!(kernel::parse_id::<MessageRef>("cmp_0a1b", "Message").is_err());
//! assert!(kernel::parse_id::<CampaignRef>("-3", "Campaign").is_err());
//! ```

use std::fmt;

use diesel::expression::AsExpression;
use diesel::pg::Pg;
use diesel::serialize::{self, Output, ToSql};
use diesel::sql_types::Text;
use kernel::ids::PathId;

kernel::id!(
    /// A message (outbound or inbound).
    MessageId: i64
);
kernel::id!(
    /// An SMS campaign.
    CampaignId: i64
);

/// Declares a public uid kind: its prefix, then 1 to 64 ASCII letters or digits.
macro_rules! uid {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, AsExpression)]
        #[serde(transparent)]
        #[diesel(sql_type = Text)]
        pub struct $name(String);

        impl $name {
            pub const PREFIX: &'static str = $prefix;

            /// A fresh uid of this kind.
            pub fn generate() -> Self {
                Self(format!("{}{}", $prefix, uuid::Uuid::new_v4().simple()))
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl PathId for $name {
            fn from_path(raw: &str) -> Option<Self> {
                let rest = raw.strip_prefix($prefix)?;
                let valid = (1..=64).contains(&rest.len()) && rest.bytes().all(|b| b.is_ascii_alphanumeric());
                valid.then(|| Self(raw.to_owned()))
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<$name> for String {
            fn from(uid: $name) -> String {
                uid.0
            }
        }

        impl ToSql<Text, Pg> for $name {
            fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, Pg>) -> serialize::Result {
                <str as ToSql<Text, Pg>>::to_sql(&self.0, out)
            }
        }
    };
}

uid!(
    /// A message's public uid, `msg_…`.
    MessageUid,
    "msg_"
);
uid!(
    /// A campaign's public uid, `cmp_…`.
    CampaignUid,
    "cmp_"
);

/// Declares how a resource is named in a path: its numeric id or its public uid.
macro_rules! reference {
    ($(#[$doc:meta])* $name:ident, $id:ident, $uid:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum $name {
            Id($id),
            Uid($uid),
        }

        impl PathId for $name {
            fn from_path(raw: &str) -> Option<Self> {
                $id::from_path(raw).map(Self::Id).or_else(|| $uid::from_path(raw).map(Self::Uid))
            }
        }

        impl From<$id> for $name {
            fn from(id: $id) -> Self {
                Self::Id(id)
            }
        }
    };
}

reference!(
    /// A message in a path: numeric id or public uid.
    MessageRef,
    MessageId,
    MessageUid
);
reference!(
    /// A campaign in a path (or the message list's `campaign` filter): numeric id or public uid.
    CampaignRef,
    CampaignId,
    CampaignUid
);

kernel::id!(
    /// A call (voice OTP, voice message or call).
    CallId: i64
);
uid!(
    /// A call's public uid, `call_…`.
    CallUid,
    "call_"
);
reference!(
    /// A call in a path: numeric id or `call_…` uid.
    CallRef,
    CallId,
    CallUid
);

kernel::id!(
    /// A call campaign.
    CallCampaignId: i64
);
uid!(
    /// A call campaign's public uid, `ccmp_…`.
    CallCampaignUid,
    "ccmp_"
);
reference!(
    /// A call campaign in a path: numeric id or `ccmp_…` uid.
    CallCampaignRef,
    CallCampaignId,
    CallCampaignUid
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_is_named_by_its_id_or_its_uid() {
        let uid = MessageUid::generate();
        assert_eq!(kernel::parse_id::<MessageRef>("7", "Message").ok(), Some(MessageRef::Id(MessageId(7))));
        assert_eq!(kernel::parse_id::<MessageRef>(uid.as_str(), "Message").ok(), Some(MessageRef::Uid(uid)));
    }

    #[test]
    fn anything_else_is_the_resources_404() {
        for raw in ["0", "-1", "", "msg_", "msg_a-b", "msg_\0", "cmp_abc", "abc", "MSG_abc"] {
            let error = kernel::parse_id::<MessageRef>(raw, "Message").expect_err(raw);
            assert_eq!(error.kind, kernel::ErrorKind::NotFound, "{raw:?}");
            assert_eq!(error.message, "Message not found.");
        }
        for raw in ["0", "msg_abc", "cmp_", "cmp_\u{e9}"] {
            assert!(kernel::parse_id::<CampaignRef>(raw, "Campaign").is_err(), "{raw:?}");
        }
        assert!(kernel::parse_id::<CampaignRef>(CampaignUid::generate().as_str(), "Campaign").is_ok());
        assert!(kernel::parse_id::<CallRef>("ccmp_abc", "Call").is_err());
        assert!(kernel::parse_id::<CallCampaignRef>("call_abc", "Call campaign").is_err());
        assert!(matches!(
            kernel::parse_id::<CallCampaignRef>("ccmp_abc", "Call campaign"),
            Ok(CallCampaignRef::Uid(_))
        ));
    }
}

//! How a person is recognised: a phone in any common form (`kernel::phone::normalize`, with the
//! workspace's calling code), an email in any case.

pub use kernel::email::normalize as normalize_email;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_match_in_any_case() {
        assert_eq!(normalize_email(" Amina@Duka.CO.TZ ").as_deref(), Some("amina@duka.co.tz"));
        for raw in ["amina", "amina@", "@duka.co.tz", "amina@duka", "a b@duka.co.tz"] {
            assert_eq!(normalize_email(raw), None, "{raw}");
        }
    }
}

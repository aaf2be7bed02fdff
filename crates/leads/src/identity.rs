//! How a person is recognised: a phone in any common form, an email in any case.

use kernel::phone::digits;

/// E.164 (`+255712345678`) of a phone written any common way — `+255 712 345 678`,
/// `0712345678`, `255712345678`, `712345678`, `00255712345678` — with the workspace's calling
/// code for national forms. `None` when no numbering plan accepts it.
pub fn normalize_phone(raw: &str, default_code: &str) -> Option<String> {
    let raw = raw.trim();
    let all = digits(raw);
    let code = digits(default_code);
    let full = if raw.starts_with('+') {
        all
    } else if let Some(international) = all.strip_prefix("00") {
        international.to_owned()
    } else if let Some(national) = all.strip_prefix('0') {
        format!("{code}{national}")
    } else if all.starts_with(&code) && valid(&all) {
        all
    } else {
        format!("{code}{all}")
    };
    valid(&full).then(|| format!("+{full}"))
}

fn valid(full: &str) -> bool {
    (8..=15).contains(&full.len())
        && phonenumber::parse(None, format!("+{full}")).is_ok_and(|number| phonenumber::is_valid(&number))
}

pub use kernel::email::normalize as normalize_email;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_common_form_of_a_number_is_one_person() {
        for raw in ["+255 712 345 678", "0712345678", "255712345678", "712345678", "00255712345678", "+255-712-345-678"]
        {
            assert_eq!(normalize_phone(raw, "255").as_deref(), Some("+255712345678"), "{raw}");
        }
        // another country's number keeps its own code
        assert_eq!(normalize_phone("+254 712 345 678", "255").as_deref(), Some("+254712345678"));
        for raw in ["", "12", "abc", "+255 1", "0000000000"] {
            assert_eq!(normalize_phone(raw, "255"), None, "{raw}");
        }
    }

    #[test]
    fn emails_match_in_any_case() {
        assert_eq!(normalize_email(" Amina@Duka.CO.TZ ").as_deref(), Some("amina@duka.co.tz"));
        for raw in ["amina", "amina@", "@duka.co.tz", "amina@duka", "a b@duka.co.tz"] {
            assert_eq!(normalize_email(raw), None, "{raw}");
        }
    }
}

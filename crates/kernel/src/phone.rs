//! Phone numbers. Contacts keep the contract's explicit shape: a national number and a
//! country calling code, never inferring the code from a `+` (contract: Contact body).

/// The digits of `raw`, everything else dropped (`+255 (712) 345-678` -> `255712345678`).
pub fn digits(raw: &str) -> String {
    raw.chars().filter(char::is_ascii_digit).collect()
}

/// E.164 (`+255712345678`) of a phone written any common way — `+255 712 345 678`,
/// `0712345678`, `255712345678`, `712345678`, `00255712345678` — with the account's calling
/// code (`255`) for national forms. Every number the service reads from a person goes through
/// it: send recipients, the blacklist, leads, inbound senders. `None` when no numbering plan accepts it.
pub fn normalize(raw: &str, calling_code: &str) -> Option<String> {
    let raw = raw.trim();
    let all = digits(raw);
    let code = digits(calling_code);
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

/// E.164 with a leading '+' (`+255712345678`), or `None` when not a valid number. Without a
/// '+' the number is read in `region` (ISO 3166 alpha-2, e.g. `TZ`); spaces, dashes, dots and
/// parentheses are tolerated. Data-table `phone` columns with a `region` use it.
pub fn e164(input: &str, region: &str) -> Option<String> {
    let region = region.parse::<phonenumber::country::Id>().ok();
    let number = phonenumber::parse(region, input.trim()).ok()?;
    phonenumber::is_valid(&number).then(|| number.format().mode(phonenumber::Mode::E164).to_string())
}

/// The region (ISO 3166 alpha-2) a calling code mainly stands for: `255` is `TZ`, `1` is `US`;
/// `None` for a code of no country.
pub fn region_of(calling_code: &str) -> Option<String> {
    let code: u16 = digits(calling_code).parse().ok()?;
    let regions = phonenumber::metadata::DATABASE.by_code(&code)?;
    let main = regions.iter().find(|m| m.is_main_country_for_code()).or(regions.first())?;
    Some(main.id().to_owned()).filter(|id| is_region(id))
}

/// Whether `code` is a region `e164` knows (ISO 3166 alpha-2, upper case: `TZ`).
pub fn is_region(code: &str) -> bool {
    code.len() == 2 && code.parse::<phonenumber::country::Id>().is_ok()
}

/// A contact's number as the contract's Contact fields show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContactPhone {
    /// Digits only, without the country code; a leading trunk `0` dropped.
    pub national: String,
    /// Digits only.
    pub country_code: String,
}

impl ContactPhone {
    /// Normalizes and checks a contact number. `country_code` falls back to the account's
    /// default calling code; the full number must be one a maintained numbering plan accepts.
    pub fn parse(phone: &str, country_code: Option<&str>, default_country_code: &str) -> Result<Self, PhoneError> {
        let country_code = match country_code.map(digits) {
            Some(code) if !code.is_empty() => code,
            Some(_) => return Err(PhoneError::CountryCode),
            None => digits(default_country_code),
        };
        let all = digits(phone);
        let national = all.strip_prefix('0').unwrap_or(&all).to_owned();
        if national.is_empty() {
            return Err(PhoneError::Empty);
        }
        let code: u16 = country_code.parse().map_err(|_| PhoneError::CountryCode)?;
        let number = phonenumber::parse(None, format!("+{country_code}{national}")).map_err(|_| PhoneError::Invalid)?;
        if number.code().value() != code || !phonenumber::is_valid(&number) {
            return Err(PhoneError::Invalid);
        }
        Ok(Self { national, country_code })
    }

    /// Country code plus national number, digits only.
    pub fn full(&self) -> String {
        format!("{}{}", self.country_code, self.national)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PhoneError {
    #[error("The phone number is required.")]
    Empty,
    #[error("The country code must be digits, like 255.")]
    CountryCode,
    #[error("The phone number is not a valid number for its country code.")]
    Invalid,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_common_form_of_a_number_is_one_e164_number() {
        for raw in ["+255 712 345 678", "0712345678", "255712345678", "712345678", "00255712345678", "+255-712-345-678"]
        {
            assert_eq!(normalize(raw, "255").as_deref(), Some("+255712345678"), "{raw}");
        }
        // another country's number keeps its own code
        assert_eq!(normalize("+254 712 345 678", "255").as_deref(), Some("+254712345678"));
        for raw in ["", "12", "abc", "+255 1", "0000000000"] {
            assert_eq!(normalize(raw, "255"), None, "{raw}");
        }
    }

    #[test]
    fn a_calling_code_names_its_main_region() {
        assert_eq!(region_of("255").as_deref(), Some("TZ"));
        assert_eq!(region_of("+254").as_deref(), Some("KE"));
        assert_eq!(region_of("1").as_deref(), Some("US"));
        assert_eq!(region_of("44").as_deref(), Some("GB"));
        assert_eq!(region_of("999"), None);
        assert_eq!(region_of(""), None);
    }

    #[test]
    fn national_forms_take_the_account_s_calling_code() {
        assert_eq!(normalize("0712 345 678", "254").as_deref(), Some("+254712345678"));
        assert_eq!(normalize("0712 345 678", "+255").as_deref(), Some("+255712345678"));
        assert_eq!(normalize("+255712345678", "254").as_deref(), Some("+255712345678"), "a '+' wins");
    }

    #[test]
    fn national_numbers_drop_punctuation_and_the_trunk_zero() {
        let p = ContactPhone::parse("0712 345-678", None, "255").expect("valid");
        assert_eq!((p.national.as_str(), p.country_code.as_str()), ("712345678", "255"));
        assert_eq!(p.full(), "255712345678");
        let p = ContactPhone::parse("712345678", Some("+255"), "1").expect("valid");
        assert_eq!(p.full(), "255712345678");
    }

    #[test]
    fn a_plus_is_not_read_as_a_country_code() {
        assert_eq!(ContactPhone::parse("+255712345678", None, "255"), Err(PhoneError::Invalid));
        assert_eq!(ContactPhone::parse("12", None, "255"), Err(PhoneError::Invalid));
        assert_eq!(ContactPhone::parse("--", None, "255"), Err(PhoneError::Empty));
        assert_eq!(ContactPhone::parse("712345678", Some("x"), "255"), Err(PhoneError::CountryCode));
    }

    proptest::proptest! {
        #[test]
        fn digits_keeps_only_digits(s in ".*") {
            let d = digits(&s);
            proptest::prop_assert!(d.chars().all(|c| c.is_ascii_digit()));
        }
    }
}

//! Recipient splitting and normalization (contract: SMS send body — "separators comma,
//! semicolon, whitespace"; "Recipient and recipients are merged and exact duplicates removed").

use std::collections::HashSet;

fn is_separator(c: char) -> bool {
    c == ',' || c == ';' || c.is_whitespace()
}

/// Tokens of `recipient` and every `recipients` entry, split on commas, semicolons and
/// whitespace, empty tokens dropped, exact duplicates removed, first-seen order kept.
pub fn split(recipient: Option<&str>, recipients: &[String]) -> Vec<String> {
    let mut seen = HashSet::new();
    recipient
        .into_iter()
        .chain(recipients.iter().map(String::as_str))
        .flat_map(|s| s.split(is_separator))
        .filter(|t| !t.is_empty() && seen.insert(*t))
        .map(str::to_owned)
        .collect()
}

/// E.164 with a leading '+' (e.g. "+255712345678"), or `None` when not a valid number.
/// Without a '+' the number is read under the account's calling code (`kernel::phone::normalize`);
/// punctuation such as spaces, dashes, dots and parentheses is tolerated.
pub fn normalize(input: &str, calling_code: &str) -> Option<String> {
    kernel::phone::normalize(input, calling_code)
}

/// One recipient of a send, as typed and as normalized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recipient {
    pub input: String,
    /// E.164; `None` when the input is not a valid number.
    pub number: Option<String>,
}

/// [`split`] then [`normalize`]; tokens normalizing to one number make one entry (the first
/// input kept). Invalid tokens stay (number `None`) so the send can report them as failed
/// records naming the input.
pub fn plan(recipient: Option<&str>, recipients: &[String], calling_code: &str) -> Vec<Recipient> {
    let mut seen = HashSet::new();
    split(recipient, recipients)
        .into_iter()
        .map(|input| Recipient { number: normalize(&input, calling_code), input })
        .filter(|r| r.number.as_ref().is_none_or(|n| seen.insert(n.clone())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn tanzanian_forms_normalize_to_e164() {
        for input in [
            "0712345678",
            "712345678",
            "+255712345678",
            "255712345678",
            "+255 712-345.678",
            "(0712) 345 678",
            "255 712 345 678",
        ] {
            assert_eq!(normalize(input, "255").as_deref(), Some("+255712345678"), "{input}");
        }
    }

    #[test]
    fn a_plus_keeps_the_foreign_country() {
        assert_eq!(normalize("+254712345678", "255").as_deref(), Some("+254712345678"));
    }

    #[test]
    fn invalid_inputs_are_none() {
        for input in ["12", "abc", "", "+", "2551", "+255 12"] {
            assert_eq!(normalize(input, "255"), None, "{input:?}");
        }
    }

    #[test]
    fn split_accepts_mixed_and_repeated_separators() {
        let got = split(Some("a, b;c\td\ne ,; \t\n f"), &strings(&[";;g,,", "  h  i "]));
        assert_eq!(got, strings(&["a", "b", "c", "d", "e", "f", "g", "h", "i"]));
    }

    #[test]
    fn split_removes_exact_duplicates_keeping_first_seen_order() {
        let got = split(Some("b,a,b"), &strings(&["c a", "b"]));
        assert_eq!(got, strings(&["b", "a", "c"]));
        assert!(split(None, &[]).is_empty());
        assert!(split(Some(" ,; "), &strings(&[""])).is_empty());
    }

    #[test]
    fn plan_merges_forms_of_one_number_and_keeps_invalid_inputs() {
        let got =
            plan(Some("0712345678, abc +254712345678"), &strings(&["+255712345678", "255712345678", "12"]), "255");
        let want = [
            ("0712345678", Some("+255712345678")),
            ("abc", None),
            ("+254712345678", Some("+254712345678")),
            ("12", None),
        ]
        .map(|(input, number)| Recipient { input: input.to_owned(), number: number.map(str::to_owned) });
        assert_eq!(got, want);
    }

    const SEPARATORS: &[char] = &[',', ';', ' ', '\t', '\n', '\r'];

    proptest! {
        #[test]
        fn split_tokens_are_nonempty_unique_and_complete(
            recipient in proptest::option::of("[a-c0-9 ,;\t\n+]{0,40}"),
            recipients in proptest::collection::vec("[a-c0-9 ,;\t\n+]{0,20}", 0..5),
        ) {
            let got = split(recipient.as_deref(), &recipients);
            prop_assert!(got.iter().all(|t| !t.is_empty() && !t.contains(is_separator)));
            prop_assert_eq!(got.iter().collect::<HashSet<_>>().len(), got.len());
            for input in recipient.iter().chain(&recipients) {
                for token in input.split(SEPARATORS).filter(|t| !t.is_empty()) {
                    prop_assert!(got.iter().any(|t| t == token), "{token:?} missing");
                }
            }
        }

        #[test]
        fn split_never_yields_separators(recipient in ".{0,60}") {
            prop_assert!(split(Some(&recipient), &[]).iter().all(|t| !t.is_empty() && !t.contains(is_separator)));
        }

        #[test]
        fn normalize_takes_any_input(input in "\\PC{0,40}") {
            // Recipients are caller text: phonenumber must refuse, never panic.
            let _ = normalize(&input, "255");
        }

        #[test]
        fn normalize_is_idempotent(input in "\\+?[0-9 ()-]{0,16}") {
            if let Some(n) = normalize(&input, "255") {
                prop_assert_eq!(normalize(&n, "255"), Some(n));
            }
        }

        #[test]
        fn normalize_is_idempotent_on_tanzanian_numbers(n in "(0|255|\\+255)?[67][0-9]{8}") {
            if let Some(e) = normalize(&n, "255") {
                prop_assert_eq!(normalize(&e, "255"), Some(e));
            }
        }
    }
}

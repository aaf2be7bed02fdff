//! SMS segment estimate (contract: Limits — "160 then 153 per part (basic), 70 then 67
//! (Unicode); actual counts depend on the provider").

/// How a message body would be encoded on the air.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    /// GSM 03.38 7-bit default alphabet with its extension table.
    Gsm7,
    /// Any character outside GSM-7 switches the whole message to UCS-2.
    Ucs2,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentEstimate {
    pub encoding: Encoding,
    /// Septets for GSM-7 (extension characters count 2), UTF-16 code units for UCS-2.
    pub units: usize,
    pub segments: u32,
}

const GSM7_SINGLE: usize = 160;
/// A multipart message loses 7 septets per part to the concatenation header.
const GSM7_PART: usize = 153;
const UCS2_SINGLE: usize = 70;
/// A multipart message loses 3 UTF-16 units per part to the concatenation header.
const UCS2_PART: usize = 67;

/// Septets `c` takes in GSM-7: 1 in the basic table, 2 in the extension table (escape + char),
/// `None` when GSM-7 cannot carry it.
fn gsm7_septets(c: char) -> Option<usize> {
    match c {
        'A'..='Z' | 'a'..='z' | '0'..='9' => Some(1),
        '@' | '£' | '$' | '¥' | 'è' | 'é' | 'ù' | 'ì' | 'ò' | 'Ç' | '\n' | 'Ø' | 'ø' | '\r' | 'Å' | 'å' => {
            Some(1)
        }
        'Δ' | '_' | 'Φ' | 'Γ' | 'Λ' | 'Ω' | 'Π' | 'Ψ' | 'Σ' | 'Θ' | 'Ξ' | 'Æ' | 'æ' | 'ß' | 'É' => {
            Some(1)
        }
        ' ' | '!' | '"' | '#' | '¤' | '%' | '&' | '\'' | '(' | ')' | '*' | '+' | ',' | '-' | '.' | '/' => Some(1),
        ':' | ';' | '<' | '=' | '>' | '?' | '¡' | 'Ä' | 'Ö' | 'Ñ' | 'Ü' | '§' | '¿' | 'ä' | 'ö' | 'ñ' | 'ü' | 'à' => {
            Some(1)
        }
        '^' | '{' | '}' | '\\' | '[' | '~' | ']' | '|' | '€' | '\u{0C}' => Some(2),
        _ => None,
    }
}

/// Encoding, length and segment count of `body`. An empty body is still one (empty) SMS.
pub fn estimate(body: &str) -> SegmentEstimate {
    let gsm7: Option<usize> = body.chars().map(gsm7_septets).sum();
    let (encoding, units, single, part) = match gsm7 {
        Some(units) => (Encoding::Gsm7, units, GSM7_SINGLE, GSM7_PART),
        None => (Encoding::Ucs2, body.encode_utf16().count(), UCS2_SINGLE, UCS2_PART),
    };
    let segments = if units <= single { 1 } else { units.div_ceil(part) };
    SegmentEstimate { encoding, units, segments: u32::try_from(segments).unwrap_or(u32::MAX) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// GSM 03.38 basic table in code order, escape (0x1B) left out: 127 characters.
    const BASIC: &str = "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?\
        ¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà";
    const EXTENSION: &str = "^{}\\[~]|€\u{0C}";

    fn est(s: &str) -> (Encoding, usize, u32) {
        let e = estimate(s);
        (e.encoding, e.units, e.segments)
    }

    #[test]
    fn the_tables_are_exactly_gsm_03_38() {
        assert_eq!(BASIC.chars().count(), 127);
        for c in (0..=u32::from(char::MAX)).filter_map(char::from_u32) {
            let expected = if BASIC.contains(c) {
                Some(1)
            } else if EXTENSION.contains(c) {
                Some(2)
            } else {
                None
            };
            assert_eq!(gsm7_septets(c), expected, "{c:?}");
        }
    }

    #[test]
    fn empty_body_is_one_segment_of_nothing() {
        assert_eq!(est(""), (Encoding::Gsm7, 0, 1));
    }

    #[test]
    fn gsm7_boundaries() {
        assert_eq!(est(&"a".repeat(160)), (Encoding::Gsm7, 160, 1));
        assert_eq!(est(&"a".repeat(161)), (Encoding::Gsm7, 161, 2));
        assert_eq!(est(&"a".repeat(306)), (Encoding::Gsm7, 306, 2));
        assert_eq!(est(&"a".repeat(307)), (Encoding::Gsm7, 307, 3));
    }

    #[test]
    fn an_extension_character_counts_two_septets() {
        let s = format!("{}€", "a".repeat(158));
        assert_eq!(est(&"a".repeat(159)), (Encoding::Gsm7, 159, 1));
        assert_eq!(est(&s), (Encoding::Gsm7, 160, 1));
        assert_eq!(est(&format!("{}{{", "a".repeat(159))), (Encoding::Gsm7, 161, 2));
    }

    #[test]
    fn ucs2_boundaries() {
        assert_eq!(est(&"ж".repeat(70)), (Encoding::Ucs2, 70, 1));
        assert_eq!(est(&"ж".repeat(71)), (Encoding::Ucs2, 71, 2));
        assert_eq!(est(&"ж".repeat(134)), (Encoding::Ucs2, 134, 2));
        assert_eq!(est(&"ж".repeat(135)), (Encoding::Ucs2, 135, 3));
    }

    #[test]
    fn one_emoji_makes_the_message_ucs2_and_counts_two_units() {
        assert_eq!(est(&"a".repeat(100)), (Encoding::Gsm7, 100, 1));
        assert_eq!(est(&format!("{}😀", "a".repeat(100))), (Encoding::Ucs2, 102, 2));
        assert_eq!(est("😀"), (Encoding::Ucs2, 2, 1));
        // Extension characters are one UTF-16 unit once the message is UCS-2.
        assert_eq!(est("€ç"), (Encoding::Ucs2, 2, 1));
    }

    fn gsm_char() -> impl Strategy<Value = char> {
        proptest::sample::select(BASIC.chars().chain(EXTENSION.chars()).collect::<Vec<_>>())
    }

    fn basic_char() -> impl Strategy<Value = char> {
        proptest::sample::select(BASIC.chars().collect::<Vec<_>>())
    }

    fn non_gsm_char() -> impl Strategy<Value = char> {
        any::<char>().prop_filter("outside GSM-7", |c| gsm7_septets(*c).is_none())
    }

    fn limit(e: &SegmentEstimate) -> usize {
        match (e.encoding, e.segments) {
            (Encoding::Gsm7, 1) => GSM7_SINGLE,
            (Encoding::Gsm7, _) => GSM7_PART,
            (Encoding::Ucs2, 1) => UCS2_SINGLE,
            (Encoding::Ucs2, _) => UCS2_PART,
        }
    }

    proptest! {
        #[test]
        fn appending_a_gsm_char_never_lowers_segments(s in proptest::collection::vec(gsm_char(), 0..400), c in gsm_char()) {
            let s: String = s.into_iter().collect();
            let before = estimate(&s);
            let after = estimate(&format!("{s}{c}"));
            prop_assert_eq!(after.encoding, Encoding::Gsm7);
            prop_assert!(after.segments >= before.segments);
        }

        #[test]
        fn appending_to_a_ucs2_message_never_lowers_segments(s in ".{0,200}", n in non_gsm_char(), c in any::<char>()) {
            let s = format!("{s}{n}");
            let before = estimate(&s);
            let after = estimate(&format!("{s}{c}"));
            prop_assert_eq!((before.encoding, after.encoding), (Encoding::Ucs2, Encoding::Ucs2));
            prop_assert!(after.segments >= before.segments);
        }

        #[test]
        fn basic_gsm_strings_count_one_septet_per_char(s in proptest::collection::vec(basic_char(), 0..500)) {
            let s: String = s.into_iter().collect();
            let e = estimate(&s);
            prop_assert_eq!(e.encoding, Encoding::Gsm7);
            prop_assert_eq!(e.units, s.chars().count());
        }

        #[test]
        fn segments_hold_all_units(s in ".{0,400}") {
            let e = estimate(&s);
            prop_assert!(e.segments as usize * limit(&e) >= e.units);
        }

        #[test]
        fn a_non_gsm_char_anywhere_makes_ucs2(a in ".{0,100}", n in non_gsm_char(), b in ".{0,100}") {
            prop_assert_eq!(estimate(&format!("{a}{n}{b}")).encoding, Encoding::Ucs2);
        }
    }
}

//! Money is `i64` minor units; this shows it in major units for people.

/// Digits after the decimal point of an ISO 4217 currency.
pub fn exponent(currency: &str) -> u32 {
    match currency {
        "BIF" | "CLP" | "DJF" | "GNF" | "ISK" | "JPY" | "KMF" | "KRW" | "PYG" | "RWF" | "UGX" | "VND" | "VUV"
        | "XAF" | "XOF" | "XPF" => 0,
        "BHD" | "IQD" | "JOD" | "KWD" | "LYD" | "OMR" | "TND" => 3,
        _ => 2,
    }
}

/// `123456` TZS -> `"1234.56"`; negative amounts keep their sign.
pub fn format_minor(amount: i64, currency: &str) -> String {
    let exp = exponent(currency);
    if exp == 0 {
        return amount.to_string();
    }
    let scale = 10_i64.pow(exp);
    let sign = if amount < 0 { "-" } else { "" };
    let abs = amount.unsigned_abs();
    let scale = scale as u64;
    format!("{sign}{}.{:0width$}", abs / scale, abs % scale, width = exp as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_by_exponent() {
        assert_eq!(format_minor(123456, "TZS"), "1234.56");
        assert_eq!(format_minor(5, "USD"), "0.05");
        assert_eq!(format_minor(-250, "KES"), "-2.50");
        assert_eq!(format_minor(1500, "UGX"), "1500");
        assert_eq!(format_minor(1001, "KWD"), "1.001");
    }
}

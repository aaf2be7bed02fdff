//! Email addresses: one stored form, so they match and stay unique without case.

/// An email as it is stored and matched: trimmed, lower case; `None` unless it looks like one.
pub fn normalize(raw: &str) -> Option<String> {
    let email = raw.trim().to_lowercase();
    let (local, domain) = email.split_once('@')?;
    let plausible = !local.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && email.len() <= 254
        && !email.chars().any(char::is_whitespace);
    plausible.then_some(email)
}

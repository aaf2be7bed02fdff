//! The contacts the bench writes: contact `n` of a run has a unique Tanzanian mobile number
//! (0712000000 + n), a name, and on the raw-SQL side a uid shaped like the service's. The SMS
//! workloads send to numbers the sandbox provider delivers (see [`deliverable`]). The lead
//! upsert workload's people have numbers of their own (see [`lead_upsert`]). The commerce
//! workloads' products and orders are [`product`] and [`order_lines`].

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The tenant's default calling code: the service stores numbers under it.
pub const COUNTRY_CODE: &str = "255";
/// 712000000..799999999 are valid mobile numbers: room for 88 million contacts per group.
const FIRST_NATIONAL: u64 = 712_000_000;

/// Contacts in the group the search workload reads.
pub const LOADED_CONTACTS: u64 = 100_000;
/// Rows per batch request: the contract's maximum.
pub const BATCH_ROWS: usize = 500;
/// Every 50th contact is named with this word: 2,000 of 100,000 match it.
pub const SEARCH_TERM: &str = "Asha";
const SEARCH_EVERY: u64 = 50;
/// The page the search workload asks for.
pub const PAGE_SIZE: i64 = 100;

/// The SMS send workload's recipients start here: 0714...
const SMS_FIRST_NATIONAL: u64 = 714_000_000;
/// The campaign's contacts start here: 0713...
const CAMPAIGN_FIRST_NATIONAL: u64 = 713_000_000;
/// What one SMS segment costs the bench tenant (`gateway admin rate set`), in minor units.
pub const SMS_PRICE_MINOR: i64 = 1;
/// Credit for every message of a run, many times over.
pub const WALLET_CREDIT_MINOR: i64 = 100_000_000_000;
/// The bench tenant's sandbox SMS channel and its sender id.
pub const SMS_CHANNEL_CODE: &str = "bench";
pub const SMS_SENDER: &str = "BENCH";
/// Sends per second the channel allows: far above what two cores reach, so that throughput
/// accounting runs but never defers a message.
pub const SMS_THROUGHPUT: u32 = 100_000;
/// The campaign's text, before personalization.
pub const CAMPAIGN_TEMPLATE: &str = "Hello {{name}}";

/// The `n`th national number from `first` that the sandbox delivers: it refuses numbers ending
/// in 0001, never receipts those ending in 0002 and fails those ending in 0003, so every
/// ending below 1000 is skipped (9,000 numbers used per 10,000).
fn deliverable(first: u64, n: u64) -> u64 {
    first + n / 9_000 * 10_000 + 1_000 + n % 9_000
}

/// The recipient of the `n`th single send, as a caller writes it (E.164, as the service stores it).
pub fn sms_recipient(n: u64) -> String {
    format!("+{COUNTRY_CODE}{}", deliverable(SMS_FIRST_NATIONAL, n))
}

/// The text of the `n`th single send: one GSM-7 segment.
pub fn sms_body(n: u64) -> String {
    format!("Bench message {n}")
}

/// The national number of the campaign's contact `n`.
pub fn campaign_national(n: u64) -> String {
    deliverable(CAMPAIGN_FIRST_NATIONAL, n).to_string()
}

/// The number as a caller sends it: 0712000000 + n.
pub fn local(n: u64) -> String {
    format!("0{}", FIRST_NATIONAL + n)
}

/// The number as the service stores it in `phone_number`.
pub fn national(n: u64) -> String {
    (FIRST_NATIONAL + n).to_string()
}

/// The number as the service stores it in `full_phone_number`.
pub fn full_number(n: u64) -> String {
    format!("{COUNTRY_CODE}{}", FIRST_NATIONAL + n)
}

pub fn name(n: u64) -> String {
    if n.is_multiple_of(SEARCH_EVERY) { format!("{SEARCH_TERM} {n}") } else { format!("Customer {n}") }
}

/// The contact numbers of batch `batch`: 500 in a row.
pub fn batch_numbers(batch: u64) -> Range<u64> {
    let rows = BATCH_ROWS as u64;
    batch * rows..(batch + 1) * rows
}

/// Leads the upsert workload finds again, written by SQL before each side.
pub const PRELOADED_LEADS: u64 = 10_000;
/// Calling code and first two national digits of Tanzanian mobile ranges: lead `k` has
/// prefix `k % 6` and seven more digits, `k / 6` (room for 60 million people).
const LEAD_PREFIXES: [&str; 6] = ["25571", "25574", "25575", "25576", "25565", "25568"];

/// The phone of lead `k` as the service stores it in `lead_identities`: E.164 digits, no '+'.
pub fn lead_digits(k: u64) -> String {
    format!("{}{:07}", LEAD_PREFIXES[(k % 6) as usize], k / 6 % 10_000_000)
}

/// The name of lead `k`, preloaded or new; a matched upsert sends it unchanged.
pub fn lead_name(k: u64) -> String {
    format!("Lead {k}")
}

/// The company a preloaded lead starts with; every upsert sends another.
pub fn preloaded_company(k: u64) -> String {
    format!("Preloaded {k}")
}

/// What upsert `n` sends, on both sides.
pub struct LeadUpsert {
    /// Whether it names a preloaded lead (odd `n`) rather than a new person (even `n`).
    pub existing: bool,
    /// As the caller writes it: `+255...` for a new person, `0` and the national digits for
    /// a preloaded one (the service stored it as `+255...`).
    pub phone: String,
    /// As the service looks it up (the raw side's key).
    pub digits: String,
    pub name: String,
    pub company: String,
}

/// Upsert `n`: even ones create lead `PRELOADED_LEADS + n / 2`; odd ones find preloaded lead
/// `n / 2 % PRELOADED_LEADS` by another form of its number and change its company.
pub fn lead_upsert(n: u64) -> LeadUpsert {
    let existing = n % 2 == 1;
    let k = if existing { n / 2 % PRELOADED_LEADS } else { PRELOADED_LEADS + n / 2 };
    let digits = lead_digits(k);
    let phone = if existing { format!("0{}", &digits[COUNTRY_CODE.len()..]) } else { format!("+{digits}") };
    LeadUpsert { existing, phone, digits, name: lead_name(k), company: format!("Company {n}") }
}

/// Products in one batch of the product batch workload: the contract's maximum.
pub const BATCH_PRODUCTS: u64 = 5_000;
/// Every product is priced in this currency (a shop's `default_currency` too).
pub const SHOP_CURRENCY: &str = "TZS";
/// Distinct brands and categories the products name (their records are created on first use).
const BRANDS: u64 = 20;
const CATEGORIES: u64 = 12;

/// What a batch row sends for product `i`; `variant` changes the price only (0 or 1), so that
/// a later batch updates every product.
pub struct ProductRow {
    pub sku: String,
    pub name: String,
    /// Minor units of [`SHOP_CURRENCY`].
    pub price: i64,
    pub description: String,
    pub inventory: i32,
    pub brand: String,
    pub category: String,
}

/// The code of product `i`.
pub fn product_sku(i: u64) -> String {
    format!("BENCH-{i:05}")
}

pub fn product(i: u64, variant: u64, inventory: i32) -> ProductRow {
    ProductRow {
        sku: product_sku(i),
        name: format!("Bench product {i}"),
        price: 100_000 + (i % 97) as i64 * 500 + (variant % 2) as i64 * 250,
        description: format!("Product {i} of the bench shop: a description about as long as a real one."),
        inventory,
        brand: format!("Brand {}", i % BRANDS),
        category: format!("Category {}", i % CATEGORIES),
    }
}

/// The lines of order `n` in a shop of `products` products: 1 to 3 lines of distinct
/// products, 1 or 2 units each, spread evenly by a hash of `n` (the same on both sides).
pub fn order_lines(n: u64, products: u64) -> Vec<(u64, i32)> {
    let x = mix(n);
    let count = 1 + (x % 3) as usize;
    let mut lines: Vec<(u64, i32)> = Vec::with_capacity(count);
    let mut k = 0;
    while lines.len() < count.min(products as usize) {
        let h = mix(x.wrapping_add(k));
        k += 1;
        let product = h % products;
        if lines.iter().all(|(p, _)| *p != product) {
            lines.push((product, 1 + ((h >> 32) & 1) as i32));
        }
    }
    lines
}

/// Distinguishes the uids of one run from every other's.
pub fn new_salt() -> u64 {
    static RUNS: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    nanos.wrapping_add(RUNS.fetch_add(1, Ordering::Relaxed))
}

/// `ctc_` and 32 hex digits, like the service's uids, and as scattered as its random ones so
/// that the unique index does the same work; unique per (salt, n).
pub fn uid(salt: u64, n: u64) -> String {
    format!("ctc_{:016x}{:016x}", mix(salt), mix(n))
}

/// A message uid shaped like the service's (`msg_` and 32 hex digits); unique per (salt, n).
pub fn message_uid(salt: u64, n: u64) -> String {
    format!("msg_{:016x}{:016x}", mix(salt), mix(n))
}

/// SplitMix64's finalizer: a bijection on u64 that scatters neighbouring inputs.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_tanzanian_mobiles() {
        assert_eq!(local(0), "0712000000");
        assert_eq!(national(12_345), "712012345");
        assert_eq!(full_number(12_345), "255712012345");
    }

    #[test]
    fn one_in_fifty_is_named_with_the_search_term() {
        let matching = (0..LOADED_CONTACTS).filter(|n| name(*n).contains(SEARCH_TERM)).count();
        assert_eq!(matching, 2_000);
        assert_eq!(name(1), "Customer 1");
    }

    #[test]
    fn batches_do_not_overlap() {
        assert_eq!(batch_numbers(0), 0..500);
        assert_eq!(batch_numbers(3), 1500..2000);
    }

    #[test]
    fn sms_numbers_avoid_the_sandbox_magic_endings() {
        assert_eq!(sms_recipient(0), "+255714001000");
        assert_eq!(sms_recipient(8_999), "+255714009999");
        assert_eq!(sms_recipient(9_000), "+255714011000");
        assert_eq!(campaign_national(0), "713001000");
        let numbers: Vec<u64> = (0..200_000).map(|n| deliverable(CAMPAIGN_FIRST_NATIONAL, n)).collect();
        assert!(numbers.iter().all(|n| n % 10_000 >= 1_000));
        assert!(numbers.windows(2).all(|w| w[0] < w[1]), "distinct and increasing");
        assert!(deliverable(SMS_FIRST_NATIONAL, 70_000_000) <= 799_999_999, "still a valid mobile number");
    }

    #[test]
    fn lead_upserts_alternate_new_and_existing_people() {
        assert_eq!(lead_digits(0), "255710000000");
        assert_eq!(lead_digits(5), "255680000000");
        assert_eq!(lead_digits(6 * 1_234_567 + 2), "255751234567");
        let new = lead_upsert(0);
        assert!(!new.existing);
        assert_eq!(new.phone, format!("+{}", new.digits));
        assert_eq!(new.digits, lead_digits(PRELOADED_LEADS));
        let found = lead_upsert(7);
        assert!(found.existing);
        assert_eq!(found.digits, lead_digits(3));
        assert_eq!(found.phone, format!("0{}", &lead_digits(3)[3..]));
        assert_eq!((found.name.as_str(), found.company.as_str()), ("Lead 3", "Company 7"));
        assert_eq!(lead_upsert(2 * PRELOADED_LEADS + 1).digits, lead_digits(0), "wraps round the preloaded");
        let digits: std::collections::HashSet<String> = (0..100_000).map(lead_digits).collect();
        assert_eq!(digits.len(), 100_000, "distinct");
        assert!(digits.iter().all(|d| d.len() == 12));
    }

    #[test]
    fn products_change_price_by_variant_only() {
        let (a, b) = (product(42, 0, 50), product(42, 1, 50));
        assert_eq!(a.sku, "BENCH-00042");
        assert_eq!((a.name.as_str(), a.inventory, a.brand.as_str()), (b.name.as_str(), b.inventory, b.brand.as_str()));
        assert_ne!(a.price, b.price);
        assert_eq!(product(42, 2, 50).price, a.price);
    }

    #[test]
    fn orders_have_one_to_three_distinct_lines_of_one_or_two_units() {
        let mut units = 0;
        for n in 0..10_000 {
            let lines = order_lines(n, 200);
            assert!((1..=3).contains(&lines.len()));
            assert!(lines.iter().all(|(p, q)| *p < 200 && (1..=2).contains(q)));
            let mut products: Vec<u64> = lines.iter().map(|(p, _)| *p).collect();
            products.sort_unstable();
            products.dedup();
            assert_eq!(products.len(), lines.len(), "distinct");
            units += lines.iter().map(|(_, q)| *q as u64).sum::<u64>();
        }
        // about 2 lines of 1.5 units
        assert!((28_000..32_000).contains(&units), "{units}");
        assert_eq!(order_lines(7, 200), order_lines(7, 200));
        assert_eq!(order_lines(7, 1).len(), 1);
    }

    #[test]
    fn uids_differ_and_look_like_the_service_ones() {
        let a = uid(1, 1);
        assert_eq!(a.len(), 4 + 32);
        assert!(a.starts_with("ctc_"));
        assert_ne!(a, uid(1, 2));
        assert_ne!(a, uid(2, 1));
        let m = message_uid(1, 1);
        assert!(m.starts_with("msg_") && m.len() == 4 + 32);
    }
}

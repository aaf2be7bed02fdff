//! Standard page-number pagination (contract: Identifiers and list conventions).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::Error;

/// The largest page the contract allows.
pub const MAX_PER_PAGE: i64 = 100;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRequest {
    /// 1-based.
    pub page: i64,
    pub per_page: i64,
}

/// The raw query members, as sent.
#[derive(Debug, Clone, Default, Deserialize, ToSchema, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// 1-based page number.
    #[param(value_type = Option<i64>)]
    pub page: Option<String>,
    /// Rows per page (cap 100); wins over `per_page`.
    #[param(value_type = Option<i64>)]
    pub limit: Option<String>,
    /// Rows per page (cap 100).
    #[param(value_type = Option<i64>)]
    pub per_page: Option<String>,
}

impl PageRequest {
    /// `limit` wins over `per_page`; a non-positive size means the default; sizes above 100
    /// are clamped to 100; a page below 1 is page 1. A value that is not an integer (an empty
    /// one included) is a 422, even beside a `limit` that wins.
    pub fn parse(query: &PageQuery, default_per_page: i64) -> Result<Self, Error> {
        let int = |field: &str, value: &Option<String>| -> Result<Option<i64>, Error> {
            value
                .as_deref()
                .map(|raw| {
                    raw.trim()
                        .parse::<i64>()
                        .map_err(|_| Error::field(field, format!("The {field} must be an integer.")))
                })
                .transpose()
        };
        let page = int("page", &query.page)?.filter(|p| *p >= 1).unwrap_or(1);
        let (limit, per_page) = (int("limit", &query.limit)?, int("per_page", &query.per_page)?);
        let per_page = match limit.or(per_page) {
            Some(n) if n > 0 => n.min(MAX_PER_PAGE),
            _ => default_per_page,
        };
        Ok(Self { page, per_page })
    }

    pub fn new(page: i64, per_page: i64) -> Self {
        Self { page: page.max(1), per_page: per_page.clamp(1, MAX_PER_PAGE) }
    }

    pub fn offset(&self) -> i64 {
        (self.page - 1).saturating_mul(self.per_page)
    }
}

/// The query of a newest-first timeline (lead activities, record history): `before` takes the
/// `next_before` of the previous page; `limit`/`per_page` as on every list.
#[derive(Debug, Clone, Default, Deserialize, ToSchema, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TimelineQuery {
    /// The `next_before` of the previous page.
    #[param(value_type = Option<i64>)]
    pub before: Option<String>,
    /// Entries per page (default 50, cap 100); wins over `per_page`.
    #[param(value_type = Option<i64>)]
    pub limit: Option<String>,
    /// Entries per page (default 50, cap 100).
    #[param(value_type = Option<i64>)]
    pub per_page: Option<String>,
}

/// One page of a timeline: entries with ids below `before`, at most `limit` of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeline {
    pub before: i64,
    pub limit: i64,
}

impl Timeline {
    /// The timelines' default page.
    pub const DEFAULT_LIMIT: i64 = 50;

    /// Sizes as [`PageRequest::parse`]; a `before` that is not an integer (or is empty) is a 422.
    pub fn parse(query: &TimelineQuery) -> Result<Self, Error> {
        let sizes = PageQuery { page: None, limit: query.limit.clone(), per_page: query.per_page.clone() };
        let limit = PageRequest::parse(&sizes, Self::DEFAULT_LIMIT)?.per_page;
        let before = match query.before.as_deref().map(str::trim) {
            None => i64::MAX,
            Some(raw) => raw.parse().map_err(|_| {
                Error::field("before", "The before must be a next_before value.").with_reason("invalid")
            })?,
        };
        Ok(Self { before, limit })
    }

    /// Cuts the `limit + 1` rows read to the page, and names the `next_before` when older
    /// rows remain.
    pub fn cut<T>(&self, rows: &mut Vec<T>, id: impl Fn(&T) -> i64) -> Option<i64> {
        let more = rows.len() as i64 > self.limit;
        rows.truncate(self.limit as usize);
        if more { rows.last().map(id) } else { None }
    }
}

#[derive(Debug, Clone, Serialize, ToSchema, PartialEq, Eq)]
pub struct Pagination {
    pub current_page: i64,
    pub per_page: i64,
    pub last_page: i64,
    pub total: i64,
    pub has_more_pages: bool,
    /// Present (true) when `total` is the database's estimate: a search with more matches
    /// than are counted exactly (docs/api.md, "Search totals").
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub total_is_estimate: bool,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub pagination: Pagination,
}

impl<T> Page<T> {
    pub fn new(items: Vec<T>, request: PageRequest, total: i64) -> Self {
        let last_page = ((total + request.per_page - 1) / request.per_page).max(1);
        Self {
            items,
            pagination: Pagination {
                current_page: request.page,
                per_page: request.per_page,
                last_page,
                total,
                has_more_pages: request.page < last_page,
                total_is_estimate: false,
            },
        }
    }

    /// The same page, its total an estimate.
    pub fn estimated(mut self, estimate: bool) -> Self {
        self.pagination.total_is_estimate = estimate;
        self
    }

    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Page<U> {
        Page { items: self.items.into_iter().map(f).collect(), pagination: self.pagination }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(page: Option<&str>, limit: Option<&str>, per_page: Option<&str>) -> PageQuery {
        PageQuery { page: page.map(Into::into), limit: limit.map(Into::into), per_page: per_page.map(Into::into) }
    }

    #[test]
    fn limit_wins_and_sizes_are_bounded() {
        let r = |query| PageRequest::parse(&query, 20).expect("valid");
        assert_eq!(r(q(None, Some("5"), Some("7"))).per_page, 5);
        assert_eq!(r(q(None, None, Some("7"))).per_page, 7);
        assert_eq!(r(q(None, Some("500"), None)).per_page, 100);
        assert_eq!(r(q(None, Some("0"), Some("7"))).per_page, 20);
        assert_eq!(r(q(None, Some("-3"), None)).per_page, 20);
        assert_eq!(r(q(Some("0"), None, None)).page, 1);
        assert_eq!(r(q(Some("3"), Some("10"), None)).offset(), 20);
        assert!(PageRequest::parse(&q(Some("x"), None, None), 20).is_err());
    }

    #[test]
    fn every_member_sent_must_be_an_integer() {
        let refused =
            |query| PageRequest::parse(&query, 20).expect_err("refused").errors.keys().cloned().collect::<Vec<_>>();
        assert_eq!(refused(q(None, Some("5"), Some("false"))), ["per_page"], "a bad per_page beside a limit that wins");
        assert_eq!(refused(q(Some(""), None, None)), ["page"], "an empty value is no integer");
        assert_eq!(refused(q(None, Some("99999999999999999999"), None)), ["limit"], "beyond 64 bits");
        let timeline = |before: &str| TimelineQuery { before: Some(before.into()), limit: None, per_page: None };
        assert!(Timeline::parse(&timeline("")).is_err());
        assert_eq!(Timeline::parse(&timeline("42")).map(|t| t.before).ok(), Some(42));
    }

    #[test]
    fn pagination_counts_pages() {
        let p = Page::new(vec![1, 2], PageRequest::new(1, 2), 5).pagination;
        assert_eq!((p.last_page, p.has_more_pages), (3, true));
        let p = Page::<i32>::new(vec![], PageRequest::new(1, 20), 0).pagination;
        assert_eq!((p.last_page, p.has_more_pages), (1, false));
        let p = Page::new(vec![5], PageRequest::new(3, 2), 5).pagination;
        assert!(!p.has_more_pages);
    }
}

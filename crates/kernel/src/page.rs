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
    pub page: Option<String>,
    /// Rows per page (cap 100); wins over `per_page`.
    pub limit: Option<String>,
    /// Rows per page (cap 100).
    pub per_page: Option<String>,
}

impl PageRequest {
    /// `limit` wins over `per_page`; a non-positive size means the default; sizes above 100
    /// are clamped to 100; a page below 1 is page 1. A value that is not an integer is a 422.
    pub fn parse(query: &PageQuery, default_per_page: i64) -> Result<Self, Error> {
        let int = |field: &str, value: &Option<String>| -> Result<Option<i64>, Error> {
            match value.as_deref().map(str::trim) {
                None | Some("") => Ok(None),
                Some(raw) => raw
                    .parse::<i64>()
                    .map(Some)
                    .map_err(|_| Error::field(field, format!("The {field} must be an integer."))),
            }
        };
        let page = int("page", &query.page)?.filter(|p| *p >= 1).unwrap_or(1);
        let size = match int("limit", &query.limit)? {
            Some(limit) => Some(limit),
            None => int("per_page", &query.per_page)?,
        };
        let per_page = match size {
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

#[derive(Debug, Clone, Serialize, ToSchema, PartialEq, Eq)]
pub struct Pagination {
    pub current_page: i64,
    pub per_page: i64,
    pub last_page: i64,
    pub total: i64,
    pub has_more_pages: bool,
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
            },
        }
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
    fn pagination_counts_pages() {
        let p = Page::new(vec![1, 2], PageRequest::new(1, 2), 5).pagination;
        assert_eq!((p.last_page, p.has_more_pages), (3, true));
        let p = Page::<i32>::new(vec![], PageRequest::new(1, 20), 0).pagination;
        assert_eq!((p.last_page, p.has_more_pages), (1, false));
        let p = Page::new(vec![5], PageRequest::new(3, 2), 5).pagination;
        assert!(!p.has_more_pages);
    }
}

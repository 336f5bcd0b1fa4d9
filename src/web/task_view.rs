//! A view of the task list as a query string gives it — filters, search, sort, page — checked value by
//! value, shared by the queue page and `GET /api/v1/tasks`. Every part of a view is in its query string,
//! so a link to it can be shared, and the queue's forms carry it back (`VIEW_PARAMS`).

use chrono::{DateTime, Utc};
use serde::Deserialize;

use crate::domain::QueueStatus;
use crate::store::{TaskFilter, TaskSort, age_cutoff};

/// The query string's names of a view, in the order its links write them. A form on the queue carries
/// each back, so that the user returns to the same view.
pub const VIEW_PARAMS: [&str; 11] = [
    "status",
    "source",
    "repo",
    "prio_min",
    "prio_max",
    "added_within",
    "older_than",
    "q",
    "sort",
    "dir",
    "page",
];

/// The query string of a view of tasks, as it came (every value text, checked by [`ViewQuery::view`]).
#[derive(Debug, Default, Clone, Deserialize)]
pub struct ViewQuery {
    pub status: Option<String>,
    pub source: Option<String>,
    pub repo: Option<String>,
    pub prio_min: Option<String>,
    pub prio_max: Option<String>,
    /// Added within this long: `1d`, `7d`, `12h`, `2w`.
    pub added_within: Option<String>,
    /// Added longer ago than this.
    pub older_than: Option<String>,
    pub q: Option<String>,
    pub sort: Option<String>,
    /// `asc` (the default) or `desc`.
    pub dir: Option<String>,
    /// From 1; the API pages by `limit` and `offset` instead.
    pub page: Option<String>,
}

/// A value of the query string that cannot be used, naming its parameter and how to write it.
#[derive(Debug, thiserror::Error)]
#[error("{param}: {why}")]
pub struct BadParam {
    pub param: &'static str,
    pub why: String,
}

fn bad(param: &'static str, why: String) -> BadParam {
    BadParam { param, why }
}

/// A checked view: the filter (without a page's limit and offset), the page, and the values given, to
/// write the view's links and forms with.
#[derive(Debug, Clone)]
pub struct View {
    pub filter: TaskFilter,
    pub page: i64,
    /// `(name, value)` for each parameter given, in [`VIEW_PARAMS`] order, `page` excluded.
    pub given: Vec<(&'static str, String)>,
}

/// The value trimmed, or None when it is absent or blank (a form's empty field narrows nothing).
fn given(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

fn whole(param: &'static str, raw: Option<&str>) -> Result<Option<i64>, BadParam> {
    raw.map(|r| {
        r.parse::<i64>().ok().filter(|n| i32::try_from(*n).is_ok()).ok_or_else(|| {
            bad(param, format!("{r:?} is not a priority: give a whole number such as 1 (the most urgent)"))
        })
    })
    .transpose()
}

/// `raw` (`7d`, `12h`, `2w`, `1day`) as a time that long before `now`.
fn age(
    param: &'static str,
    raw: Option<&str>,
    now: DateTime<Utc>,
) -> Result<Option<DateTime<Utc>>, BadParam> {
    raw.map(|raw| age_cutoff(raw, now).map_err(|why| bad(param, why))).transpose()
}

impl ViewQuery {
    /// The view these values ask for, or the first value that cannot be used. `now` dates the ages.
    pub fn view(&self, now: DateTime<Utc>) -> Result<View, BadParam> {
        let status = given(&self.status)
            .map(|s| s.parse::<QueueStatus>().map_err(|e| bad("status", e.to_string())))
            .transpose()?;
        let priority_min = whole("prio_min", given(&self.prio_min))?;
        let priority_max = whole("prio_max", given(&self.prio_max))?;
        if let (Some(min), Some(max)) = (priority_min, priority_max)
            && min > max
        {
            return Err(bad("prio_min", format!("{min} is above prio_max {max}: nothing could match")));
        }
        let sort = given(&self.sort).map(TaskSort::parse).transpose().map_err(|why| bad("sort", why))?;
        let descending = match given(&self.dir) {
            None | Some("asc") => false,
            Some("desc") => true,
            Some(other) => return Err(bad("dir", format!("{other:?} is not a direction: give asc or desc"))),
        };
        let page = match given(&self.page) {
            None => 1,
            Some(p) => p
                .parse::<i64>()
                .ok()
                .filter(|p| *p >= 1 && *p <= i64::MAX / 1000)
                .ok_or_else(|| bad("page", format!("{p:?} is not a page number: pages count from 1")))?,
        };
        let filter = TaskFilter {
            status,
            source: given(&self.source).map(str::to_string),
            repo: given(&self.repo).map(str::to_string),
            priority_min,
            priority_max,
            added_since: age("added_within", given(&self.added_within), now)?,
            added_before: age("older_than", given(&self.older_than), now)?,
            text: given(&self.q).map(str::to_string),
            sort: sort.unwrap_or_default(),
            descending,
            limit: None,
            offset: None,
        };
        let values = [
            &self.status,
            &self.source,
            &self.repo,
            &self.prio_min,
            &self.prio_max,
            &self.added_within,
            &self.older_than,
            &self.q,
            &self.sort,
            &self.dir,
        ];
        let given = VIEW_PARAMS
            .into_iter()
            .zip(values)
            .filter_map(|(name, v)| given(v).map(|v| (name, v.to_string())))
            .collect();
        Ok(View { filter, page, given })
    }
}

impl View {
    /// The value given for `name`, if any.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.given.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str())
    }

    /// `path` with this view's query string, `changed` replacing (or adding) values and `None` values
    /// removing them; every value percent-encoded.
    pub fn link(&self, path: &str, changed: &[(&'static str, Option<String>)]) -> String {
        let mut pairs: Vec<(&str, String)> = self.given.clone();
        for (name, value) in changed {
            pairs.retain(|(n, _)| n != name);
            if let Some(v) = value {
                pairs.push((name, v.clone()));
            }
        }
        pairs.sort_by_key(|(n, _)| VIEW_PARAMS.iter().position(|p| p == n));
        let query: Vec<String> = pairs.iter().map(|(n, v)| format!("{n}={}", encode(v))).collect();
        if query.is_empty() { path.to_string() } else { format!("{path}?{}", query.join("&")) }
    }
}

/// Characters a query value keeps as they are: letters, digits and `-._~` (RFC 3986 unreserved).
const QUERY_VALUE: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// `s` percent-encoded for a query string value.
pub fn encode(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, QUERY_VALUE).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(pairs: &[(&str, &str)]) -> ViewQuery {
        let s: Vec<String> = pairs.iter().map(|(n, v)| format!("{n}={}", encode(v))).collect();
        serde_urlencoded_like(&s.join("&"))
    }

    /// The query string read as axum's `Query` reads it.
    fn serde_urlencoded_like(s: &str) -> ViewQuery {
        let uri: axum::http::Uri = format!("/queue?{s}").parse().unwrap();
        axum::extract::Query::<ViewQuery>::try_from_uri(&uri).unwrap().0
    }

    #[test]
    fn every_bad_value_names_its_parameter() {
        let now = Utc::now();
        for (name, value) in [
            ("status", "nope"),
            ("prio_min", "x"),
            ("prio_max", "99999999999"),
            ("added_within", "soon"),
            ("older_than", "99999d"),
            ("sort", "title"),
            ("dir", "up"),
            ("page", "0"),
        ] {
            let err = query(&[(name, value)]).view(now).unwrap_err();
            assert_eq!(err.param, name, "{err}");
        }
        let err = query(&[("prio_min", "3"), ("prio_max", "1")]).view(now).unwrap_err();
        assert!(err.to_string().contains("above prio_max"), "{err}");
    }

    #[test]
    fn a_view_reads_its_values_and_writes_its_links() {
        let now = Utc::now();
        let v =
            query(&[("q", "a&b"), ("sort", "added"), ("dir", "desc"), ("added_within", "7d"), ("page", "3")])
                .view(now)
                .unwrap();
        assert_eq!((v.filter.sort, v.filter.descending, v.page), (TaskSort::Added, true, 3));
        assert_eq!(v.filter.added_since, Some(now - chrono::Duration::days(7)));
        assert_eq!(v.link("/queue", &[]), "/queue?added_within=7d&q=a%26b&sort=added&dir=desc");
        assert_eq!(
            v.link("/queue", &[("sort", Some("gid".into())), ("dir", None), ("page", Some("2".into()))]),
            "/queue?added_within=7d&q=a%26b&sort=gid&page=2"
        );
        assert_eq!(query(&[("status", " ")]).view(now).unwrap().link("/queue", &[]), "/queue");
    }
}

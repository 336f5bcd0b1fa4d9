//! Reading columns the same way from SQLite and PostgreSQL rows.

use chrono::{DateTime, Utc};
use sqlx::Row;
use sqlx::postgres::PgRow;
use sqlx::sqlite::SqliteRow;

use super::{Result, StoreError};

pub(crate) trait Cols {
    fn text(&self, col: &str) -> Result<Option<String>>;
    fn int(&self, col: &str) -> Result<Option<i64>>;
    fn real(&self, col: &str) -> Result<Option<f64>>;
    fn time(&self, col: &str) -> Result<Option<DateTime<Utc>>>;

    fn req_text(&self, col: &str) -> Result<String> {
        self.text(col)?.ok_or_else(|| missing(col))
    }
    fn req_int(&self, col: &str) -> Result<i64> {
        self.int(col)?.ok_or_else(|| missing(col))
    }
    fn req_time(&self, col: &str) -> Result<DateTime<Utc>> {
        self.time(col)?.ok_or_else(|| missing(col))
    }
    /// Parses a text column into a domain value (a state name, a gid), naming the column on failure.
    fn parsed<T>(&self, col: &str) -> Result<T>
    where
        T: std::str::FromStr,
        T::Err: std::fmt::Display,
    {
        let raw = self.req_text(col)?;
        raw.parse().map_err(|e: T::Err| StoreError::Corrupt(format!("column {col}: {e}")))
    }
}

fn missing(col: &str) -> StoreError {
    StoreError::Corrupt(format!("column {col} is unexpectedly empty"))
}

macro_rules! impl_cols {
    ($row:ty) => {
        impl Cols for $row {
            fn text(&self, col: &str) -> Result<Option<String>> {
                Ok(self.try_get(col)?)
            }
            fn int(&self, col: &str) -> Result<Option<i64>> {
                Ok(self.try_get(col)?)
            }
            fn real(&self, col: &str) -> Result<Option<f64>> {
                Ok(self.try_get(col)?)
            }
            fn time(&self, col: &str) -> Result<Option<DateTime<Utc>>> {
                Ok(self.try_get(col)?)
            }
        }
    };
}

impl_cols!(SqliteRow);
impl_cols!(PgRow);

/// Narrows a database integer to the width the domain uses, refusing instead of wrapping.
pub(crate) fn narrow(col: &str, v: i64) -> Result<i32> {
    i32::try_from(v).map_err(|_| StoreError::Corrupt(format!("column {col}: {v} is out of range")))
}

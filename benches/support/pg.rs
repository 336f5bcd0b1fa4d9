//! A fresh schema in the PostgreSQL a benchmark is given, as tests/common does for the tests.

/// Creates schema `bench_{name}_{pid}` at `base` and returns `base` with it as the search path.
pub async fn pg_schema(base: &str, name: &str) -> String {
    let schema = format!("bench_{name}_{}", std::process::id());
    let admin = sqlx::PgPool::connect(base).await.expect("connect to PostgreSQL");
    sqlx::raw_sql(&format!("CREATE SCHEMA {schema}")).execute(&admin).await.expect("create schema");
    admin.close().await;
    let sep = if base.contains('?') { '&' } else { '?' };
    format!("{base}{sep}options[search_path]={schema}")
}

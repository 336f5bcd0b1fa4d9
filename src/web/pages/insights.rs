//! `GET /insights?days=7|30|90`: the pictures that answer "is this worth it?", each with its table; the
//! pull requests that landed, sliced, and the expensive failures.

use axum::extract::{Query, State};
use axum::response::Html;

use super::{PageError, render};
use crate::web::AppState;
use crate::web::insights::{self, WINDOWS, views};

#[derive(Debug, serde::Deserialize)]
pub(super) struct InsightsQuery {
    days: Option<String>,
}

pub(super) async fn page(
    State(state): State<AppState>,
    Query(q): Query<InsightsQuery>,
) -> Result<Html<String>, PageError> {
    let days = insights::window(q.days.as_deref()).map_err(PageError::BadRequest)?;
    let figures = insights::gather(&state.store, &state.config, days, state.github.is_some()).await?;
    let mut windows = WINDOWS.to_vec();
    windows.sort_unstable();
    let windows: Vec<_> =
        windows.iter().map(|d| minijinja::context! { days => d, current => *d == days }).collect();
    let charts: Vec<_> = views::chart_views(&figures)
        .into_iter()
        .map(|c| {
            let panels: Vec<_> = c
                .panels
                .into_iter()
                .map(|p| {
                    minijinja::context! {
                        title => p.title, legend => p.legend, legend_order => p.legend_order,
                        // Built by `web::charts`, which escapes every text it draws.
                        svg => minijinja::Value::from_safe_string(p.svg),
                    }
                })
                .collect();
            minijinja::context! {
                id => c.id, heading => c.heading, caption => c.caption, panels, table => c.table,
            }
        })
        .collect();
    let landed = minijinja::context! {
        columns => insights::landed::COLUMNS, rows => insights::landed::table_rows(&figures.landed),
        window => figures.revert_window_days,
    };
    let slices: Vec<_> = figures
        .slices
        .iter()
        .map(|s| {
            let columns = insights::slices::columns(s.by);
            minijinja::context! { by => s.by, name => columns[0].clone(), columns, rows => insights::slices::table_rows(s) }
        })
        .collect();
    let failures = minijinja::context! {
        threshold => format!("${:.2}", figures.expensive_failures.threshold_usd),
        columns => insights::failures::COLUMNS,
        rows => insights::failures::rows(&figures.expensive_failures),
    };
    let words = figures.words;
    let page =
        minijinja::context! { nav => "insights", days, windows, charts, landed, slices, failures, words };
    render("insights.html", page)
}

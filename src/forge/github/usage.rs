//! GitHub points used per hour, for the dashboard's insights: after the forge asks GitHub, what its
//! client now knows of the GraphQL budget (points left in the current hour window, and the window's
//! limit when GitHub stated it) is recorded in the store. Separate from the observation itself: a
//! failure to record is logged and never holds a tick back.

use super::GitHubForge;
use crate::store::GITHUB_GRAPHQL;

impl GitHubForge {
    /// Records the points left in the current GraphQL window, when an answer told them.
    pub(super) async fn note_points_left(&self) {
        let rate = self.client.rate();
        let (Some(remaining), Some(reset)) = (rate.graphql_remaining, rate.graphql_reset) else { return };
        let limit = rate.graphql_limit.map(i64::from);
        if let Err(e) =
            self.store.record_github_usage(GITHUB_GRAPHQL, reset, i64::from(remaining), limit).await
        {
            tracing::warn!("recording the GitHub points used this hour: {e}");
        }
    }
}

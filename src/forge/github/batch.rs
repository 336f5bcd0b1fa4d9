//! Observing a repository's pull requests: one GraphQL request per `github.batch_size` of them, by
//! aliases, with follow-up pages for the rare pull request with more than 100 checks or 50 threads.
//!
//! A conditional request guards the batch: `GET /repos/{o}/{r}/pulls?state=all&sort=updated` with the
//! ETag of its last answer. A 304 (free of rate limit) says no pull request changed, so only those whose
//! CI is still pending or missing a required check (a check registering or finishing does not change a
//! pull request) or whose mergeability GitHub was still computing are asked again; the rest are
//! answered from the last observation. A 200 lists the 100 most recently updated pull requests (merged
//! and closed ones too: closing updates them): those whose `updated_at` moved are asked again, and so is
//! every other one when the page cannot hold all the changes since the last listing.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use chrono::DateTime;
use reqwest::Method;
use serde_json::{Value, json};

use super::wire::{WireCheckContext, WireContextsPage, WirePr, WireThread, WireThreadsPage};
use super::{AgentComments, GitHubError, GitHubForge, Observed};
use crate::domain::Run;
use crate::forge::{ChecksAwaited, Comment, ForgeError, Mergeable, PrState, Snapshots, Unobserved};
use crate::github::client::GraphQlAnswer;

const BATCH: &str = include_str!("graphql/batch.graphql");
const PR_FIELDS: &str = include_str!("graphql/pr_fields.graphql");
const PR_THREADS: &str = include_str!("graphql/pr_threads.graphql");
const CHECK_CONTEXT: &str = include_str!("graphql/check_context.graphql");
const REVIEW_THREAD: &str = include_str!("graphql/review_thread.graphql");
const CONTEXTS_PAGE: &str = include_str!("graphql/check_contexts_page.graphql");
const THREADS_PAGE: &str = include_str!("graphql/review_threads_page.graphql");

/// The pull requests listed per conditional request (GitHub's maximum page).
const LISTED: usize = 100;
/// Follow-up pages fetched at most per pull request and kind (10,000 checks; 5,000 threads).
const MAX_PAGES: usize = 100;
/// Batch requests in flight at once. GitHub asks integrators to keep concurrency low (its secondary
/// rate limits punish bursts), so a few, not all of them.
const BATCHES_IN_FLIGHT: usize = 4;

/// The batch query for `count` pull requests, each with its review threads: `pr0 … prN` aliases over
/// `$n0 … $nN`.
pub fn batch_document(count: usize) -> String {
    batch_document_for(&vec![true; count])
}

/// The batch query for one pull request per item, with its review threads where the item is `true`.
pub fn batch_document_for(threads: &[bool]) -> String {
    let template: String =
        BATCH.lines().filter(|l| !l.trim_start().starts_with('#')).map(|l| format!("{l}\n")).collect();
    let variables: String = (0..threads.len()).map(|i| format!(", $n{i}: Int!")).collect();
    let fields: Vec<String> = threads
        .iter()
        .enumerate()
        .map(|(i, with)| {
            let more = if *with { " ...PrThreads" } else { "" };
            format!("pr{i}: pullRequest(number: $n{i}) {{ ...PrFields{more} }}")
        })
        .collect();
    let query = template.replace("VARIABLES", &variables).replace("PULL_REQUESTS", &fields.join("\n    "));
    // GraphQL refuses a fragment the document does not use.
    match threads.contains(&true) {
        true => format!("{query}\n{PR_FIELDS}\n{CHECK_CONTEXT}\n{PR_THREADS}\n{REVIEW_THREAD}"),
        false => format!("{query}\n{PR_FIELDS}\n{CHECK_CONTEXT}"),
    }
}

/// The page queries, with the one fragment each uses (GraphQL refuses unused fragments).
pub fn contexts_page_document() -> String {
    format!("{CONTEXTS_PAGE}\n{CHECK_CONTEXT}")
}

pub fn threads_page_document() -> String {
    format!("{THREADS_PAGE}\n{REVIEW_THREAD}")
}

/// What the conditional list said: `None` when nothing changed (304); else the `updated_at` of each
/// pull request on its page (the most recently updated ones, open, merged or closed), and whether the
/// page holds every pull request changed since the last listing — it does when it reaches back past
/// that listing's newest change. Then a pull request missing from it is unchanged; else it may have
/// changed among the many the page could not hold.
struct Listed {
    updated: HashMap<i64, String>,
    holds_every_change: bool,
    /// The newest change of the listing before this one: what changed since is new to this listing.
    since: Option<DateTime<chrono::Utc>>,
}

impl Listed {
    /// The pull requests this listing announces as changed since the one before (in its second or
    /// later: GitHub counts whole seconds).
    fn announced(&self) -> impl Iterator<Item = i64> + '_ {
        self.updated.iter().filter_map(|(number, at)| {
            let at = at.parse::<DateTime<chrono::Utc>>().ok();
            let new = match (at, self.since) {
                (Some(at), Some(since)) => at >= since,
                _ => true,
            };
            new.then_some(*number)
        })
    }
}

/// The pull requests webhook deliveries marked changed (`Store::pr_marks`): asked again, with their
/// review threads, whatever the listing and the last observation say. A delivery may arrive before
/// GitHub's API shows the change; then this observation sees the old state, and the run's next ones
/// (CI pending is asked every tick) catch up, as polling alone would.
struct Marked {
    numbers: std::collections::HashSet<i64>,
    /// The newest mark read: the marks honoured are removed up to it, never one made since.
    up_to: i64,
}

impl Marked {
    async fn read(store: &crate::store::Store, repo: &str) -> Result<Marked, ForgeError> {
        let marks = store.pr_marks(repo).await?;
        let up_to = marks.iter().map(|(id, _)| *id).max().unwrap_or(0);
        Ok(Marked { numbers: marks.into_iter().map(|(_, n)| n).collect(), up_to })
    }

    fn has(&self, number: i64) -> bool {
        self.numbers.contains(&number)
    }

    /// Removes the marks of the pull requests this observation asked for and got whole answers to.
    /// Those that failed keep their marks, and so do those of runs this runner does not hold (another
    /// runner of the cluster observes them); the store forgets marks left by runs that ended.
    async fn honoured(
        &self,
        store: &crate::store::Store,
        repo: &str,
        observed: &Observation,
    ) -> Result<(), ForgeError> {
        let done: Vec<i64> = self
            .numbers
            .iter()
            .filter(|n| observed.asked.contains(n) && !observed.failed.contains_key(n))
            .copied()
            .collect();
        if !done.is_empty() {
            store.clear_pr_marks(repo, &done, self.up_to).await?;
        }
        Ok(())
    }
}

/// What one tick's queries brought: the pull requests whose answers were whole (`asked`), the new
/// observations to keep (those that differ from the kept ones), and the pull requests GitHub answered
/// with an error of their own, with why.
#[derive(Default)]
struct Observation {
    asked: Vec<i64>,
    kept: Vec<(i64, Observed)>,
    failed: HashMap<i64, String>,
}

impl GitHubForge {
    /// The pull requests of these runs, by run id (see `Forge::snapshots`), the comments people posted
    /// from the dashboard marked as theirs (`PrSnapshot::mark_dashboard_comments`). The comments of
    /// untrusted authors are then logged as ignored, once each, for the human watching the runner — not
    /// the dashboard's, which are posted with executor's token.
    pub async fn snapshots(&self, runs: &[Run]) -> Result<Snapshots, ForgeError> {
        let mut out = self.snapshots_unlogged(runs).await?;
        let observed: Vec<i64> = out.prs.iter().filter(|(_, pr)| pr.is_some()).map(|(id, _)| *id).collect();
        let people = self.store.person_comments(&observed).await?;
        for pr in out.prs.values_mut().flatten() {
            pr.mark_dashboard_comments(&people);
            self.note_ignored(pr);
        }
        Ok(out)
    }

    /// [`GitHubForge::snapshots`] without the log of ignored comments: for `executor comment`, which an
    /// agent runs and whose output the agent reads, so a stranger's login never reaches it either.
    pub(crate) async fn snapshots_unlogged(&self, runs: &[Run]) -> Result<Snapshots, ForgeError> {
        let mut out = Snapshots { prs: runs.iter().map(|r| (r.id, None)).collect(), ..Default::default() };
        let with_pr: Vec<(i64, i64)> = runs.iter().filter_map(|r| r.pr_number.map(|n| (r.id, n))).collect();
        if with_pr.is_empty() {
            return Ok(out);
        }
        self.load_memory().await?;
        // Read before the listing: a mark made after this read is honoured by the next observation.
        let marked = Marked::read(&self.store, &self.repo_name).await?;
        let listed = self.pulls_if_changed().await?;
        // A 304 says the last listing's page is current: an observation it contradicts is asked again.
        let unchanged = if listed.is_none() { self.last_page() } else { None };
        let observed = self.observe(&with_pr, listed.as_ref().or(unchanged.as_ref()), &marked).await;
        let whole = observed.as_ref().is_ok_and(|o| o.failed.is_empty());
        if !whole && listed.is_some() {
            // The list's new ETag is remembered, but what it announced was not all observed: ask again
            // in full next tick rather than be told "nothing changed" (and keep the last listing whose
            // announcements were all observed).
            self.client.forget_etag(&self.pulls_path());
            if let Ok(mut up_to) = self.listed_up_to.lock() {
                *up_to = None;
            }
        }
        let observed = observed?;
        if whole && let Some(listed) = &listed {
            // What is kept is shared by every process on the repository, other hosts' included: a kept
            // listing says "what it announced is kept as observed since". A change announced here to a
            // pull request this process does not watch (another host's run) was not observed: its kept
            // observation goes, or a process told "nothing changed" by that listing would take it for
            // current (soak finding: a review posted twice, its retry deciding from a snapshot taken
            // before the first post). A page that may not hold every change is not kept at all.
            let watched: HashSet<i64> = with_pr.iter().map(|(_, number)| *number).collect();
            let unseen: Vec<i64> = listed.announced().filter(|n| !watched.contains(n)).collect();
            self.forget_kept_observations(&unseen).await?;
            if listed.holds_every_change {
                self.keep_listing().await?;
            }
        }
        self.keep_observed(&observed.kept).await?;
        let failed = self.note_failures(&observed).await?;
        marked.honoured(&self.store, &self.repo_name, &observed).await?;
        // A view answered from what was kept predates what was recorded since (a reply found after a
        // 502): executor's comments are marked by what the database says now (soak finding: a reply
        // recorded after the view was kept still read as nobody's, and alex's comment was answered twice).
        let run_ids: Vec<i64> = with_pr.iter().map(|(run_id, _)| *run_id).collect();
        let agent = self.store.agent_comments(&run_ids).await?;
        for (run_id, number) in with_pr {
            match failed.get(&number) {
                Some(u) => {
                    out.prs.remove(&run_id);
                    out.unobserved.insert(run_id, u.clone());
                }
                None => {
                    let mut snapshot = self.cached(number).map(|o| o.snapshot);
                    if let Some(snapshot) = &mut snapshot {
                        super::recorded::mark_executors(snapshot, &agent);
                    }
                    out.prs.insert(run_id, snapshot);
                }
            }
        }
        Ok(out)
    }

    /// Records which pull requests failed this tick (keeping since when they fail) and which recovered;
    /// returns the failing ones by number.
    async fn note_failures(&self, observed: &Observation) -> Result<HashMap<i64, Unobserved>, ForgeError> {
        let now = chrono::Utc::now();
        let (failed, recovered) = {
            let mut failing = self.failing.lock().map_err(|_| malformed("a poisoned lock"))?;
            let recovered: Vec<i64> =
                observed.asked.iter().filter(|n| failing.remove(n).is_some()).copied().collect();
            let mut failed = HashMap::new();
            for (number, why) in &observed.failed {
                let since = failing.get(number).map_or(now, |u| u.since);
                let u = Unobserved { number: *number, since, why: why.clone() };
                failing.insert(*number, u.clone());
                failed.insert(*number, u);
            }
            (failed, recovered)
        };
        if !failed.is_empty() || !recovered.is_empty() {
            self.keep_failures(&failed, &recovered).await?;
        }
        Ok(failed)
    }

    /// Asks GitHub again for the pull requests whose last observation may be out of date.
    async fn observe(
        &self,
        with_pr: &[(i64, i64)],
        listed: Option<&Listed>,
        marked: &Marked,
    ) -> Result<Observation, ForgeError> {
        let mut numbers: Vec<i64> = with_pr.iter().map(|(_, n)| *n).collect();
        numbers.sort_unstable();
        numbers.dedup();
        let stale: Vec<i64> =
            numbers.into_iter().filter(|n| marked.has(*n) || self.needs_query(*n, listed)).collect();
        let mut observation = Observation::default();
        if !stale.is_empty() {
            self.check_graphql_budget().await?;
            // Only the runs whose pull request is asked again: the store answers one query per run.
            let run_ids: Vec<i64> =
                with_pr.iter().filter(|(_, n)| stale.binary_search(n).is_ok()).map(|(r, _)| *r).collect();
            let agent = self.store.agent_comments(&run_ids).await?;
            let asked = self.query_batches(&stale, &agent, listed, marked, &mut observation).await;
            self.note_points_left().await;
            asked?;
        }
        Ok(observation)
    }

    pub(super) fn pulls_path(&self) -> String {
        format!(
            "/repos/{}/{}/pulls?state=all&sort=updated&direction=desc&per_page={LISTED}",
            self.owner, self.name
        )
    }

    /// The most recently updated pull requests, unless nothing changed since the last ask (`None`: a 304).
    async fn pulls_if_changed(&self) -> Result<Option<Listed>, ForgeError> {
        let Some(body) = self.client.get_if_changed(&self.pulls_path()).await? else {
            return Ok(None);
        };
        let list = body.as_array().ok_or_else(|| malformed("the pull requests are not a list"))?;
        let mut updated = HashMap::new();
        for pr in list {
            let number = pr.get("number").and_then(Value::as_i64);
            let at = pr.get("updated_at").and_then(Value::as_str);
            let (Some(number), Some(at)) = (number, at) else {
                return Err(malformed("a listed pull request without number or updated_at"));
            };
            updated.insert(number, at.to_string());
        }
        let times: Vec<DateTime<chrono::Utc>> = updated.values().filter_map(|at| at.parse().ok()).collect();
        let (oldest, newest) = (times.iter().min().copied(), times.iter().max().copied());
        let mut up_to = self.listed_up_to.lock().map_err(|_| malformed("a poisoned lock"))?;
        let (holds_every_change, since) = (page_holds_every_change(list.len(), oldest, *up_to), *up_to);
        if newest > *up_to {
            *up_to = newest;
        }
        *self.listed_page.lock().map_err(|_| malformed("a poisoned lock"))? = updated.clone();
        Ok(Some(Listed { holds_every_change, updated, since }))
    }

    /// The page of the last listing, as the listing a 304 stands for: nothing on it changed since, and
    /// a pull request missing from it changed before its oldest. `None` when no page is known.
    fn last_page(&self) -> Option<Listed> {
        let page = self.listed_page.lock().ok()?;
        (!page.is_empty()).then(|| Listed { updated: page.clone(), holds_every_change: true, since: None })
    }

    /// A runner just started (cron starts one every few minutes) knows nothing of the GraphQL budget yet,
    /// so its first batch would be sent even with the points down to the reserve kept for the agents.
    /// `GET /rate_limit`, which costs nothing on GitHub, says before the first query of the process.
    /// GitHub Enterprise without rate limits answers it 404: then there is no budget to keep.
    async fn check_graphql_budget(&self) -> Result<(), ForgeError> {
        let status = self.client.rate();
        if status.graphql_remaining.is_some() {
            return Ok(()); // the answers to this process's queries keep it up to date
        }
        let limits = match self.client.rest(Method::GET, "/rate_limit", None).await {
            Ok(limits) => limits,
            Err(GitHubError::NotFound(_)) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        let remaining = limits.pointer("/resources/graphql/remaining").and_then(Value::as_u64);
        let reset = limits
            .pointer("/resources/graphql/reset")
            .and_then(Value::as_i64)
            .and_then(|at| DateTime::from_timestamp(at, 0));
        match (remaining, reset) {
            (Some(remaining), Some(until))
                if remaining <= u64::from(status.reserve) && until > chrono::Utc::now() =>
            {
                Err(ForgeError::GitHub(GitHubError::RateLimited {
                    until,
                    why: format!(
                        "{remaining} GraphQL points left, at or below the {} kept for the agents ([github] reserve_points)",
                        status.reserve
                    ),
                }))
            }
            _ => Ok(()),
        }
    }

    /// Whether pull request `number` must be asked again, or its last observation still holds.
    fn needs_query(&self, number: i64, listed: Option<&Listed>) -> bool {
        if self.failing.lock().is_ok_and(|f| f.contains_key(&number)) {
            return true;
        }
        let Some(last) = self.cached(number) else { return true };
        let pr = &last.snapshot;
        let open = pr.state == PrState::Open;
        if open && !last.after_its_second() {
            return true;
        }
        // What changes without changing the pull request: checks registering and reporting (a required
        // one registering late included), mergeability computed.
        if open
            && (pr.checks_awaited(&self.repo.required_checks) != ChecksAwaited::Nothing
                || pr.mergeable == Mergeable::Unknown)
        {
            return true;
        }
        listed_as_changed(&last, number, listed)
    }

    /// Whether pull request `number`'s review threads must be asked for with it: they cost most of a
    /// pull request's points, and change only with its `updated_at` (a review comment, a reply). Not
    /// asked when it is unchanged in the listing (or the listing answered 304) and its last observation
    /// came after the second of its last change.
    fn needs_threads(&self, number: i64, listed: Option<&Listed>) -> bool {
        let Some(last) = self.cached(number) else { return true };
        if !last.after_its_second() {
            return true;
        }
        listed_as_changed(&last, number, listed)
    }

    /// Asks for `stale` in batches of `batch_size`, up to [`BATCHES_IN_FLIGHT`] at once: one after the
    /// other, 500 pull requests are 20 round trips, several seconds a tick even when GitHub answers
    /// fast. Each answer is taken in as it arrives, so at most that many answers are held at once.
    async fn query_batches(
        &self,
        stale: &[i64],
        agent: &AgentComments,
        listed: Option<&Listed>,
        marked: &Marked,
        observation: &mut Observation,
    ) -> Result<(), ForgeError> {
        // Those whose threads are asked for first, so that as few batches as can be carry the threads' cost.
        // A marked one brings its threads: the delivery may have been a review comment.
        let mut stale: Vec<(i64, bool)> =
            stale.iter().map(|n| (*n, marked.has(*n) || self.needs_threads(*n, listed))).collect();
        stale.sort_by_key(|(n, threads)| (!threads, *n));
        let chunks: Vec<&[(i64, bool)]> = stale.chunks(self.batch_size).collect();
        let mut in_flight = tokio::task::JoinSet::new();
        let mut next = 0;
        loop {
            while next < chunks.len() && in_flight.len() < BATCHES_IN_FLIGHT {
                let (client, index) = (Arc::clone(&self.client), next);
                let threads: Vec<bool> = chunks[index].iter().map(|(_, t)| *t).collect();
                let numbers: Vec<i64> = chunks[index].iter().map(|(n, _)| *n).collect();
                let (document, variables) = (batch_document_for(&threads), self.batch_variables(&numbers));
                // When it was asked: an answer may already miss a change made later in the same second.
                let asked_at = chrono::Utc::now();
                in_flight.spawn(async move {
                    (index, asked_at, client.graphql_with_errors(&document, variables).await)
                });
                next += 1;
            }
            // On an error the set is dropped with the rest, which aborts the requests still in flight.
            let (index, asked_at, answer) = match in_flight.join_next().await {
                None => return Ok(()),
                Some(Ok(joined)) => joined,
                Some(Err(e)) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Some(Err(e)) => return Err(e.into()),
            };
            let numbers: Vec<i64> = chunks[index].iter().map(|(n, _)| *n).collect();
            self.query_batch(&numbers, answer?, asked_at, agent, listed, observation).await?;
        }
    }

    fn batch_variables(&self, numbers: &[i64]) -> Value {
        let mut variables = json!({ "owner": self.owner, "name": self.name });
        for (i, n) in numbers.iter().enumerate() {
            variables[format!("n{i}")] = json!(n);
        }
        variables
    }

    /// Takes in one batch's answer for `numbers`. An error GitHub reports for one pull request (its
    /// `path` names the alias), a pull request missing from the answer or one that does not read fails
    /// that pull request alone; any other error fails the batch.
    async fn query_batch(
        &self,
        numbers: &[i64],
        answer: GraphQlAnswer,
        asked_at: DateTime<chrono::Utc>,
        agent: &AgentComments,
        listed: Option<&Listed>,
        observation: &mut Observation,
    ) -> Result<(), ForgeError> {
        let slug = self.slug();
        let GraphQlAnswer { mut data, errors } = answer;
        let mut failed: HashMap<usize, String> = HashMap::new();
        for error in &errors {
            let message = error.get("message").and_then(Value::as_str).unwrap_or("(no message)").to_string();
            match alias_of(error).filter(|i| *i < numbers.len()) {
                Some(i) => {
                    failed.entry(i).or_insert(GitHubError::Partial(message).to_string());
                }
                None => return Err(ForgeError::GitHub(GitHubError::Partial(message))),
            }
        }
        let repository = data.get_mut("repository").filter(|r| r.is_object()).ok_or_else(|| {
            malformed(&format!("no repository {slug} in the answer (does the token see it?)"))
        })?;
        let mut parsed = Vec::with_capacity(numbers.len());
        for (i, number) in numbers.iter().enumerate() {
            let value = repository.get_mut(format!("pr{i}")).map(Value::take).unwrap_or(Value::Null);
            if failed.contains_key(&i) {
                continue;
            }
            if value.is_null() {
                failed.insert(i, malformed(&format!("pull request #{number} is not in {slug}")).to_string());
                continue;
            }
            match serde_json::from_value::<WirePr>(value) {
                Ok(pr) => parsed.push((*number, pr)),
                Err(e) => {
                    failed.insert(i, malformed(&format!("pull request #{number}: {e}")).to_string());
                }
            }
        }
        for (i, why) in failed {
            observation.failed.insert(numbers[i], why);
        }
        for (number, pr) in parsed {
            let pages = async {
                let contexts = self.more_contexts(number, pr.contexts_next_page()).await?;
                let threads = self.more_threads(number, pr.threads_next_page()).await?;
                Ok::<_, ForgeError>((contexts, threads))
            };
            let (contexts, threads) = match pages.await {
                Ok(pages) => pages,
                Err(ForgeError::GitHub(e)) if !e.is_rate_limit() && !matches!(e, GitHubError::Auth(_)) => {
                    observation.failed.insert(number, e.to_string());
                    continue;
                }
                Err(e) => return Err(e),
            };
            let node_id = pr.id.clone();
            let threads_asked = pr.review_threads.is_some();
            let mut snapshot = pr.into_snapshot(contexts, threads, agent, chrono::Utc::now());
            let last = self.cached(number);
            if !threads_asked {
                // Not asked, as the pull request did not change: its last observation's threads hold.
                let known = last.as_ref().map(|o| o.snapshot.comments.clone()).unwrap_or_default();
                let mut threaded: Vec<Comment> = known
                    .into_iter()
                    .filter(|c| c.thread_id.is_some())
                    .map(|mut c| {
                        c.by_agent |= agent.contains_key(&c.id);
                        c
                    })
                    .collect();
                threaded.append(&mut snapshot.comments);
                snapshot.comments = threaded;
            }
            let updated_at = match listed {
                Some(l) => l.updated.get(&number).cloned(),
                None => last.as_ref().and_then(|o| o.updated_at.clone()),
            };
            let observed = Observed { snapshot, node_id, updated_at, asked_at };
            if !last.is_some_and(|l| observed.same_as(&l)) {
                observation.kept.push((number, observed.clone()));
            }
            observation.asked.push(number);
            self.remember(number, observed);
        }
        Ok(())
    }

    async fn more_contexts(
        &self,
        number: i64,
        mut after: Option<String>,
    ) -> Result<Vec<WireCheckContext>, ForgeError> {
        let mut all = Vec::new();
        for _ in 0..MAX_PAGES {
            let Some(cursor) = after.take() else { break };
            let data =
                self.client.graphql(&contexts_page_document(), self.page_variables(number, &cursor)).await?;
            let page = serde_json::from_value::<WireContextsPage>(data)
                .map_err(|e| malformed(&format!("checks of pull request #{number}: {e}")))?
                .into_page()
                .ok_or_else(|| malformed(&format!("no check page for pull request #{number}")))?;
            after = page.next;
            all.extend(page.items);
        }
        Ok(all)
    }

    async fn more_threads(
        &self,
        number: i64,
        mut after: Option<String>,
    ) -> Result<Vec<WireThread>, ForgeError> {
        let mut all = Vec::new();
        for _ in 0..MAX_PAGES {
            let Some(cursor) = after.take() else { break };
            let data =
                self.client.graphql(&threads_page_document(), self.page_variables(number, &cursor)).await?;
            let page = serde_json::from_value::<WireThreadsPage>(data)
                .map_err(|e| malformed(&format!("threads of pull request #{number}: {e}")))?
                .into_page()
                .ok_or_else(|| malformed(&format!("no thread page for pull request #{number}")))?;
            after = page.next;
            all.extend(page.items);
        }
        Ok(all)
    }

    fn page_variables(&self, number: i64, after: &str) -> Value {
        json!({ "owner": self.owner, "name": self.name, "number": number, "after": after })
    }

    /// The GraphQL node id of pull request `number`, from its last observation.
    pub(super) fn node_id(&self, number: i64) -> Option<String> {
        self.cached(number).map(|o| o.node_id)
    }
}

/// Whether a page of the most recently updated pull requests holds every one changed since the listing
/// whose newest `updated_at` was `up_to`: a page that is not full holds them all; a full one does when it
/// reaches back more than a second before `up_to` (a change in that same second carries the same
/// `updated_at`, and GitHub's listing may lag a moment behind).
fn page_holds_every_change(
    listed: usize,
    oldest: Option<DateTime<chrono::Utc>>,
    up_to: Option<DateTime<chrono::Utc>>,
) -> bool {
    listed < LISTED
        || matches!((oldest, up_to), (Some(oldest), Some(up_to)) if oldest < up_to - chrono::TimeDelta::seconds(1))
}

/// The batch alias (`prK` → K) an error's `path` points into, when it does.
fn alias_of(error: &Value) -> Option<usize> {
    let path = error.get("path")?.as_array()?;
    if path.first()?.as_str()? != "repository" {
        return None;
    }
    path.get(1)?.as_str()?.strip_prefix("pr")?.parse().ok()
}

fn malformed(what: &str) -> ForgeError {
    ForgeError::GitHub(crate::github::GitHubError::Malformed(what.to_string()))
}

/// Whether this tick's listing says pull request `number` changed since `last` was observed: its
/// `updated_at` moved, or it is off a page that does not hold every change since the last listing. No
/// listing (it answered 304): unchanged.
fn listed_as_changed(last: &Observed, number: i64, listed: Option<&Listed>) -> bool {
    match listed {
        None => false,
        Some(l) => match l.updated.get(&number) {
            Some(at) => last.updated_at.as_deref() != Some(at.as_str()),
            None => !l.holds_every_change,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_page_holds_every_change_only_when_it_reaches_back_past_the_last_listing() {
        let at = |s: &str| s.parse::<DateTime<chrono::Utc>>().unwrap();
        let last = Some(at("2026-11-30T12:00:10Z"));
        assert!(page_holds_every_change(99, None, None), "a page that is not full lists everything");
        assert!(
            !page_holds_every_change(LISTED, Some(at("2026-11-30T11:00:00Z")), None),
            "no listing before"
        );
        assert!(page_holds_every_change(LISTED, Some(at("2026-11-30T12:00:08Z")), last));
        // Within a second of the last listing's newest, or later: changes may be off the page (a second's
        // margin, as GitHub's listing may lag a moment behind its pull requests).
        assert!(!page_holds_every_change(LISTED, Some(at("2026-11-30T12:00:09Z")), last));
        assert!(!page_holds_every_change(LISTED, Some(at("2026-11-30T12:00:10Z")), last));
        assert!(!page_holds_every_change(LISTED, Some(at("2026-11-30T12:05:00Z")), last), "all 100 are new");
    }

    #[test]
    fn a_listing_announces_what_changed_in_the_second_of_the_one_before_or_later() {
        let at = |s: &str| s.parse::<DateTime<chrono::Utc>>().unwrap();
        let updated: HashMap<i64, String> =
            [(1, "2026-11-30T12:00:09Z"), (2, "2026-11-30T12:00:10Z"), (3, "2026-11-30T12:00:11Z")]
                .into_iter()
                .map(|(n, t)| (n, t.to_string()))
                .collect();
        let mut listed =
            Listed { updated, holds_every_change: true, since: Some(at("2026-11-30T12:00:10Z")) };
        let announced = |l: &Listed| {
            let mut n: Vec<i64> = l.announced().collect();
            n.sort();
            n
        };
        assert_eq!(announced(&listed), [2, 3]);
        listed.since = None;
        assert_eq!(announced(&listed), [1, 2, 3], "a first listing announces everything on it");
    }

    #[test]
    fn the_batch_document_aliases_each_pull_request() {
        let doc = batch_document(2);
        assert!(doc.contains("query Batch($owner: String!, $name: String!, $n0: Int!, $n1: Int!)"), "{doc}");
        assert!(doc.contains("pr0: pullRequest(number: $n0) { ...PrFields ...PrThreads }"), "{doc}");
        assert!(doc.contains("pr1: pullRequest(number: $n1) { ...PrFields ...PrThreads }"), "{doc}");
        assert!(!doc.contains("PULL_REQUESTS") && !doc.contains("VARIABLES"), "{doc}");
        for fragment in
            ["fragment PrFields", "fragment CheckContext", "fragment PrThreads", "fragment ReviewThread"]
        {
            assert_eq!(doc.matches(fragment).count(), 1, "{fragment}");
        }
        // Threads only where asked for, and their fragments only when some pull request asks.
        let mixed = batch_document_for(&[true, false]);
        assert!(mixed.contains("pr1: pullRequest(number: $n1) { ...PrFields }"), "{mixed}");
        let none = batch_document_for(&[false, false]);
        assert!(!none.contains("PrThreads") && !none.contains("ReviewThread"), "{none}");
    }
}

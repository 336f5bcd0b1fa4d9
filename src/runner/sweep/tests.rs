//! Issue 37 item 3: each host removes its own worktrees of runs that ended or went on — also when
//! another host ended the run or took it over — and keeps one that would lose work, saying so once.

use std::path::Path;

use super::{Fate, fate};
use crate::domain::{Actor, Run, RunState};
use crate::runner::test_hosts::{git, host_runner, remote_and_clones, store_with_runs};
use crate::store::EventFilter;
use crate::workspace;

fn as_if(run: &Run, state: RunState, worktree: Option<&str>) -> Run {
    Run { state, worktree_path: worktree.map(str::to_string), ..run.clone() }
}

#[tokio::test]
async fn a_worktree_goes_when_its_run_ended_or_went_on_and_stays_while_it_is_in_use_here() {
    let tmp = tempfile::tempdir().unwrap();
    let (_store, runs) = store_with_runs(tmp.path(), 1).await;
    let run = |state, worktree| as_if(&runs[0], state, worktree);
    let here = Path::new("/data/worktrees/T-1-7");
    // Ended: removed when safe, wherever the run was last.
    assert_eq!(fate(here, &run(RunState::Complete, Some("/other/T-1-7")), false), Fate::RemoveIfSafe);
    assert_eq!(fate(here, &run(RunState::Abandoned, None), false), Fate::RemoveIfSafe);
    // Went on to another host's worktree.
    assert_eq!(fate(here, &run(RunState::Pr, Some("/other/T-1-7")), false), Fate::Superseded);
    // Still its worktree, or about to be.
    assert_eq!(fate(here, &run(RunState::Pr, Some("/data/worktrees/T-1-7")), false), Fate::Keep);
    assert_eq!(fate(here, &run(RunState::Queued, None), false), Fate::Keep);
    // A runner of this host holds the run: it may be making or using the worktree now.
    assert_eq!(fate(here, &run(RunState::Pr, Some("/other/T-1-7")), true), Fate::Keep);
    assert_eq!(fate(here, &run(RunState::Complete, None), true), Fate::Keep);
}

#[tokio::test]
async fn a_host_removes_its_worktrees_of_runs_that_ended_or_went_on_elsewhere() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let clones = remote_and_clones(root, &["alpha"]);
    let (store, runs) = store_with_runs(root, 5).await;
    let mut alpha = host_runner(root, &store, "alpha", "local", 2);
    alpha.register().await.unwrap();
    let wt_root = alpha.config.worktrees_root();
    let beta_wt =
        |r: &Run| root.join(format!("data-beta/worktrees/{}-{}", r.task_gid, r.id)).display().to_string();
    let mut made = Vec::new();
    for r in &runs {
        let branch = format!("executor/{}", r.task_gid);
        let wt =
            workspace::ensure_worktree(&clones[0], &wt_root, &r.task_gid, r.id, &branch, "main").unwrap();
        store.set_run_workspace(r.id, None, &wt.path.display().to_string(), &branch).await.unwrap();
        made.push(wt.path);
    }
    let (went_on, ended, active, dirty, held) = (&runs[0], &runs[1], &runs[2], &runs[3], &runs[4]);
    // Beta took `went_on` over and works in a worktree of its own; `held` too, but a runner of this host
    // holds it again now (it may be making its worktree here this moment).
    for r in [went_on, held] {
        store
            .set_run_workspace(r.id, None, &beta_wt(r), r.branch_name.as_deref().unwrap_or("b"))
            .await
            .unwrap();
    }
    let ttl = alpha.config.runner.lease_ttl.std();
    assert!(store.claim_run(held.id, &alpha.owner, ttl).await.unwrap());
    // Another host abandoned `ended` and `dirty`: the clean one goes; the one with a file left stays.
    for r in [ended, dirty] {
        store
            .set_run_state_if(r.id, RunState::Queued, RunState::Abandoned, None, Actor::Cli, "no")
            .await
            .unwrap();
    }
    std::fs::write(made[3].join("notes.txt"), "work not committed").unwrap();

    alpha.sweep_worktrees_when_due().await;
    let gone: Vec<bool> = made.iter().map(|p| !p.exists()).collect();
    assert_eq!(gone, [true, true, false, false, false], "went on, ended, active, dirty, held");
    let listed = git(&clones[0], &["worktree", "list", "--porcelain"]);
    assert_eq!(listed.matches("worktree ").count(), 4, "git forgot the two removed: {listed}");
    let _ = active;

    // Looked at again a minute later, and by the next runner cron starts: the kept one is said once.
    alpha.swept_at = None;
    alpha.sweep_worktrees_when_due().await;
    let mut next = host_runner(root, &store, "alpha", "local", 2);
    next.sweep_worktrees_when_due().await;
    let f = EventFilter { run_id: Some(dirty.id), ..Default::default() };
    let kept: Vec<String> = store
        .events(&f)
        .await
        .unwrap()
        .into_iter()
        .filter_map(|e| e.reason)
        .filter(|r| r.contains("kept"))
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert!(kept[0].contains("uncommitted or untracked"), "{kept:?}");
}

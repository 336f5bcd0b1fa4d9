//! Issue 34 item 1: a required check that registers only after the other checks went green (a
//! `needs:`-gated job, a second workflow, an external status: the seed's "macOS UI Tests"). Its check
//! reporting does not change the pull request, so GitHub's listing says "nothing changed"; the pull
//! request must still be asked again every tick, as with CI pending, or the run waits until
//! `runner.check_timeout` for a check that went green long ago.

use std::time::Duration;

use executor::domain::RunState;

use crate::faults::{past_check_grace, run_in_pr};
use crate::github_support::{CiPlayer, GhEnv, REPO, run_of, text};

const LATE: &str = "macOS UI Tests";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_required_check_registering_late_completes_the_run_the_tick_it_is_green() {
    let env = GhEnv::new(&[], "").await;
    env.edit_config("required_checks = [\"ci\"]", &format!("required_checks = [\"ci\", \"{LATE}\"]"));
    let gid = "3401";
    let run = run_in_pr(&env, gid).await;
    let store = env.store().await;
    let (number, branch) = (run.pr_number.unwrap(), run.branch_name.clone().unwrap());
    past_check_grace().await;
    // CI is dispatched at the head and answered green; the late check has not registered.
    let mut ci = CiPlayer::green();
    for _ in 0..10 {
        let out = env.runner().await;
        assert!(out.status.success(), "the runner failed:\n{}", text(&out));
        if ci.play(&env, number, &branch) {
            break;
        }
    }
    let head = ci.heads.first().cloned().expect("CI was dispatched");
    // Reviewed green at this head: all the run waits for is the late check.
    store.set_run_review(run.id, None, "pass", &head).await.unwrap();
    // A tick that sees `ci` green without the late check, observed after the second of the pull
    // request's last change (so that nothing but the checks could make it be asked again).
    tokio::time::sleep(Duration::from_millis(1100)).await;
    for _ in 0..2 {
        let out = env.runner().await;
        assert!(out.status.success(), "the runner failed:\n{}", text(&out));
    }
    let waiting = run_of(&store, gid).await;
    assert_eq!(waiting.state, RunState::Pr);
    let memory = store.run_memory(run.id).await.unwrap();
    let decided = memory.last_decision.unwrap_or_default();
    assert!(decided.contains(&format!("required checks have not reported: {LATE}")), "{decided}");

    // The late check registers and goes green (which leaves the pull request's `updated_at` as it was).
    env.fake.add_check_run(REPO, number, &head, LATE, "COMPLETED", Some("SUCCESS"), None);
    let out = env.runner().await;
    assert!(out.status.success(), "the runner failed:\n{}", text(&out));
    let after = run_of(&store, gid).await;
    assert_eq!(
        after.state,
        RunState::Complete,
        "one tick after the late check went green: {:?}",
        store.run_memory(run.id).await.unwrap().last_decision
    );
}

//! Whether runs started by cron, systemd or launchd have what a run from this shell has: they load
//! only the environment file (`paths.env_file`) on top of a bare environment, so a key exported in
//! this shell proves nothing about them.

use super::{Check, Outcome, pass, problem};
use crate::config::Config;
use crate::env_file;

/// `crontab`: the user's crontab as `crontab -l` printed it, if it could be read.
pub(super) fn scheduled_env_check(config: &Config, crontab: Option<&str>) -> Check {
    const NAME: &str = "scheduled env";
    let path = config.env_file();
    let shown = path.display();
    let block = crontab
        .and_then(|c| c.split(crate::schedule::BEGIN).nth(1))
        .map(|rest| rest.split(crate::schedule::END).next().unwrap_or(rest).to_string());
    if block.as_deref().is_some_and(|b| !b.contains("--env-file")) {
        return problem(
            Outcome::Fail,
            NAME,
            "the crontab entries predate the environment file: cron-started runs get only PATH",
            "run `executor cron install` again",
        );
    }
    match env_file::read(&path) {
        Err(e) => problem(
            Outcome::Fail,
            NAME,
            e.to_string(),
            format!("fix {shown} as said, or remove it and run `executor cron env`"),
        ),
        Ok(None) if block.is_some() => problem(
            Outcome::Fail,
            NAME,
            format!("{shown} does not exist: every cron-started run stops at once"),
            "run `executor cron install` (it writes the keys this shell has)",
        ),
        Ok(None) => pass(NAME, format!("nothing scheduled by cron; `executor cron install` writes {shown}")),
        Ok(Some(vars)) => {
            let missing = env_file::missing_from(config, &vars, env_file::from_process);
            if missing.is_empty() {
                pass(NAME, format!("{shown}: scheduled runs have every key this shell has"))
            } else {
                let names: Vec<&str> = missing.iter().map(|(n, _)| n.as_str()).collect();
                problem(
                    Outcome::Fail,
                    NAME,
                    format!(
                        "set in this shell but not in {shown}, so runs started by cron or systemd lack them: {}",
                        names.join(", ")
                    ),
                    format!("run `executor cron env` to add them, or add NAME=value lines to {shown}"),
                )
            }
        }
    }
}

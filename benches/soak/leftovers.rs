//! What the soak leaves on each host's disk: the worktrees git still lists under the host's root, each
//! judged by the run it was made for (`<gid>-<run id>`). A worktree is stray when its run ended and
//! nothing in it would be lost, or when its run went on in another worktree; one of an ended run with
//! work left in it is kept (and the run's history says why).

use std::collections::BTreeMap;
use std::path::Path;

use crate::host::git;
use crate::world::World;

#[derive(Debug, Default)]
pub struct Leftovers {
    pub total: usize,
    /// Worktrees of runs still going, where they are.
    pub in_use: usize,
    /// Of ended runs, with uncommitted work: "path: what".
    pub kept: Vec<String>,
    /// "path: why it is stray".
    pub stray: Vec<String>,
}

pub async fn worktrees(world: &World) -> anyhow::Result<Leftovers> {
    let runs: BTreeMap<i64, (String, Option<String>)> =
        world.db.run_worktrees().await?.into_iter().map(|(id, state, wt)| (id, (state, wt))).collect();
    let mut out = Leftovers::default();
    for host in &world.hosts {
        let root = host.dir.join("worktrees");
        let listed = git(&host.dir.join("repo"), &["worktree", "list", "--porcelain"])?;
        for path in listed.lines().filter_map(|l| l.strip_prefix("worktree ")).map(Path::new) {
            if path.parent() != Some(root.as_path()) {
                continue;
            }
            out.total += 1;
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            let run =
                name.rsplit_once('-').and_then(|(_, id)| id.parse::<i64>().ok()).and_then(|id| runs.get(&id));
            let shown = path.display();
            match run {
                None => out.stray.push(format!("{shown}: no such run")),
                Some((state, _)) if state == "complete" || state == "abandoned" => {
                    let status = git(path, &["status", "--porcelain"]).unwrap_or_default();
                    match status.lines().next() {
                        Some(first) => out.kept.push(format!("{shown}: {first}")),
                        None => out.stray.push(format!("{shown}: its run is {state}")),
                    }
                }
                Some((_, Some(recorded))) if Path::new(recorded) != path => {
                    out.stray.push(format!("{shown}: its run went on in {recorded}"))
                }
                Some(_) => out.in_use += 1,
            }
        }
    }
    Ok(out)
}

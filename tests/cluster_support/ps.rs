//! The agent processes running now, read from `ps`. The database says what the runners believe; `ps`
//! says what is really running, so the limits are checked against both. Each host runs its own copy
//! of the fake agent (`<host dir>/agent.sh`), which is how an agent is known by host.

use std::path::PathBuf;
use std::process::Command;

/// The `ps` arguments whose output [`parse_ps`] reads.
pub const PS_ARGS: [&str; 2] = ["-eo", "pid=,pgid=,stat=,args="];

/// An agent process as `ps` shows it, and the host whose copy of the script it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentProcess {
    pub pid: i32,
    pub pgid: i32,
    pub host: String,
}

/// The agents of `hosts` (name, host directory) running now.
pub fn agents_now(hosts: &[(String, PathBuf)]) -> Vec<AgentProcess> {
    let ps = Command::new("ps").args(PS_ARGS).output().unwrap();
    parse_ps(&String::from_utf8_lossy(&ps.stdout), hosts)
}

/// Agents in `ps -eo pid=,pgid=,stat=,args=` output: process groups with a process whose arguments
/// name a host's `agent.sh` (before the start gate opens, the gate shell has it as an argument; after,
/// the agent's shell runs it). One agent is one group: the shell's own forks (a `$(…)`, a pipeline)
/// show the same arguments. Zombies are not running agents.
pub fn parse_ps(text: &str, hosts: &[(String, PathBuf)]) -> Vec<AgentProcess> {
    let scripts: Vec<(String, String)> =
        hosts.iter().map(|(name, dir)| (name.clone(), dir.join("agent.sh").display().to_string())).collect();
    let mut agents = Vec::new();
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        let (Some(pid), Some(pgid), Some(stat)) = (fields.next(), fields.next(), fields.next()) else {
            continue;
        };
        if stat.starts_with('Z') {
            continue;
        }
        let args: Vec<&str> = fields.collect();
        let Some((host, _)) = scripts.iter().find(|(_, script)| args.contains(&script.as_str())) else {
            continue;
        };
        let (Ok(pid), Ok(pgid)) = (pid.parse(), pgid.parse()) else { continue };
        match agents.iter_mut().find(|a: &&mut AgentProcess| a.pgid == pgid) {
            // The group's leader is the agent itself.
            Some(known) if pid == pgid => known.pid = pid,
            Some(_) => {}
            None => agents.push(AgentProcess { pid, pgid, host: host.clone() }),
        }
    }
    agents
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ps_lines_are_agents_by_the_script_they_run() {
        let hosts = vec![
            ("host-a".to_string(), PathBuf::from("/t/host-a")),
            ("host-b".to_string(), PathBuf::from("/t/host-b")),
        ];
        let text = "  10    10 S    /bin/sh /t/host-a/agent.sh\n\
                    11    10 S    sleep 1\n\
                    15    10 S    /bin/sh /t/host-a/agent.sh\n\
                    12    12 S    /bin/sh -c read -r _ <&3 || exit; exec \"$@\" executor-gate /t/host-b/agent.sh\n\
                    13    13 Z    [agent.sh] <defunct>\n\
                    14    14 S    /bin/sh /t/host-c/agent.sh\n";
        let agents = parse_ps(text, &hosts);
        assert_eq!(
            agents,
            [
                AgentProcess { pid: 10, pgid: 10, host: "host-a".into() },
                AgentProcess { pid: 12, pgid: 12, host: "host-b".into() },
            ]
        );
    }
}

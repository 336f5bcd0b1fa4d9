//! `executor users`: the people who may use the dashboard, each with a role and a personal login.
//! Whoever can run this command holds the config and the database already: the CLI needs no role.

use clap::Subcommand;

use super::output::json;
use super::{Context, UsageError};
use crate::domain::{PERSON_NAME_RULE, Role, valid_person_name};
use crate::web::person::{login_url, new_token, token_sha256};

#[derive(Debug, Subcommand)]
pub enum UsersCommand {
    /// Let a person in: prints their personal login URL once (only its hash is kept). A viewer reads;
    /// an approver also approves, skips, abandons, answers and comments; an admin also manages people.
    Add {
        /// Their name as the audit trail will show it: letters, digits, '.', '_' or '-'.
        #[arg(value_name = "NAME")]
        name: String,
        #[arg(long, default_value = "approver", value_name = "viewer|approver|admin")]
        role: String,
        /// Their GitHub account: "Sign in with GitHub" (`[web.github_login]`) logs them in too.
        #[arg(long, value_name = "LOGIN")]
        github: Option<String>,
    },
    /// Everyone ever let in, with their role and whether they were revoked.
    List,
    /// End a person's access at once: their login URL, bearer token and open sessions stop working.
    Revoke {
        #[arg(value_name = "NAME")]
        name: String,
    },
    /// Link a person to a GitHub account for "Sign in with GitHub" (`--none` unlinks).
    Github {
        #[arg(value_name = "NAME")]
        name: String,
        #[arg(value_name = "LOGIN", required_unless_present = "none")]
        login: Option<String>,
        #[arg(long, conflicts_with = "login")]
        none: bool,
    },
    /// Give a person another role, effective on their next request.
    Role {
        #[arg(value_name = "NAME")]
        name: String,
        #[arg(value_name = "viewer|approver|admin")]
        role: String,
    },
}

fn role(raw: &str) -> anyhow::Result<Role> {
    raw.parse().map_err(|e: crate::domain::UnknownName| UsageError(e.to_string()).into())
}

pub async fn run(ctx: &Context, command: UsersCommand, as_json: bool) -> anyhow::Result<()> {
    match command {
        UsersCommand::Add { name, role: raw, github } => {
            if !valid_person_name(&name) {
                anyhow::bail!(UsageError(format!("{name:?} cannot be a name: a name is {PERSON_NAME_RULE}")));
            }
            let role = role(&raw)?;
            let token = new_token().ok_or_else(|| anyhow::anyhow!("no randomness for a personal token"))?;
            let mut user = ctx.store.add_user(&name, role, &token_sha256(&token), ctx.by()).await?;
            if let Some(login) = github.as_deref() {
                user = ctx.store.set_user_github(&name, Some(login), ctx.by()).await?;
            }
            let url = login_url(&ctx.config.web, &token);
            if as_json {
                return json(&serde_json::json!({ "user": user, "login_url": url, "token": token }));
            }
            say!(
                "{name} may use the dashboard as {role}. Their personal login (shown once; keep it private):"
            );
            say!("  {url}");
            say!("(Scripts send the token after `token=` as an Authorization bearer token.)");
        }
        UsersCommand::List => {
            let users = ctx.store.users().await?;
            if as_json {
                return json(&users);
            }
            if users.is_empty() {
                say!("no one yet: `executor users add NAME --role approver` lets a person in");
            }
            for u in users {
                let state = match u.revoked_at {
                    Some(at) => format!("revoked {}", at.format("%Y-%m-%d %H:%M")),
                    None => "active".into(),
                };
                let by = u.created_by.map(|b| format!(" by {b}")).unwrap_or_default();
                say!("{:<20} {:<9} {state}, added {}{by}", u.name, u.role, u.created_at.format("%Y-%m-%d"));
            }
        }
        UsersCommand::Revoke { name } => {
            let user = ctx.store.revoke_user(&name, ctx.by()).await?;
            if as_json {
                return json(&user);
            }
            say!("{name} can no longer use the dashboard (their sessions end with their next request)");
        }
        UsersCommand::Github { name, login, none: _ } => {
            let user = ctx.store.set_user_github(&name, login.as_deref(), ctx.by()).await?;
            if as_json {
                return json(&user);
            }
            match user.github_login {
                Some(l) => say!("{name} signs in with GitHub as {l}"),
                None => say!("{name} no longer signs in with GitHub"),
            }
        }
        UsersCommand::Role { name, role: raw } => {
            let user = ctx.store.set_user_role(&name, role(&raw)?, ctx.by()).await?;
            if as_json {
                return json(&user);
            }
            say!("{name} is now {}", user.role);
        }
    }
    Ok(())
}

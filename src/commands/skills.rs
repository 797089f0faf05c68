//! `agent skills`: what a run in this directory would load, from where, and why any
//! skill found was skipped; `--json` for scripts. The same discovery and flags as
//! `agent run` (`config::skills`), so `--strict-skills` fails here as it would there.

use serde::Serialize;

use crate::config::ProcessEnv;
use crate::config::cli::SkillsArgs;
use crate::config::skills::SkillsConfig;
use crate::error::{Error, ExitStatus};
use crate::skills::{Discovered, Scope, SkillRecord};
use crate::util::{output, text};

/// `agent skills --json`.
#[derive(Debug, Serialize)]
struct Listing<'a> {
    workspace: String,
    /// Every `SKILL.md` found, in precedence order.
    skills: Vec<Entry<'a>>,
    /// Every violation and skip, naming the file.
    warnings: &'a [String],
}

/// One skill found.
#[derive(Debug, Serialize)]
struct Entry<'a> {
    #[serde(flatten)]
    record: &'a SkillRecord,
    /// Loaded (not skipped).
    loaded: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    /// `disable-model-invocation`: not in the catalog, still a prompt command.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    hidden: bool,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    allowed_tools: &'a [String],
}

pub(crate) fn skills_command(args: &SkillsArgs) -> ExitStatus {
    let dir = args.cwd.clone().unwrap_or_else(|| ".".into());
    let workspace = match dir.canonicalize() {
        Ok(w) => w,
        Err(e) => {
            return output::usage_failure(&Error::Usage(format!("-C {}: {e}", dir.display())));
        }
    };
    let found = match SkillsConfig::discover(&args.skills, &workspace, &ProcessEnv) {
        Ok(d) => d,
        Err(e) => return output::usage_failure(&e),
    };
    let listing = listing(&workspace, &found);
    let out = if args.json {
        serde_json::to_string_pretty(&listing).unwrap_or_default() + "\n"
    } else {
        plain(&listing)
    };
    output::print_stdout(&out);
    ExitStatus::Success
}

fn listing<'a>(workspace: &std::path::Path, d: &'a Discovered) -> Listing<'a> {
    let skills = d
        .records
        .iter()
        .map(|r| {
            let loaded = r.skipped.is_none();
            let skill = loaded.then(|| d.get(&r.name)).flatten();
            Entry {
                record: r,
                loaded,
                description: skill.map(|s| s.meta.description.as_str()),
                hidden: skill.is_some_and(|s| s.meta.hidden),
                allowed_tools: skill.map_or(&[], |s| s.meta.allowed_tools.as_slice()),
            }
        })
        .collect();
    Listing {
        workspace: workspace.display().to_string(),
        skills,
        warnings: &d.warnings,
    }
}

/// For people: one line a skill (name, scope, path), its description, what it breaks.
fn plain(l: &Listing<'_>) -> String {
    let loaded = l.skills.iter().filter(|e| e.loaded).count();
    let mut s = format!(
        "{loaded} skills loaded, {} skipped ({})\n",
        l.skills.len() - loaded,
        l.workspace
    );
    let width = l
        .skills
        .iter()
        .map(|e| e.record.name.len())
        .max()
        .unwrap_or(0)
        .min(40);
    for e in &l.skills {
        let scope = match e.record.scope {
            Scope::Flag => "--skill",
            Scope::Project => "project",
            Scope::User => "user",
        };
        let mark = if e.loaded { " " } else { "-" };
        s.push_str(&format!(
            "{mark} {:width$}  {scope:8} {}\n",
            e.record.name, e.record.path
        ));
        if let Some(d) = e.description {
            s.push_str(&format!(
                "    {}\n",
                text::ellipsis(&d.replace('\n', " "), 110)
            ));
        }
        if let Some(why) = &e.record.skipped {
            s.push_str(&format!("    skipped: {why}\n"));
        }
        for w in &e.record.warnings {
            s.push_str(&format!("    warning: {w}\n"));
        }
    }
    s
}

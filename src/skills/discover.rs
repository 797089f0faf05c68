//! Finding skills, as the client-implementation guide says: the scopes' `skills` folders,
//! each walked for directories holding `SKILL.md` (bounded in depth and directories,
//! `.git` and `node_modules` skipped, no symbolic link followed out of its scope's root),
//! only each file's front matter read. Precedence: `--skill` folders, then the project's
//! (nearest folder first, up to the git root), then the user's; on a name clash the first
//! wins, with a warning naming both paths.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use super::parse::{self, MAX_FRONT_MATTER_BYTES};
use super::{Discovered, Scope, Skill, SkillRecord};

/// Levels below a `skills` folder searched for `SKILL.md` (the guide: 4 to 6).
const MAX_DEPTH: usize = 4;
/// Directories looked at under one `skills` folder (the guide: about 2,000): a huge tree
/// costs a bounded scan, and the rest is named in a warning.
pub(crate) const MAX_DIRS_PER_ROOT: usize = 2_000;
/// The project and user folders of skills, in the order they are looked at.
pub(crate) const SKILL_FOLDERS: &[&str] = &[".agents/skills", ".claude/skills"];

/// Where to look.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sources {
    /// The workspace (canonical).
    pub(crate) workspace: PathBuf,
    /// The user's home, for the user scope.
    pub(crate) home: Option<PathBuf>,
    /// `--skill DIR`: a skill or a folder of skills each.
    pub(crate) extra: Vec<PathBuf>,
    /// Project scope on (off: `--no-skills`).
    pub(crate) project: bool,
    /// User scope on (off: `--no-skills`, `--no-user-skills`, `agent github`, `agent batch`).
    pub(crate) user: bool,
    /// A pull request's changed files (relative to the workspace): a project skill holding
    /// one is the head branch's, untrusted, and is not loaded.
    pub(crate) untrusted_changes: Option<Vec<String>>,
}

/// A skill directory found, before its `SKILL.md` is read.
struct Candidate {
    /// As found (for people: `.claude/skills/pdf`).
    shown: PathBuf,
    /// Canonical.
    dir: PathBuf,
    scope: Scope,
}

/// Every skill the sources hold, loaded or skipped and why.
pub(crate) fn discover(src: &Sources) -> Discovered {
    let mut warnings = Vec::new();
    let mut candidates = Vec::new();
    for dir in &src.extra {
        let fence = dir.canonicalize().unwrap_or_else(|_| dir.clone());
        if dir.join("SKILL.md").is_file() {
            candidates.push(Candidate {
                shown: dir.clone(),
                dir: fence,
                scope: Scope::Flag,
            });
        } else {
            scan(dir, &fence, Scope::Flag, &mut candidates, &mut warnings);
        }
    }
    if src.project {
        let (bases, fence) = project_bases(&src.workspace);
        for base in bases {
            for folder in SKILL_FOLDERS {
                scan(
                    &base.join(folder),
                    &fence,
                    Scope::Project,
                    &mut candidates,
                    &mut warnings,
                );
            }
        }
    }
    if src.user
        && let Some(home) = &src.home
    {
        let fence = home.canonicalize().unwrap_or_else(|_| home.clone());
        for folder in SKILL_FOLDERS {
            scan(
                &home.join(folder),
                &fence,
                Scope::User,
                &mut candidates,
                &mut warnings,
            );
        }
    }
    load(candidates, src, warnings)
}

/// The workspace and each parent up to the git root (nearest first), and that root (the
/// fence no symbolic link may leave). Without a git root, the workspace alone.
fn project_bases(workspace: &Path) -> (Vec<PathBuf>, PathBuf) {
    let mut bases = Vec::new();
    let mut cur = Some(workspace);
    while let Some(dir) = cur {
        bases.push(dir.to_path_buf());
        if dir.join(".git").exists() {
            return (bases, dir.to_path_buf());
        }
        cur = dir.parent();
    }
    (vec![workspace.to_path_buf()], workspace.to_path_buf())
}

/// The skill directories under `root` (which need not exist), depth-first in name order.
fn scan(
    root: &Path,
    fence: &Path,
    scope: Scope,
    out: &mut Vec<Candidate>,
    warnings: &mut Vec<String>,
) {
    let Some(start) = inside(root, fence, warnings) else {
        return;
    };
    if !start.is_dir() {
        return;
    }
    let mut seen = 0usize;
    let mut full = false;
    let mut stack = vec![(root.to_path_buf(), start, 0usize)];
    while let Some((shown, dir, depth)) = stack.pop() {
        if full {
            break;
        }
        let Ok(read) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut names: Vec<_> = read.filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
        names.sort();
        let mut subdirs = Vec::new();
        for name in names {
            if name == ".git" || name == "node_modules" {
                continue;
            }
            if seen >= MAX_DIRS_PER_ROOT {
                warnings.push(format!(
                    "{}: stopped after {MAX_DIRS_PER_ROOT} directories; skills past them are not loaded",
                    root.display()
                ));
                full = true;
                break;
            }
            let link = shown.join(&name);
            let Some(target) = inside(&link, fence, warnings) else {
                continue;
            };
            if !target.is_dir() {
                continue;
            }
            seen += 1;
            subdirs.push((link, target));
        }
        let mut deeper = Vec::new();
        for (link, target) in subdirs {
            let file = target.join("SKILL.md");
            if file.is_file() && inside(&file, fence, warnings).is_some() {
                out.push(Candidate {
                    shown: link,
                    dir: target,
                    scope,
                });
            } else if depth + 1 < MAX_DEPTH {
                deeper.push((link, target, depth + 1));
            }
        }
        // Popped from the end: the first name is searched first.
        stack.extend(deeper.into_iter().rev());
    }
}

/// `path` resolved, when it stays inside `fence`; a symbolic link out of it is warned about.
fn inside(path: &Path, fence: &Path, warnings: &mut Vec<String>) -> Option<PathBuf> {
    let md = std::fs::symlink_metadata(path).ok()?;
    let target = path.canonicalize().ok()?;
    if target.starts_with(fence) {
        return Some(target);
    }
    if md.file_type().is_symlink() {
        warnings.push(format!(
            "{}: a symbolic link to {}, outside {}: not followed",
            path.display(),
            target.display(),
            fence.display()
        ));
    }
    None
}

/// Reads each candidate's front matter and settles name clashes.
fn load(candidates: Vec<Candidate>, src: &Sources, mut warnings: Vec<String>) -> Discovered {
    let mut skills: Vec<Skill> = Vec::new();
    let mut records = Vec::new();
    let mut by_name: BTreeMap<String, usize> = BTreeMap::new();
    let mut dirs = BTreeSet::new();
    for c in candidates {
        if !dirs.insert(c.dir.clone()) {
            continue; // the same directory through two folders (a linked `.claude/skills`)
        }
        let file = c.shown.join("SKILL.md");
        let mut record = SkillRecord {
            name: folder_name(&c.shown),
            path: file.display().to_string(),
            scope: c.scope,
            ..SkillRecord::default()
        };
        if let Some(reason) = untrusted(&c, src) {
            warnings.push(format!("{}: skipped: {reason}", file.display()));
            record.skipped = Some(reason);
            records.push(record);
            continue;
        }
        match read_skill(&c) {
            Err(reason) => {
                warnings.push(format!("{}: skipped: {reason}", file.display()));
                record.skipped = Some(reason);
            }
            Ok(parsed) => {
                for w in &parsed.warnings {
                    warnings.push(format!("{}: {w}", file.display()));
                }
                record.name = parsed.meta.name.clone();
                record.warnings = parsed.warnings.clone();
                match by_name.get(&parsed.meta.name) {
                    Some(&first) => {
                        let winner = &skills[first];
                        let reason = format!(
                            "shadowed by {} (same name; the {} scope wins)",
                            winner.file.display(),
                            winner.scope.as_str()
                        );
                        warnings.push(format!(
                            "skill `{}`: {} is shadowed by {} ({} scope wins)",
                            parsed.meta.name,
                            file.display(),
                            winner.file.display(),
                            winner.scope.as_str()
                        ));
                        record.skipped = Some(reason);
                    }
                    None => {
                        by_name.insert(parsed.meta.name.clone(), skills.len());
                        skills.push(Skill {
                            meta: parsed.meta,
                            dir: c.dir.clone(),
                            file: c.dir.join("SKILL.md"),
                            shown: file.clone(),
                            scope: c.scope,
                        });
                    }
                }
            }
        }
        records.push(record);
    }
    Discovered {
        skills,
        records,
        warnings,
    }
}

fn folder_name(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Why a project skill is the pull request's (its folder holds a file the head changes).
fn untrusted(c: &Candidate, src: &Sources) -> Option<String> {
    let changes = src.untrusted_changes.as_ref()?;
    if c.scope != Scope::Project {
        return None;
    }
    let rel = c.shown.strip_prefix(&src.workspace).ok()?;
    let rel = format!("{}/", rel.display());
    changes
        .iter()
        // A folder (ending in `/`) stands for every file under it.
        .find(|f| f.starts_with(&rel) || (f.ends_with('/') && rel.starts_with(f.as_str())))
        .map(|f| {
            format!(
                "the pull request changes {f}: a skill the head branch adds or changes is untrusted"
            )
        })
}

/// The front matter of `SKILL.md` (at most `MAX_FRONT_MATTER_BYTES` read), checked.
fn read_skill(c: &Candidate) -> Result<parse::Parsed, String> {
    let file =
        std::fs::File::open(c.dir.join("SKILL.md")).map_err(|e| format!("cannot read: {e}"))?;
    let mut head = Vec::new();
    file.take(MAX_FRONT_MATTER_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(|e| format!("cannot read: {e}"))?;
    let (yaml, _) = parse::split(&head)?;
    parse::front_matter(yaml, &folder_name(&c.shown))
}

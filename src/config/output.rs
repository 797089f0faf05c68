//! The output part of `Config`: what goes to stdout (`--json`, `--jsonl` or the answer),
//! `-o FILE`, stderr's verbosity and the saved outputs. Read by `commands::run` (logging,
//! events) and the finisher.

use std::path::Path;
use std::path::PathBuf;

use crate::config::cli::RunArgs;
use crate::config::env::Env;
use crate::error::Error;
use crate::otel::settings::OtelSettings;
use crate::util::output::Verbosity;

/// Where the run's results go, validated.
#[derive(Debug, Clone)]
pub(crate) struct OutputConfig {
    pub(super) json: bool,
    /// `--jsonl`: events on stdout instead of the text or the JSON document.
    pub(super) jsonl: bool,
    pub(super) output_file: Option<PathBuf>,
    /// `--trajectory FILE`: the run in ATIF as well (`record::atif`).
    pub(super) trajectory_file: Option<PathBuf>,
    pub(super) verbosity: Verbosity,
    /// `--keep-spill`: the saved outputs outlive the run (they always do with `-o`).
    pub(super) keep_spill: bool,
    /// OpenTelemetry export, from the `OTEL_*` variables and `--otel-content`.
    pub(super) otel: OtelSettings,
}

impl OutputConfig {
    pub(super) fn from_args(
        args: &RunArgs,
        env: &dyn Env,
        warnings: &mut Vec<String>,
    ) -> Result<Self, Error> {
        if let Some(out) = &args.output {
            check_output_file(out, "-o/--output")?;
        }
        if let Some(out) = &args.trajectory {
            check_output_file(out, "--trajectory")?;
        }
        let verbosity = if args.quiet {
            Verbosity::Quiet
        } else if args.verbose {
            Verbosity::Verbose
        } else {
            Verbosity::Normal
        };
        Ok(OutputConfig {
            json: args.json,
            jsonl: args.ci.jsonl,
            output_file: args.output.clone(),
            trajectory_file: args.trajectory.clone(),
            verbosity,
            keep_spill: args.keep_spill,
            otel: OtelSettings {
                content: args.ci.otel_content,
                ..OtelSettings::from_env(&|name| env.var(name), warnings)
            },
        })
    }

    pub(crate) fn json(&self) -> bool {
        self.json
    }
    pub(crate) fn jsonl(&self) -> bool {
        self.jsonl
    }
    pub(crate) fn output_file(&self) -> Option<&Path> {
        self.output_file.as_deref()
    }
    pub(crate) fn trajectory_file(&self) -> Option<&Path> {
        self.trajectory_file.as_deref()
    }
    pub(crate) fn verbosity(&self) -> Verbosity {
        self.verbosity
    }
    pub(crate) fn keep_spill(&self) -> bool {
        self.keep_spill
    }
    pub(crate) fn otel(&self) -> &OtelSettings {
        &self.otel
    }
}

/// `-o FILE` (and `--trajectory FILE`) must be writable at the end of the run, whatever
/// happens: a missing parent directory or a directory in its place is a usage error now,
/// not a lost transcript.
fn check_output_file(path: &Path, flag: &str) -> Result<(), Error> {
    let shown = path.display();
    if path.is_dir() {
        return Err(Error::Usage(format!(
            "{flag} {shown}: is a directory, not a file"
        )));
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        return Err(Error::Usage(format!(
            "{flag} {shown}: the directory {} does not exist",
            parent.display()
        )));
    }
    Ok(())
}

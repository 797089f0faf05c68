//! `agent export atif TRANSCRIPT [-o FILE]`: a transcript (or a killed run's `-o` file and
//! its journal) converted to an ATIF trajectory (`record::atif`), on stdout or into FILE.
//! Input that is not a transcript, a journal without a complete checkpoint, or a
//! transcript of an unknown version is a usage error (exit 2) naming the file.

use crate::config::cli::{ExportArgs, ExportFormat};
use crate::error::ExitStatus;
use crate::util::output;

pub(crate) fn export_command(args: &ExportArgs) -> ExitStatus {
    let ExportFormat::Atif(a) = &args.format;
    let name = a.transcript.display();
    let made = crate::commands::summary::read_transcript(&a.transcript)
        .and_then(|t| crate::record::atif::from_transcript(&t).map_err(|e| format!("{name}: {e}")));
    let trajectory = match made {
        Ok(t) => t,
        Err(e) => {
            output::error(&e);
            return ExitStatus::Usage;
        }
    };
    let text = trajectory.to_json();
    match &a.output {
        Some(path) => match output::write_file_atomic(path, text.as_bytes()) {
            Ok(()) => ExitStatus::Success,
            Err(e) => {
                output::error(&format!("cannot write -o {}: {e}", path.display()));
                ExitStatus::Failure
            }
        },
        None if output::print_stdout(&text) => ExitStatus::Success,
        None => ExitStatus::Failure,
    }
}

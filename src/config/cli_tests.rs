//! Unit tests of `cli.rs`.

use super::*;
use clap::CommandFactory;

fn run_command() -> clap::Command {
    let mut cli = Cli::command();
    cli.build();
    match cli.find_subcommand("run") {
        Some(run) => run.clone(),
        None => panic!("no run subcommand"),
    }
}

/// Every `agent run` flag sits in one of the sections, and the sections come in
/// `heading::ALL`'s order; `-h` gets one line per flag (the rest is `--help`'s).
#[test]
fn run_flags_are_in_sections_in_order_with_a_one_line_summary() {
    let run = run_command();
    let mut seen: Vec<&str> = Vec::new();
    for arg in run.get_arguments() {
        let id = arg.get_long().unwrap_or(arg.get_id().as_str());
        if arg.is_positional() || id == "help" {
            continue;
        }
        let heading = arg.get_help_heading();
        assert!(
            heading.is_some_and(|h| heading::ALL.contains(&h)),
            "--{id} is in no section: {heading:?}"
        );
        let heading = heading.unwrap_or_default();
        if !seen.contains(&heading) {
            seen.push(heading);
        }
        let short = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
        assert!(!short.is_empty(), "--{id} has no help");
        assert!(!short.contains('\n'), "--{id}'s -h text is not one line");
    }
    assert_eq!(seen, heading::ALL);
}

//! Fatal errors: the ways a run cannot even start, or must stop, each with its exit code.
//! Tool failures are not here: they are `ToolError`s and the run goes on.

/// A failure that ends the command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Error {
    /// A bad flag, variable or file named on the command line: exit 2, before any request.
    Usage(String),
}

impl Error {
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_) => 2,
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Usage(m) => f.write_str(m),
        }
    }
}

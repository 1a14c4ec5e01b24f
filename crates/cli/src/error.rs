//! Errors that end a command, with the exit status they map to.

use std::fmt;

/// Exit status 2: the input is wrong (spec, flags, files); 1: something failed while doing the work.
#[derive(Debug)]
pub struct CliError {
    pub status: i32,
    pub message: String,
}

impl CliError {
    pub fn input(message: impl Into<String>) -> CliError {
        CliError {
            status: 2,
            message: message.into(),
        }
    }

    pub fn failed(message: impl Into<String>) -> CliError {
        CliError {
            status: 1,
            message: message.into(),
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

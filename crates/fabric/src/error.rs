//! Why a spec cannot be built: [`BuildError`] names the spec field at fault and what is valid.

use std::fmt;

/// Why a spec cannot be built into a fabric: the spec field at fault and what is valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildError {
    pub field: String,
    pub message: String,
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for BuildError {}

pub(crate) fn err(field: &str, message: impl Into<String>) -> BuildError {
    BuildError {
        field: field.to_string(),
        message: message.into(),
    }
}

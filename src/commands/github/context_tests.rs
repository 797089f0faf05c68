//! Unit tests of `context.rs`.

use super::*;


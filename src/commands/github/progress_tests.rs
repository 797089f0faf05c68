//! Unit tests of `progress.rs`.

use super::*;


//! Unit tests of `api.rs`.

use super::*;


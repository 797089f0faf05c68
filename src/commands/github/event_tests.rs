//! Unit tests of `event.rs`.

use super::*;


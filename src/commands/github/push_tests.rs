//! Unit tests of `push.rs`.

use super::*;


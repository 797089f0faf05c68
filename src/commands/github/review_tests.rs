//! Unit tests of `review.rs`.

use super::*;


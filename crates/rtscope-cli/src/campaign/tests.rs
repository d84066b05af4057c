//! Unit tests of the campaign expansion.

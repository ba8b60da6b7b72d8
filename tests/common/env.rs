//! Sizes and counts that tests and benches take from the environment.

use std::str::FromStr;

/// The variable `name` parsed as `T`, or `default` when it is unset or does
/// not parse.
pub fn env_or<T: FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

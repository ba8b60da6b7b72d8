//! The examples' command line: `--flag value` pairs and bare `--switch`es,
//! read one at a time, each error naming its flag.

use std::fmt::Display;
use std::str::FromStr;

pub struct Flags {
    args: std::iter::Skip<std::env::Args>,
}

impl Flags {
    /// The program's arguments, without its name.
    pub fn from_env() -> Self {
        Self {
            args: std::env::args().skip(1),
        }
    }

    /// The next flag, or None at the end.
    pub fn next_flag(&mut self) -> Option<String> {
        self.args.next()
    }

    /// The value after `flag`.
    pub fn value(&mut self, flag: &str) -> Result<String, String> {
        self.args.next().ok_or(format!("{flag} needs a value"))
    }

    /// The value after `flag`, parsed.
    pub fn parsed<T: FromStr>(&mut self, flag: &str) -> Result<T, String>
    where
        T::Err: Display,
    {
        self.value(flag)?
            .parse()
            .map_err(|e| format!("{flag}: {e}"))
    }
}

//! The examples' command line: `--flag value` pairs and bare `--switch`es,
//! read one at a time, each error naming its flag.

use std::fmt::Display;
use std::str::FromStr;

pub struct Flags {
    args: std::vec::IntoIter<String>,
}

impl Flags {
    /// The program's arguments, without its name.
    #[allow(dead_code)] // gpu_msm reads them around its tuning flags
    pub fn from_env() -> Self {
        Self::from_args(std::env::args().skip(1).collect())
    }

    /// `args`, read as the command line.
    #[allow(dead_code)] // not every example that has flags uses it
    pub fn from_args(args: Vec<String>) -> Self {
        Self {
            args: args.into_iter(),
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

/// An example's end: its error printed and exit status 1, or nothing.
#[allow(dead_code)] // for the examples whose `run` returns a Result
pub fn exit_on_error<E: Display>(result: Result<(), E>) {
    if let Err(error) = result {
        eprintln!("error: {error}");
        std::process::exit(1);
    }
}

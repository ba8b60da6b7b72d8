//! porep_c2's report: rows printed as they come, then as one table.

use std::time::Duration;

/// Seconds, two decimals.
pub fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

/// The report's rows, in order, as (what, value).
#[derive(Default)]
pub struct Report(Vec<(String, String)>);

impl Report {
    pub fn row(&mut self, what: impl Into<String>, value: impl Into<String>) {
        let (what, value) = (what.into(), value.into());
        println!("{what}: {value}");
        self.0.push((what, value));
    }

    pub fn print(&self) {
        println!("\n| stage | measured |\n|---|---|");
        for (what, value) in &self.0 {
            println!("| {what} | {value} |");
        }
    }
}

/// Median and best of `times`.
pub fn best_and_median(mut times: Vec<Duration>) -> String {
    times.sort();
    format!(
        "best {}, median {} ({} runs)",
        secs(times[0]),
        secs(times[times.len() / 2]),
        times.len()
    )
}

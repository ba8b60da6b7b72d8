//! Whether a key fits the host's memory, asked before generating it: a
//! production key is tens of GB, and running out halfway kills the process
//! (the allocator aborts) where a refusal lets it go on with a smaller job.

use crate::Error;

/// Bytes of one G1 and one G2 affine point in memory.
const G1_BYTES: u64 = 96;
const G2_BYTES: u64 = 192;
/// Bytes of one scalar.
const SCALAR_BYTES: u64 = 32;

/// What generating a key for `m` domain points, `inputs` inputs and `aux`
/// aux variables holds at its peak, at most: every query at full length
/// (a and b as if every variable had a point) and the scalars in flight at
/// the largest of three moments: h made beside A at τ (h's scalars, the
/// Lagrange basis, A's column), b_g1 beside C at τ (the Lagrange basis,
/// the three columns, b's exponents), then beside l's exponents (the three
/// columns, b's exponents, l's).
pub(crate) fn key_generation_bytes(m: usize, inputs: usize, aux: usize) -> u64 {
    let (m, variables, aux) = (m as u64, (inputs + aux) as u64, aux as u64);
    let points = (m + aux + 2 * variables) * G1_BYTES + variables * G2_BYTES;
    let scalars = (2 * m + variables)
        .max(m + 4 * variables)
        .max(5 * variables)
        * SCALAR_BYTES;
    points + scalars
}

/// The host's available memory in bytes, where the system says
/// (Linux's MemAvailable); `None` elsewhere.
pub(crate) fn available_bytes() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line
        .trim_start_matches("MemAvailable:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// Err([`Error::OutOfHostMemory`]) when `needed` bytes for `what` exceed
/// what is `available` (an unknown amount lets it through).
pub(crate) fn ensure_fits(what: &str, needed: u64, available: Option<u64>) -> Result<(), Error> {
    match available {
        Some(available) if needed > available => Err(Error::OutOfHostMemory {
            what: what.to_owned(),
            needed,
            available,
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_larger_than_the_memory_is_refused_with_its_sizes() {
        // A 32 GiB PoRep partition's key: domain 2^27, ~130M variables.
        let needed = key_generation_bytes(1 << 27, 22, 130_000_000);
        assert!(needed > 50_000_000_000, "{needed}");
        let error = ensure_fits("a key", needed, Some(16 << 30)).unwrap_err();
        let text = error.to_string();
        assert!(text.contains(&needed.to_string()) && text.contains(&(16u64 << 30).to_string()));
        assert!(matches!(error, Error::OutOfHostMemory { .. }));
        ensure_fits("a key", needed, Some(needed)).unwrap();
        ensure_fits("a key", needed, None).unwrap();
    }

    #[test]
    fn the_peak_is_the_largest_moment_of_three() {
        let points = |m: u64, v: u64| (m + v + 2 * v) * G1_BYTES + v * G2_BYTES;
        let needed = |m: u64, v: u64| key_generation_bytes(m as usize, 0, v as usize);
        // Few variables over a large domain: h beside A at τ is the peak.
        let (m, v) = (1u64 << 20, 1000u64);
        assert_eq!(needed(m, v), points(m, v) + (2 * m + v) * SCALAR_BYTES);
        // As many variables as rows: b_g1 beside C at τ is.
        let v = m;
        assert_eq!(needed(m, v), points(m, v) + (m + 4 * v) * SCALAR_BYTES);
        // More variables than rows: l's moment is.
        let v = 2 * m;
        assert_eq!(needed(m, v), points(m, v) + 5 * v * SCALAR_BYTES);
    }

    #[test]
    fn this_hosts_memory_reads_where_the_system_says() {
        if cfg!(target_os = "linux") {
            assert!(available_bytes().is_some_and(|b| b > 0));
        }
    }
}

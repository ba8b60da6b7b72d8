//! The GPU prover's tuning from the command line, for sweeps: each flag
//! sets one field of the `ProverTuning` (and its `MsmTuning`) that the
//! example then passes to the library; unset, the library's choice stands.
//! The library itself reads no flag and no environment variable.

use groth16_gpu::backend::cuda::{G2FirstLevel, HStaging};
use groth16_gpu::groth16::gpu::{CopyShare, ProverTuning};

use crate::flags::Flags;

/// The tuning flags, for a usage line.
pub const USAGE: &str = "[--msm-window-bits C] [--msm-chunk-cap N] [--msm-first-block B] \
[--msm-first-level-threads T] [--msm-inline-pieces P] [--msm-segment S] \
[--msm-g2-first-level 1|2|3] [--msm-g2-whole-reduction] [--msm-phases] \
[--copy-bits BITS|G1BITS,G2BITS] [--copy-share spread|in-order] [--h-staging polynomials|rows]";

/// Reads `flag` (and its value, from `flags`) into `tuning` where it is a
/// tuning flag: Ok(true); Ok(false) for any other flag.
pub fn parse_tuning_flag(
    flag: &str,
    flags: &mut Flags,
    tuning: &mut ProverTuning,
) -> Result<bool, String> {
    let msm = &mut tuning.msm;
    match flag {
        "--msm-window-bits" => msm.window_bits = Some(flags.parsed(flag)?),
        "--msm-chunk-cap" => msm.chunk_cap = Some(flags.parsed(flag)?),
        "--msm-first-block" => msm.first_block = Some(flags.parsed(flag)?),
        "--msm-first-level-threads" => msm.first_level_threads = Some(flags.parsed(flag)?),
        "--msm-inline-pieces" => msm.inline_pieces = Some(flags.parsed(flag)?),
        "--msm-segment" => msm.segment = Some(flags.parsed(flag)?),
        "--msm-g2-first-level" => {
            let number = flags.parsed(flag)?;
            let layout = G2FirstLevel::from_number(number)
                .ok_or(format!("{flag} {number}: expected 1, 2 or 3"))?;
            msm.g2_first_level = Some(layout);
        }
        "--msm-g2-whole-reduction" => msm.g2_whole_reduction = true,
        "--msm-phases" => msm.phase_timing = true,
        "--copy-bits" => {
            let value = flags.value(flag)?;
            (tuning.copy_bits_g1, tuning.copy_bits_g2) = parse_copy_bits(&value)
                .ok_or(format!("{flag} {value}: expected BITS or G1BITS,G2BITS"))?;
        }
        "--copy-share" => {
            tuning.copy_share = match flags.value(flag)?.as_str() {
                "spread" => CopyShare::Spread,
                "in-order" => CopyShare::InOrder,
                other => return Err(format!("{flag} {other}: expected spread or in-order")),
            }
        }
        "--h-staging" => {
            tuning.h_staging = match flags.value(flag)?.as_str() {
                "polynomials" => HStaging::Polynomials,
                "rows" => HStaging::Rows,
                other => return Err(format!("{flag} {other}: expected polynomials or rows")),
            }
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// The tuning flags among `args`, and the other arguments in order.
#[allow(dead_code)] // for the examples that take positional arguments
pub fn split_tuning_flags(args: Vec<String>) -> Result<(ProverTuning, Vec<String>), String> {
    let mut flags = Flags::from_args(args);
    let mut tuning = ProverTuning::default();
    let mut rest = Vec::new();
    while let Some(flag) = flags.next_flag() {
        if !parse_tuning_flag(&flag, &mut flags, &mut tuning)? {
            rest.push(flag);
        }
    }
    Ok((tuning, rest))
}

/// `BITS` for both curves or `G1BITS,G2BITS`: the copy bits for G1 and G2;
/// None for anything else. The library refuses bits outside 4..=24.
fn parse_copy_bits(text: &str) -> Option<(Option<u32>, Option<u32>)> {
    let parsed: Vec<u32> = text
        .split(',')
        .map(|field| field.trim().parse().ok())
        .collect::<Option<_>>()?;
    match parsed.as_slice() {
        [both] => Some((Some(*both), Some(*both))),
        [g1, g2] => Some((Some(*g1), Some(*g2))),
        _ => None,
    }
}

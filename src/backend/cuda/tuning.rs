//! How a GPU MSM runs: [`MsmTuning`], a value passed with each call (never
//! read from the environment, never kept process-wide), and [`MsmRun`],
//! what a call reports it ran with. No setting changes a result, only its
//! speed or whether it fits.

use crate::bridge::ffi;
use crate::device::GpuError;
use crate::ffi_types::{g16_msm_report, g16_msm_tuning};

/// How the first bucket level of a G2 MSM holds its points; the levels
/// after it and the window reduction hold theirs whole with `WholePoints`,
/// over pairs of threads otherwise (unless
/// [`MsmTuning::g2_whole_reduction`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum G2FirstLevel {
    /// Each point whole in one thread.
    WholePoints = 1,
    /// Each point split over a pair of threads.
    Pairs = 2,
    /// The same held to 128 registers: the default.
    Pairs128 = 3,
}

impl G2FirstLevel {
    /// Every layout, the default last.
    pub const ALL: [G2FirstLevel; 3] = [Self::WholePoints, Self::Pairs, Self::Pairs128];

    /// The layout numbered `value` (1, 2 or 3, as the C++ side counts them).
    pub fn from_number(value: u32) -> Option<Self> {
        Self::ALL.into_iter().find(|layout| *layout as u32 == value)
    }
}

/// How one GPU MSM call cuts its work. `None` (and `false`) take the
/// built-in choice, so `MsmTuning::default()` runs every MSM as the library
/// chooses. A value out of its range makes the MSM an error before any
/// work ([`check`](Self::check) says so without a device). Results are the
/// same under every tuning; only the speed changes.
///
/// ```
/// use groth16_gpu::backend::cuda::{G2FirstLevel, MsmTuning};
/// let sweep = MsmTuning {
///     window_bits: Some(16),
///     g2_first_level: Some(G2FirstLevel::WholePoints),
///     ..MsmTuning::default()
/// };
/// assert!(sweep.check().is_ok());
/// assert!(MsmTuning { window_bits: Some(3), ..sweep }.check().is_err());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MsmTuning {
    /// Window bits, 4..=22, shifted copies of the bases left aside (`None`:
    /// chosen by the size, through the copies where the bases have them).
    pub window_bits: Option<u32>,
    /// Most points one chunk takes (`None`: as device memory and the
    /// 2^30-entry bound allow), so tests can run the multi-chunk path (how
    /// MSMs larger than free memory, or of 2^27 points, run) at small sizes.
    pub chunk_cap: Option<usize>,
    /// Sorted entries per first-level thread, 32..=4096 (`None`: grown from
    /// 32 while [`first_level_threads`](Self::first_level_threads) remain).
    pub first_block: Option<u32>,
    /// First-level threads kept as the blocks grow (`None`: 2^20, about 16
    /// waves); a low value runs the long blocks of 2^24-point MSMs at small
    /// sizes.
    pub first_level_threads: Option<usize>,
    /// Partial sums a bucket may hold when the window segments walk it,
    /// 1..=1024 (`None`: 8); more run a task level first.
    pub inline_pieces: Option<u32>,
    /// Buckets per window segment, a power of two in 4..=1024 (`None`: 32);
    /// shortened where too few segments would result.
    pub segment: Option<u32>,
    /// G2's first-level layout (`None`: [`G2FirstLevel::Pairs128`]).
    pub g2_first_level: Option<G2FirstLevel>,
    /// G2's task levels and window reduction whole even behind a pair
    /// first level (for a sweep's comparison).
    pub g2_whole_reduction: bool,
    /// Each chunk prints to stderr where its device time goes (upload,
    /// entries, sort, scans, first level, task levels, segments, rows).
    pub phase_timing: bool,
}

impl MsmTuning {
    /// An error where a value is out of its range (what an MSM with this
    /// tuning would refuse); needs no device.
    pub fn check(&self) -> Result<(), GpuError> {
        let tuning = self.to_ffi()?;
        // SAFETY: a pointer to a live g16_msm_tuning, read only.
        Ok(unsafe { ffi::check_msm_tuning(&tuning) }?)
    }

    /// The C layout: 0 for each setting left to the library. A
    /// setting of `Some(0)` is an error: 0 is the C side's "not set".
    pub(crate) fn to_ffi(self) -> Result<g16_msm_tuning, GpuError> {
        fn set<T: Copy + Default + PartialEq>(what: &str, value: Option<T>) -> Result<T, GpuError> {
            match value {
                Some(zero) if zero == T::default() => Err(GpuError::Native(format!(
                    "MSM tuning: {what} of 0 (leave it None for the built-in choice)"
                ))),
                value => Ok(value.unwrap_or_default()),
            }
        }
        Ok(g16_msm_tuning {
            window_bits: set("window bits", self.window_bits)?,
            first_block: set("first-level block", self.first_block)?,
            inline_pieces: set("inline pieces", self.inline_pieces)?,
            segment: set("segment", self.segment)?,
            g2_first_level: self.g2_first_level.map_or(0, |layout| layout as u32),
            g2_whole_reduction: u32::from(self.g2_whole_reduction),
            phase_timing: u32::from(self.phase_timing),
            chunk_cap: set("chunk cap", self.chunk_cap)? as u64,
            first_level_threads: set("first-level threads", self.first_level_threads)? as u64,
        })
    }
}

/// What one GPU MSM call ran with: its tuning with the built-in choices
/// filled in, and how the work was cut. Default (all zero) for a batch
/// addition, and for an MSM of no points.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MsmRun {
    /// The window bits c (each window's own width, copies or not).
    pub window_bits: u32,
    /// Copies of the bases the call went through (1: the points alone).
    pub copies: u32,
    /// Chunks the points ran in.
    pub chunks: u32,
    /// Points in a chunk (the last may hold fewer).
    pub chunk_points: usize,
    /// Sorted entries per first-level thread in the first chunk.
    pub first_block: u32,
    /// Partial sums a bucket could hold when the window segments walked it.
    pub inline_pieces: u32,
    /// Buckets per window segment.
    pub segment: u32,
    /// Most task levels a chunk ran.
    pub task_levels: u32,
    /// G2's first-level layout (`None` for G1).
    pub g2_first_level: Option<G2FirstLevel>,
    /// Whether the task levels and window reduction ran over thread pairs.
    pub pair_reduction: bool,
    /// Whether the chunks printed their phases.
    pub phase_timing: bool,
}

impl From<&g16_msm_report> for MsmRun {
    fn from(report: &g16_msm_report) -> Self {
        Self {
            window_bits: report.window_bits,
            copies: report.copies,
            chunks: report.chunks,
            chunk_points: usize::try_from(report.chunk_points).unwrap_or(usize::MAX),
            first_block: report.first_block,
            inline_pieces: report.inline_pieces,
            segment: report.segment,
            task_levels: report.task_levels,
            g2_first_level: G2FirstLevel::from_number(report.g2_first_level),
            pair_reduction: report.pair_reduction != 0,
            phase_timing: report.phase_timing != 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_all_zero_on_the_c_side() {
        assert_eq!(
            MsmTuning::default().to_ffi().unwrap(),
            g16_msm_tuning::default()
        );
        MsmTuning::default().check().unwrap();
    }

    #[test]
    fn every_setting_reaches_its_c_field() {
        let tuning = MsmTuning {
            window_bits: Some(12),
            chunk_cap: Some(5000),
            first_block: Some(64),
            first_level_threads: Some(100),
            inline_pieces: Some(16),
            segment: Some(8),
            g2_first_level: Some(G2FirstLevel::Pairs),
            g2_whole_reduction: true,
            phase_timing: true,
        };
        let c = tuning.to_ffi().unwrap();
        assert_eq!(
            (
                c.window_bits,
                c.chunk_cap,
                c.first_block,
                c.first_level_threads
            ),
            (12, 5000, 64, 100)
        );
        assert_eq!((c.inline_pieces, c.segment, c.g2_first_level), (16, 8, 2));
        assert_eq!((c.g2_whole_reduction, c.phase_timing), (1, 1));
        tuning.check().unwrap();
    }

    /// The C++ side's ranges, checked on the host (no device).
    #[test]
    fn values_out_of_range_are_refused() {
        let bad: [fn(&mut MsmTuning); 8] = [
            |t| t.window_bits = Some(3),
            |t| t.window_bits = Some(23),
            |t| t.first_block = Some(16),
            |t| t.first_block = Some(8192),
            |t| t.inline_pieces = Some(1025),
            |t| t.segment = Some(48),
            |t| t.segment = Some(2048),
            |t| t.chunk_cap = Some(0),
        ];
        for set in bad {
            let mut tuning = MsmTuning::default();
            set(&mut tuning);
            assert!(tuning.check().is_err(), "{tuning:?}");
        }
        for bits in [4, 20, 22] {
            let tuning = MsmTuning {
                window_bits: Some(bits),
                ..MsmTuning::default()
            };
            tuning.check().unwrap();
        }
    }

    #[test]
    fn g2_layouts_round_trip_through_their_numbers() {
        for layout in G2FirstLevel::ALL {
            assert_eq!(G2FirstLevel::from_number(layout as u32), Some(layout));
        }
        assert_eq!(G2FirstLevel::from_number(0), None);
        assert_eq!(G2FirstLevel::from_number(4), None);
    }
}

//! How the GPU prover runs: [`ProverTuning`], one value that a resident key
//! holds from its upload ([`GpuProvingKey::upload_tuned`]) or that a
//! streamed proof is given ([`prove_streamed_tuned`]). Nothing here reads
//! the environment or keeps settings process-wide: two keys (or two
//! streamed proofs) in one process may run with different tunings. The
//! defaults are the library's choices; no setting changes a proof.
//!
//! [`GpuProvingKey::upload_tuned`]: super::GpuProvingKey::upload_tuned
//! [`prove_streamed_tuned`]: super::prove_streamed_tuned

use crate::backend::cuda::{GpuCurve, HStaging, MsmTuning};

/// Sets of fewer points than this keep the library's copy bits whatever
/// [`ProverTuning::copy_bits_g1`] and [`ProverTuning::copy_bits_g2`] say.
const TUNED_COPY_BITS_FROM: usize = 1 << 20;

/// The GPU prover's tuning: how its MSMs run, how a proof's a, b, c go up,
/// how a key's shifted copies are made, and how a streamed proof cuts its
/// queries. `ProverTuning::default()` is the library's choice throughout.
///
/// ```
/// use groth16_gpu::backend::cuda::MsmTuning;
/// use groth16_gpu::groth16::gpu::{CopyShare, ProverTuning};
/// let sweep = ProverTuning {
///     msm: MsmTuning {
///         inline_pieces: Some(32),
///         ..MsmTuning::default()
///     },
///     copy_bits_g1: Some(22),
///     copy_share: CopyShare::InOrder,
///     ..ProverTuning::default()
/// };
/// assert_ne!(sweep, ProverTuning::default());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProverTuning {
    /// How every MSM of a proof runs (a resident key's base sets carry it).
    pub msm: MsmTuning,
    /// How a proof's a, b, c are staged through the key's pinned buffer.
    pub h_staging: HStaging,
    /// How a key's shifted copies are shared among its base sets when not
    /// all of them fit.
    pub copy_share: CopyShare,
    /// Window bits of the shifted copies of a key's G1 base sets of 2^20
    /// points or more (`None`: the library's choice; 4..=24, else that set
    /// keeps its points alone, with a warning).
    pub copy_bits_g1: Option<u32>,
    /// The same for the G2 set (b_g2).
    pub copy_bits_g2: Option<u32>,
    /// Points in each chunk of a streamed proof's queries (`None`: chosen
    /// from the device's free memory), so tests run many chunks, and chunks
    /// that do not divide a query, at small sizes.
    pub stream_chunk_points: Option<usize>,
    /// A streamed proof leaves its queries' scalars on the host (each
    /// chunk's share copied by the driver), as where the device has no room
    /// for them.
    pub stream_scalars_from_host: bool,
}

impl ProverTuning {
    /// The window bits named for the shifted copies of a set of `len` G
    /// points: None (the library's choice) below 2^20 points or where none
    /// are named for the curve.
    pub(super) fn copy_bits<G: GpuCurve>(&self, len: usize) -> Option<u32> {
        if len < TUNED_COPY_BITS_FROM {
            return None;
        }
        if G::IS_G2 {
            self.copy_bits_g2
        } else {
            self.copy_bits_g1
        }
    }
}

/// How copies are shared out among a key's sets when they do not all fit
/// ([`ProverTuning::copy_share`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CopyShare {
    /// A step at a time around the sets (the default). On an H100 at 2^24
    /// this gives all five sets 4 copies of 13, where `InOrder` gave b_g2
    /// and h 7 and the other three none. A set's first step is nearly all
    /// the gain (H100, 2^24 points, ms with 0 / 2 / 4 / 7 / 13 copies:
    /// G1 155.6 / 135.9 / 134.5 / 131.5 / 128.8, G2 410.9 / 357.7 / 349.3
    /// / 342.3 / 339.3; docs/NOTES-gpu.md).
    #[default]
    Spread,
    /// Each set as many as fit before the next gets any (before 2026-12-05;
    /// for comparisons).
    InOrder,
}

#[cfg(test)]
mod tests {
    use super::ProverTuning;
    use blstrs::{G1Affine, G2Affine};

    #[test]
    fn copy_bits_hold_for_large_sets_of_their_curve() {
        let tuning = ProverTuning {
            copy_bits_g1: Some(22),
            copy_bits_g2: Some(20),
            ..ProverTuning::default()
        };
        assert_eq!(tuning.copy_bits::<G1Affine>(1 << 20), Some(22));
        assert_eq!(tuning.copy_bits::<G2Affine>(1 << 24), Some(20));
        assert_eq!(tuning.copy_bits::<G1Affine>((1 << 20) - 1), None);
        let default = ProverTuning::default();
        assert_eq!(default.copy_bits::<G1Affine>(1 << 24), None);
        assert_eq!(default.copy_bits::<G2Affine>(1 << 24), None);
    }
}

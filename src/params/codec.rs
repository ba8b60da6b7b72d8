use blstrs::{G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;
use rayon::prelude::*;

use super::ParamsError;

pub(crate) const G1_BYTES: usize = 96;
pub(crate) const G2_BYTES: usize = 192;

/// How much to check of each point read from untrusted bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CheckMode {
    /// Well-formed encoding, on the curve, not the identity (cheap; bellperson's unchecked mode also rejects off-curve points).
    #[default]
    OnCurve,
    /// Also in the prime-order subgroup (a scalar multiplication per point).
    Subgroup,
}

/// A curve group as it appears in the `.params` layout.
pub(crate) trait EncodedPoint: Sized + Send + Sync + Copy {
    const BYTES: usize;
    fn decode(bytes: &[u8], mode: CheckMode) -> Result<Self, &'static str>;
    fn encode(&self) -> Vec<u8>;
}

macro_rules! encoded_point {
    ($affine:ty, $bytes:expr) => {
        impl EncodedPoint for $affine {
            const BYTES: usize = $bytes;

            fn decode(bytes: &[u8], mode: CheckMode) -> Result<Self, &'static str> {
                let raw: &[u8; $bytes] = bytes.try_into().map_err(|_| "has the wrong length")?;
                let point: Self = Option::from(<$affine>::from_uncompressed_unchecked(raw))
                    .ok_or("is not a valid uncompressed encoding")?;
                if !bool::from(point.is_on_curve()) {
                    return Err("is not on the curve");
                }
                if bool::from(point.is_identity()) {
                    return Err("is the point at infinity");
                }
                if mode == CheckMode::Subgroup && !bool::from(point.is_torsion_free()) {
                    return Err("is not in the prime-order subgroup");
                }
                Ok(point)
            }

            fn encode(&self) -> Vec<u8> {
                self.to_uncompressed().to_vec()
            }
        }
    };
}

encoded_point!(G1Affine, G1_BYTES);
encoded_point!(G2Affine, G2_BYTES);

/// Decodes consecutive points in parallel; `first_index` numbers them in errors.
pub(crate) fn decode_points<P: EncodedPoint>(
    bytes: &[u8],
    mode: CheckMode,
    section: &'static str,
    first_index: usize,
) -> Result<Vec<P>, ParamsError> {
    bytes
        .par_chunks_exact(P::BYTES)
        .enumerate()
        .map(|(i, chunk)| {
            P::decode(chunk, mode).map_err(|reason| ParamsError::InvalidPoint {
                section,
                index: first_index + i,
                reason,
            })
        })
        .collect()
}

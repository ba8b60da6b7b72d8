//! Fixed-base scalar multiplication for key generation: window tables of
//! one base, and the engines that multiply many scalars by it (the host's
//! cores, or a GPU with feature `cuda`).

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::PrimeField;
use group::prime::{PrimeCurve, PrimeCurveAffine};
use rayon::prelude::*;

use crate::backend::cpu::BatchAffine;
use crate::Error;

/// Scalars multiplied per parallel task on the host (then normalized together).
const TASK_LEN: usize = 1 << 10;
/// The widest window: 2^16 multiples a window (100 MiB of G1 tables, 200 of G2).
pub(crate) const MAX_WINDOW_BITS: usize = 16;

/// The window width that makes the fewest additions for `count` scalars:
/// the tables cost 2^w a window and every scalar one a window, so a 2^24
/// key takes 16 bits (half the additions of 8) and a test's small one 8.
pub(crate) fn window_bits_for(count: usize) -> usize {
    let additions = |w: usize| (Scalar::NUM_BITS as usize).div_ceil(w) * ((1 << w) + count);
    (4..=MAX_WINDOW_BITS)
        .min_by_key(|&w| additions(w))
        .unwrap_or(8)
}

/// Multiples of one base, one table a window, laid out flat:
/// `points[w · (2^bits − 1) + d − 1] = d · 2^(bits·w) · base`, so k·base is
/// one mixed addition a window (the layout the GPU takes as it is).
pub(crate) struct FixedBase<G: PrimeCurve> {
    bits: usize,
    points: Vec<G::Affine>,
}

impl<G: BatchAffine + Send + Sync> FixedBase<G>
where
    G::Affine: Send + Sync,
{
    /// Tables of `bits`-wide windows (1..=16).
    pub(crate) fn new(base: G, bits: usize) -> Self {
        let windows = (Scalar::NUM_BITS as usize).div_ceil(bits);
        let window_bases: Vec<G> = (0..windows)
            .scan(base, |b, _| {
                let current = *b;
                for _ in 0..bits {
                    *b = b.double();
                }
                Some(current)
            })
            .collect();
        // Every window's multiples in runs of RUN, each run on a thread of
        // its own from one scalar multiplication: the 16-bit tables of a
        // large key are a million points a group.
        const RUN: usize = 1 << 12;
        let row = (1usize << bits) - 1;
        let mut points = vec![G::Affine::identity(); windows * row];
        points
            .par_chunks_mut(row)
            .zip(window_bases.par_iter())
            .for_each(|(table, window_base)| {
                table
                    .par_chunks_mut(RUN)
                    .enumerate()
                    .for_each(|(run, out)| {
                        let first = (run * RUN + 1) as u64;
                        let mut multiple = *window_base * G::Scalar::from(first);
                        let mut multiples = Vec::with_capacity(out.len());
                        for _ in 0..out.len() {
                            multiples.push(multiple);
                            multiple += window_base;
                        }
                        G::batch_to_affine(&multiples, out);
                    })
            });
        Self { bits, points }
    }

    /// The window width.
    #[cfg(feature = "cuda")]
    pub(crate) fn bits(&self) -> usize {
        self.bits
    }

    /// Every window's multiples, flat (see the type's comment).
    #[cfg(any(test, feature = "cuda"))]
    pub(crate) fn points(&self) -> &[G::Affine] {
        &self.points
    }

    fn mul(&self, scalar: &Scalar) -> G {
        let repr = scalar.to_repr();
        let bytes = repr.as_ref();
        let row = (1 << self.bits) - 1;
        let mut acc = G::identity();
        for (w, table) in self.points.chunks(row).enumerate() {
            let digit = window_digit(bytes, w * self.bits, self.bits);
            if digit != 0 {
                acc += table[digit - 1];
            }
        }
        acc
    }

    /// `scalars[i] · base` for every scalar, on the host's cores.
    pub(crate) fn mul_many(&self, scalars: &[Scalar]) -> Vec<G::Affine> {
        let mut out = vec![G::Affine::identity(); scalars.len()];
        out.par_chunks_mut(TASK_LEN)
            .zip(scalars.par_chunks(TASK_LEN))
            .for_each(|(out, scalars)| {
                let points: Vec<G> = scalars.iter().map(|s| self.mul(s)).collect();
                G::batch_to_affine(&points, out);
            });
        out
    }
}

/// Bits `first..first + bits` (bits <= 16) of the little-endian `bytes`;
/// bits past the end read as zero.
fn window_digit(bytes: &[u8], first: usize, bits: usize) -> usize {
    let byte = first / 8;
    let mut word = 0u32;
    for (k, b) in bytes.iter().skip(byte).take(3).enumerate() {
        word |= u32::from(*b) << (8 * k);
    }
    ((word >> (first % 8)) & ((1 << bits) - 1)) as usize
}

/// Where a key's fixed-base multiplications run.
pub(crate) trait Multiplier {
    /// `scalars[i] · base` in G1 for `table`'s base.
    fn g1(
        &self,
        table: &FixedBase<G1Projective>,
        scalars: &[Scalar],
    ) -> Result<Vec<G1Affine>, Error>;
    /// `scalars[i] · base` in G2 for `table`'s base.
    fn g2(
        &self,
        table: &FixedBase<G2Projective>,
        scalars: &[Scalar],
    ) -> Result<Vec<G2Affine>, Error>;
}

/// The host's cores (blst through blstrs, rayon).
pub(crate) struct OnHost;

impl Multiplier for OnHost {
    fn g1(
        &self,
        table: &FixedBase<G1Projective>,
        scalars: &[Scalar],
    ) -> Result<Vec<G1Affine>, Error> {
        Ok(table.mul_many(scalars))
    }

    fn g2(
        &self,
        table: &FixedBase<G2Projective>,
        scalars: &[Scalar],
    ) -> Result<Vec<G2Affine>, Error> {
        Ok(table.mul_many(scalars))
    }
}

#[cfg(feature = "cuda")]
pub(crate) use gpu::OnDevice;

#[cfg(feature = "cuda")]
mod gpu {
    use parking_lot::Mutex;

    use super::*;
    use crate::backend::cuda::{fixed_base_mul, GpuCurve, PointStaging};
    use crate::device::DeviceGuard;

    /// Page-locked memory a key's points come back through: 64 MiB, two
    /// 8 MiB slots for each of the 4 threads that copy them on.
    const STAGING_BYTES: usize = 64 << 20;

    /// The guard's GPU, and the staging its queries share.
    pub(crate) struct OnDevice<'g, 'd> {
        guard: &'g DeviceGuard<'d>,
        staging: Mutex<PointStaging>,
    }

    impl<'g, 'd> OnDevice<'g, 'd> {
        pub(crate) fn new(guard: &'g DeviceGuard<'d>) -> Self {
            Self {
                guard,
                staging: Mutex::new(PointStaging::new(guard, STAGING_BYTES)),
            }
        }

        fn mul<G>(&self, table: &FixedBase<G>, scalars: &[Scalar]) -> Result<Vec<G::Affine>, Error>
        where
            G: BatchAffine + Send + Sync,
            G::Affine: GpuCurve<Curve = G>,
        {
            Ok(fixed_base_mul(
                self.guard,
                table.points(),
                table.bits() as u32,
                scalars,
                None,
                Some(&mut self.staging.lock()),
            )?)
        }
    }

    impl Multiplier for OnDevice<'_, '_> {
        fn g1(
            &self,
            table: &FixedBase<G1Projective>,
            scalars: &[Scalar],
        ) -> Result<Vec<G1Affine>, Error> {
            self.mul(table, scalars)
        }

        fn g2(
            &self,
            table: &FixedBase<G2Projective>,
            scalars: &[Scalar],
        ) -> Result<Vec<G2Affine>, Error> {
            self.mul(table, scalars)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;
    use group::{Curve, Group};
    use rand_core::OsRng;

    fn edge_and_random_scalars() -> Vec<Scalar> {
        let mut scalars = vec![
            Scalar::ZERO,
            Scalar::ONE,
            -Scalar::ONE,
            Scalar::from(u64::MAX),
            Scalar::from(1u64 << 16),
        ];
        scalars.extend((0..20).map(|_| Scalar::random(OsRng)));
        scalars
    }

    #[test]
    fn fixed_base_multiples_are_scalar_multiplications() {
        let g1 = G1Projective::random(OsRng);
        let scalars = edge_and_random_scalars();
        // Widths that divide 255 unevenly and evenly, narrow and the widest.
        for bits in [1, 4, 7, 8, 13, MAX_WINDOW_BITS] {
            let table = FixedBase::new(g1, bits);
            let expected: Vec<G1Affine> = scalars.iter().map(|s| (g1 * s).to_affine()).collect();
            assert_eq!(table.mul_many(&scalars), expected, "{bits}-bit windows");
        }
        let g2 = G2Projective::random(OsRng);
        let table = FixedBase::new(g2, 11);
        for s in &scalars {
            assert_eq!(table.mul(s), g2 * s);
        }
    }

    #[test]
    fn tables_lie_flat_window_after_window() {
        let base = G1Projective::random(OsRng);
        let table = FixedBase::new(base, 5);
        let row = (1 << 5) - 1;
        assert_eq!(table.points().len(), 51 * row);
        for (w, d) in [(0, 1), (0, 31), (3, 7), (50, 31)] {
            let expected = base * Scalar::from(d as u64) * Scalar::from(2u64).pow_vartime([5 * w]);
            assert_eq!(
                table.points()[w as usize * row + d - 1],
                expected.to_affine()
            );
        }
    }

    #[test]
    fn window_digits_read_little_endian_bits() {
        let bytes = [0b1010_1100u8, 0xff, 0x01];
        assert_eq!(window_digit(&bytes, 0, 8), 0b1010_1100);
        assert_eq!(window_digit(&bytes, 2, 4), 0b1011);
        assert_eq!(window_digit(&bytes, 4, 16), 0x1ffa);
        assert_eq!(window_digit(&bytes, 20, 16), 0, "past the end");
    }

    #[test]
    fn wide_windows_for_large_keys_only() {
        assert!(window_bits_for(100) <= 8);
        assert_eq!(window_bits_for(1 << 26), MAX_WINDOW_BITS);
        assert!(window_bits_for(1 << 18) > 8);
    }
}

//! Dividing one proof's l, a and b MSMs over devices that each hold the
//! whole key: every device takes a range of each MSM's bases, and the
//! partial sums are added. The first device also computes the H polynomial
//! and its MSM, so it takes a smaller share of the rest.

use blstrs::Scalar;

use super::split::{GeneralScalars, SplitScalars};

/// Relative device cost of one base, by what multiplies it: a bucket MSM
/// point in G1 is the unit (about 27 ns at 2^24 on an H200); G2 points cost
/// 3.5 times as much, a batch-added point (scalar 1) about a twentieth, and
/// each point of the H domain one MSM point plus its share of the NTTs.
/// Measured on one H200 (NOTES-msm.md, NOTES-gpu.md); only the ratios
/// matter.
pub(super) mod cost {
    pub const G1_GENERAL: f64 = 1.0;
    pub const G2_GENERAL: f64 = 3.5;
    pub const G1_ONE: f64 = 0.05;
    pub const G2_ONE: f64 = 0.15;
    pub const H_DOMAIN_POINT: f64 = 1.65;
}

impl SplitScalars {
    /// The device cost of this MSM at the given per-point costs.
    pub fn cost(&self, general: f64, one: f64) -> f64 {
        let general_count = match &self.general {
            GeneralScalars::Dense(values) => values.len(),
            GeneralScalars::Sparse { values, .. } => values.len(),
        };
        general_count as f64 * general + self.ones_count as f64 * one
    }

    /// The part of this MSM over the bases `first..end`; `first` is a
    /// multiple of 64 (a bitmap word's first bit) and `end <= len`.
    pub fn part(&self, first: usize, end: usize) -> ScalarsPart<'_> {
        debug_assert!(first % 64 == 0 && first <= end && end <= self.len);
        let general = match &self.general {
            GeneralScalars::Dense(values) => GeneralPart::Dense(&values[first..end]),
            GeneralScalars::Sparse { values, indices } => {
                // Indices ascend (the split keeps the witness's order).
                let from = indices.partition_point(|&i| (i as usize) < first);
                let to = indices.partition_point(|&i| (i as usize) < end);
                GeneralPart::Sparse {
                    values: &values[from..to],
                    indices: &indices[from..to],
                }
            }
        };
        let words = &self.ones[first / 64..end.div_ceil(64)];
        ScalarsPart {
            first,
            len: end - first,
            general,
            ones: words,
            // Bits past `end` in the last word are ignored by the batch
            // addition; they may only make it run for nothing.
            any_ones: words.iter().any(|&w| w != 0),
        }
    }
}

/// A range of one MSM's bases and the scalars that multiply them.
pub(super) struct ScalarsPart<'a> {
    /// The first base of the range.
    pub first: usize,
    /// Number of bases in the range.
    pub len: usize,
    pub general: GeneralPart<'a>,
    /// Bit i set where the scalar of base first + i is 1.
    pub ones: &'a [u64],
    pub any_ones: bool,
}

/// The general scalars of a part.
pub(super) enum GeneralPart<'a> {
    /// Scalar i multiplies base first + i.
    Dense(&'a [Scalar]),
    /// `values[k]` multiplies base `indices[k]` (absolute indices).
    Sparse {
        values: &'a [Scalar],
        indices: &'a [u32],
    },
}

/// Each device's share of the divided MSMs, as cumulative bounds in [0, 1]:
/// device d takes the fraction `bounds[d]..bounds[d + 1]` of every MSM.
/// The first device's share is cut so that its H work plus its share
/// matches the others' shares; with one device the share is everything.
pub(super) fn share_bounds(devices: usize, h_cost: f64, divided_cost: f64) -> Vec<f64> {
    let devices = devices.max(1);
    let mut bounds = Vec::with_capacity(devices + 1);
    bounds.push(0.0);
    if devices > 1 {
        let per_device = (h_cost + divided_cost) / devices as f64;
        let first = if divided_cost > 0.0 {
            ((per_device - h_cost) / divided_cost).clamp(0.0, 1.0 / devices as f64)
        } else {
            1.0 / devices as f64
        };
        let rest = (1.0 - first) / (devices - 1) as f64;
        for d in 1..devices {
            bounds.push(first + rest * (d - 1) as f64);
        }
    }
    bounds.push(1.0);
    bounds
}

/// The base range `first..end` of an MSM over `len` bases between two
/// share bounds; range starts are multiples of 64 (bitmap words), and the
/// last range ends at `len`.
pub(super) fn base_range(len: usize, from: f64, to: f64) -> (usize, usize) {
    let at = |bound: f64| -> usize {
        if bound >= 1.0 {
            len
        } else {
            ((bound * len as f64) as usize / 64 * 64).min(len)
        }
    };
    let first = at(from);
    (first, at(to).max(first))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::groth16::gpu::split::ScalarBuffers;
    use ff::Field;

    #[test]
    fn one_device_takes_everything() {
        assert_eq!(share_bounds(1, 5.0, 10.0), vec![0.0, 1.0]);
        assert_eq!(share_bounds(0, 5.0, 10.0), vec![0.0, 1.0]);
    }

    #[test]
    fn the_h_device_takes_less_so_the_totals_match() {
        // total 12 over two devices: device 0 has 2 of H, so 4 of the 10.
        let bounds = share_bounds(2, 2.0, 10.0);
        assert_eq!(bounds.len(), 3);
        assert!((bounds[1] - 0.4).abs() < 1e-12);
        // H alone outweighs a fair share: device 0 takes none of the rest.
        assert_eq!(share_bounds(3, 100.0, 10.0), vec![0.0, 0.0, 0.5, 1.0]);
        // Nothing to divide: equal shares.
        assert_eq!(share_bounds(2, 3.0, 0.0), vec![0.0, 0.5, 1.0]);
    }

    #[test]
    fn base_ranges_tile_the_bases_on_word_bounds() {
        for len in [0usize, 1, 63, 64, 65, 1000, 4096 + 7] {
            let bounds = share_bounds(3, 1.0, 7.0);
            let ranges: Vec<_> = bounds
                .windows(2)
                .map(|b| base_range(len, b[0], b[1]))
                .collect();
            assert_eq!(ranges[0].0, 0);
            assert_eq!(ranges.last().unwrap().1, len);
            for pair in ranges.windows(2) {
                assert_eq!(pair[0].1, pair[1].0, "len {len}: {ranges:?}");
            }
            for &(first, end) in &ranges {
                assert_eq!(first % 64, 0);
                assert!(first <= end);
            }
        }
    }

    /// Every scalar of a split MSM lands in exactly one part, as the right
    /// kind (general value, or a set bit), at its own base.
    #[test]
    fn parts_cover_each_scalar_once() {
        let buffers = ScalarBuffers::default();
        let mut rng = rand::thread_rng();
        for (len, general_every) in [(1000usize, 3usize), (4096 + 7, 1), (777, 1000)] {
            let scalars: Vec<Scalar> = (0..len)
                .map(|i| match i % 5 {
                    _ if i % general_every == 0 => Scalar::random(&mut rng),
                    0 | 1 => Scalar::ONE,
                    _ => Scalar::ZERO,
                })
                .collect();
            let split = SplitScalars::from_slice(&scalars, &buffers);
            let mut rebuilt = vec![Scalar::ZERO; len];
            let bounds = share_bounds(3, 1.0, 2.0);
            for b in bounds.windows(2) {
                let (first, end) = base_range(len, b[0], b[1]);
                let part = split.part(first, end);
                assert_eq!((part.first, part.len), (first, end - first));
                match part.general {
                    GeneralPart::Dense(values) => {
                        for (i, v) in values.iter().enumerate() {
                            rebuilt[first + i] += v;
                        }
                    }
                    GeneralPart::Sparse { values, indices } => {
                        for (v, &i) in values.iter().zip(indices) {
                            assert!((first..end).contains(&(i as usize)));
                            rebuilt[i as usize] += v;
                        }
                    }
                }
                for i in 0..part.len {
                    if part.ones[i / 64] >> (i % 64) & 1 == 1 {
                        rebuilt[first + i] += Scalar::ONE;
                    }
                }
            }
            assert_eq!(rebuilt, scalars, "len {len}, general every {general_every}");
        }
    }
}

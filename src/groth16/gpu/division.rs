//! Dividing one proof's l, a, b_g1 and b_g2 MSMs over devices that each
//! hold the whole key: a device takes whole MSMs or a range of one MSM's
//! bases, and the partial sums are added. The first device also computes
//! the H polynomial and its MSM, so it takes a smaller share of the rest.

use std::sync::atomic::{AtomicU64, Ordering};

use blstrs::Scalar;

use super::split::{GeneralScalars, SplitScalars};

/// Relative device cost of one base, by what multiplies it: a bucket MSM
/// point in G1 is the unit (about 27 ns at 2^24 on an H200); G2 points cost
/// 3.5 times as much, a batch-added point (scalar 1) about a twentieth, and
/// each point of the H domain one MSM point plus its share of the NTTs.
/// Measured on one H200 (docs/NOTES-msm.md, docs/NOTES-gpu.md); only the ratios
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
    /// multiple of 64 (a bitmap word's first bit) unless the part is empty,
    /// and `end <= len`.
    pub fn part(&self, first: usize, end: usize) -> ScalarsPart<'_> {
        debug_assert!((first % 64 == 0 || first == end) && first <= end && end <= self.len);
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
        let words = &self.ones[(first / 64).min(end.div_ceil(64))..end.div_ceil(64)];
        ScalarsPart {
            first,
            len: end - first,
            general,
            ones: words,
            // Bits past `end` in the last word are ignored by the batch
            // addition; they may only make it run for nothing.
            any_ones: first < end && words.iter().any(|&w| w != 0),
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

/// The cost units per second a device worked through on a key's last
/// split proof (0 until one is measured). The split scalars reach the lanes
/// after the H lane has started on the first device; the rate turns that
/// head start into the H work already done, so the first device is not
/// left idle at the end while the others finish.
#[derive(Default)]
pub(super) struct MeasuredRate(AtomicU64);

impl MeasuredRate {
    pub fn get(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::Relaxed))
    }

    /// Keeps `rate` if it is a positive number.
    pub fn set(&self, rate: f64) {
        if rate.is_finite() && rate > 0.0 {
            self.0.store(rate.to_bits(), Ordering::Relaxed);
        }
    }
}

/// The cost units of one device's shares.
pub(super) fn share_cost(shares: &[(f64, f64)], msm_costs: &[f64]) -> f64 {
    shares
        .iter()
        .zip(msm_costs)
        .map(|((from, to), cost)| (to - from) * cost)
        .sum()
}

/// Which part of each divided MSM every device takes: `plan[d][k]` is the
/// fraction range `from..to` of MSM k's bases on device d (empty where
/// `from == to`). The MSMs are laid end to end by cost and the line is cut
/// into one segment per device (McNaughton's wrap-around rule): an MSM that
/// lies inside a segment stays whole on one device, at most one MSM per cut
/// is divided (every part of an MSM repeats its bucket reduction, so fewer
/// parts waste less). The first device's segment is shorter by its H work.
pub(super) fn plan(devices: usize, h_cost: f64, msm_costs: &[f64]) -> Vec<Vec<(f64, f64)>> {
    let devices = devices.max(1);
    let total: f64 = msm_costs.iter().sum();
    let mut cuts = vec![0.0; devices + 1];
    if devices > 1 {
        let per_device = (h_cost + total) / devices as f64;
        let first = (per_device - h_cost).clamp(0.0, total);
        let rest = (total - first) / (devices - 1) as f64;
        for (d, cut) in cuts.iter_mut().enumerate().skip(1) {
            *cut = first + rest * (d - 1) as f64;
        }
    }
    cuts[devices] = total;
    let mut starts = Vec::with_capacity(msm_costs.len());
    let mut position = 0.0;
    for cost in msm_costs {
        starts.push(position);
        position += cost;
    }
    (0..devices)
        .map(|d| {
            msm_costs
                .iter()
                .zip(&starts)
                .map(|(&cost, &start)| {
                    let at = |cut: f64| -> f64 {
                        if cost > 0.0 {
                            ((cut - start) / cost).clamp(0.0, 1.0)
                        } else {
                            // Nothing to compute: whole on the first device.
                            1.0
                        }
                    };
                    let from = if d == 0 { 0.0 } else { at(cuts[d]) };
                    let to = if d + 1 == devices {
                        1.0
                    } else {
                        at(cuts[d + 1])
                    };
                    (from, to.max(from))
                })
                .collect()
        })
        .collect()
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

    /// Every MSM's parts tile 0..1 in device order.
    fn assert_tiles(plan: &[Vec<(f64, f64)>], msms: usize) {
        for k in 0..msms {
            assert_eq!(plan[0][k].0, 0.0);
            assert_eq!(plan.last().unwrap()[k].1, 1.0);
            for pair in plan.windows(2) {
                assert_eq!(pair[0][k].1, pair[1][k].0, "{plan:?}");
            }
            for device in plan {
                assert!(device[k].0 <= device[k].1);
            }
        }
    }

    #[test]
    fn one_device_takes_everything() {
        assert_eq!(
            plan(1, 5.0, &[1.0, 2.0]),
            vec![vec![(0.0, 1.0), (0.0, 1.0)]]
        );
        assert_eq!(plan(0, 5.0, &[1.0]), vec![vec![(0.0, 1.0)]]);
    }

    #[test]
    fn the_h_device_takes_less_and_only_cut_msms_are_divided() {
        // Four MSMs of 2, 2, 2 and 6 with H 4: 8 per device. Device 0 takes
        // 4 of the MSMs: the first two whole; device 1 the rest.
        let two = plan(2, 4.0, &[2.0, 2.0, 2.0, 6.0]);
        assert_eq!(
            two,
            vec![
                vec![(0.0, 1.0), (0.0, 1.0), (0.0, 0.0), (0.0, 0.0)],
                vec![(1.0, 1.0), (1.0, 1.0), (0.0, 1.0), (0.0, 1.0)],
            ]
        );
        // A cut inside the third MSM divides it alone.
        let cut = plan(2, 3.0, &[2.0, 2.0, 2.0, 6.0]);
        assert_eq!(cut[0][2], (0.0, 0.25));
        assert_eq!(cut[1][2], (0.25, 1.0));
        assert_tiles(&cut, 4);
        // H alone outweighs a fair share: device 0 takes none of the MSMs.
        let heavy = plan(3, 100.0, &[1.0, 9.0]);
        assert!(heavy[0].iter().all(|&(from, to)| from == to));
        assert_tiles(&heavy, 2);
        // Nothing to compute: whole on the first device.
        let empty = plan(2, 1.0, &[0.0, 0.0]);
        assert_eq!(empty[0], vec![(0.0, 1.0); 2]);
        assert_tiles(&empty, 2);
    }

    #[test]
    fn rates_are_kept_only_when_measured() {
        let rate = MeasuredRate::default();
        assert_eq!(rate.get(), 0.0);
        rate.set(f64::NAN);
        rate.set(-1.0);
        assert_eq!(rate.get(), 0.0);
        rate.set(3.5e7);
        assert_eq!(rate.get(), 3.5e7);
        assert_eq!(share_cost(&[(0.0, 1.0), (0.5, 1.0)], &[2.0, 4.0]), 4.0);
    }

    #[test]
    fn base_ranges_tile_the_bases_on_word_bounds() {
        let plan = plan(3, 1.0, &[3.0, 1.0, 3.0]);
        assert_tiles(&plan, 3);
        for len in [0usize, 1, 63, 64, 65, 1000, 4096 + 7] {
            for k in 0..3 {
                let ranges: Vec<_> = plan
                    .iter()
                    .map(|device| base_range(len, device[k].0, device[k].1))
                    .collect();
                assert_eq!(ranges[0].0, 0);
                assert_eq!(ranges.last().unwrap().1, len);
                for pair in ranges.windows(2) {
                    assert_eq!(pair[0].1, pair[1].0, "len {len}: {ranges:?}");
                }
                for &(first, end) in &ranges {
                    // Empty ranges may sit at an unaligned end.
                    assert!(first % 64 == 0 || first == end, "{ranges:?}");
                    assert!(first <= end);
                }
            }
        }
    }

    /// Every scalar of a split MSM lands in exactly one part, as the right
    /// kind (general value, or a set bit), at its own base.
    #[test]
    fn parts_cover_each_scalar_once() {
        let buffers = ScalarBuffers::default();
        let mut rng = rand::thread_rng();
        // Scalar i is general where i % period < general: a third (kept
        // sparse), all, about none, and three quarters (kept dense, its ones
        // zeroed and set as bits). The rest are ones and zeros.
        let cases = [
            (1000usize, 3usize, 1usize),
            (4096 + 7, 1, 1),
            (777, 1000, 1),
            (3000, 4, 3),
        ];
        for ((len, period, general), borrowed) in cases
            .into_iter()
            .flat_map(|case| [(case, true), (case, false)])
        {
            let scalars: Vec<Scalar> = (0..len)
                .map(|i| match i % 5 {
                    _ if i % period < general => Scalar::random(&mut rng),
                    0 | 1 => Scalar::ONE,
                    _ => Scalar::ZERO,
                })
                .collect();
            let split = if borrowed {
                SplitScalars::from_slice(&scalars, &buffers, len)
            } else {
                SplitScalars::from_vec(scalars.clone().into(), &buffers)
            };
            let dense = matches!(split.general, GeneralScalars::Dense(_));
            assert_eq!(dense, 2 * general >= period, "len {len}");
            let mut rebuilt = vec![Scalar::ZERO; len];
            for device in plan(3, 1.0, &[2.0]) {
                let (first, end) = base_range(len, device[0].0, device[0].1);
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
            assert_eq!(rebuilt, scalars, "len {len}, {general} in {period} general");
        }
    }
}

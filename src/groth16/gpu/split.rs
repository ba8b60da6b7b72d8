//! A proof's MSM scalars as the GPU takes them: the values 1, which
//! dominate real witnesses, become a bitmap for batch addition; the bucket
//! MSM takes the rest, only the full-field values with their base indices
//! where those are few, or every scalar in place (its ones zeroed).

use blstrs::Scalar;
use ff::Field;
use parking_lot::Mutex;
use rayon::prelude::*;

use super::split_bits::{low_bits, ranks_before, selected_bits, shifted_bits};
use crate::backend::cpu::msm::{class_of, is_general, ScalarClass};
use crate::backend::cuda::PinnedVec;
use crate::device::DeviceGuard;
use crate::synthesis::Density;

/// The scalars of one MSM that its bucket MSM takes.
pub(super) enum GeneralScalars {
    /// Scalar i multiplies base i: most scalars are general, and the few
    /// 0 and 1 among them cost less left in place than an index for every
    /// other value. Values 1 are zeroed here (their bit is set instead).
    /// The vector is one of the key's page-locked buffers where it could be.
    Dense(PinnedVec),
    /// A subset: `values[k]` multiplies base `indices[k]`. Real witnesses
    /// are mostly bits, and the bucket MSM's sort and upload then cover only
    /// the few full-field values.
    Sparse {
        values: Vec<Scalar>,
        indices: Vec<u32>,
    },
}

/// Scalars of one MSM, split.
pub(super) struct SplitScalars {
    pub general: GeneralScalars,
    /// Bit i set where scalar i is 1.
    pub ones: Vec<u64>,
    /// How many bits of `ones` are set.
    pub ones_count: usize,
    /// Number of scalars (= bases the MSM covers).
    pub len: usize,
}

/// Scalar vectors kept between a key's proofs: a proof's l, a and b scalars
/// take hundreds of MiB at 2^24, and fresh pages cost more to touch (the
/// kernel zeroes and maps each one) than the copy itself. Made page-locked
/// with the key, so that the MSMs' copies of them run on the copy engine
/// at the bus's speed instead of through the driver's staging on the lane
/// threads' cores, which the host's synthesis of the next circuit needs.
#[derive(Default)]
pub(super) struct ScalarBuffers(Mutex<Vec<PinnedVec>>);

impl ScalarBuffers {
    /// Buffers kept: three per proof, two proofs in flight.
    const KEEP: usize = 6;

    /// All the buffers two proofs in flight need, of `capacity` scalars
    /// each (the most any of a proof's vectors needs: its inputs and aux),
    /// page-locked for the guard's device (ordinary memory where refused).
    pub fn pinned(guard: &DeviceGuard<'_>, capacity: usize) -> Self {
        Self(Mutex::new(
            (0..Self::KEEP)
                .map(|_| PinnedVec::new(guard, capacity))
                .collect(),
        ))
    }

    /// An empty vector with room for `capacity` scalars: a kept one if one
    /// is free and large enough, else a new one of ordinary memory. Callers
    /// ask for the same capacity, so a kept buffer never moves to grow.
    pub fn take(&self, capacity: usize) -> PinnedVec {
        let mut kept = self.0.lock();
        match kept
            .iter()
            .rposition(|buffer| buffer.capacity() >= capacity)
        {
            Some(place) => kept.swap_remove(place),
            None => PinnedVec::from(Vec::with_capacity(capacity)),
        }
    }

    /// How many buffers are kept now.
    #[cfg(test)]
    pub fn kept(&self) -> usize {
        self.0.lock().len()
    }

    /// Keeps `buffer`'s allocation for a later proof.
    pub fn give(&self, mut buffer: PinnedVec) {
        buffer.clear();
        let mut kept = self.0.lock();
        if kept.len() < Self::KEEP && buffer.capacity() > 0 {
            kept.push(buffer);
        }
    }
}

impl SplitScalars {
    /// Splits the concatenation of `parts` (slices of the assignment, all of
    /// each taken: l's aux, or a's and b's inputs and aux where every
    /// variable is in the query). Where a sample of the first values says
    /// most are general, the copy into a reused buffer of `capacity`, the
    /// bitmap of ones and the zeroing of ones are one pass over the values
    /// instead of three (a 2^24 proof's b came 37 ms after its start, the
    /// GPU idle until then); otherwise the scan comes first, so that mostly
    /// bit-valued witnesses are not copied.
    pub fn from_parts(parts: &[&[Scalar]], buffers: &ScalarBuffers, capacity: usize) -> Self {
        if !sample_looks_dense(parts) {
            if let [only] = parts {
                return Self::from_slice(only, buffers, capacity);
            }
            let mut gathered = buffers.take(capacity);
            gathered.fill(|values| {
                for part in parts {
                    values.par_extend(part.par_iter().copied());
                }
            });
            return Self::from_vec(gathered, buffers);
        }
        let mut buffer = buffers.take(capacity);
        let scan = buffer.fill(|values| copy_and_scan(parts, values));
        let general = if scan.keeps_dense() {
            GeneralScalars::Dense(buffer)
        } else {
            // The sample misled: the copy (its ones zeroed) gives the rest.
            let sparse = sparse(&buffer);
            buffers.give(buffer);
            sparse
        };
        Self::new(general, scan.ones, scan.len)
    }

    /// Splits scalars borrowed from the assignment (l's: all of aux); they
    /// are copied, into a reused buffer of `capacity`, when most are general.
    pub fn from_slice(scalars: &[Scalar], buffers: &ScalarBuffers, capacity: usize) -> Self {
        let scan = scan(scalars);
        let general = if scan.keeps_dense() {
            let mut buffer = buffers.take(capacity);
            buffer.fill(|values| {
                values.par_extend(scalars.par_iter().map(|value| match class_of(value) {
                    ScalarClass::One => Scalar::ZERO,
                    _ => *value,
                }))
            });
            GeneralScalars::Dense(buffer)
        } else {
            sparse(scalars)
        };
        Self::new(general, scan.ones, scalars.len())
    }

    /// Splits scalars gathered in a buffer from `buffers`; the buffer is
    /// kept as the dense scalars (its ones zeroed), or given back.
    pub fn from_vec(mut scalars: PinnedVec, buffers: &ScalarBuffers) -> Self {
        let scan = scan(&scalars);
        let len = scalars.len();
        let general = if scan.keeps_dense() {
            if scan.ones.iter().any(|&word| word != 0) {
                scalars
                    .as_mut_slice()
                    .par_iter_mut()
                    .filter(|value| class_of(value) == ScalarClass::One)
                    .for_each(|value| *value = Scalar::ZERO);
            }
            GeneralScalars::Dense(scalars)
        } else {
            let sparse = sparse(&scalars);
            buffers.give(scalars);
            sparse
        };
        Self::new(general, scan.ones, len)
    }

    /// The split of this split's scalars from index `skip` on (l's, all of
    /// aux, from b's, inputs then aux), made from its bitmap and general
    /// values without a pass over the scalars: the same split as
    /// [`from_slice`](Self::from_slice) of those scalars. None where this
    /// split is dense, or the tail would be (its own pass then decides).
    pub fn tail_of(&self, skip: usize) -> Option<Self> {
        let GeneralScalars::Sparse { values, indices } = &self.general else {
            return None;
        };
        let len = self.len.checked_sub(skip)?;
        let first = indices.partition_point(|&i| (i as usize) < skip);
        if 2 * (indices.len() - first) >= len {
            return None;
        }
        // Tens of millions of values at 2^27: copied over the pool, not on
        // one thread (an indexed collect writes its pieces in place).
        let general = GeneralScalars::Sparse {
            values: values[first..].par_iter().copied().collect(),
            indices: indices[first..]
                .par_iter()
                .map(|&i| i - skip as u32)
                .collect(),
        };
        Some(Self::new(general, shifted_bits(&self.ones, skip, len), len))
    }

    /// The split of the first `head` scalars and then the rest that
    /// `density` selects (a's, inputs and selected aux, from b's, inputs
    /// and all aux), made from this split's bitmap and general values
    /// without a pass over the scalars: the same split as
    /// [`from_vec`](Self::from_vec) of those scalars gathered. None where
    /// this split is dense, the selection would be, or `density` does not
    /// cover the rest.
    pub fn selected_of(&self, head: usize, density: &Density) -> Option<Self> {
        let GeneralScalars::Sparse { values, indices } = &self.general else {
            return None;
        };
        let tail = self.len.checked_sub(head)?;
        if density.len() != tail {
            return None;
        }
        let words = density.words();
        let ranks = ranks_before(words);
        let place = |j: usize| -> Option<u32> {
            let (word, bit) = (words[j / 64], j % 64);
            let below = (word & low_bits(bit)).count_ones() as usize;
            (word >> bit & 1 == 1).then(|| (head + ranks[j / 64] + below) as u32)
        };
        let (values, indices): (Vec<Scalar>, Vec<u32>) = values
            .par_iter()
            .zip(indices.par_iter())
            .filter_map(|(value, &i)| match (i as usize).checked_sub(head) {
                None => Some((*value, i)),
                Some(j) => place(j).map(|at| (*value, at)),
            })
            .unzip();
        let len = head + density.total();
        if 2 * values.len() >= len {
            return None;
        }
        let ones = selected_bits(&self.ones, head, words, tail);
        Some(Self::new(
            GeneralScalars::Sparse { values, indices },
            ones,
            len,
        ))
    }

    fn new(general: GeneralScalars, ones: Vec<u64>, len: usize) -> Self {
        let ones_count = ones.iter().map(|w| w.count_ones() as usize).sum();
        Self {
            general,
            ones,
            ones_count,
            len,
        }
    }
}

/// What one pass over an MSM's scalars finds.
struct Scan {
    /// Bit i set where scalar i is 1.
    ones: Vec<u64>,
    general: usize,
    len: usize,
}

impl Scan {
    /// Whether the bucket MSM should take every scalar rather than the
    /// general ones with their indices: an index list as long as the
    /// scalars costs a gather of fresh memory on the host and an index per
    /// value on the device, for a few zeros skipped. Half is far from both
    /// kinds real witnesses come in (nearly all bits, or nearly all field
    /// elements).
    fn keeps_dense(&self) -> bool {
        2 * self.general >= self.len
    }
}

/// The bitmap of the scalars equal to 1, and how many scalars are general.
fn scan(scalars: &[Scalar]) -> Scan {
    let (ones, general): (Vec<u64>, Vec<usize>) = scalars
        .par_chunks(64)
        .map(|chunk| {
            let mut word = 0u64;
            let mut general = 0;
            for (i, value) in chunk.iter().enumerate() {
                match class_of(value) {
                    ScalarClass::One => word |= 1 << i,
                    ScalarClass::General => general += 1,
                    ScalarClass::Zero => {}
                }
            }
            (word, general)
        })
        .unzip();
    Scan {
        ones,
        general: general.iter().sum(),
        len: scalars.len(),
    }
}

/// Values a split samples, from the front, to guess whether most are general.
const DENSITY_SAMPLE: usize = 1 << 12;

/// Whether at least half of the first DENSITY_SAMPLE values of `parts` (all
/// of them, if fewer) are general.
fn sample_looks_dense(parts: &[&[Scalar]]) -> bool {
    let sampled = parts
        .iter()
        .flat_map(|part| part.iter())
        .take(DENSITY_SAMPLE);
    let (mut seen, mut general) = (0, 0);
    for value in sampled {
        seen += 1;
        general += usize::from(is_general(value));
    }
    2 * general >= seen
}

/// The values of `parts`, concatenated, from index `from` on.
fn concatenated_from<'a>(
    parts: &[&'a [Scalar]],
    mut from: usize,
) -> impl Iterator<Item = &'a Scalar> + 'a {
    let mut rest = Vec::with_capacity(parts.len());
    for part in parts {
        if from >= part.len() {
            from -= part.len();
        } else {
            rest.push(&part[from..]);
            from = 0;
        }
    }
    rest.into_iter().flatten()
}

/// Appends the values of `parts` to the empty `out` with the ones zeroed,
/// and scans them as [`scan`] does, in one parallel pass.
fn copy_and_scan(parts: &[&[Scalar]], out: &mut Vec<Scalar>) -> Scan {
    /// Values per task: 64 words of the bitmap.
    const BLOCK: usize = 64 * 64;
    assert!(out.is_empty(), "a split fills an empty buffer");
    let len: usize = parts.iter().map(|part| part.len()).sum();
    out.reserve(len);
    let mut ones = vec![0u64; len.div_ceil(64)];
    let general = out.spare_capacity_mut()[..len]
        .par_chunks_mut(BLOCK)
        .zip(ones.par_chunks_mut(BLOCK / 64))
        .enumerate()
        .map(|(block, (slots, words))| {
            let mut values = concatenated_from(parts, block * BLOCK);
            let mut general = 0;
            for (slots, word) in slots.chunks_mut(64).zip(words.iter_mut()) {
                for (bit, slot) in slots.iter_mut().enumerate() {
                    let value = *values.next().expect("as many values as slots");
                    let class = class_of(&value);
                    if class == ScalarClass::One {
                        *word |= 1 << bit;
                        slot.write(Scalar::ZERO);
                    } else {
                        general += usize::from(class == ScalarClass::General);
                        slot.write(value);
                    }
                }
            }
            general
        })
        .sum();
    // SAFETY: the chunks above cover out's first `len` spare slots and
    // wrote every one of them.
    unsafe { out.set_len(len) };
    Scan { ones, general, len }
}

/// The general scalars with their indices.
fn sparse(scalars: &[Scalar]) -> GeneralScalars {
    // Indices fit u32: a key's sections hold at most u32::MAX points (the
    // .params counts), and the assignment was checked against it.
    let (values, indices) = scalars
        .par_iter()
        .enumerate()
        .filter(|(_, value)| is_general(value))
        .map(|(i, value)| (*value, i as u32))
        .unzip();
    GeneralScalars::Sparse { values, indices }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    /// What a split holds, comparable: (dense values or sparse pairs, ones
    /// bitmap, ones count, len).
    type Shape = (
        Result<Vec<Scalar>, (Vec<Scalar>, Vec<u32>)>,
        Vec<u64>,
        usize,
        usize,
    );

    fn shape(split: &SplitScalars) -> Shape {
        let general = match &split.general {
            GeneralScalars::Dense(values) => Ok(values.to_vec()),
            GeneralScalars::Sparse { values, indices } => Err((values.clone(), indices.clone())),
        };
        (general, split.ones.clone(), split.ones_count, split.len)
    }

    /// The split of the gathered values by the scan-first path.
    fn gathered_split(parts: &[&[Scalar]], buffers: &ScalarBuffers) -> Shape {
        let gathered: Vec<Scalar> = parts.iter().flat_map(|part| part.iter().copied()).collect();
        shape(&SplitScalars::from_vec(PinnedVec::from(gathered), buffers))
    }

    /// General values with 0 and 1 sprinkled in (`special` of every 10).
    fn values(n: usize, special: u32, rng: &mut ChaCha20Rng) -> Vec<Scalar> {
        (0..n)
            .map(|_| match rng.gen_range(0..10) {
                k if k < special && k % 2 == 0 => Scalar::ZERO,
                k if k < special => Scalar::ONE,
                _ => Scalar::from(rng.gen::<u64>() | 2),
            })
            .collect()
    }

    #[test]
    fn one_pass_split_matches_the_scan_first_split() {
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let buffers = ScalarBuffers::default();
        // Blocks of 4096 across a part boundary that is not a multiple of 64,
        // a short last word, mostly general values and mostly bits.
        for (first, second, special) in [(3, 10_000, 2), (4097, 64, 3), (0, 130, 1), (65, 0, 0)] {
            let input = values(first, special, &mut rng);
            let aux = values(second, special, &mut rng);
            let parts: [&[Scalar]; 2] = [&input, &aux];
            let split = SplitScalars::from_parts(&parts, &buffers, first + second);
            assert!(matches!(split.general, GeneralScalars::Dense(_)));
            assert_eq!(
                shape(&split),
                gathered_split(&parts, &buffers),
                "{first} + {second}"
            );
        }
    }

    #[test]
    fn a_misleading_sample_still_splits_right() {
        let mut rng = ChaCha20Rng::seed_from_u64(8);
        let buffers = ScalarBuffers::default();
        // General at the front, bits behind: the one pass runs, and the
        // result is sparse.
        let mut front_general = values(DENSITY_SAMPLE, 0, &mut rng);
        front_general.extend(values(3 * DENSITY_SAMPLE, 10, &mut rng));
        // Bits at the front, general behind: the scan comes first, dense.
        let mut front_bits = values(DENSITY_SAMPLE, 10, &mut rng);
        front_bits.extend(values(3 * DENSITY_SAMPLE, 0, &mut rng));
        for (name, all, dense) in [
            ("front general", front_general, false),
            ("front bits", front_bits, true),
        ] {
            let (input, aux) = all.split_at(100);
            let parts: [&[Scalar]; 2] = [input, aux];
            let split = SplitScalars::from_parts(&parts, &buffers, all.len());
            assert_eq!(
                matches!(split.general, GeneralScalars::Dense(_)),
                dense,
                "{name}"
            );
            assert_eq!(shape(&split), gathered_split(&parts, &buffers), "{name}");
            // One part alone takes the borrowed-slice path when bits lead.
            let single = SplitScalars::from_parts(&[&all], &buffers, all.len());
            assert_eq!(
                shape(&single),
                gathered_split(&[&all], &buffers),
                "{name}, one part"
            );
        }
    }

    #[test]
    fn the_one_pass_split_reuses_a_kept_buffer() {
        let buffers = ScalarBuffers::default();
        buffers.give(PinnedVec::from(Vec::with_capacity(300)));
        let values: Vec<Scalar> = (2..202u64).map(Scalar::from).collect();
        let split = SplitScalars::from_parts(&[&values], &buffers, 300);
        assert_eq!(buffers.kept(), 0, "the kept buffer holds the split");
        let GeneralScalars::Dense(dense) = &split.general else {
            panic!("general values stay dense");
        };
        assert_eq!(dense.capacity(), 300);
        assert_eq!(&dense[..], &values[..]);
    }

    #[test]
    fn a_tail_split_from_the_whole_is_the_tails_own_split() {
        let mut rng = ChaCha20Rng::seed_from_u64(9);
        let buffers = ScalarBuffers::default();
        // Mostly bits, inputs of every length around a word.
        for (inputs, aux) in [(1, 200), (63, 64), (64, 130), (65, 1000), (0, 77)] {
            let all = values(inputs + aux, 9, &mut rng);
            let whole = SplitScalars::from_slice(&all, &buffers, all.len());
            let tail = whole
                .tail_of(inputs)
                .expect("a sparse split has sparse tails here");
            let own = SplitScalars::from_slice(&all[inputs..], &buffers, aux);
            assert_eq!(shape(&tail), shape(&own), "{inputs} + {aux}");
        }
        // A dense whole, or a tail that would be dense, is left to its own pass.
        let dense = values(500, 2, &mut rng);
        let whole = SplitScalars::from_slice(&dense, &buffers, dense.len());
        assert!(whole.tail_of(100).is_none());
        let mut head_bits = values(1000, 10, &mut rng);
        head_bits.extend(values(100, 0, &mut rng));
        let whole = SplitScalars::from_slice(&head_bits, &buffers, head_bits.len());
        assert!(matches!(whole.general, GeneralScalars::Sparse { .. }));
        assert!(whole.tail_of(1000).is_none());
        // An empty tail splits dense, as from_slice has it; none past the end.
        assert!(whole.tail_of(head_bits.len()).is_none());
        assert!(whole.tail_of(head_bits.len() + 1).is_none());
    }

    #[test]
    fn a_selection_split_from_the_whole_is_the_gathered_split() {
        let mut rng = ChaCha20Rng::seed_from_u64(10);
        let buffers = ScalarBuffers::default();
        for (head, tail, keep) in [(2, 300, 0.7), (63, 129, 0.5), (64, 64, 1.0), (0, 1000, 0.3)] {
            let all = values(head + tail, 9, &mut rng);
            let mut density = Density::with_len(tail);
            (0..tail)
                .filter(|_| rng.gen_bool(keep))
                .for_each(|j| density.mark(j));
            let whole = SplitScalars::from_slice(&all, &buffers, all.len());
            let selected = whole
                .selected_of(head, &density)
                .expect("a sparse split has sparse selections here");
            let chosen: Vec<Scalar> = density.select(&all[head..]).copied().collect();
            let parts: [&[Scalar]; 2] = [&all[..head], &chosen];
            assert_eq!(
                shape(&selected),
                gathered_split(&parts, &buffers),
                "{head} + {tail}, keeping {keep}"
            );
        }
        // A dense whole, a selection that would be dense, a density of
        // another length: each left to its own pass.
        let dense = values(500, 2, &mut rng);
        let whole = SplitScalars::from_slice(&dense, &buffers, dense.len());
        assert!(whole.selected_of(100, &Density::with_len(400)).is_none());
        let mut bits_then_general = values(1000, 10, &mut rng);
        bits_then_general.extend(values(100, 0, &mut rng));
        let whole = SplitScalars::from_slice(&bits_then_general, &buffers, 1100);
        let mut only_general = Density::with_len(1000);
        (900..1000).for_each(|j| only_general.mark(j));
        assert!(whole.selected_of(100, &only_general).is_none());
        assert!(whole.selected_of(100, &Density::with_len(999)).is_none());
    }
}

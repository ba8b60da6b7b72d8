//! A proof's MSM scalars as the GPU takes them: the values 1, which
//! dominate real witnesses, become a bitmap for batch addition; the bucket
//! MSM takes the rest, only the full-field values with their base indices
//! where those are few, or every scalar in place (its ones zeroed).

use blstrs::Scalar;
use ff::Field;
use parking_lot::Mutex;
use rayon::prelude::*;

use crate::backend::cpu::msm::is_general;
use crate::backend::cuda::PinnedVec;
use crate::device::DeviceGuard;

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
    /// Splits scalars borrowed from the assignment (l's: all of aux); they
    /// are copied, into a reused buffer of `capacity`, when most are general.
    pub fn from_slice(scalars: &[Scalar], buffers: &ScalarBuffers, capacity: usize) -> Self {
        let scan = scan(scalars);
        let general = if scan.keeps_dense() {
            let mut buffer = buffers.take(capacity);
            buffer.fill(|values| {
                values.par_extend(scalars.par_iter().map(|value| {
                    if *value == Scalar::ONE {
                        Scalar::ZERO
                    } else {
                        *value
                    }
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
                    .filter(|value| **value == Scalar::ONE)
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
                if *value == Scalar::ONE {
                    word |= 1 << i;
                } else if !bool::from(value.is_zero()) {
                    general += 1;
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

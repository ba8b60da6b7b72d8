//! A proof's MSM scalars as the GPU takes them: the values 0 and 1, which
//! dominate real witnesses, become a bitmap for batch addition; the rest go
//! to the bucket MSM, with their base indices where they are a subset.

use std::sync::atomic::{AtomicBool, Ordering};

use blstrs::Scalar;
use ff::Field;
use parking_lot::Mutex;
use rayon::prelude::*;

use crate::synthesis::Assignment;

/// The full-field scalars of one MSM (neither 0 nor 1).
pub(super) enum GeneralScalars {
    /// Every scalar is general: scalar i multiplies base i.
    Dense(Vec<Scalar>),
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

fn is_general(value: &Scalar) -> bool {
    !bool::from(value.is_zero()) && *value != Scalar::ONE
}

/// Scalar vectors kept between a key's proofs: a proof's l, a and b scalars
/// take hundreds of MiB at 2^24, and fresh pages cost more to touch (the
/// kernel zeroes and maps each one) than the copy itself.
#[derive(Default)]
pub(super) struct ScalarBuffers(Mutex<Vec<Vec<Scalar>>>);

impl ScalarBuffers {
    /// Buffers kept: three per proof, two proofs in flight.
    const KEEP: usize = 6;

    /// An empty vector, with the capacity of an earlier proof's if one is free.
    pub fn take(&self) -> Vec<Scalar> {
        self.0.lock().pop().unwrap_or_default()
    }

    /// Keeps `buffer`'s capacity for a later proof.
    pub fn give(&self, mut buffer: Vec<Scalar>) {
        buffer.clear();
        let mut kept = self.0.lock();
        if kept.len() < Self::KEEP && buffer.capacity() > 0 {
            kept.push(buffer);
        }
    }
}

impl SplitScalars {
    /// Splits scalars borrowed from the assignment (l's: all of aux); they
    /// are copied, into a reused buffer, only when every one is general.
    pub fn from_slice(scalars: &[Scalar], buffers: &ScalarBuffers) -> Self {
        let (ones, sparse) = split_off_ones(scalars);
        let general = sparse.unwrap_or_else(|| {
            let mut buffer = buffers.take();
            buffer.par_extend(scalars.par_iter().copied());
            GeneralScalars::Dense(buffer)
        });
        Self::new(general, ones, scalars.len())
    }

    /// Splits scalars gathered in a buffer from `buffers`; the buffer is
    /// kept as the dense general scalars, or given back.
    pub fn from_vec(scalars: Vec<Scalar>, buffers: &ScalarBuffers) -> Self {
        let (ones, sparse) = split_off_ones(&scalars);
        let len = scalars.len();
        let general = match sparse {
            Some(sparse) => {
                buffers.give(scalars);
                sparse
            }
            None => GeneralScalars::Dense(scalars),
        };
        Self::new(general, ones, len)
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

/// The bitmap of the scalars equal to 1 and, unless every scalar is
/// general, the general ones with their indices.
fn split_off_ones(scalars: &[Scalar]) -> (Vec<u64>, Option<GeneralScalars>) {
    // One pass for both: the bitmap, and whether any scalar is 0 or 1.
    let all_general = AtomicBool::new(true);
    let ones: Vec<u64> = scalars
        .par_chunks(64)
        .map(|chunk| {
            let mut word = 0u64;
            let mut general = true;
            for (i, value) in chunk.iter().enumerate() {
                if *value == Scalar::ONE {
                    word |= 1 << i;
                    general = false;
                } else if bool::from(value.is_zero()) {
                    general = false;
                }
            }
            if !general {
                all_general.store(false, Ordering::Relaxed);
            }
            word
        })
        .collect();
    if all_general.into_inner() {
        return (ones, None);
    }
    // Indices fit u32: a key's sections hold at most u32::MAX points (the
    // .params counts), and the assignment was checked against it.
    let (values, indices) = scalars
        .par_iter()
        .enumerate()
        .filter(|(_, value)| is_general(value))
        .map(|(i, value)| (*value, i as u32))
        .unzip();
    (ones, Some(GeneralScalars::Sparse { values, indices }))
}

/// The l, a and b scalars of a proof (b serves the G1 and the G2 query).
pub(super) struct ProofScalars {
    pub l: SplitScalars,
    pub a: SplitScalars,
    pub b: SplitScalars,
}

impl ProofScalars {
    pub fn of(assignment: &Assignment, buffers: &ScalarBuffers) -> Self {
        let (input, aux) = (&assignment.input, &assignment.aux);
        let ((l, a), b) = rayon::join(
            || {
                rayon::join(
                    || SplitScalars::from_slice(aux, buffers),
                    || {
                        let mut a = buffers.take();
                        a.extend_from_slice(input);
                        assignment.a_aux_density.par_select_into(aux, &mut a);
                        SplitScalars::from_vec(a, buffers)
                    },
                )
            },
            || {
                let mut b = buffers.take();
                assignment.b_input_density.par_select_into(input, &mut b);
                assignment.b_aux_density.par_select_into(aux, &mut b);
                SplitScalars::from_vec(b, buffers)
            },
        );
        Self { l, a, b }
    }

    /// Hands the dense vectors back to `buffers` for the next proof.
    pub fn recycle(self, buffers: &ScalarBuffers) {
        for split in [self.l, self.a, self.b] {
            if let GeneralScalars::Dense(values) = split.general {
                buffers.give(values);
            }
        }
    }
}

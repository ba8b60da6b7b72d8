//! A proof's MSM scalars as the GPU takes them: the values 0 and 1, which
//! dominate real witnesses, become a bitmap for batch addition; the rest go
//! to the bucket MSM, with their base indices where they are a subset.

use std::borrow::Cow;

use blstrs::Scalar;
use ff::Field;
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

impl SplitScalars {
    /// Borrowed scalars are copied only when every one of them is general.
    pub fn new(scalars: Cow<'_, [Scalar]>) -> Self {
        // Indices fit u32: a key's sections hold at most u32::MAX points
        // (the .params counts), and the assignment was checked against it.
        let len = scalars.len();
        let ones: Vec<u64> = scalars
            .par_chunks(64)
            .map(|chunk| {
                chunk
                    .iter()
                    .enumerate()
                    .filter(|(_, value)| **value == Scalar::ONE)
                    .fold(0u64, |word, (i, _)| word | 1 << i)
            })
            .collect();
        let ones_count = ones.iter().map(|w| w.count_ones() as usize).sum();
        let general_count = scalars.par_iter().filter(|v| is_general(v)).count();
        let general = if general_count == len {
            GeneralScalars::Dense(scalars.into_owned())
        } else {
            let (values, indices) = scalars
                .par_iter()
                .enumerate()
                .filter(|(_, value)| is_general(value))
                .map(|(i, value)| (*value, i as u32))
                .unzip();
            GeneralScalars::Sparse { values, indices }
        };
        Self {
            general,
            ones,
            ones_count,
            len,
        }
    }
}

/// The l, a and b scalars of a proof (b serves the G1 and the G2 query).
pub(super) struct ProofScalars {
    pub l: SplitScalars,
    pub a: SplitScalars,
    pub b: SplitScalars,
}

impl ProofScalars {
    pub fn of(assignment: &Assignment) -> Self {
        let (input, aux) = (&assignment.input, &assignment.aux);
        let ((l, a), b) = rayon::join(
            || {
                rayon::join(
                    || SplitScalars::new(Cow::Borrowed(aux)),
                    || {
                        let mut a = input.clone();
                        assignment.a_aux_density.par_select_into(aux, &mut a);
                        SplitScalars::new(Cow::Owned(a))
                    },
                )
            },
            || {
                let mut b = Vec::new();
                assignment.b_input_density.par_select_into(input, &mut b);
                assignment.b_aux_density.par_select_into(aux, &mut b);
                SplitScalars::new(Cow::Owned(b))
            },
        );
        Self { l, a, b }
    }
}

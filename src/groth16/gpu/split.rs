//! A proof's MSM scalars as the GPU takes them: the values 0 and 1, which
//! dominate real witnesses, become a bitmap for batch addition; the rest stay
//! in place for the bucket MSM (with 0 where a bit was taken).

use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use crate::synthesis::{Assignment, Density};

/// Scalars of one MSM, split.
pub(super) struct SplitScalars {
    /// Scalars other than 0 and 1, in place; 0 elsewhere.
    pub general: Vec<Scalar>,
    /// How many scalars of `general` are not 0.
    pub general_count: usize,
    /// Bit i set where scalar i is 1.
    pub ones: Vec<u64>,
    /// How many bits of `ones` are set.
    pub ones_count: usize,
}

impl SplitScalars {
    pub fn new(scalars: Vec<Scalar>) -> Self {
        let mut general = scalars;
        let ones: Vec<u64> = general
            .par_chunks_mut(64)
            .map(|chunk| {
                let mut word = 0u64;
                for (i, value) in chunk.iter_mut().enumerate() {
                    if *value == Scalar::ONE {
                        word |= 1 << i;
                        *value = Scalar::ZERO;
                    }
                }
                word
            })
            .collect();
        let ones_count = ones.iter().map(|w| w.count_ones() as usize).sum();
        let general_count = general
            .par_iter()
            .filter(|v| !bool::from(v.is_zero()))
            .count();
        Self {
            general,
            general_count,
            ones,
            ones_count,
        }
    }

    /// Number of scalars (= bases the MSM covers).
    pub fn len(&self) -> usize {
        self.general.len()
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
        let selected = |density: &Density, values: &[Scalar]| -> Vec<Scalar> {
            density.select(values).copied().collect()
        };
        let ((l, a), b) = rayon::join(
            || {
                rayon::join(
                    || SplitScalars::new(aux.clone()),
                    || {
                        let mut a = input.clone();
                        a.extend(selected(&assignment.a_aux_density, aux));
                        SplitScalars::new(a)
                    },
                )
            },
            || {
                let mut b = selected(&assignment.b_input_density, input);
                b.extend(selected(&assignment.b_aux_density, aux));
                SplitScalars::new(b)
            },
        );
        Self { l, a, b }
    }
}

use std::collections::HashMap;

use bellpepper_core::LinearCombination;
use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;

/// Marks a column as an aux variable; without it the column is an input.
const AUX_FLAG: u32 = 1 << 31;
/// Coefficient slot meaning "one": most coefficients are, and store no scalar.
const UNIT: u32 = u32::MAX;

/// One of A, B, C as sparse rows: a row per constraint, an entry per variable
/// with a non-zero coefficient. Columns are 32-bit (inputs, or aux with the top
/// bit set); coefficients are indices into a table of distinct constants, with
/// the common coefficient one stored as no scalar at all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SparseMatrix {
    row_starts: Vec<u64>,
    columns: Vec<u32>,
    coefficients: Vec<u32>,
    constants: Vec<Scalar>,
    constant_slots: HashMap<[u8; 32], u32>,
}

/// A variable as a column: an input or an aux index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Column {
    /// Public input `i` (0 is the constant one).
    Input(usize),
    /// Auxiliary variable `i`.
    Aux(usize),
}

impl SparseMatrix {
    /// An empty matrix.
    pub fn new() -> Self {
        Self {
            row_starts: vec![0],
            ..Self::default()
        }
    }

    /// Number of rows (constraints).
    pub fn num_rows(&self) -> usize {
        self.row_starts.len() - 1
    }

    /// Number of stored entries.
    pub fn num_entries(&self) -> usize {
        self.columns.len()
    }

    /// Appends a row from a linear combination, dropping zero coefficients.
    pub fn push_row(&mut self, lc: &LinearCombination<Scalar>) {
        for (&i, coeff) in lc.iter_inputs() {
            self.push_entry(i as u32, coeff);
        }
        for (&i, coeff) in lc.iter_aux() {
            self.push_entry(i as u32 | AUX_FLAG, coeff);
        }
        self.row_starts.push(self.columns.len() as u64);
    }

    /// Appends a row holding one input with coefficient one.
    pub fn push_unit_input_row(&mut self, input: usize) {
        self.columns.push(input as u32);
        self.coefficients.push(UNIT);
        self.row_starts.push(self.columns.len() as u64);
    }

    /// Appends an empty row.
    pub fn push_empty_row(&mut self) {
        self.row_starts.push(self.columns.len() as u64);
    }

    fn push_entry(&mut self, column: u32, coeff: &Scalar) {
        if bool::from(coeff.is_zero()) {
            return;
        }
        let slot = if *coeff == Scalar::ONE {
            UNIT
        } else {
            let constants = &mut self.constants;
            *self
                .constant_slots
                .entry(coeff.to_repr().into())
                .or_insert_with(|| {
                    constants.push(*coeff);
                    (constants.len() - 1) as u32
                })
        };
        self.columns.push(column);
        self.coefficients.push(slot);
    }

    /// The entries of row `row` as (variable, coefficient).
    pub fn row(&self, row: usize) -> impl Iterator<Item = (Column, Scalar)> + '_ {
        let (start, end) = (
            self.row_starts[row] as usize,
            self.row_starts[row + 1] as usize,
        );
        (start..end).map(move |k| (self.column(k), self.coefficient(k)))
    }

    fn column(&self, k: usize) -> Column {
        let c = self.columns[k];
        if c & AUX_FLAG != 0 {
            Column::Aux((c & !AUX_FLAG) as usize)
        } else {
            Column::Input(c as usize)
        }
    }

    fn coefficient(&self, k: usize) -> Scalar {
        match self.coefficients[k] {
            UNIT => Scalar::ONE,
            slot => self.constants[slot as usize],
        }
    }

    /// Largest input and aux index used, plus one: the counts a witness must reach.
    pub fn column_bounds(&self) -> (usize, usize) {
        let (mut inputs, mut aux) = (0, 0);
        for k in 0..self.columns.len() {
            match self.column(k) {
                Column::Input(i) => inputs = inputs.max(i + 1),
                Column::Aux(i) => aux = aux.max(i + 1),
            }
        }
        (inputs, aux)
    }

    /// Every row times the witness, in parallel over rows.
    pub fn multiply(&self, input: &[Scalar], aux: &[Scalar]) -> Vec<Scalar> {
        (0..self.num_rows())
            .into_par_iter()
            .with_min_len(1024)
            .map(|row| {
                let (start, end) = (
                    self.row_starts[row] as usize,
                    self.row_starts[row + 1] as usize,
                );
                let mut acc = Scalar::ZERO;
                for k in start..end {
                    let c = self.columns[k];
                    let value = if c & AUX_FLAG != 0 {
                        aux[(c & !AUX_FLAG) as usize]
                    } else {
                        input[c as usize]
                    };
                    acc += match self.coefficients[k] {
                        UNIT => value,
                        slot => value * self.constants[slot as usize],
                    };
                }
                acc
            })
            .collect()
    }

    /// Calls `visit(row, variable, coefficient)` for every entry.
    pub fn for_each_entry(&self, mut visit: impl FnMut(usize, Column, Scalar)) {
        for row in 0..self.num_rows() {
            for (column, coeff) in self.row(row) {
                visit(row, column, coeff);
            }
        }
    }
}

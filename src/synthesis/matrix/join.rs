//! Matrices of a circuit recorded in parts, joined into the matrix one
//! recording of the whole circuit makes.

use std::ops::Range;

use rayon::prelude::*;

use super::{SparseMatrix, AUX_FLAG, UNIT};

/// Where a part's own variables go in the joined circuit: variables below
/// the shared prefix's counts stay, the part's own move to its offsets.
#[derive(Clone, Copy, Debug)]
pub(in crate::synthesis) struct VariableShift {
    pub prefix_inputs: u32,
    pub prefix_aux: u32,
    pub input_offset: u32,
    pub aux_offset: u32,
}

impl VariableShift {
    fn column(&self, column: u32) -> u32 {
        if column & AUX_FLAG != 0 {
            let aux = column & !AUX_FLAG;
            if aux < self.prefix_aux {
                column
            } else {
                (aux - self.prefix_aux + self.aux_offset) | AUX_FLAG
            }
        } else if column < self.prefix_inputs {
            column
        } else {
            column - self.prefix_inputs + self.input_offset
        }
    }
}

impl SparseMatrix {
    /// The first `rows` rows, with the constants they use: a prefix of
    /// the table, which lists constants in the order rows first use them.
    pub(in crate::synthesis) fn first_rows(&self, rows: usize) -> SparseMatrix {
        let entries = self.row_starts[rows] as usize;
        let coefficients = self.coefficients[..entries].to_vec();
        let used = coefficients
            .iter()
            .filter(|&&slot| slot != UNIT)
            .map(|&slot| slot as usize + 1)
            .max()
            .unwrap_or(0);
        let mut kept = SparseMatrix {
            row_starts: self.row_starts[..=rows].to_vec(),
            columns: self.columns[..entries].to_vec(),
            coefficients,
            ..SparseMatrix::default()
        };
        for constant in &self.constants[..used] {
            kept.slot_of(constant);
        }
        kept
    }

    /// Appends `rows` of `part`, each column moved by `shift`. Constants new
    /// to this matrix join its table in the order `part` first used them:
    /// what recording those rows here would have made.
    pub(in crate::synthesis) fn append_rows(
        &mut self,
        part: &SparseMatrix,
        rows: Range<usize>,
        shift: VariableShift,
    ) {
        let slots = self.slots_for(part);
        let (first, last) = (
            part.row_starts[rows.start] as usize,
            part.row_starts[rows.end] as usize,
        );
        let base = self.columns.len() as u64 - first as u64;
        self.row_starts.extend(
            part.row_starts[rows.start + 1..=rows.end]
                .iter()
                .map(|&e| e + base),
        );
        self.columns.par_extend(
            part.columns[first..last]
                .par_iter()
                .map(|&c| shift.column(c)),
        );
        self.coefficients
            .par_extend(part.coefficients[first..last].par_iter().map(|&slot| {
                if slot == UNIT {
                    UNIT
                } else {
                    slots[slot as usize]
                }
            }));
    }

    /// This matrix's slot for each of `other`'s constants, adding those it
    /// lacks in `other`'s order.
    fn slots_for(&mut self, other: &SparseMatrix) -> Vec<u32> {
        other
            .constants
            .iter()
            .map(|constant| self.slot_of(constant))
            .collect()
    }

    /// Whether rows `rows` hold the same entries here and in `other`.
    pub(in crate::synthesis) fn rows_equal(
        &self,
        other: &SparseMatrix,
        rows: Range<usize>,
    ) -> bool {
        rows.clone().all(|row| self.row(row).eq(other.row(row)))
    }
}

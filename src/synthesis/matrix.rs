use std::collections::HashMap;

use bellpepper_core::LinearCombination;
use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;

use super::products::add_product;
use crate::backend::cpu::zeroed;

mod join;
pub(super) use join::VariableShift;

/// Marks a column as an aux variable; without it the column is an input.
const AUX_FLAG: u32 = 1 << 31;
/// Coefficient slot meaning "one": most coefficients are, and store no scalar.
const UNIT: u32 = u32::MAX;
/// Rows a block of [`SparseMatrix::transpose_times`] covers: a task reads a
/// block only where the block's mask says it holds the task's columns.
const MASK_ROWS: usize = 1 << 10;
/// A block mask's bit for input columns; aux ranges take the bits below.
const INPUT_SHIFT: usize = 63;
const INPUT_BIT: u64 = 1 << INPUT_SHIFT;
/// Input scalars the tasks of [`SparseMatrix::inputs_times`] hold in all,
/// at most (32 MiB).
const MAX_INPUT_COPY_SCALARS: usize = 1 << 20;

/// Aux columns a task of [`SparseMatrix::transpose_times`] owns: about two
/// tasks a thread, at least 2^12 columns, at most [`INPUT_SHIFT`] ranges
/// (a mask bit each).
fn aux_range_len(num_aux: usize) -> usize {
    let tasks = (2 * rayon::current_num_threads()).min(INPUT_SHIFT);
    num_aux.div_ceil(tasks).max(1 << 12)
}

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

    /// The matrix as it lies in memory, for a device copy: entry offsets
    /// (rows + 1, from 0), then per entry its column (input `i`, or aux `i`
    /// with bit 31 set) and coefficient slot (`u32::MAX` for one, else an
    /// index into `constants`).
    pub fn raw_parts(&self) -> (&[u64], &[u32], &[u32], &[Scalar]) {
        (
            &self.row_starts,
            &self.columns,
            &self.coefficients,
            &self.constants,
        )
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
            self.slot_of(coeff)
        };
        self.columns.push(column);
        self.coefficients.push(slot);
    }

    /// The table slot of a constant, added at the end where it is new.
    fn slot_of(&mut self, coeff: &Scalar) -> u32 {
        let constants = &mut self.constants;
        *self
            .constant_slots
            .entry(coeff.to_repr())
            .or_insert_with(|| {
                constants.push(*coeff);
                (constants.len() - 1) as u32
            })
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
            .map(|row| self.row_times(row, input, aux))
            .collect()
    }

    /// Row `row` times the witness.
    pub fn row_times(&self, row: usize, input: &[Scalar], aux: &[Scalar]) -> Scalar {
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
            match self.coefficients[k] {
                UNIT => acc += value,
                slot => add_product(&mut acc, &value, &self.constants[slot as usize]),
            }
        }
        acc
    }

    /// The matrix transposed times `weights` (one per row): per input and
    /// per aux variable, Σ over its entries of coefficient · `weights[row]`.
    /// In parallel without a dense copy a thread: each task owns a range of
    /// aux columns (the inputs one more) and reads only the blocks of rows
    /// whose entries touch its range (a key's QAP at τ, where a column's
    /// entries lie anywhere in the rows but mostly near each other).
    pub fn transpose_times(
        &self,
        weights: &[Scalar],
        num_inputs: usize,
        num_aux: usize,
    ) -> (Vec<Scalar>, Vec<Scalar>) {
        assert_eq!(weights.len(), self.num_rows(), "a weight per row");
        let range = aux_range_len(num_aux);
        let masks = self.block_masks(range);
        rayon::join(
            || self.inputs_times(weights, &masks, num_inputs),
            || {
                let mut aux = zeroed(num_aux);
                aux.par_chunks_mut(range).enumerate().for_each(|(k, out)| {
                    let (first, len) = (k * range, out.len());
                    self.accumulate(weights, &masks, 1 << k, out, |c| {
                        let i = (c & !AUX_FLAG) as usize;
                        (c & AUX_FLAG != 0 && i >= first && i < first + len).then(|| i - first)
                    })
                });
                aux
            },
        )
    }

    /// [`Self::transpose_times`]'s input columns: the blocks that hold an
    /// input dealt over rayon's threads, each summing into inputs of its
    /// own, then added up. One task took most of a key's QAP at τ where
    /// every row names an input (a constant term in C, say: 0.9 s of 2^24
    /// rows, each a multiplication by its own coefficient).
    fn inputs_times(&self, weights: &[Scalar], masks: &[u64], num_inputs: usize) -> Vec<Scalar> {
        let own = |c: u32| (c & AUX_FLAG == 0).then_some(c as usize);
        let blocks: Vec<usize> = (0..masks.len())
            .filter(|&b| masks[b] & INPUT_BIT != 0)
            .collect();
        // Each task's inputs are its own copy: a few tasks' worth where
        // the inputs are many.
        let copies = (MAX_INPUT_COPY_SCALARS / num_inputs.max(1)).max(1);
        let tasks = (2 * rayon::current_num_threads()).min(copies).max(1);
        blocks
            .par_chunks(blocks.len().div_ceil(tasks).max(1))
            .map(|blocks| {
                let mut inputs = vec![Scalar::ZERO; num_inputs];
                self.accumulate_blocks(weights, blocks.iter().copied(), &mut inputs, own);
                inputs
            })
            .reduce(
                || vec![Scalar::ZERO; num_inputs],
                |mut sum, part| {
                    sum.iter_mut().zip(part).for_each(|(s, p)| *s += p);
                    sum
                },
            )
    }

    /// Per block of [`MASK_ROWS`] rows, which column ranges its entries
    /// touch: bit k for aux columns k·`range`.., [`INPUT_BIT`] for inputs.
    fn block_masks(&self, range: usize) -> Vec<u64> {
        let rows = self.num_rows();
        (0..rows.div_ceil(MASK_ROWS))
            .into_par_iter()
            .map(|block| {
                let (first, last) = (block * MASK_ROWS, rows.min((block + 1) * MASK_ROWS));
                let entries = self.row_starts[first] as usize..self.row_starts[last] as usize;
                self.columns[entries].iter().fold(0, |mask, &c| {
                    mask | if c & AUX_FLAG != 0 {
                        // Clamped: a column past num_aux (no task owns it) stays below INPUT_BIT.
                        1 << (((c & !AUX_FLAG) as usize / range).min(INPUT_SHIFT - 1))
                    } else {
                        INPUT_BIT
                    }
                })
            })
            .collect()
    }

    /// `out[own(column)] += coefficient · weights[row]` for every entry whose
    /// column `own` maps into `out`, in the blocks whose mask has `bit`.
    fn accumulate(
        &self,
        weights: &[Scalar],
        masks: &[u64],
        bit: u64,
        out: &mut [Scalar],
        own: impl Fn(u32) -> Option<usize>,
    ) {
        let blocks = (0..masks.len()).filter(|&b| masks[b] & bit != 0);
        self.accumulate_blocks(weights, blocks, out, own);
    }

    /// [`Self::accumulate`] over the given blocks.
    fn accumulate_blocks(
        &self,
        weights: &[Scalar],
        blocks: impl Iterator<Item = usize>,
        out: &mut [Scalar],
        own: impl Fn(u32) -> Option<usize>,
    ) {
        for block in blocks {
            let rows = block * MASK_ROWS..weights.len().min((block + 1) * MASK_ROWS);
            for (row, weight) in rows.clone().zip(&weights[rows]) {
                self.accumulate_row(row, weight, out, &own);
            }
        }
    }

    /// [`Self::accumulate`] for one row's entries.
    fn accumulate_row(
        &self,
        row: usize,
        weight: &Scalar,
        out: &mut [Scalar],
        own: &impl Fn(u32) -> Option<usize>,
    ) {
        let (start, end) = (
            self.row_starts[row] as usize,
            self.row_starts[row + 1] as usize,
        );
        for k in start..end {
            if let Some(i) = own(self.columns[k]) {
                match self.coefficients[k] {
                    UNIT => out[i] += weight,
                    slot => add_product(&mut out[i], weight, &self.constants[slot as usize]),
                }
            }
        }
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

/// Little-endian binary form, for [`CircuitShape`](super::CircuitShape) files.
impl SparseMatrix {
    pub(super) fn write_to<W: std::io::Write>(&self, w: &mut W) -> std::io::Result<()> {
        for count in [self.num_rows(), self.columns.len(), self.constants.len()] {
            w.write_all(&(count as u64).to_le_bytes())?;
        }
        for v in &self.row_starts {
            w.write_all(&v.to_le_bytes())?;
        }
        for v in self.columns.iter().chain(&self.coefficients) {
            w.write_all(&v.to_le_bytes())?;
        }
        for c in &self.constants {
            w.write_all(c.to_repr().as_ref())?;
        }
        Ok(())
    }

    /// Reads and validates a matrix whose columns must lie below the given
    /// input and aux counts; `bytes` supplies exactly what is asked or fails.
    pub(super) fn read_from(
        bytes: &mut super::shape_file::ByteSource<'_>,
        num_inputs: usize,
        num_aux: usize,
    ) -> Result<Self, String> {
        let rows = bytes.count(8)?;
        // Each entry is a u32 column and a u32 coefficient slot.
        let entries = bytes.count(4 + 4)?;
        let constants = bytes.count(32)?;
        let row_starts = bytes.u64s(rows + 1)?;
        let columns = bytes.u32s(entries)?;
        let coefficients = bytes.u32s(entries)?;
        if row_starts.first() != Some(&0)
            || row_starts.last() != Some(&(entries as u64))
            || row_starts.windows(2).any(|w| w[0] > w[1])
        {
            return Err("row offsets are not increasing from 0 to the entry count".into());
        }
        for &c in &columns {
            let (index, bound) = if c & AUX_FLAG != 0 {
                ((c & !AUX_FLAG) as usize, num_aux)
            } else {
                (c as usize, num_inputs)
            };
            if index >= bound {
                return Err(format!("column {index} out of range {bound}"));
            }
        }
        if coefficients
            .iter()
            .any(|&k| k != UNIT && k as usize >= constants)
        {
            return Err("a coefficient names a missing constant".into());
        }
        let mut matrix = SparseMatrix {
            row_starts,
            columns,
            coefficients,
            ..SparseMatrix::default()
        };
        for _ in 0..constants {
            let repr: [u8; 32] = bytes.take(32)?.try_into().expect("32 bytes");
            let value: Scalar = Option::from(Scalar::from_repr(repr))
                .ok_or("a constant is not a canonical scalar")?;
            matrix
                .constant_slots
                .insert(repr, matrix.constants.len() as u32);
            matrix.constants.push(value);
        }
        Ok(matrix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellpepper_core::{Index, Variable};
    use rand_core::{OsRng, RngCore};

    /// Rows of a few entries anywhere among 3 inputs and `aux` aux
    /// variables, coefficients one or random.
    fn random_matrix(rows: usize, aux: usize) -> SparseMatrix {
        let mut rng = OsRng;
        let mut matrix = SparseMatrix::new();
        for _ in 0..rows {
            let mut lc = LinearCombination::zero();
            for _ in 0..(rng.next_u32() % 5) {
                let variable = if rng.next_u32() % 7 == 0 {
                    Variable(Index::Input((rng.next_u32() % 3) as usize))
                } else {
                    Variable(Index::Aux(rng.next_u32() as usize % aux))
                };
                let coeff = if rng.next_u32() % 2 == 0 {
                    Scalar::ONE
                } else {
                    Scalar::random(&mut rng)
                };
                lc = lc + (coeff, variable);
            }
            matrix.push_row(&lc);
        }
        matrix
    }

    /// transpose_times over 3 inputs and `aux` aux variables against the
    /// entry-by-entry sum.
    fn assert_transpose_sums_entries(matrix: &SparseMatrix, weights: &[Scalar], aux: usize) {
        assert_transpose_sums_entries_of(matrix, weights, 3, aux)
    }

    fn assert_transpose_sums_entries_of(
        matrix: &SparseMatrix,
        weights: &[Scalar],
        num_inputs: usize,
        aux: usize,
    ) {
        let (mut inputs, mut expected) = (vec![Scalar::ZERO; num_inputs], vec![Scalar::ZERO; aux]);
        matrix.for_each_entry(|row, column, coeff| match column {
            Column::Input(i) => inputs[i] += coeff * weights[row],
            Column::Aux(i) => expected[i] += coeff * weights[row],
        });
        let (got_inputs, got_aux) = matrix.transpose_times(weights, num_inputs, aux);
        assert!(got_inputs == inputs, "input columns differ");
        assert!(got_aux == expected, "aux columns differ");
    }

    #[test]
    fn transposed_inputs_sum_over_tasks_however_many_inputs() {
        // Every row names an input with a coefficient of its own (C's
        // constant terms): blocks dealt over tasks. Then more inputs than
        // the tasks' copies may hold: one task.
        for (rows, num_inputs) in [(20_000, 2), (3_000, MAX_INPUT_COPY_SCALARS + 1)] {
            let mut rng = OsRng;
            let mut matrix = SparseMatrix::new();
            for row in 0..rows {
                let input = rng.next_u32() as usize % num_inputs;
                let lc = LinearCombination::zero()
                    + (Scalar::from(row as u64 + 2), Variable(Index::Input(input)))
                    + (Scalar::ONE, Variable(Index::Aux(row)));
                matrix.push_row(&lc);
            }
            let weights: Vec<Scalar> = (0..rows).map(|_| Scalar::random(OsRng)).collect();
            assert_transpose_sums_entries_of(&matrix, &weights, num_inputs, rows);
        }
    }

    #[test]
    fn transposed_products_sum_every_entry_once() {
        let aux = 20_000;
        let matrix = random_matrix(30_000, aux);
        let weights: Vec<Scalar> = (0..matrix.num_rows())
            .map(|_| Scalar::random(OsRng))
            .collect();
        assert_transpose_sums_entries(&matrix, &weights, aux);
    }

    #[test]
    fn transposed_products_skip_only_blocks_without_a_tasks_columns() {
        // Each row's aux columns lie near its own index, with a far one now
        // and then: most blocks touch one or two tasks' ranges.
        let (rows, aux) = (100_000, 100_000);
        let mut rng = OsRng;
        let mut matrix = SparseMatrix::new();
        for row in 0..rows {
            let mut lc = LinearCombination::zero();
            for _ in 0..3 {
                let column = if rng.next_u32() % 20_000 == 0 {
                    rng.next_u32() as usize % aux
                } else {
                    (row + rng.next_u32() as usize % 64) % aux
                };
                lc = lc + (Scalar::random(&mut rng), Variable(Index::Aux(column)));
            }
            if row % 1000 == 0 {
                lc = lc + (Scalar::ONE, Variable(Index::Input(row % 3)));
            }
            matrix.push_row(&lc);
        }
        let weights: Vec<Scalar> = (0..rows).map(|_| Scalar::random(OsRng)).collect();
        assert_transpose_sums_entries(&matrix, &weights, aux);
        let masks = matrix.block_masks(aux / 8);
        let narrow = masks.iter().filter(|m| m.count_ones() <= 2).count();
        assert!(
            narrow > masks.len() / 2,
            "{narrow} of {} blocks",
            masks.len()
        );
    }
}

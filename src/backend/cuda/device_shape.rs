//! A circuit's A, B, C matrices resident on one device, and their rows
//! evaluated there against a proof's witness: a proof then sends only its
//! witness (a third of the bytes of a, b, c) and no host core evaluates a
//! row, where the host's evaluation of a 4M-constraint partition took about
//! 1.4 core-seconds.

use blstrs::Scalar;

use super::curve::as_words;
use super::device_scalars::DeviceScalars;
use super::h_inputs::HInputs;
use crate::backend::cpu::Domain;
use crate::bridge::ffi;
use crate::device::{DeviceGuard, GpuError};

/// One sparse matrix as it lies in memory (the layout of
/// `synthesis::SparseMatrix::raw_parts`): entry offsets per row (rows + 1,
/// from 0), then per entry its column (input `i`, or aux `i` with bit 31
/// set) and coefficient slot (`u32::MAX` for one, else an index into
/// `constants`).
#[derive(Clone, Copy, Debug)]
pub struct MatrixParts<'a> {
    /// Where each row's entries start, and the entry count last.
    pub row_starts: &'a [u64],
    /// Each entry's variable.
    pub columns: &'a [u32],
    /// Each entry's coefficient slot.
    pub coefficients: &'a [u32],
    /// The coefficients other than one.
    pub constants: &'a [Scalar],
}

/// From `(row_starts, columns, coefficients, constants)`, the order
/// `synthesis::SparseMatrix::raw_parts` gives them in.
impl<'a> From<(&'a [u64], &'a [u32], &'a [u32], &'a [Scalar])> for MatrixParts<'a> {
    fn from(
        (row_starts, columns, coefficients, constants): (
            &'a [u64],
            &'a [u32],
            &'a [u32],
            &'a [Scalar],
        ),
    ) -> Self {
        Self {
            row_starts,
            columns,
            coefficients,
            constants,
        }
    }
}

impl MatrixParts<'_> {
    fn rows(&self) -> Option<usize> {
        self.row_starts.len().checked_sub(1)
    }
}

/// A, B, C of one circuit shape in one device's memory; freed there on drop.
pub struct DeviceShape {
    handle: cxx::UniquePtr<ffi::DeviceShape>,
    rows: usize,
    inputs: usize,
    aux: usize,
}

// SAFETY: device pointers and plain data; its destructor selects its own
// device, and every launch that reads it goes through a DeviceGuard.
unsafe impl Send for DeviceShape {}
// SAFETY: shared references only read the plain data.
unsafe impl Sync for DeviceShape {}

impl DeviceShape {
    /// Copies A, B, C (rows over `inputs` inputs, the constant one first,
    /// and `aux` aux variables) to the guard's device, after checking every
    /// entry against those counts. An error, with nothing left allocated,
    /// when they are malformed or the device cannot hold them.
    pub fn upload(
        guard: &DeviceGuard<'_>,
        inputs: usize,
        aux: usize,
        matrices: [MatrixParts<'_>; 3],
    ) -> Result<Self, GpuError> {
        let rows = matrices[0].rows().unwrap_or(0);
        for m in &matrices {
            if m.rows() != Some(rows) || m.columns.len() != m.coefficients.len() {
                return Err(GpuError::Native(
                    "shape matrices of different row counts, or entries without coefficients"
                        .into(),
                ));
            }
        }
        let mut handle = ffi::new_device_shape(guard.ffi_device(), rows, inputs, aux)?;
        for (which, m) in matrices.iter().enumerate() {
            // SAFETY: each pointer covers the length passed with it (rows + 1
            // offsets, `entries` columns and slots, 4 words per constant);
            // the C++ side checks every value before the device reads one.
            unsafe {
                ffi::upload_shape_matrix(
                    guard.ffi_device(),
                    handle.pin_mut(),
                    which,
                    m.row_starts.as_ptr(),
                    m.columns.as_ptr(),
                    m.coefficients.as_ptr(),
                    m.columns.len(),
                    as_words(m.constants),
                    m.constants.len(),
                )
            }?;
        }
        Ok(Self {
            handle,
            rows,
            inputs,
            aux,
        })
    }

    /// Rows (constraints).
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Device bytes it holds.
    pub fn device_bytes(&self) -> usize {
        self.inner().shape_bytes()
    }

    /// The CUDA ordinal of the device that holds it.
    pub fn ordinal(&self) -> usize {
        self.inner().shape_ordinal()
    }

    /// A, B, C times the witness (`input` and `aux` values, on this device)
    /// as a proof's H inputs over `domain` (zero past the last row);
    /// `Ok(Err(row))` names the first row whose a·b differs from c.
    pub fn evaluate(
        &self,
        guard: &DeviceGuard<'_>,
        domain: &Domain,
        input: &DeviceScalars,
        aux: &DeviceScalars,
    ) -> Result<Result<HInputs, usize>, GpuError> {
        let m = domain.size();
        if self.rows > m || input.len() != self.inputs || aux.len() != self.aux {
            return Err(GpuError::Native(format!(
                "a shape of {} rows over {} inputs and {} aux variables evaluated over a \
                 domain of {m} with a witness of {} and {}",
                self.rows,
                self.inputs,
                self.aux,
                input.len(),
                aux.len()
            )));
        }
        let [a, b, c] = [(); 3].map(|()| DeviceScalars::upload(guard, &[], m));
        let (a, b, c) = (a?, b?, c?);
        let first_unsatisfied = ffi::evaluate_shape(
            guard.ffi_device(),
            self.inner(),
            input.inner(),
            aux.inner(),
            a.inner(),
            b.inner(),
            c.inner(),
        )?;
        Ok(if first_unsatisfied < self.rows {
            Err(first_unsatisfied)
        } else {
            Ok(HInputs::from_device(a, b, c))
        })
    }

    fn inner(&self) -> &ffi::DeviceShape {
        self.handle
            .as_ref()
            .expect("new_device_shape never returns null")
    }
}

/// The device's per-row steps run on the CPU (no GPU needed): every row of
/// `matrix` times the witness (`inputs` values, then the aux values). A
/// matrix that names a variable or constant it lacks is an error.
pub fn reference_matrix_rows(
    matrix: MatrixParts<'_>,
    witness: &[Scalar],
    inputs: usize,
) -> Result<Vec<Scalar>, GpuError> {
    let (Some(rows), true, Some(aux)) = (
        matrix.rows(),
        matrix.coefficients.len() == matrix.columns.len(),
        witness.len().checked_sub(inputs),
    ) else {
        return Err(GpuError::Native(
            "a shape matrix without offsets, entries without coefficients, or fewer witness \
             values than inputs"
                .into(),
        ));
    };
    let mut out = vec![Scalar::from(0u64); rows];
    // SAFETY: each pointer covers the length passed with it (rows + 1
    // offsets, as many columns as slots, `inputs + aux` witness values, one
    // output per row); the C++ side checks the offsets and every entry (as
    // the upload does) before it reads through them.
    unsafe {
        ffi::reference_matrix_rows(
            matrix.row_starts.as_ptr(),
            rows,
            matrix.columns.as_ptr(),
            matrix.coefficients.as_ptr(),
            matrix.columns.len(),
            as_words(matrix.constants),
            matrix.constants.len(),
            as_words(witness),
            inputs,
            aux,
            out.as_mut_ptr().cast::<u64>(),
        )
    }?;
    Ok(out)
}

/// The device's check run on the CPU: the first row whose a·b differs from
/// c, if any.
pub fn reference_first_unsatisfied(a: &[Scalar], b: &[Scalar], c: &[Scalar]) -> Option<usize> {
    let rows = a.len().min(b.len()).min(c.len());
    // SAFETY: each slice holds at least `rows` scalars of four words.
    let first =
        unsafe { ffi::reference_first_unsatisfied(as_words(a), as_words(b), as_words(c), rows) };
    (first < rows).then_some(first)
}

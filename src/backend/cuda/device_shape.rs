//! A circuit's A, B, C matrices resident on one device, and their rows
//! evaluated there against a proof's witness: a proof then sends only its
//! witness (a third of the bytes of a, b, c) and no host core evaluates a
//! row, where the host's evaluation of a 4M-constraint partition took about
//! 1.4 core-seconds.

use blstrs::Scalar;

use super::curve::as_words;
use super::device_scalars::{parallel_copy, DeviceScalars, HInputs, PinnedStaging, ScalarUploader};
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

    /// A, B, C times `witness` (its inputs then its aux values, on this
    /// device) as a proof's H inputs over `domain` (zero past the last row);
    /// `Ok(Err(row))` names the first row whose a·b differs from c.
    pub fn evaluate(
        &self,
        guard: &DeviceGuard<'_>,
        domain: &Domain,
        witness: &DeviceScalars,
    ) -> Result<Result<HInputs, usize>, GpuError> {
        let m = domain.size();
        if self.rows > m || witness.len() != self.inputs + self.aux {
            return Err(GpuError::Native(format!(
                "a shape of {} rows over {} variables evaluated over a domain of {m} \
                 with a witness of {}",
                self.rows,
                self.inputs + self.aux,
                witness.len()
            )));
        }
        let [a, b, c] = [(); 3].map(|()| DeviceScalars::upload(guard, &[], m));
        let (a, b, c) = (a?, b?, c?);
        let first_unsatisfied = ffi::evaluate_shape(
            guard.ffi_device(),
            self.inner(),
            witness.inner(),
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

/// A proof's witness (`parts`, the inputs then the aux values) joined in a
/// new buffer on the guard's device, sent through `staging` a piece at a
/// time: the cores copy the next piece there while the last crosses the
/// bus. With `staging` shorter than the witness, it goes joined in ordinary
/// memory. Returns once it has landed.
pub fn upload_witness(
    guard: &DeviceGuard<'_>,
    parts: &[&[Scalar]],
    staging: &mut PinnedStaging,
) -> Result<DeviceScalars, GpuError> {
    let total: usize = parts.iter().map(|part| part.len()).sum();
    if staging.len() < total {
        return DeviceScalars::upload(guard, &parts.concat(), total);
    }
    let to = DeviceScalars::upload(guard, &[], total)?;
    // Made after `to`: dropped first on an early return, waiting for the
    // copies still writing into it.
    let stream = ffi::new_upload_stream(guard.ffi_device())?;
    let stream = stream
        .as_ref()
        .expect("new_upload_stream never returns null");
    let piece = ScalarUploader::PIECE;
    for (k, staged) in staging.as_mut_slice()[..total]
        .chunks_mut(piece)
        .enumerate()
    {
        copy_joined(staged, parts, k * piece);
        // SAFETY: `staged` is pinned memory of staged.len() scalars that no
        // other piece uses, untouched until the stream is finished below (or
        // dropped, which waits for its copies); the C++ side checks the
        // device and the range of `to`.
        unsafe {
            ffi::queue_upload(
                guard.ffi_device(),
                stream,
                k % 2,
                staged.as_ptr().cast::<u64>(),
                staged.len(),
                to.inner(),
                k * piece,
            )
        }?;
    }
    ffi::finish_uploads(stream)?;
    Ok(to)
}

/// Fills `to` with the scalars of `parts`, joined, from scalar `first` on.
fn copy_joined(mut to: &mut [Scalar], parts: &[&[Scalar]], mut first: usize) {
    for part in parts {
        if to.is_empty() {
            return;
        }
        if first >= part.len() {
            first -= part.len();
            continue;
        }
        let n = to.len().min(part.len() - first);
        let (now, rest) = to.split_at_mut(n);
        parallel_copy(now, &part[first..first + n]);
        to = rest;
        first = 0;
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
    let rows = matrix.rows().unwrap_or(0);
    let offsets_fit = matrix.row_starts.first().is_none_or(|&first| first == 0)
        && matrix.row_starts.windows(2).all(|w| w[0] <= w[1])
        && matrix
            .row_starts
            .last()
            .is_none_or(|&last| last as usize == matrix.columns.len());
    let aux = witness.len().saturating_sub(inputs);
    let entries_fit = matrix.coefficients.len() == matrix.columns.len()
        && matrix
            .columns
            .iter()
            .zip(matrix.coefficients)
            .all(|(&column, &slot)| {
                let (index, bound) = if column & (1 << 31) != 0 {
                    ((column & !(1 << 31)) as usize, aux)
                } else {
                    (column as usize, inputs.min(witness.len()))
                };
                index < bound && (slot == u32::MAX || (slot as usize) < matrix.constants.len())
            });
    if !offsets_fit || !entries_fit {
        return Err(GpuError::Native(
            "a shape matrix naming a variable or constant it lacks".into(),
        ));
    }
    let mut out = vec![Scalar::from(0u64); rows];
    // SAFETY: checked above: the offsets run from 0 to the entry count, and
    // every entry names a witness value and a constant that exist; `out`
    // holds one scalar per row.
    unsafe {
        ffi::reference_matrix_rows(
            matrix.row_starts.as_ptr(),
            rows,
            matrix.columns.as_ptr(),
            matrix.coefficients.as_ptr(),
            as_words(matrix.constants),
            as_words(witness),
            inputs,
            out.as_mut_ptr().cast::<u64>(),
        )
    };
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

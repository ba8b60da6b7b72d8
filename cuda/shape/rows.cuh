// A recorded shape's rows times a witness, as __host__ __device__ steps:
// the device kernels (device_shape.cu) and the host reference run exactly
// these, so host tests check the arithmetic the GPU runs.
//
// A matrix is src/synthesis/matrix.rs's SparseMatrix as it lies in memory:
// entry offsets per row, each entry's column (input i, or aux i with bit 31
// set) and coefficient slot (kUnit for one, else an index into the
// constants). Witness values and constants are blstrs Scalars (Montgomery).
#pragma once

#include "../ff/bls12_381.cuh"

namespace groth16_gpu {
namespace shape {

using ff::Fr;

/// Bit 31 of a column: an aux variable.
constexpr uint32_t kAux = 1u << 31;
/// The coefficient slot that stands for one (no stored scalar).
constexpr uint32_t kUnit = 0xffffffffu;

/// One matrix, by pointers into memory the caller owns.
struct MatrixView {
  const uint64_t* row_starts;
  const uint32_t* columns;
  const uint32_t* coefficients;
  const Fr* constants;
};

/// The witness: inputs (0 is the constant one), then aux.
struct WitnessView {
  const Fr* input;
  const Fr* aux;
};

/// Entry k's coefficient times its variable's value.
G16_HD Fr entry_value(const MatrixView& m, const WitnessView& w, uint64_t k) {
  uint32_t column = m.columns[k];
  Fr value = (column & kAux) ? w.aux[column & ~kAux] : w.input[column];
  uint32_t slot = m.coefficients[k];
  return slot == kUnit ? value : value * m.constants[slot];
}

/// Entries [first, end) of one row, every `stride`-th from `first`, summed.
G16_HD Fr entries_sum(const MatrixView& m, const WitnessView& w, uint64_t first, uint64_t end,
                      uint64_t stride) {
  Fr acc = Fr::zero();
  for (uint64_t k = first; k < end; k += stride) acc = acc + entry_value(m, w, k);
  return acc;
}

/// The row times the witness.
G16_HD Fr row_value(const MatrixView& m, const WitnessView& w, uint64_t row) {
  return entries_sum(m, w, m.row_starts[row], m.row_starts[row + 1], 1);
}

/// Whether a · b = c (values reduced, as every sum and product here is).
G16_HD bool satisfied(const Fr& a, const Fr& b, const Fr& c) { return a * b == c; }

}  // namespace shape
}  // namespace groth16_gpu

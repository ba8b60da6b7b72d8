// A recorded circuit shape's A, B, C resident on one device, and their rows
// evaluated there against a proof's witness: a proof then sends its witness
// (a third of what a, b, c take) and the host's cores skip the evaluation.
// Plain pointers only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "groth16_gpu/device.h"
#include "groth16_gpu/device_scalars.h"

namespace groth16_gpu {

/// One of A, B, C in device memory (src/synthesis/matrix.rs's layout), with
/// the rows too long for one thread listed apart.
struct DeviceMatrix {
  uint64_t* row_starts = nullptr;
  uint32_t* columns = nullptr;
  uint32_t* coefficients = nullptr;
  uint64_t* constants = nullptr;
  uint32_t* long_rows = nullptr;
  size_t long_count = 0;
  bool uploaded = false;
};

/// A, B, C of `rows` rows over `inputs` inputs and `aux` aux variables,
/// freed on that device on drop.
class DeviceShape {
 public:
  DeviceShape(int ordinal, size_t rows, size_t inputs, size_t aux)
      : ordinal_(ordinal), rows_(rows), inputs_(inputs), aux_(aux) {}
  ~DeviceShape();
  DeviceShape(const DeviceShape&) = delete;
  DeviceShape& operator=(const DeviceShape&) = delete;

  /// The CUDA ordinal of the device that holds it.
  size_t ordinal() const { return static_cast<size_t>(ordinal_); }
  size_t rows() const { return rows_; }
  size_t inputs() const { return inputs_; }
  size_t aux() const { return aux_; }
  /// Device bytes it holds.
  size_t bytes() const { return bytes_; }
  const DeviceMatrix& matrix(size_t which) const { return matrices_[which]; }
  DeviceMatrix& matrix(size_t which) { return matrices_[which]; }
  /// Device memory of `bytes`, freed with the shape.
  void* allocate(size_t bytes);

 private:
  int ordinal_;
  size_t rows_, inputs_, aux_;
  size_t bytes_ = 0;
  DeviceMatrix matrices_[3];
  void* allocations_[15] = {};
  size_t allocation_count_ = 0;
};

/// An empty shape on `device`; fill it with upload_shape_matrix.
std::unique_ptr<DeviceShape> new_device_shape(const GpuDevice& device, size_t rows,
                                              size_t inputs, size_t aux);

/// Uploads matrix `which` (0 A, 1 B, 2 C: rows + 1 entry offsets, `entries`
/// columns and coefficient slots, `constants_len` scalars of 4 words) after
/// checking it: increasing offsets from 0 to the entry count, columns below the shape's counts,
/// coefficient slots naming a constant or one. Returns once the copies
/// have landed; throws "out of device memory" when the device cannot hold
/// it (what was allocated is freed with the shape).
void upload_shape_matrix(const GpuDevice& device, DeviceShape& shape, size_t which,
                         const uint64_t* row_starts, const uint32_t* columns,
                         const uint32_t* coefficients, size_t entries, const uint64_t* constants,
                         size_t constants_len);

/// Rows 0.. of A, B, C times the witness (`input` and `aux`, as many as the
/// shape counts) into the first rows of `a`, `b`, `c` (their other scalars
/// are left as they are). Returns the first row whose a·b differs from c, or
/// the row count when every row holds; returns once that is known.
size_t evaluate_shape(const GpuDevice& device, const DeviceShape& shape,
                      const DeviceScalars& input, const DeviceScalars& aux,
                      const DeviceScalars& a, const DeviceScalars& b, const DeviceScalars& c);

/// The host reference of one matrix (`rows` rows, `entries` entries,
/// `constants_len` constants): every row times the witness (`inputs`
/// inputs, then `aux` aux values) by the device's per-row steps run on the
/// CPU, 4 words per row into `out`. Checks the matrix as
/// upload_shape_matrix does first, and throws where that fails.
void reference_matrix_rows(const uint64_t* row_starts, size_t rows, const uint32_t* columns,
                           const uint32_t* coefficients, size_t entries,
                           const uint64_t* constants, size_t constants_len,
                           const uint64_t* witness, size_t inputs, size_t aux, uint64_t* out);

/// The host reference of the check over `rows` rows: the first row whose
/// a·b differs from c, or the row count.
size_t reference_first_unsatisfied(const uint64_t* a, const uint64_t* b, const uint64_t* c,
                                   size_t rows);

}  // namespace groth16_gpu

// A recorded shape's A, B, C on the device and their rows evaluated there
// (include/groth16_gpu/device_shape.h): a thread per row for rows of up to
// kLongRow entries, a block per longer row, then a thread per row checks
// a·b = c.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "groth16_gpu/cuda_check.h"
#include "groth16_gpu/device_shape.h"
#include "rows.cuh"

namespace groth16_gpu {
namespace {

using shape::Fr;
using shape::MatrixView;
using shape::WitnessView;

constexpr int kThreads = 256;
/// Entries above which a row gets a block of its own: a thread walking a
/// row of millions of entries would hold up its whole grid.
constexpr uint64_t kLongRow = 1024;

unsigned blocks_for(size_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

const Fr* as_fr(const void* words) { return static_cast<const Fr*>(words); }

MatrixView view_of(const DeviceMatrix& m) {
  return {m.row_starts, m.columns, m.coefficients, as_fr(m.constants)};
}

__global__ void short_rows_kernel(MatrixView a, MatrixView b, MatrixView c, size_t rows,
                                  WitnessView w, Fr* out_a, Fr* out_b, Fr* out_c) {
  size_t row = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  const MatrixView matrices[3] = {a, b, c};
  Fr* const outs[3] = {out_a, out_b, out_c};
#pragma unroll
  for (int i = 0; i < 3; i++) {
    const MatrixView& m = matrices[i];
    if (m.row_starts[row + 1] - m.row_starts[row] <= kLongRow) {
      outs[i][row] = shape::row_value(m, w, row);
    }
  }
}

/// Block k sums row long_rows[k]: each thread a stride of its entries, then
/// a tree in shared memory.
__global__ void long_rows_kernel(MatrixView m, const uint32_t* long_rows, WitnessView w,
                                 Fr* out) {
  __shared__ Fr partial[kThreads];
  uint32_t row = long_rows[blockIdx.x];
  uint64_t first = m.row_starts[row] + threadIdx.x;
  partial[threadIdx.x] = shape::entries_sum(m, w, first, m.row_starts[row + 1], kThreads);
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) {
      partial[threadIdx.x] = partial[threadIdx.x] + partial[threadIdx.x + stride];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) out[row] = partial[0];
}

__global__ void check_kernel(const Fr* a, const Fr* b, const Fr* c, size_t rows,
                             unsigned long long* first_unsatisfied) {
  size_t row = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row < rows && !shape::satisfied(a[row], b[row], c[row])) {
    atomicMin(first_unsatisfied, static_cast<unsigned long long>(row));
  }
}

/// Copies `count` items to device memory of the shape's.
template <class T>
T* upload_array(DeviceShape& shape, const T* from, size_t count, cudaStream_t stream) {
  if (count == 0) return nullptr;
  T* to = static_cast<T*>(shape.allocate(count * sizeof(T)));
  G16_CUDA_CHECK(cudaMemcpyAsync(to, from, count * sizeof(T), cudaMemcpyHostToDevice, stream));
  return to;
}

/// Throws unless a matrix of `rows` rows over `inputs` inputs and `aux` aux
/// variables has offsets from 0 to its entry count, never decreasing, and
/// every entry names one of those variables and a constant it has (or one).
void check_matrix(size_t rows, size_t inputs, size_t aux, const uint64_t* row_starts,
                  const uint32_t* columns, const uint32_t* coefficients, size_t entries,
                  size_t constants_len) {
  if (rows > UINT32_MAX) throw std::invalid_argument("a shape of 2^32 rows or more");
  if (row_starts[0] != 0 || row_starts[rows] != entries) {
    throw std::invalid_argument("shape matrix offsets do not run from 0 to the entry count");
  }
  for (size_t r = 0; r < rows; r++) {
    if (row_starts[r] > row_starts[r + 1]) {
      throw std::invalid_argument("shape matrix offsets decrease at row " + std::to_string(r));
    }
  }
  for (size_t k = 0; k < entries; k++) {
    uint32_t column = columns[k];
    size_t index = column & ~shape::kAux;
    if (index >= ((column & shape::kAux) ? aux : inputs)) {
      throw std::invalid_argument("shape matrix entry " + std::to_string(k) + " names variable " +
                                  std::to_string(index) + " past the shape's counts");
    }
    if (coefficients[k] != shape::kUnit && coefficients[k] >= constants_len) {
      throw std::invalid_argument("shape matrix entry " + std::to_string(k) +
                                  " names a missing constant");
    }
  }
}

struct Stream {
  cudaStream_t stream = nullptr;
  Stream() { G16_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)); }
  ~Stream() {
    cudaStreamSynchronize(stream);
    cudaStreamDestroy(stream);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
};

}  // namespace

DeviceShape::~DeviceShape() {
  if (cudaSetDevice(ordinal_) != cudaSuccess) return;
  for (size_t i = 0; i < allocation_count_; i++) cudaFree(allocations_[i]);
}

void* DeviceShape::allocate(size_t bytes) {
  if (allocation_count_ == sizeof(allocations_) / sizeof(allocations_[0])) {
    throw std::logic_error("a device shape holds at most 15 arrays");
  }
  void* ptr = nullptr;
  cudaError_t error = cudaMalloc(&ptr, bytes);
  if (error == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    throw std::runtime_error("out of device memory: a shape's matrix needs " +
                             std::to_string(bytes) + " more bytes");
  }
  G16_CUDA_CHECK(error);
  allocations_[allocation_count_++] = ptr;
  bytes_ += bytes;
  return ptr;
}

std::unique_ptr<DeviceShape> new_device_shape(const GpuDevice& device, size_t rows,
                                              size_t inputs, size_t aux) {
  G16_CUDA_CHECK(cudaSetDevice(device.cuda_ordinal()));
  return std::make_unique<DeviceShape>(device.cuda_ordinal(), rows, inputs, aux);
}

void upload_shape_matrix(const GpuDevice& device, DeviceShape& shape, size_t which,
                         const uint64_t* row_starts, const uint32_t* columns,
                         const uint32_t* coefficients, size_t entries, const uint64_t* constants,
                         size_t constants_len) {
  require_on_device(device, shape.ordinal(), "shape");
  if (which > 2) throw std::invalid_argument("a shape has three matrices");
  if (shape.matrix(which).uploaded) throw std::invalid_argument("shape matrix uploaded twice");
  check_matrix(shape.rows(), shape.inputs(), shape.aux(), row_starts, columns, coefficients,
               entries, constants_len);
  std::vector<uint32_t> long_rows;
  for (size_t r = 0; r < shape.rows(); r++) {
    if (row_starts[r + 1] - row_starts[r] > kLongRow) long_rows.push_back(uint32_t(r));
  }
  G16_CUDA_CHECK(cudaSetDevice(device.cuda_ordinal()));
  Stream stream;
  DeviceMatrix& m = shape.matrix(which);
  m.row_starts = upload_array(shape, row_starts, shape.rows() + 1, stream.stream);
  m.columns = upload_array(shape, columns, entries, stream.stream);
  m.coefficients = upload_array(shape, coefficients, entries, stream.stream);
  m.constants = upload_array(shape, constants, 4 * constants_len, stream.stream);
  m.long_rows = upload_array(shape, long_rows.data(), long_rows.size(), stream.stream);
  m.long_count = long_rows.size();
  G16_CUDA_CHECK(cudaStreamSynchronize(stream.stream));
  m.uploaded = true;
}

size_t evaluate_shape(const GpuDevice& device, const DeviceShape& shape,
                      const DeviceScalars& input, const DeviceScalars& aux,
                      const DeviceScalars& a, const DeviceScalars& b, const DeviceScalars& c) {
  require_on_device(device, shape.ordinal(), "shape");
  for (const DeviceScalars* buffer : {&input, &aux, &a, &b, &c}) {
    require_on_device(device, buffer->ordinal(), "shape evaluation buffers");
  }
  size_t rows = shape.rows();
  for (size_t i = 0; i < 3; i++) {
    if (!shape.matrix(i).uploaded) throw std::invalid_argument("a shape matrix is missing");
  }
  if (input.len() != shape.inputs() || aux.len() != shape.aux()) {
    throw std::invalid_argument("a witness of " + std::to_string(input.len()) + " inputs and " +
                                std::to_string(aux.len()) + " aux values for a shape of " +
                                std::to_string(shape.inputs()) + " and " +
                                std::to_string(shape.aux()));
  }
  if (a.len() < rows || b.len() < rows || c.len() < rows) {
    throw std::invalid_argument("a, b, c buffers shorter than the shape's rows");
  }
  G16_CUDA_CHECK(cudaSetDevice(device.cuda_ordinal()));
  Stream stream;
  WitnessView w{as_fr(input.data()), as_fr(aux.data())};
  Fr* outs[3] = {static_cast<Fr*>(a.data()), static_cast<Fr*>(b.data()),
                 static_cast<Fr*>(c.data())};
  unsigned long long first = rows;
  unsigned long long* first_unsatisfied = nullptr;
  G16_CUDA_CHECK(cudaMallocAsync(&first_unsatisfied, sizeof(first), stream.stream));
  cudaError_t error = cudaMemcpyAsync(first_unsatisfied, &first, sizeof(first),
                                      cudaMemcpyHostToDevice, stream.stream);
  if (error == cudaSuccess && rows > 0) {
    short_rows_kernel<<<blocks_for(rows), kThreads, 0, stream.stream>>>(
        view_of(shape.matrix(0)), view_of(shape.matrix(1)), view_of(shape.matrix(2)), rows, w,
        outs[0], outs[1], outs[2]);
    error = cudaGetLastError();
    for (size_t i = 0; i < 3 && error == cudaSuccess; i++) {
      const DeviceMatrix& m = shape.matrix(i);
      if (m.long_count == 0) continue;
      long_rows_kernel<<<static_cast<unsigned>(m.long_count), kThreads, 0, stream.stream>>>(
          view_of(m), m.long_rows, w, outs[i]);
      error = cudaGetLastError();
    }
    if (error == cudaSuccess) {
      check_kernel<<<blocks_for(rows), kThreads, 0, stream.stream>>>(outs[0], outs[1], outs[2],
                                                                    rows, first_unsatisfied);
      error = cudaGetLastError();
    }
  }
  if (error == cudaSuccess) {
    error = cudaMemcpyAsync(&first, first_unsatisfied, sizeof(first), cudaMemcpyDeviceToHost,
                            stream.stream);
  }
  cudaFreeAsync(first_unsatisfied, stream.stream);
  if (error == cudaSuccess) error = cudaStreamSynchronize(stream.stream);
  G16_CUDA_CHECK(error);
  return static_cast<size_t>(first);
}

void reference_matrix_rows(const uint64_t* row_starts, size_t rows, const uint32_t* columns,
                           const uint32_t* coefficients, size_t entries,
                           const uint64_t* constants, size_t constants_len,
                           const uint64_t* witness, size_t inputs, size_t aux, uint64_t* out) {
  check_matrix(rows, inputs, aux, row_starts, columns, coefficients, entries, constants_len);
  MatrixView m{row_starts, columns, coefficients, as_fr(constants)};
  WitnessView w{as_fr(witness), as_fr(witness) + inputs};
  Fr* values = reinterpret_cast<Fr*>(out);
  for (size_t row = 0; row < rows; row++) values[row] = shape::row_value(m, w, row);
}

size_t reference_first_unsatisfied(const uint64_t* a, const uint64_t* b, const uint64_t* c,
                                   size_t rows) {
  for (size_t row = 0; row < rows; row++) {
    if (!shape::satisfied(as_fr(a)[row], as_fr(b)[row], as_fr(c)[row])) return row;
  }
  return rows;
}

}  // namespace groth16_gpu

// Batch addition on the GPU (F = Fp for G1, Fp2 for G2): the sum of the
// resident bases whose bitmap bit is set. The bitmap's words are counted
// and scanned so that every thread sums kSelectedPerThread selected bases,
// then the threads' sums are reduced in rows. It takes no tuning.
#pragma once

#include <cub/device/device_scan.cuh>

#include <stdexcept>
#include <string>

#include "checks.cuh"
#include "groth16_gpu/cuda_check.h"
#include "kernels.cuh"
#include "layout.cuh"
#include "reduce.cuh"
#include "scoped.cuh"

namespace groth16_gpu {
namespace msm {

/// Scratch of one batch addition over `words` bitmap words.
template <class F>
struct BatchScratch {
  uint64_t* bitmap;
  uint32_t *counts, *ranks_before;
  void* scan_temp;
  size_t scan_bytes;
  ec::Xyzz<F>* parts[2];

  /// Lays the buffers out from `base` (nullptr: only measures); returns bytes.
  size_t layout(char* base, uint32_t words, size_t max_parts, cudaStream_t stream) {
    Carver carve{base};
    bitmap = carve.take<uint64_t>(words);
    counts = carve.take<uint32_t>(words);
    ranks_before = carve.take<uint32_t>(words);
    for (auto& p : parts) p = carve.take<ec::Xyzz<F>>(max_parts);
    scan_bytes = 0;
    G16_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, counts, ranks_before,
                                                 static_cast<int>(words), stream));
    scan_temp = carve.take<char>(scan_bytes);
    return carve.used + 256;
  }
};

/// Σ of the bases[first + i] whose bit i is set: the bitmap's words are
/// counted and scanned so that every thread sums kSelectedPerThread
/// selected bases.
template <class F>
void device_batch_add(const GpuDevice& device, const MsmBases& bases, size_t first,
                      const uint64_t* bitmap, size_t n, uint64_t* out, size_t out_words,
                      float* device_ms) {
  using Xyzz = ec::Xyzz<F>;
  const ec::Affine<F>* points = checked_bases<F>(device, bases, first, n);
  Xyzz total = Xyzz::identity();
  ScopedStream stream;
  ScopedEvent start, stop;
  G16_CUDA_CHECK(cudaEventRecord(start.event, stream.stream));
  if (n > 0) {
    uint32_t words = static_cast<uint32_t>((n + 63) / 64);
    size_t max_parts = (n + kSelectedPerThread - 1) / kSelectedPerThread;
    BatchScratch<F> s{};
    size_t bytes = s.layout(nullptr, words, max_parts, stream.stream);
    ScopedDeviceMemory memory;
    if (!memory.allocate(bytes, stream.stream)) {
      throw std::runtime_error("out of device memory: batch addition of " + std::to_string(n) +
                               " points needs " + std::to_string(bytes) + " bytes");
    }
    s.layout(static_cast<char*>(memory.ptr), words, max_parts, stream.stream);
    G16_CUDA_CHECK(cudaMemcpyAsync(s.bitmap, bitmap, size_t(words) * 8, cudaMemcpyHostToDevice,
                                   stream.stream));
    mask_and_count_kernel<<<grid_for(words), kBlock, 0, stream.stream>>>(
        s.bitmap, words, static_cast<uint32_t>(n), s.counts);
    G16_CUDA_CHECK(cudaGetLastError());
    size_t temp = s.scan_bytes;
    G16_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(s.scan_temp, temp, s.counts, s.ranks_before,
                                                 static_cast<int>(words), stream.stream));
    uint32_t selected = last_sum(s.ranks_before, s.counts, words, stream.stream);
    uint32_t parts = (selected + kSelectedPerThread - 1) / kSelectedPerThread;
    if (parts > 0) {
      sum_selected_kernel<F><<<grid_for(parts), kBlock, 0, stream.stream>>>(
          points, s.bitmap, s.ranks_before, words, selected, s.parts[0]);
      G16_CUDA_CHECK(cudaGetLastError());
      Xyzz* sum = reduce_rows<F>(s.parts[0], s.parts[1], 1, parts, false, stream.stream);
      G16_CUDA_CHECK(cudaMemcpyAsync(&total, sum, sizeof(Xyzz), cudaMemcpyDeviceToHost,
                                     stream.stream));
    }
  }
  G16_CUDA_CHECK(cudaEventRecord(stop.event, stream.stream));
  G16_CUDA_CHECK(cudaEventSynchronize(stop.event));
  if (device_ms) G16_CUDA_CHECK(cudaEventElapsedTime(device_ms, start.event, stop.event));
  write_windows(&total, 1, out, out_words);
}

}  // namespace msm
}  // namespace groth16_gpu

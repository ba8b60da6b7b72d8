// The GPU MSM for one curve (F = Fp for G1, Fp2 for G2): its entry, which
// checks the call, settles its tuning (tuning.h), plans the geometry, cuts
// the points into chunks (chunk.cuh runs each) and adds the chunks' window
// sums on the host; and the filling of shifted copies. Included once per
// curve by msm_g1.cu / msm_g2.cu. A chunk is as large as free device
// memory allows: when the scratch allocation fails the chunk is halved,
// and below kMinChunk points the call throws (device left usable).
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "checks.cuh"
#include "chunk.cuh"
#include "groth16_gpu/cuda_check.h"
#include "groth16_gpu/ffi_types.h"
#include "groth16_gpu/msm.h"
#include "kernels.cuh"
#include "layout.cuh"
#include "scoped.cuh"
#include "tuning.h"

namespace groth16_gpu {
namespace msm {

/// Smallest chunk worth running; below it the call reports out-of-memory.
constexpr size_t kMinChunk = 1 << 12;
/// A chunk's entries (points x windows) stay at or below 2^30: cub takes
/// the sort's count as an int, and counts and offsets are 32-bit, so 2^28
/// points at 16 windows (2^32 entries) would wrap. 2^27 points (a Filecoin
/// partition) run as two chunks.
constexpr size_t kMaxChunkEntries = size_t(1) << 30;

/// Most points one chunk of geometry g takes: the entry bound, and the
/// settings' cap where they have one.
inline size_t max_chunk_points(Geometry g, const MsmSettings& s) {
  size_t points = kMaxChunkEntries / g.windows;
  return s.chunk_cap > 0 ? std::min(points, s.chunk_cap) : points;
}

/// The geometry of an MSM of n points over `bases`: through their shifted
/// copies where they have them and n is large enough for them to pay
/// (plan_uses_copies), else the size's own window (or the settings' forced
/// one, which also leaves the copies aside).
inline Geometry plan(const MsmBases& bases, size_t n, const MsmSettings& s) {
  if (s.window_bits) return Geometry::of(s.window_bits);
  if (plan_uses_copies(bases.copies(), n)) {
    return Geometry::with_copies(bases.copy_bits(), bases.copies(),
                                 static_cast<uint32_t>(bases.len()));
  }
  return Geometry::of(choose_window_bits(n));
}

/// Fills `copies` copies of the `len` bases at `source` into `points`:
/// copy 0 is the bases, copy k at points + k len 2^bits times copy k - 1.
/// Works in chunks, so its scratch stays small beside the copies.
template <class F>
void fill_shifted_copies(const ec::Affine<F>* source, ec::Affine<F>* points, size_t len,
                         uint32_t bits, uint32_t copies) {
  constexpr size_t kShiftChunk = size_t(1) << 20;
  ScopedStream stream;
  // On this stream: the kernels below run after the copy lands.
  G16_CUDA_CHECK(cudaMemcpyAsync(points, source, len * sizeof(ec::Affine<F>),
                                 cudaMemcpyDeviceToDevice, stream.stream));
  size_t chunk = std::min(len, kShiftChunk);
  Carver measure{nullptr};
  measure.take<ec::Xyzz<F>>(chunk);
  measure.take<F>(chunk);
  ScopedDeviceMemory memory;
  if (!memory.allocate(measure.used + 256, stream.stream)) {
    throw std::runtime_error("out of device memory: shifting MSM bases needs " +
                             std::to_string(measure.used + 256) + " bytes of scratch");
  }
  Carver carve{static_cast<char*>(memory.ptr)};
  ec::Xyzz<F>* scratch = carve.take<ec::Xyzz<F>>(chunk);
  F* prefix = carve.take<F>(chunk);
  for (uint32_t k = 1; k < copies; k++) {
    for (size_t offset = 0; offset < len; offset += chunk) {
      uint32_t nc = static_cast<uint32_t>(std::min(chunk, len - offset));
      shift_kernel<F><<<grid_for((nc + kShiftRun - 1) / kShiftRun), kBlock, 0, stream.stream>>>(
          points + (k - 1) * len + offset, points + k * len + offset, scratch, prefix, nc, bits);
      G16_CUDA_CHECK(cudaGetLastError());
    }
  }
  G16_CUDA_CHECK(cudaStreamSynchronize(stream.stream));
}

/// Σ scalars[i] bases[first + i] (or bases[indices[i]] where `indices`, a
/// host array of n, is given; `first` must then be 0) per window, run as
/// `tuning` says; `report` gets the settings it ran with and the device
/// time.
template <class F>
uint32_t device_msm(const GpuDevice& device, const MsmBases& bases, size_t first,
                    const uint64_t* scalars, const uint32_t* indices, size_t n, uint64_t* out,
                    size_t out_words, const g16_msm_tuning& tuning, g16_msm_report& report) {
  const MsmSettings settings = settle(tuning);
  if (indices && first != 0) throw std::invalid_argument("an indexed MSM names its bases itself");
  // Indexed scalars may name a base more than once, so their count is not
  // bounded by the bases'.
  const ec::Affine<F>* points = checked_bases<F>(device, bases, first, indices ? 0 : n);
  if (indices) {
    check_point_count(n);
    check_indices(indices, n, bases.len());
  }
  Geometry g = plan(bases, n, settings);
  std::vector<ec::Xyzz<F>> acc(g.sets(), ec::Xyzz<F>::identity());
  ScopedStream stream;
  ScopedEvent start, stop;
  G16_CUDA_CHECK(cudaEventRecord(start.event, stream.stream));

  size_t chunk = std::min(n, max_chunk_points(g, settings));
  size_t free_bytes = 0, total_bytes = 0;
  G16_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  ChunkScratch<F> scratch{};
  // Shrink the chunk to what free memory (less a margin) can hold...
  while (chunk > kMinChunk && scratch.layout(nullptr, chunk, g, stream.stream) >
                                  free_bytes / 10 * 9) {
    chunk = (chunk + 1) / 2;
  }
  ScopedDeviceMemory memory;
  // ...then halve it further while the allocation itself fails.
  for (;;) {
    size_t bytes = scratch.layout(nullptr, std::max<size_t>(chunk, 1), g, stream.stream);
    if (memory.allocate(bytes, stream.stream)) break;
    if (chunk <= kMinChunk) {
      throw std::runtime_error("out of device memory: an MSM needs " + std::to_string(bytes) +
                               " bytes of scratch even in chunks of " + std::to_string(chunk) +
                               " points");
    }
    chunk = (chunk + 1) / 2;
  }
  scratch.layout(static_cast<char*>(memory.ptr), std::max<size_t>(chunk, 1), g, stream.stream);
  report = g16_msm_report{};
  report.window_bits = g.c;
  report.copies = g.copies;
  report.chunk_points = chunk;
  report.first_block = first_level_block(chunk * g.windows, settings);
  report.inline_pieces = settings.inline_pieces;
  report.segment = segment_length(g, settings);
  if constexpr (std::is_same<F, ff::Fp2>::value) {
    report.g2_first_level = static_cast<uint32_t>(settings.g2_first_level);
  }
  report.pair_reduction = pair_reduction<F>(settings) ? 1 : 0;
  report.phase_timing = settings.phase_timing ? 1 : 0;
  for (size_t offset = 0; offset < n; offset += chunk) {
    size_t nc = std::min(chunk, n - offset);
    // Indexed chunks name their bases among all of them; plain ones start at
    // their own.
    const ec::Affine<F>* chunk_bases = indices ? points : points + offset;
    const uint32_t* chunk_indices = indices ? indices + offset : nullptr;
    uint32_t levels = run_chunk<F>(chunk_bases, scalars + offset * 4, chunk_indices, nc, g,
                                   settings, scratch, stream.stream, acc);
    report.chunks++;
    report.task_levels = std::max(report.task_levels, levels);
  }
  G16_CUDA_CHECK(cudaEventRecord(stop.event, stream.stream));
  G16_CUDA_CHECK(cudaEventSynchronize(stop.event));
  G16_CUDA_CHECK(cudaEventElapsedTime(&report.device_ms, start.event, stop.event));
  write_windows(acc.data(), g.sets(), out, out_words);
  return g.shift();
}

}  // namespace msm
}  // namespace groth16_gpu

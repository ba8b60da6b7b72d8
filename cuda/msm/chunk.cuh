// One chunk of a GPU MSM (F = Fp for G1, Fp2 for G2): scalars -> entries
// (kernel) -> radix sort by bucket (cub) -> blocks of sorted entries a
// thread, summed per bucket piece -> per-bucket task levels while a bucket
// holds many pieces -> window segments (adding each bucket's pieces as they
// walk it) -> per-window sums, added into the host's accumulator. How it
// cuts the work follows the call's MsmSettings (tuning.h).
#pragma once

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "groth16_gpu/cuda_check.h"
#include "kernels.cuh"
#include "phase_timer.cuh"
#include "reduce.cuh"
#include "scoped.cuh"
#include "tuning.h"

namespace groth16_gpu {
namespace msm {

/// Sorted entries per first-level thread for `entries` entries: the
/// settings' forced block, else doubled from kDevicePerTask while
/// s.first_level_threads threads remain. Each block cut at a bucket end
/// leaves one more partial sum for the levels after it, so longer blocks
/// leave fewer (a 2^24-point MSM at c = 20 made ~14 a bucket with blocks
/// of 32). The scratch's bounds hold for any block of at least 32.
inline uint32_t first_level_block(size_t entries, const MsmSettings& s) {
  if (s.first_block) return s.first_block;
  uint32_t block = kDevicePerTask;
  while (block < kMaxFirstBlock && entries / (2 * block) >= s.first_level_threads) block *= 2;
  return block;
}

/// The layout of the first level over F: G1 points are always whole.
template <class F>
G2FirstLevel first_level_layout(const MsmSettings& s) {
  if constexpr (std::is_same<F, ff::Fp2>::value) {
    return s.g2_first_level;
  } else {
    return G2FirstLevel::kWholePoints;
  }
}

/// Whether G2's task levels and window reduction run over thread pairs as
/// its first level does: with either pair layout of the first level,
/// unless the settings keep them whole (for a sweep's comparison; each
/// half of that mix is tested in the layouts that use it). Never for G1.
template <class F>
bool pair_reduction(const MsmSettings& s) {
  if constexpr (std::is_same<F, ff::Fp2>::value) {
    return !s.g2_whole_reduction && s.g2_first_level != G2FirstLevel::kWholePoints;
  } else {
    return false;
  }
}

/// Window-reduction threads below which segments get shorter. A small
/// MSM's 13-bit windows (20 x 4096 buckets) made 2,560 segments of 32:
/// under one warp per SM, each walking its 32 buckets one after another
/// (the G2 reduction of a Filecoin proof's sparse MSM took 4.7 ms).
constexpr size_t kMinSegmentThreads = 16384;

/// Buckets per window segment for geometry g (a power of two dividing
/// g.buckets): the settings' segment (kDeviceSegment by default),
/// shortened while too few segments result.
inline uint32_t segment_length(Geometry g, const MsmSettings& s) {
  uint32_t len = std::min(g.buckets, s.segment);
  while (len > kMinSegment && size_t(g.sets()) * (g.buckets / len) < kMinSegmentThreads) {
    len /= 2;
  }
  return len;
}

/// Scratch of one chunk of `nc` points.
template <class F>
struct ChunkScratch {
  ff::Fr* scalars;
  uint32_t* indices;
  uint32_t *keys[2], *values[2];
  uint32_t *counts[2], *offsets[2];
  Task* tasks;
  ec::Xyzz<F>* parts[2];
  uint32_t* most;  // the most partial sums any bucket holds
  void* cub_temp;
  size_t cub_bytes;

  /// Lays the buffers out from `base` (nullptr: only measures); returns bytes.
  size_t layout(char* base, size_t nc, Geometry g, cudaStream_t stream) {
    size_t m = nc * g.windows;
    size_t nb = g.total_buckets();
    size_t max_tasks = m / kDevicePerTask + nb + 1;
    Carver carve{base};
    scalars = carve.take<ff::Fr>(nc);
    indices = carve.take<uint32_t>(nc);
    for (int i = 0; i < 2; i++) {
      keys[i] = carve.take<uint32_t>(m);
      values[i] = carve.take<uint32_t>(m);
      counts[i] = carve.take<uint32_t>(nb + 1);
      offsets[i] = carve.take<uint32_t>(nb + 1);
      parts[i] = carve.take<ec::Xyzz<F>>(max_tasks);
    }
    tasks = carve.take<Task>(max_tasks);
    most = carve.take<uint32_t>(1);
    size_t sort_bytes = 0, scan_bytes = 0, max_bytes = 0;
    cub::DoubleBuffer<uint32_t> k(keys[0], keys[1]), v(values[0], values[1]);
    G16_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, k, v,
                                                   static_cast<int>(m), 0, 32, stream));
    G16_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, counts[0], offsets[0],
                                                 static_cast<int>(nb), stream));
    G16_CUDA_CHECK(cub::DeviceReduce::Max(nullptr, max_bytes, counts[0], most,
                                          static_cast<int>(nb), stream));
    cub_bytes = std::max({sort_bytes, scan_bytes, max_bytes});
    cub_temp = carve.take<char>(cub_bytes);
    return carve.used + 256;
  }
};

/// Bits of the largest key (the sentinel W B).
inline int key_bits(Geometry g) {
  int bits = 1;
  while ((uint64_t(1) << bits) <= g.sentinel()) bits++;
  return bits;
}

/// One chunk: adds its window sums into `acc` (host, g.sets() entries), cut
/// as `settings` say; returns the task levels it ran. Scalar i multiplies
/// bases[indices[i]], or bases[i] where `indices` is null.
template <class F>
uint32_t run_chunk(const ec::Affine<F>* bases, const uint64_t* scalars, const uint32_t* indices,
                   size_t nc, Geometry g, const MsmSettings& settings, ChunkScratch<F>& s,
                   cudaStream_t stream, std::vector<ec::Xyzz<F>>& acc) {
  using Xyzz = ec::Xyzz<F>;
  uint32_t n32 = static_cast<uint32_t>(nc);
  uint32_t nb = g.total_buckets();
  size_t m = nc * g.windows;
  PhaseTimer phases(stream, settings.phase_timing);
  // Default: the scalars may lie on the host or already on this device
  // (the H polynomial's result).
  G16_CUDA_CHECK(cudaMemcpyAsync(s.scalars, scalars, nc * sizeof(ff::Fr), cudaMemcpyDefault,
                                 stream));
  if (indices) {
    G16_CUDA_CHECK(cudaMemcpyAsync(s.indices, indices, nc * sizeof(uint32_t),
                                   cudaMemcpyHostToDevice, stream));
  }
  G16_CUDA_CHECK(cudaMemsetAsync(s.counts[0], 0, (nb + 1) * sizeof(uint32_t), stream));
  phases.mark("upload");
  entries_kernel<<<grid_for(nc), kBlock, 0, stream>>>(
      s.scalars, indices ? s.indices : nullptr, n32, g, s.keys[0], s.values[0], s.counts[0]);
  G16_CUDA_CHECK(cudaGetLastError());
  phases.mark("entries");
  cub::DoubleBuffer<uint32_t> k(s.keys[0], s.keys[1]), v(s.values[0], s.values[1]);
  size_t temp = s.cub_bytes;
  G16_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(s.cub_temp, temp, k, v, static_cast<int>(m),
                                                 0, key_bits(g), stream));
  phases.mark("sort");
  temp = s.cub_bytes;
  G16_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(s.cub_temp, temp, s.counts[0], s.offsets[0],
                                               static_cast<int>(nb), stream));

  // First level: thread t sums sorted entries [block t, block t + block)
  // into one partial sum per bucket piece (pippenger.cuh's sum_block); the
  // sentinel's entries sort last and are left out.
  uint32_t block = first_level_block(m, settings);
  piece_count_kernel<<<grid_for(nb), kBlock, 0, stream>>>(s.offsets[0], s.counts[0], nb, block,
                                                          s.counts[1]);
  G16_CUDA_CHECK(cudaGetLastError());
  temp = s.cub_bytes;
  G16_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(s.cub_temp, temp, s.counts[1], s.offsets[1],
                                               static_cast<int>(nb), stream));
  temp = s.cub_bytes;
  G16_CUDA_CHECK(cub::DeviceReduce::Max(s.cub_temp, temp, s.counts[1], s.most,
                                        static_cast<int>(nb), stream));
  phases.mark("scans");
  ScanTotal entry_total;
  entry_total.queue(s.offsets[0], s.counts[0], nb, stream);
  uint32_t most = 0;
  G16_CUDA_CHECK(cudaMemcpyAsync(&most, s.most, 4, cudaMemcpyDeviceToHost, stream));
  G16_CUDA_CHECK(cudaStreamSynchronize(stream));
  uint32_t entries = entry_total.value();
  Xyzz* parts = s.parts[0];
  if (entries > 0) {
    uint32_t threads = (entries + block - 1) / block;
    G2FirstLevel layout = first_level_layout<F>(settings);
    if (layout == G2FirstLevel::kWholePoints) {
      sum_blocks_kernel<F><<<grid_for(threads), kBlock, 0, stream>>>(
          bases, k.Current(), v.Current(), s.offsets[0], s.offsets[1], entries, block, parts);
    } else if constexpr (std::is_same<F, ff::Fp2>::value) {
      unsigned grid = grid_for(2 * size_t(threads));
      if (layout == G2FirstLevel::kPairs) {
        sum_blocks_pairs_kernel<3><<<grid, kBlock, 0, stream>>>(
            bases, k.Current(), v.Current(), s.offsets[0], s.offsets[1], entries, block, parts);
      } else {
        sum_blocks_pairs_kernel<4><<<grid, kBlock, 0, stream>>>(
            bases, k.Current(), v.Current(), s.offsets[0], s.offsets[1], entries, block, parts);
      }
    }
    G16_CUDA_CHECK(cudaGetLastError());
  }
  phases.mark("first");

  // Task levels, each summing a bucket's partial sums in tasks of up to 32,
  // while some bucket holds more than settings.inline_pieces: the window
  // segments add up to that many a bucket as they walk it.
  bool pairs = pair_reduction<F>(settings);
  int cur = 1;
  uint32_t levels = 0;
  while (most > settings.inline_pieces) {
    int nxt = 1 - cur;
    task_count_kernel<<<grid_for(nb), kBlock, 0, stream>>>(s.counts[cur], nb, kDevicePerTask,
                                                           s.counts[nxt]);
    G16_CUDA_CHECK(cudaGetLastError());
    temp = s.cub_bytes;
    G16_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(s.cub_temp, temp, s.counts[nxt],
                                                 s.offsets[nxt], static_cast<int>(nb), stream));
    tasks_kernel<<<grid_for(nb), kBlock, 0, stream>>>(s.offsets[cur], s.counts[cur],
                                                      s.offsets[nxt], nb, kDevicePerTask,
                                                      s.tasks);
    G16_CUDA_CHECK(cudaGetLastError());
    uint32_t ntasks = last_sum(s.offsets[nxt], s.counts[nxt], nb, stream);
    Xyzz* out = parts == s.parts[0] ? s.parts[1] : s.parts[0];
    if (ntasks > 0) sum_tasks<F>(parts, s.tasks, ntasks, out, pairs, stream);
    levels++;
    parts = out;
    cur = nxt;
    most = (most + kDevicePerTask - 1) / kDevicePerTask;
  }
  phases.mark("levels");

  // Window reduction: segments (reading each bucket's partial sums where
  // the levels left them), then each window's row of segments.
  uint32_t seg_len = segment_length(g, settings);
  uint32_t segs = g.buckets / seg_len;
  Xyzz* rows = parts == s.parts[0] ? s.parts[1] : s.parts[0];
  BucketPieces<F> buckets{parts, s.counts[cur], s.offsets[cur]};
  window_segments<F>(buckets, g, seg_len, rows, pairs, stream);
  phases.mark("segments");
  Xyzz* windows = reduce_rows<F>(rows, parts, g.sets(), segs, pairs, stream);
  phases.mark("rows");
  std::vector<Xyzz> host(g.sets());
  G16_CUDA_CHECK(cudaMemcpyAsync(host.data(), windows, g.sets() * sizeof(Xyzz),
                                 cudaMemcpyDeviceToHost, stream));
  G16_CUDA_CHECK(cudaStreamSynchronize(stream));
  phases.print(sizeof(F) == sizeof(ff::Fp) ? "G1" : "G2", nc, g.c, g.copies, levels);
  for (uint32_t w = 0; w < g.sets(); w++) acc[w] = acc[w] + host[w];
  return levels;
}

}  // namespace msm
}  // namespace groth16_gpu

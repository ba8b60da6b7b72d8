// The GPU MSM and batch addition for one curve (F = Fp for G1, Fp2 for G2).
// Included once per curve by msm_g1.cu / msm_g2.cu.
//
// Per chunk of points: scalars -> entries (kernel) -> radix sort by bucket
// (cub) -> blocks of sorted entries a thread, summed per bucket piece ->
// per-bucket task levels while a bucket holds many pieces -> window segments
// (adding each bucket's pieces as they walk it) -> per-window sums; the
// window sums of all chunks are added on the host. A chunk is as large as
// free device memory allows: when the scratch allocation fails the chunk is
// halved, and below kMinChunk points the call throws (device left usable).
#pragma once

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "groth16_gpu/cuda_check.h"
#include "groth16_gpu/msm.h"
#include "kernels.cuh"
#include "layout.cuh"
#include "phase_timer.cuh"
#include "scoped.cuh"
#include "tuning.h"

namespace groth16_gpu {
namespace msm {

/// Items per task in the levels after the first, and the shortest
/// first-level block.
constexpr uint32_t kDevicePerTask = 32;
/// First-level threads worth keeping: about 16 waves of the G1 kernel on
/// an H200 (32 of G2), so the last wave's tail stays small. At 2^19
/// (8 waves) the blocks grew to 256 for G1 2^24 and the first level took
/// 4 % longer (105 -> 109 ms), the levels 6 ms less.
constexpr size_t kFirstLevelThreads = size_t(1) << 20;
/// The longest first-level block.
constexpr uint32_t kMaxFirstBlock = 512;

/// Sorted entries per first-level thread for `entries` entries: doubled from
/// kDevicePerTask while kFirstLevelThreads threads remain. Each block cut
/// at a bucket end leaves one more partial sum for the levels after it, so
/// longer blocks leave fewer (a 2^24-point MSM at c = 20 made ~14 a bucket
/// with blocks of 32). G16_MSM_FIRST_BLOCK (32..4096) overrides it, for
/// sweeps; the scratch's bounds hold for any block of at least 32.
inline uint32_t first_level_block(size_t entries) {
  size_t threads = msm_first_level_threads_for_tests();
  if (threads == 0) threads = kFirstLevelThreads;
  static const uint32_t forced = tuning_knob("G16_MSM_FIRST_BLOCK", kDevicePerTask, 4096);
  if (forced) return forced;
  uint32_t block = kDevicePerTask;
  while (block < kMaxFirstBlock && entries / (2 * block) >= threads) block *= 2;
  return block;
}
/// Buckets per window segment. 8 (four times the threads, each with a
/// shorter walk but its own multiplication by j L) measured slower on the
/// H200: G1 2^20 40.1 -> 43.5 ms, G2 2^20 142.6 -> 155.5 ms.
constexpr uint32_t kDeviceSegment = 32;
/// Partial sums a bucket may hold when the window segments walk it (more
/// run a task level first). The first level's blocks leave about entries
/// a bucket / block + 1: ~5 for random scalars at 2^24 points, more in the
/// buckets that the top window's digits (15 bits at c = 20) also fill.
constexpr uint32_t kInlinePieces = 8;

/// kInlinePieces, or G16_MSM_INLINE_PIECES where set.
inline uint32_t inline_pieces() {
  static const uint32_t forced = tuning_knob("G16_MSM_INLINE_PIECES", 1, 1024);
  return forced ? forced : kInlinePieces;
}

/// G2's first level with each point split over a pair of threads, held to
/// 128 registers (G2FirstLevel::kPairs128): G2 2^22 points with 20-bit
/// copies 120.6 -> 109.5 ms on the H200 against a point a thread, and 2^24
/// proofs 1034-1047 -> 986-994 ms best of 5 (docs/NOTES-gpu.md, 2026-12-04).
constexpr G2FirstLevel kG2FirstLevel = G2FirstLevel::kPairs128;

/// kG2FirstLevel, or G16_MSM_G2_FIRST_LEVEL where set, or what a test
/// forced with set_msm_g2_first_level_for_tests.
inline G2FirstLevel g2_first_level() {
  static const uint32_t forced = tuning_knob("G16_MSM_G2_FIRST_LEVEL", 1, 3);
  uint32_t mode = forced ? forced : msm_g2_first_level_for_tests();
  return mode ? static_cast<G2FirstLevel>(mode) : kG2FirstLevel;
}
/// Blocks an SM that the G2 pair kernels after the first level are
/// launched for: 3 leaves ptxas its choice of registers.
constexpr int kPairReductionBlocks = 3;

/// Whether G2's task levels and window reduction run over thread pairs as
/// its first level does: with either pair layout of the first level,
/// unless G16_MSM_G2_WHOLE_REDUCTION=1 (for a sweep's comparison; each
/// half of that mix is tested in the layouts that use it). Never for G1.
template <class F>
bool pair_reduction() {
  if constexpr (std::is_same<F, ff::Fp2>::value) {
    static const bool whole = tuning_knob("G16_MSM_G2_WHOLE_REDUCTION", 1, 1) != 0;
    return !whole && g2_first_level() != G2FirstLevel::kWholePoints;
  } else {
    return false;
  }
}

/// Window-reduction threads below which segments get shorter. A small
/// MSM's 13-bit windows (20 x 4096 buckets) made 2,560 segments of 32:
/// under one warp per SM, each walking its 32 buckets one after another
/// (the G2 reduction of a Filecoin proof's sparse MSM took 4.7 ms).
constexpr size_t kMinSegmentThreads = 16384;
/// The shortest segment.
constexpr uint32_t kMinSegment = 4;

/// Buckets per window segment for geometry g (a power of two dividing
/// g.buckets): kDeviceSegment (or G16_MSM_SEGMENT, a power of two, for
/// sweeps), shortened while too few segments result.
inline uint32_t segment_length(Geometry g) {
  static const uint32_t forced = tuning_knob("G16_MSM_SEGMENT", kMinSegment, 1024);
  bool usable = forced != 0 && (forced & (forced - 1)) == 0;
  uint32_t len = std::min(g.buckets, usable ? forced : kDeviceSegment);
  while (len > kMinSegment && size_t(g.sets()) * (g.buckets / len) < kMinSegmentThreads) {
    len /= 2;
  }
  return len;
}
/// Smallest chunk worth running; below it the call reports out-of-memory.
constexpr size_t kMinChunk = 1 << 12;
/// A chunk's entries (points x windows) stay at or below 2^30: cub takes
/// the sort's count as an int, and counts and offsets are 32-bit, so 2^28
/// points at 16 windows (2^32 entries) would wrap. 2^27 points (a Filecoin
/// partition) run as two chunks.
constexpr size_t kMaxChunkEntries = size_t(1) << 30;

/// Most points one chunk of geometry g takes: the entry bound, and the
/// test cap (msm_chunk_cap_for_tests) where one is set.
inline size_t max_chunk_points(Geometry g) {
  size_t points = kMaxChunkEntries / g.windows;
  size_t cap = msm_chunk_cap_for_tests();
  return cap > 0 ? std::min(points, cap) : points;
}

/// Carves one allocation into aligned buffers.
struct Carver {
  char* base;
  size_t used = 0;
  template <class T>
  T* take(size_t count) {
    used = (used + 255) & ~size_t(255);
    T* p = reinterpret_cast<T*>(base ? base + used : nullptr);
    used += count * sizeof(T);
    return p;
  }
};

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

/// out[t] = Σ in[tasks[t]] for t < ntasks; G2 over thread pairs where
/// `pairs`.
template <class F>
void sum_tasks(const ec::Xyzz<F>* in, const Task* tasks, uint32_t ntasks, ec::Xyzz<F>* out,
               bool pairs, cudaStream_t stream) {
  if constexpr (std::is_same<F, ff::Fp2>::value) {
    if (pairs) {
      sum_tasks_pairs_kernel<kPairReductionBlocks>
          <<<grid_for(2 * size_t(ntasks)), kBlock, 0, stream>>>(in, tasks, ntasks, out);
      G16_CUDA_CHECK(cudaGetLastError());
      return;
    }
  }
  sum_tasks_kernel<F><<<grid_for(ntasks), kBlock, 0, stream>>>(in, tasks, ntasks, out);
  G16_CUDA_CHECK(cudaGetLastError());
}

/// out[w * segs + j] = segment j of window w, for every window of g; G2
/// over thread pairs where `pairs`.
template <class F>
void window_segments(const BucketPieces<F>& buckets, Geometry g, uint32_t seg_len,
                     ec::Xyzz<F>* out, bool pairs, cudaStream_t stream) {
  size_t threads = size_t(g.sets()) * (g.buckets / seg_len);
  if constexpr (std::is_same<F, ff::Fp2>::value) {
    if (pairs) {
      BucketPieces<ff::PairLane, G2HalfItems> halves{{buckets.pieces}, buckets.counts,
                                                    buckets.offsets};
      window_segments_pairs_kernel<kPairReductionBlocks>
          <<<grid_for(2 * threads), kBlock, 0, stream>>>(halves, g, seg_len, out);
      G16_CUDA_CHECK(cudaGetLastError());
      return;
    }
  }
  window_segments_kernel<F><<<grid_for(threads), kBlock, 0, stream>>>(buckets, g, seg_len, out);
  G16_CUDA_CHECK(cudaGetLastError());
}

/// Sums `rows` rows of `row_len` items in `a` down to one item per row, in
/// groups; ping-pongs between a and b. Returns the buffer with the result.
/// G2 runs over thread pairs where `pairs`.
template <class F>
ec::Xyzz<F>* reduce_rows(ec::Xyzz<F>* a, ec::Xyzz<F>* b, uint32_t rows, uint32_t row_len,
                         bool pairs, cudaStream_t stream) {
  while (row_len > 1) {
    uint32_t per_row = (row_len + kReduceGroup - 1) / kReduceGroup;
    size_t threads = size_t(rows) * per_row;
    bool launched = false;
    if constexpr (std::is_same<F, ff::Fp2>::value) {
      if (pairs) {
        reduce_rows_pairs_kernel<kPairReductionBlocks>
            <<<grid_for(2 * threads), kBlock, 0, stream>>>(a, rows, row_len, kReduceGroup, b);
        launched = true;
      }
    }
    if (!launched) {
      reduce_rows_kernel<F><<<grid_for(threads), kBlock, 0, stream>>>(a, rows, row_len,
                                                                      kReduceGroup, b);
    }
    G16_CUDA_CHECK(cudaGetLastError());
    std::swap(a, b);
    row_len = per_row;
  }
  return a;
}

/// The total that an exclusive scan of counts[0, nb) into offsets stands
/// for, offsets[nb - 1] + counts[nb - 1], copied back once the stream gets
/// there: queue several, then wait for the stream once.
struct ScanTotal {
  uint32_t last[2];
  void queue(const uint32_t* offsets, const uint32_t* counts, uint32_t nb, cudaStream_t stream) {
    G16_CUDA_CHECK(cudaMemcpyAsync(&last[0], offsets + nb - 1, 4, cudaMemcpyDeviceToHost, stream));
    G16_CUDA_CHECK(cudaMemcpyAsync(&last[1], counts + nb - 1, 4, cudaMemcpyDeviceToHost, stream));
  }
  /// Valid after the stream has been synchronized.
  uint32_t value() const { return last[0] + last[1]; }
};

/// One ScanTotal, waited for.
inline uint32_t last_sum(const uint32_t* offsets, const uint32_t* counts, uint32_t nb,
                         cudaStream_t stream) {
  ScanTotal total;
  total.queue(offsets, counts, nb, stream);
  G16_CUDA_CHECK(cudaStreamSynchronize(stream));
  return total.value();
}

/// One chunk: adds its window sums into `acc` (host, g.sets() entries). Scalar i
/// multiplies bases[indices[i]], or bases[i] where `indices` is null.
template <class F>
void run_chunk(const ec::Affine<F>* bases, const uint64_t* scalars, const uint32_t* indices,
               size_t nc, Geometry g, ChunkScratch<F>& s, cudaStream_t stream,
               std::vector<ec::Xyzz<F>>& acc) {
  using Xyzz = ec::Xyzz<F>;
  uint32_t n32 = static_cast<uint32_t>(nc);
  uint32_t nb = g.total_buckets();
  size_t m = nc * g.windows;
  PhaseTimer phases(stream);
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
  uint32_t block = first_level_block(m);
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
    auto layout = G2FirstLevel::kWholePoints;  // G1 points are always whole
    if constexpr (std::is_same<F, ff::Fp2>::value) layout = g2_first_level();
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
  // while some bucket holds more than inline_pieces(): the window segments
  // add up to that many a bucket as they walk it.
  bool pairs = pair_reduction<F>();
  int cur = 1;
  uint32_t levels = 0;
  while (most > inline_pieces()) {
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
  uint32_t seg_len = segment_length(g);
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
}

/// Point indices and counts travel as 31 bits (bit 31 of an entry is the sign).
inline void check_point_count(size_t n) {
  if (n >= (size_t(1) << 31)) throw std::invalid_argument("MSM of 2^31 or more points");
}

/// Checks that `bases` lives on `device`, holds the curve F and points
/// [first, first + n), and selects the device; returns the point `first`.
template <class F>
const ec::Affine<F>* checked_bases(const GpuDevice& device, const MsmBases& bases, size_t first,
                                   size_t n) {
  constexpr bool g2 = sizeof(F) == sizeof(ff::Fp2);
  require_on_device(device, bases.ordinal(), "MSM bases");
  if (bases.is_g2() != g2) throw std::invalid_argument("MSM bases are of the other group");
  if (first > bases.len() || n > bases.len() - first) {
    throw std::invalid_argument("MSM of " + std::to_string(n) + " points from point " +
                                std::to_string(first) + " over " + std::to_string(bases.len()) +
                                " resident bases");
  }
  check_point_count(n);
  G16_CUDA_CHECK(cudaSetDevice(device.cuda_ordinal()));
  return static_cast<const ec::Affine<F>*>(bases.points()) + first;
}

/// Throws unless every index names one of the `len` bases.
inline void check_indices(const uint32_t* indices, size_t n, size_t len) {
  for (size_t i = 0; i < n; i++) {
    if (indices[i] >= len) {
      throw std::invalid_argument("MSM index " + std::to_string(indices[i]) + " at " +
                                  std::to_string(i) + " is past the " + std::to_string(len) +
                                  " resident bases");
    }
  }
}

/// The geometry of an MSM of n points over `bases`: through their shifted
/// copies where they have them and n is large enough for them to pay
/// (plan_uses_copies), else the size's own window (or the tests' forced one,
/// which also leaves the copies aside).
inline Geometry plan(const MsmBases& bases, size_t n) {
  uint32_t forced = msm_window_bits_for_tests();
  if (forced) return Geometry::of(forced);
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
/// host array of n, is given; `first` must then be 0) per window.
template <class F>
uint32_t device_msm(const GpuDevice& device, const MsmBases& bases, size_t first,
                    const uint64_t* scalars, const uint32_t* indices, size_t n, uint64_t* out,
                    size_t out_words, float* device_ms) {
  if (indices && first != 0) throw std::invalid_argument("an indexed MSM names its bases itself");
  // Indexed scalars may name a base more than once, so their count is not
  // bounded by the bases'.
  const ec::Affine<F>* points = checked_bases<F>(device, bases, first, indices ? 0 : n);
  if (indices) {
    check_point_count(n);
    check_indices(indices, n, bases.len());
  }
  Geometry g = plan(bases, n);
  std::vector<ec::Xyzz<F>> acc(g.sets(), ec::Xyzz<F>::identity());
  ScopedStream stream;
  ScopedEvent start, stop;
  G16_CUDA_CHECK(cudaEventRecord(start.event, stream.stream));

  size_t chunk = std::min(n, max_chunk_points(g));
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
  for (size_t offset = 0; offset < n; offset += chunk) {
    size_t nc = std::min(chunk, n - offset);
    // Indexed chunks name their bases among all of them; plain ones start at
    // their own.
    const ec::Affine<F>* chunk_bases = indices ? points : points + offset;
    const uint32_t* chunk_indices = indices ? indices + offset : nullptr;
    run_chunk<F>(chunk_bases, scalars + offset * 4, chunk_indices, nc, g, scratch, stream.stream,
                 acc);
  }
  G16_CUDA_CHECK(cudaEventRecord(stop.event, stream.stream));
  G16_CUDA_CHECK(cudaEventSynchronize(stop.event));
  if (device_ms) G16_CUDA_CHECK(cudaEventElapsedTime(device_ms, start.event, stop.event));
  write_windows(acc.data(), g.sets(), out, out_words);
  return g.shift();
}

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

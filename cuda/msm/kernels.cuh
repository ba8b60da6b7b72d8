// The MSM's and batch addition's kernels: thin grid loops around the
// per-thread steps of pippenger.cuh.
#pragma once

#include "../ff/fp2_pairs.cuh"
#include "pippenger.cuh"
#include "shifted_copies.cuh"

namespace groth16_gpu {
namespace msm {

/// Threads per block: the G2 kernels use many registers per thread.
constexpr int kBlock = 128;

inline unsigned grid_for(size_t threads) {
  return static_cast<unsigned>((threads + kBlock - 1) / kBlock);
}

struct AtomicCount {
  uint32_t* counts;
  __device__ void operator()(uint32_t key) { atomicAdd(counts + key, 1u); }
};

/// `indices` (may be null) names the base of each scalar; null: base i.
static __global__ void entries_kernel(const ff::Fr* scalars, const uint32_t* indices, uint32_t n,
                                      Geometry g, uint32_t* keys, uint32_t* values,
                                      uint32_t* counts) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  AtomicCount count{counts};
  scalar_entries(scalars[i], i, indices ? indices[i] : i, n, g, keys, values, count);
}

static __global__ void task_count_kernel(const uint32_t* counts, uint32_t nb, uint32_t per_task,
                                  uint32_t* tcounts) {
  uint32_t b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b < nb) tcounts[b] = task_count(counts[b], per_task);
}

static __global__ void tasks_kernel(const uint32_t* offsets, const uint32_t* counts,
                             const uint32_t* toffsets, uint32_t nb, uint32_t per_task,
                             Task* tasks) {
  uint32_t b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b < nb) bucket_tasks(offsets[b], counts[b], toffsets[b], per_task, tasks);
}

static __global__ void piece_count_kernel(const uint32_t* offsets, const uint32_t* counts,
                                          uint32_t nb, uint32_t block, uint32_t* pcounts) {
  uint32_t b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b < nb) pcounts[b] = piece_count(offsets[b], counts[b], block);
}

/// Thread t sums the sorted entries [t block, t block + block), fewer for
/// the last thread (pippenger.cuh's sum_block).
template <class F>
__global__ void sum_blocks_kernel(const ec::Affine<F>* bases, const uint32_t* keys,
                                  const uint32_t* values, const uint32_t* entry_offsets,
                                  const uint32_t* piece_offsets, uint32_t entries,
                                  uint32_t block, ec::Xyzz<F>* out) {
  uint32_t start = (blockIdx.x * blockDim.x + threadIdx.x) * block;
  if (start >= entries) return;
  uint32_t len = entries - start < block ? entries - start : block;
  sum_block(bases, keys, values, entry_offsets, piece_offsets, start, len, block, out);
}

/// A pair of threads' halves of G2 values (ff/fp2_pairs.cuh): each lane
/// reads and writes the Fp2 component it holds.
__device__ inline const ff::Fp& half(const ff::Fp2& x) {
  return ff::PairLane::odd() ? x.c1 : x.c0;
}
__device__ inline ff::Fp& half(ff::Fp2& x) { return ff::PairLane::odd() ? x.c1 : x.c0; }

__device__ inline ec::Xyzz<ff::PairLane> load_halves(const ec::G2Xyzz& p) {
  return {{half(p.x)}, {half(p.y)}, {half(p.zz)}, {half(p.zzz)}};
}
__device__ inline void store_halves(ec::G2Xyzz& o, const ec::Xyzz<ff::PairLane>& sum) {
  half(o.x) = sum.x.h;
  half(o.y) = sum.y.h;
  half(o.zz) = sum.zz.h;
  half(o.zzz) = sum.zzz.h;
}

/// The first level's points and partial sums as a pair's halves.
struct G2Halves {
  const ec::G2Affine* bases;
  ec::G2Xyzz* out;

  __device__ ec::Affine<ff::PairLane> load(uint32_t i) const {
    const ec::G2Affine& p = bases[i];
    return {{half(p.x)}, {half(p.y)}};
  }
  __device__ void store(uint32_t slot, const ec::Xyzz<ff::PairLane>& sum) const {
    store_halves(out[slot], sum);
  }
};

/// An array of G2 partial sums read as a pair's halves (sum_range_through,
/// BucketPieces).
struct G2HalfItems {
  const ec::G2Xyzz* items;
  __device__ ec::Xyzz<ff::PairLane> operator[](uint32_t i) const { return load_halves(items[i]); }
};

/// The pair of threads that thread (blockIdx, threadIdx) belongs to.
__device__ inline uint32_t pair_index() { return (blockIdx.x * blockDim.x + threadIdx.x) / 2; }

/// sum_blocks_kernel for G2 with each point split over a pair of threads:
/// pair t sums thread t's block there, each lane its half of every Fp2.
/// Both lanes of a pair take every branch together (the blocks, keys and
/// the pair-decided is_zero), which the shuffles need. kMinBlocks blocks
/// an SM bound its registers: 3 leaves ptxas its choice (154), 4 holds it
/// to 128.
template <int kMinBlocks>
__global__ void __launch_bounds__(kBlock, kMinBlocks)
    sum_blocks_pairs_kernel(const ec::G2Affine* bases, const uint32_t* keys,
                            const uint32_t* values, const uint32_t* entry_offsets,
                            const uint32_t* piece_offsets, uint32_t entries, uint32_t block,
                            ec::G2Xyzz* out) {
  uint32_t start = pair_index() * block;
  if (start >= entries) return;
  uint32_t len = entries - start < block ? entries - start : block;
  sum_block_through<ff::PairLane>(G2Halves{bases, out}, keys, values, entry_offsets,
                                  piece_offsets, start, len, block);
}

// The kernels after the first level run G2 over pairs of threads too
// (pippenger.cuh's same steps, in PairLane): pair t does thread t's work.
// Their chains of full additions are latency-bound on few threads, where a
// whole G2 point a thread leaves two warps a scheduler. Templates, as
// sum_blocks_pairs_kernel is, so only msm_g2.cu compiles them; kMinBlocks
// as there.

template <class F>
__global__ void sum_tasks_kernel(const ec::Xyzz<F>* in, const Task* tasks, uint32_t ntasks,
                                 ec::Xyzz<F>* out) {
  uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t < ntasks) out[t] = sum_range(in, tasks[t].start, tasks[t].len);
}

template <int kMinBlocks>
__global__ void __launch_bounds__(kBlock, kMinBlocks)
    sum_tasks_pairs_kernel(const ec::G2Xyzz* in, const Task* tasks, uint32_t ntasks,
                           ec::G2Xyzz* out) {
  uint32_t t = pair_index();
  if (t < ntasks) {
    store_halves(out[t], sum_range_through<ff::PairLane>(G2HalfItems{in}, tasks[t].start,
                                                         tasks[t].len));
  }
}

/// out[w * segs + j] = segment j of window w.
template <class F>
__global__ void window_segments_kernel(BucketPieces<F> buckets, Geometry g, uint32_t seg_len,
                                       ec::Xyzz<F>* out) {
  uint32_t segs = g.buckets / seg_len;
  uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= g.sets() * segs) return;
  uint32_t w = t / segs, j = t % segs;
  out[t] = window_segment(buckets, w * g.buckets, j, seg_len);
}

template <int kMinBlocks>
__global__ void __launch_bounds__(kBlock, kMinBlocks)
    window_segments_pairs_kernel(BucketPieces<ff::PairLane, G2HalfItems> buckets, Geometry g,
                                 uint32_t seg_len, ec::G2Xyzz* out) {
  uint32_t segs = g.buckets / seg_len;
  uint32_t t = pair_index();
  if (t >= g.sets() * segs) return;
  uint32_t w = t / segs, j = t % segs;
  store_halves(out[t], window_segment(buckets, w * g.buckets, j, seg_len));
}

/// Groups of `group` items inside each of `rows` rows of `row_len` items:
/// out[r * ceil(row_len / group) + k] = Σ in[r * row_len + k group ...].
template <class F>
__global__ void reduce_rows_kernel(const ec::Xyzz<F>* in, uint32_t rows, uint32_t row_len,
                                   uint32_t group, ec::Xyzz<F>* out) {
  uint32_t per_row = (row_len + group - 1) / group;
  uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= rows * per_row) return;
  uint32_t r = t / per_row, k = t % per_row;
  uint32_t start = k * group;
  uint32_t len = row_len - start < group ? row_len - start : group;
  out[t] = sum_range(in, r * row_len + start, len);
}

template <int kMinBlocks>
__global__ void __launch_bounds__(kBlock, kMinBlocks)
    reduce_rows_pairs_kernel(const ec::G2Xyzz* in, uint32_t rows, uint32_t row_len,
                             uint32_t group, ec::G2Xyzz* out) {
  uint32_t per_row = (row_len + group - 1) / group;
  uint32_t t = pair_index();
  if (t >= rows * per_row) return;
  uint32_t r = t / per_row, k = t % per_row;
  uint32_t start = k * group;
  uint32_t len = row_len - start < group ? row_len - start : group;
  store_halves(out[t],
               sum_range_through<ff::PairLane>(G2HalfItems{in}, r * row_len + start, len));
}

/// Thread t shifts bases [t kShiftRun, t kShiftRun + kShiftRun) of `len`
/// (shifted_copies.cuh's shift_run), fewer for the last thread.
template <class F>
__global__ void shift_kernel(const ec::Affine<F>* in, ec::Affine<F>* out, ec::Xyzz<F>* scratch,
                             F* prefix, uint32_t len, uint32_t bits) {
  uint32_t start = (blockIdx.x * blockDim.x + threadIdx.x) * kShiftRun;
  if (start >= len) return;
  uint32_t run = len - start < kShiftRun ? len - start : kShiftRun;
  shift_run(in + start, out + start, scratch + start, prefix + start, run, bits);
}

/// Clears the bitmap's bits past the last base and counts each word's set bits.
static __global__ void mask_and_count_kernel(uint64_t* bitmap, uint32_t words, uint32_t n,
                                             uint32_t* counts) {
  uint32_t w = blockIdx.x * blockDim.x + threadIdx.x;
  if (w >= words) return;
  uint64_t word = masked_word(bitmap, w, n);
  bitmap[w] = word;
  counts[w] = popcount64(word);
}

/// Thread t sums the selected bases of ranks [t K, t K + K), K =
/// kSelectedPerThread (fewer for the last thread).
template <class F>
__global__ void sum_selected_kernel(const ec::Affine<F>* bases, const uint64_t* bitmap,
                                    const uint32_t* ranks_before, uint32_t words,
                                    uint32_t total, ec::Xyzz<F>* out) {
  uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
  uint32_t first = t * kSelectedPerThread;
  if (first >= total) return;
  uint32_t count = total - first < kSelectedPerThread ? total - first : kSelectedPerThread;
  out[t] = sum_selected_ranks(bases, bitmap, ranks_before, words, first, count);
}

}  // namespace msm
}  // namespace groth16_gpu

// The reduction steps that an MSM chunk and a batch addition share: task
// levels, window segments, row sums (G2 over thread pairs where asked), and
// the totals of exclusive scans copied back to the host.
#pragma once

#include <type_traits>
#include <utility>

#include "groth16_gpu/cuda_check.h"
#include "kernels.cuh"

namespace groth16_gpu {
namespace msm {

/// Blocks an SM that the G2 pair kernels after the first level are
/// launched for: 3 leaves ptxas its choice of registers.
constexpr int kPairReductionBlocks = 3;

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

}  // namespace msm
}  // namespace groth16_gpu

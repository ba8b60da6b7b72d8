// Fixed-base scalar multiplication (include/groth16_gpu/fixed_base.h) for
// one curve: a kernel that sums each scalar's window multiples into an XYZZ
// point, and one that normalizes runs of those points to affine with one
// inversion a run (Montgomery's trick). Scalars go through the device in
// passes of a bounded size, two passes in flight: one computing while the
// other's points come back (through the caller's page-locked slots where
// it lends some).
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>

#include "../ec/xyzz.cuh"
#include "../msm/scoped.cuh"
#include "slot_download.cuh"
#include "groth16_gpu/cuda_check.h"
#include "groth16_gpu/fixed_base.h"

namespace groth16_gpu {
namespace keygen {

/// Bits `first..first + bits` (bits <= 16) of a canonical scalar's 8 limbs;
/// bits past the top read as zero.
__device__ __forceinline__ uint32_t window_digit(const uint32_t* limbs, uint32_t first,
                                                 uint32_t bits) {
  uint32_t limb = first / 32;
  if (limb >= 8) return 0;
  uint64_t word = limbs[limb];
  if (limb + 1 < 8) word |= static_cast<uint64_t>(limbs[limb + 1]) << 32;
  return static_cast<uint32_t>(word >> (first % 32)) & ((1u << bits) - 1);
}

/// points[i] = scalars[i] · base, one table entry added a window.
template <class F>
__global__ void window_sums(const ec::Affine<F>* table, uint32_t bits, uint32_t windows,
                            const ff::Fr* scalars, size_t n, ec::Xyzz<F>* points) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  // blstrs holds scalars in Montgomery form; the windows read the integer.
  ff::Fr canonical = scalars[i].from_montgomery();
  size_t row = (size_t{1} << bits) - 1;
  ec::Xyzz<F> acc = ec::Xyzz<F>::identity();
  for (uint32_t w = 0; w < windows; w++) {
    uint32_t digit = window_digit(canonical.l, w * bits, bits);
    if (digit != 0) acc = acc.add_affine(table[w * row + digit - 1]);
  }
  points[i] = acc;
}

/// Affine points from XYZZ ones, `run` points a thread with one inversion:
/// x = X/ZZ = X·ZZZ/(ZZ·ZZZ), y = Y/ZZZ = Y·ZZ/(ZZ·ZZZ). `prefix` is
/// scratch of n elements. The identity becomes all zeros, as blst has it.
template <class F>
__global__ void normalize_runs(const ec::Xyzz<F>* points, F* prefix, size_t n, uint32_t run,
                               ec::Affine<F>* out) {
  size_t start = (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x) * run;
  if (start >= n) return;
  size_t end = start + run < n ? start + run : n;
  F acc = F::one();
  for (size_t i = start; i < end; i++) {
    prefix[i] = acc;
    const ec::Xyzz<F>& p = points[i];
    if (!p.is_identity()) acc = acc * (p.zz * p.zzz);
  }
  F inverse = acc.inverse();
  for (size_t i = end; i-- > start;) {
    ec::Xyzz<F> p = points[i];
    if (p.is_identity()) {
      out[i] = {F::zero(), F::zero()};
      continue;
    }
    F zz_zzz = p.zz * p.zzz;
    F both_inverse = inverse * prefix[i];  // 1 / (ZZ·ZZZ)
    inverse = inverse * zz_zzz;
    out[i] = {p.x * (both_inverse * p.zzz), p.y * (both_inverse * p.zz)};
  }
}

/// Device buffers of one pass.
template <class F>
struct PassBuffers {
  msm::ScopedDeviceMemory scalars, points, prefix, affine;

  static constexpr size_t kBytesPerScalar =
      sizeof(ff::Fr) + sizeof(ec::Xyzz<F>) + sizeof(F) + sizeof(ec::Affine<F>);

  bool allocate(size_t len, cudaStream_t stream) {
    return scalars.allocate(len * sizeof(ff::Fr), stream) &&
           points.allocate(len * sizeof(ec::Xyzz<F>), stream) &&
           prefix.allocate(len * sizeof(F), stream) &&
           affine.allocate(len * sizeof(ec::Affine<F>), stream);
  }
};

/// Scalars a pass takes: `requested`, or else what a quarter of the free
/// memory holds for two passes, at most 2^22 and at most n.
template <class F>
size_t pass_length(size_t n, size_t requested) {
  if (requested != 0) return std::min(n, requested);
  size_t free_bytes = 0, total_bytes = 0;
  G16_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  size_t by_memory = free_bytes / 4 / (2 * PassBuffers<F>::kBytesPerScalar);
  return std::max<size_t>(1, std::min({n, by_memory, size_t{1} << 22}));
}

/// Points a normalizing thread takes: enough threads to fill the device
/// (about 512 a multiprocessor), at most 32 points each.
inline uint32_t run_length(size_t len, uint32_t sm_count) {
  size_t threads = static_cast<size_t>(sm_count) * 512;
  size_t run = (len + threads - 1) / threads;
  return static_cast<uint32_t>(std::min<size_t>(32, std::max<size_t>(1, run)));
}

/// Host threads that copy points out of page-locked slots, and the most a
/// slot takes: 4 threads move about 30 GB/s of pageable copies, above what
/// the bus brings.
constexpr unsigned kDownloadThreads = 4;
constexpr size_t kMaxSlotBytes = size_t{8} << 20;

/// out[i] = scalars[i] · base for one curve; see fixed_base.h.
template <class F>
void fixed_base_mul_on(const GpuDevice& device, const uint64_t* table, size_t table_points,
                       uint32_t bits, const uint64_t* scalars, size_t n, uint64_t* out,
                       size_t batch, uint64_t* staging, size_t staging_bytes) {
  using Point = ec::Affine<F>;
  if (bits < 1 || bits > 16) {
    throw std::invalid_argument("fixed-base window bits " + std::to_string(bits) +
                                " outside 1..=16");
  }
  uint32_t windows = static_cast<uint32_t>(fixed_base_windows(bits));
  size_t expected = static_cast<size_t>(windows) * ((size_t{1} << bits) - 1);
  if (table_points != expected) {
    throw std::invalid_argument("fixed-base table of " + std::to_string(table_points) +
                                " points, " + std::to_string(bits) + "-bit windows need " +
                                std::to_string(expected));
  }
  if (n == 0) return;
  G16_CUDA_CHECK(cudaSetDevice(device.cuda_ordinal()));

  SlotDownloader slots(device.cuda_ordinal(), reinterpret_cast<uint8_t*>(staging), staging_bytes,
                       kDownloadThreads, kMaxSlotBytes);
  msm::ScopedStream streams[2];
  // Pass k's points are ready once pass_done[k % 2] has happened.
  msm::ScopedEvent pass_done[2];
  msm::ScopedDeviceMemory device_table;
  if (!device_table.allocate(table_points * sizeof(Point), streams[0].stream)) {
    throw std::runtime_error("out of device memory: fixed-base table of " +
                             std::to_string(table_points * sizeof(Point)) + " bytes");
  }
  G16_CUDA_CHECK(cudaMemcpyAsync(device_table.ptr, table, table_points * sizeof(Point),
                                 cudaMemcpyHostToDevice, streams[0].stream));
  G16_CUDA_CHECK(cudaStreamSynchronize(streams[0].stream));

  size_t len = pass_length<F>(n, batch);
  PassBuffers<F> buffers[2];
  for (int j = 0; j < 2; j++) {
    if (!buffers[j].allocate(len, streams[j].stream)) {
      throw std::runtime_error("out of device memory: fixed-base passes of " +
                               std::to_string(len) + " scalars (" +
                               std::to_string(2 * len * PassBuffers<F>::kBytesPerScalar) +
                               " bytes)");
    }
  }
  // On every way out, before any buffer is freed: no queued pass may still
  // read the table or write a buffer another stream frees.
  struct WaitForStreams {
    msm::ScopedStream* streams;
    ~WaitForStreams() {
      cudaStreamSynchronize(streams[0].stream);
      cudaStreamSynchronize(streams[1].stream);
    }
  } wait_for_streams{streams};
  auto* out_points = reinterpret_cast<Point*>(out);
  // Brings pass `k`'s points back (the host waits for them).
  auto download = [&](size_t k) {
    size_t first = k * len, count = std::min(len, n - first);
    PassBuffers<F>& b = buffers[k % 2];
    cudaStream_t stream = streams[k % 2].stream;
    if (slots.usable()) {
      slots.download(b.affine.ptr, out_points + first, count * sizeof(Point),
                     pass_done[k % 2].event);
      return;
    }
    G16_CUDA_CHECK(cudaMemcpyAsync(out_points + first, b.affine.ptr, count * sizeof(Point),
                                   cudaMemcpyDeviceToHost, stream));
    G16_CUDA_CHECK(cudaStreamSynchronize(stream));
  };
  size_t passes = (n + len - 1) / len;
  for (size_t k = 0; k < passes; k++) {
    size_t first = k * len, count = std::min(len, n - first);
    PassBuffers<F>& b = buffers[k % 2];
    cudaStream_t stream = streams[k % 2].stream;
    G16_CUDA_CHECK(cudaMemcpyAsync(b.scalars.ptr, scalars + 4 * first, count * sizeof(ff::Fr),
                                   cudaMemcpyHostToDevice, stream));
    unsigned blocks = static_cast<unsigned>((count + 127) / 128);
    window_sums<F><<<blocks, 128, 0, stream>>>(
        static_cast<const Point*>(device_table.ptr), bits, windows,
        static_cast<const ff::Fr*>(b.scalars.ptr), count, static_cast<ec::Xyzz<F>*>(b.points.ptr));
    G16_CUDA_CHECK(cudaGetLastError());
    uint32_t run = run_length(count, device.sm_count());
    size_t threads = (count + run - 1) / run;
    normalize_runs<F><<<static_cast<unsigned>((threads + 127) / 128), 128, 0, stream>>>(
        static_cast<const ec::Xyzz<F>*>(b.points.ptr), static_cast<F*>(b.prefix.ptr), count, run,
        static_cast<Point*>(b.affine.ptr));
    G16_CUDA_CHECK(cudaGetLastError());
    G16_CUDA_CHECK(cudaEventRecord(pass_done[k % 2].event, stream));
    // The previous pass comes back while this one computes.
    if (k > 0) download(k - 1);
  }
  download(passes - 1);
}

}  // namespace keygen
}  // namespace groth16_gpu

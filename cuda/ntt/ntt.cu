// Radix-2 NTT over Fr on the device: bit-reversal, then one launch per
// stage. Twiddles and coset powers are computed on the device (a table of
// omega^j built from per-thread exponentiation), so nothing of size n is
// computed on the host.
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "../ff/bls12_381.cuh"
#include "groth16_gpu/cuda_check.h"
#include "groth16_gpu/ntt.h"

namespace groth16_gpu {
namespace {

using ff::Fr;

constexpr int kThreads = 256;

/// A blstrs Scalar's words as limbs: the same bytes, read as 32-bit halves.
G16_HD Fr fr_from_words(const uint64_t* words) {
  Fr r;
  for (int i = 0; i < 4; i++) {
    r.l[2 * i] = static_cast<uint32_t>(words[i]);
    r.l[2 * i + 1] = static_cast<uint32_t>(words[i] >> 32);
  }
  return r;
}

/// base^e by square-and-multiply over e's bits.
__device__ Fr pow_fr(Fr base, uint64_t e) {
  Fr acc = Fr::one();
  while (e != 0) {
    if (e & 1) acc = acc * base;
    base = base.sqr();
    e >>= 1;
  }
  return acc;
}

unsigned blocks_for(size_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

__global__ void powers_kernel(Fr* out, size_t n, Fr base) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = pow_fr(base, i);
}

/// values[i] *= base^i.
__global__ void distribute_powers_kernel(Fr* values, size_t n, Fr base) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) values[i] = values[i] * pow_fr(base, i);
}

/// values[i] *= scale · base^i.
__global__ void scale_powers_kernel(Fr* values, size_t n, Fr scale, Fr base) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) values[i] = values[i] * scale * pow_fr(base, i);
}

__global__ void bit_reverse_kernel(const Fr* in, Fr* out, size_t n, int log_n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) {
    size_t j = __brevll(static_cast<unsigned long long>(i)) >> (64 - log_n);
    out[j] = in[i];
  }
}

/// One decimation-in-time stage: butterflies of half-size 2^s, one per thread.
__global__ void stage_kernel(Fr* values, size_t n, int s, const Fr* twiddles) {
  size_t t = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (t >= n / 2) return;
  size_t half = size_t{1} << s;
  size_t j = t & (half - 1);
  size_t lo = ((t >> s) << (s + 1)) | j;
  size_t hi = lo + half;
  Fr w = twiddles[j * (n / (2 * half))];
  Fr u = values[lo];
  Fr v = values[hi] * w;
  values[lo] = u + v;
  values[hi] = u - v;
}

/// Device buffers freed on every path, on the device that allocated them.
struct NttBuffers {
  Fr* values = nullptr;
  Fr* scratch = nullptr;
  Fr* twiddles = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  cudaStream_t stream = nullptr;
  ~NttBuffers() {
    if (values) cudaFree(values);
    if (scratch) cudaFree(scratch);
    if (twiddles) cudaFree(twiddles);
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    if (stream) cudaStreamDestroy(stream);
  }
};

void check_launch(const char* what) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    throw std::runtime_error(std::string("CUDA launch `") + what + "` failed with " +
                             cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
  }
}

}  // namespace

void ntt_fr(const GpuDevice& device, uint64_t* values, size_t n, const uint64_t* omega,
            const uint64_t* pre_coset, const uint64_t* scale, const uint64_t* post_coset,
            float* device_ms) {
  G16_CUDA_CHECK(cudaSetDevice(static_cast<int>(device.ordinal())));
  if (n == 0 || (n & (n - 1)) != 0) throw std::runtime_error("NTT size must be a power of two");
  int log_n = 0;
  while ((size_t{1} << log_n) < n) log_n++;
  if (log_n > static_cast<int>(kMaxNttLog)) throw std::runtime_error("NTT larger than 2^27");
  size_t bytes = n * sizeof(Fr);
  size_t free_bytes = 0, total_bytes = 0;
  G16_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (bytes * 5 / 2 + (64 << 20) > free_bytes) {
    throw std::runtime_error("out of device memory: an NTT of " + std::to_string(n) +
                             " values needs " + std::to_string(bytes * 5 / 2) + " bytes, " +
                             std::to_string(free_bytes) + " free");
  }

  NttBuffers b;
  G16_CUDA_CHECK(cudaStreamCreateWithFlags(&b.stream, cudaStreamNonBlocking));
  G16_CUDA_CHECK(cudaEventCreate(&b.start));
  G16_CUDA_CHECK(cudaEventCreate(&b.stop));
  G16_CUDA_CHECK(cudaMalloc(&b.values, bytes));
  G16_CUDA_CHECK(cudaMalloc(&b.scratch, bytes));
  G16_CUDA_CHECK(cudaMalloc(&b.twiddles, std::max<size_t>(n / 2, 1) * sizeof(Fr)));

  G16_CUDA_CHECK(cudaEventRecord(b.start, b.stream));
  G16_CUDA_CHECK(cudaMemcpyAsync(b.scratch, values, bytes, cudaMemcpyHostToDevice, b.stream));
  if (pre_coset) {
    distribute_powers_kernel<<<blocks_for(n), kThreads, 0, b.stream>>>(b.scratch, n,
                                                                         fr_from_words(pre_coset));
    check_launch("distribute_powers_kernel");
  }
  bit_reverse_kernel<<<blocks_for(n), kThreads, 0, b.stream>>>(b.scratch, b.values, n,
                                                                 log_n > 0 ? log_n : 1);
  check_launch("bit_reverse_kernel");
  if (n > 1) {
    powers_kernel<<<blocks_for(n / 2), kThreads, 0, b.stream>>>(b.twiddles, n / 2,
                                                                  fr_from_words(omega));
    check_launch("powers_kernel");
    for (int s = 0; s < log_n; s++) {
      stage_kernel<<<blocks_for(n / 2), kThreads, 0, b.stream>>>(b.values, n, s, b.twiddles);
      check_launch("stage_kernel");
    }
  }
  if (scale || post_coset) {
    Fr one = Fr::one();
    scale_powers_kernel<<<blocks_for(n), kThreads, 0, b.stream>>>(
        b.values, n, scale ? fr_from_words(scale) : one, post_coset ? fr_from_words(post_coset) : one);
    check_launch("scale_powers_kernel");
  }
  G16_CUDA_CHECK(cudaMemcpyAsync(values, b.values, bytes, cudaMemcpyDeviceToHost, b.stream));
  G16_CUDA_CHECK(cudaEventRecord(b.stop, b.stream));
  G16_CUDA_CHECK(cudaStreamSynchronize(b.stream));
  float ms = 0;
  G16_CUDA_CHECK(cudaEventElapsedTime(&ms, b.start, b.stop));
  if (device_ms) *device_ms = ms;
}

}  // namespace groth16_gpu

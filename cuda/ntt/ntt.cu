// Radix-2 NTT over Fr on the device: bit-reversal in place, then one launch
// per stage. Twiddles and coset powers are computed on the device (a table
// of omega^j built from per-thread exponentiation), so nothing of size n is
// computed on the host. Also the H polynomial of a proof, on buffers that
// stay on the device for the H MSM.
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "../ff/bls12_381.cuh"
#include "groth16_gpu/cuda_check.h"
#include "groth16_gpu/device_scalars.h"
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

/// Swaps values[i] and values[rev(i)] once per pair.
__global__ void bit_reverse_kernel(Fr* values, size_t n, int log_n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) {
    size_t j = __brevll(static_cast<unsigned long long>(i)) >> (64 - log_n);
    if (i < j) {
      Fr t = values[i];
      values[i] = values[j];
      values[j] = t;
    }
  }
}

/// a[i] = (a[i] b[i] - c[i]) z_inv: the quotient by the vanishing polynomial,
/// which is the constant z on the coset.
__global__ void quotient_kernel(Fr* a, const Fr* b, const Fr* c, size_t n, Fr z_inv) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) a[i] = (a[i] * b[i] - c[i]) * z_inv;
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

void check_launch(const char* what) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    throw std::runtime_error(std::string("CUDA launch `") + what + "` failed with " +
                             cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
  }
}

/// Device memory, a stream and two events, released on every path. The
/// memory is stream-ordered (cudaMallocAsync / cudaFreeAsync): a plain
/// cudaFree waits for the whole device, stalling a proof that runs beside.
struct NttResources {
  Fr* buffers[3] = {nullptr, nullptr, nullptr};
  cudaEvent_t start = nullptr, stop = nullptr;
  cudaStream_t stream = nullptr;
  NttResources() {
    G16_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    G16_CUDA_CHECK(cudaEventCreate(&start));
    G16_CUDA_CHECK(cudaEventCreate(&stop));
  }
  ~NttResources() {
    // The frees are ordered after the stream's work; the one wait, after
    // them, returns the memory before the caller reads free memory.
    for (Fr* b : buffers) {
      if (b) cudaFreeAsync(b, stream);
    }
    if (stream) cudaStreamSynchronize(stream);
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    if (stream) cudaStreamDestroy(stream);
  }
  NttResources(const NttResources&) = delete;
  NttResources& operator=(const NttResources&) = delete;

  /// buffers[slot] = `count` scalars; too little memory is a clear error.
  Fr* allocate(int slot, size_t count, const char* what) {
    cudaError_t error =
        cudaMallocAsync(&buffers[slot], std::max<size_t>(count, 1) * sizeof(Fr), stream);
    if (error == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      buffers[slot] = nullptr;
      throw std::runtime_error(std::string("out of device memory: ") + what + " needs " +
                               std::to_string(count * sizeof(Fr)) + " bytes");
    }
    G16_CUDA_CHECK(error);
    return buffers[slot];
  }

  /// Starts the event timer.
  void begin() { G16_CUDA_CHECK(cudaEventRecord(start, stream)); }

  /// Waits for the stream; writes the time since begin() to `device_ms`.
  void end(float* device_ms) {
    G16_CUDA_CHECK(cudaEventRecord(stop, stream));
    G16_CUDA_CHECK(cudaStreamSynchronize(stream));
    float ms = 0;
    G16_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (device_ms) *device_ms = ms;
  }
};

/// log2 of n, which must be a power of two up to 2^kMaxNttLog.
int checked_log(size_t n) {
  if (n == 0 || (n & (n - 1)) != 0) throw std::runtime_error("NTT size must be a power of two");
  int log_n = 0;
  while ((size_t{1} << log_n) < n) log_n++;
  if (log_n > static_cast<int>(kMaxNttLog)) throw std::runtime_error("NTT larger than 2^27");
  return log_n;
}

/// twiddles[j] = omega^j for j < n / 2.
void fill_twiddles(Fr* twiddles, size_t n, Fr omega, cudaStream_t stream) {
  if (n < 2) return;
  powers_kernel<<<blocks_for(n / 2), kThreads, 0, stream>>>(twiddles, n / 2, omega);
  check_launch("powers_kernel");
}

/// In place on the device: values[i] *= pre^i (if pre), the transform with
/// the root whose powers `twiddles` holds, values[i] *= scale · post^i.
void transform(Fr* values, size_t n, int log_n, const Fr* twiddles, const Fr* pre,
               const Fr* scale, const Fr* post, cudaStream_t stream) {
  if (pre) {
    distribute_powers_kernel<<<blocks_for(n), kThreads, 0, stream>>>(values, n, *pre);
    check_launch("distribute_powers_kernel");
  }
  if (n > 1) {
    bit_reverse_kernel<<<blocks_for(n), kThreads, 0, stream>>>(values, n, log_n);
    check_launch("bit_reverse_kernel");
    for (int s = 0; s < log_n; s++) {
      stage_kernel<<<blocks_for(n / 2), kThreads, 0, stream>>>(values, n, s, twiddles);
      check_launch("stage_kernel");
    }
  }
  if (scale || post) {
    Fr one = Fr::one();
    scale_powers_kernel<<<blocks_for(n), kThreads, 0, stream>>>(values, n, scale ? *scale : one,
                                                                post ? *post : one);
    check_launch("scale_powers_kernel");
  }
}

void check_on_device(const GpuDevice& device, const DeviceScalars& scalars, size_t len,
                     const char* what) {
  require_on_device(device, scalars.ordinal(), what);
  if (scalars.len() != len) {
    throw std::invalid_argument(std::string(what) + " hold " + std::to_string(scalars.len()) +
                                " scalars, expected " + std::to_string(len));
  }
}

}  // namespace

void ntt_fr(const GpuDevice& device, uint64_t* values, size_t n, const uint64_t* omega,
            const uint64_t* pre_coset, const uint64_t* scale, const uint64_t* post_coset,
            float* device_ms) {
  G16_CUDA_CHECK(cudaSetDevice(device.cuda_ordinal()));
  int log_n = checked_log(n);
  Fr pre = pre_coset ? fr_from_words(pre_coset) : Fr::one();
  Fr factor = scale ? fr_from_words(scale) : Fr::one();
  Fr post = post_coset ? fr_from_words(post_coset) : Fr::one();

  NttResources r;
  Fr* d_values = r.allocate(0, n, "an NTT's values");
  Fr* twiddles = r.allocate(1, n / 2, "an NTT's twiddles");
  r.begin();
  G16_CUDA_CHECK(cudaMemcpyAsync(d_values, values, n * sizeof(Fr), cudaMemcpyHostToDevice,
                                 r.stream));
  fill_twiddles(twiddles, n, fr_from_words(omega), r.stream);
  transform(d_values, n, log_n, twiddles, pre_coset ? &pre : nullptr, scale ? &factor : nullptr,
            post_coset ? &post : nullptr, r.stream);
  G16_CUDA_CHECK(cudaMemcpyAsync(values, d_values, n * sizeof(Fr), cudaMemcpyDeviceToHost,
                                 r.stream));
  r.end(device_ms);
}

void h_polynomial(const GpuDevice& device, const DeviceScalars& a, const DeviceScalars& b,
                  const DeviceScalars& c, const uint64_t* constants, float* device_ms) {
  size_t m = a.len();
  check_on_device(device, a, m, "H polynomial's a");
  check_on_device(device, b, m, "H polynomial's b");
  check_on_device(device, c, m, "H polynomial's c");
  G16_CUDA_CHECK(cudaSetDevice(device.cuda_ordinal()));
  int log_m = checked_log(m);
  Fr k[kHConstants];
  for (size_t i = 0; i < kHConstants; i++) k[i] = fr_from_words(constants + 4 * i);
  const Fr &omega = k[0], &omega_inv = k[1], &m_inv = k[2], &g = k[3], &g_inv = k[4],
           &z_inv = k[5];

  NttResources r;
  Fr* forward = r.allocate(0, m / 2, "the H polynomial's twiddles");
  Fr* inverse = r.allocate(1, m / 2, "the H polynomial's inverse twiddles");
  r.begin();
  fill_twiddles(forward, m, omega, r.stream);
  fill_twiddles(inverse, m, omega_inv, r.stream);
  Fr* values[3] = {static_cast<Fr*>(a.data()), static_cast<Fr*>(b.data()),
                   static_cast<Fr*>(c.data())};
  // Evaluations on the domain -> coefficients -> evaluations on the coset.
  for (Fr* v : values) {
    transform(v, m, log_m, inverse, nullptr, &m_inv, nullptr, r.stream);
    transform(v, m, log_m, forward, &g, nullptr, nullptr, r.stream);
  }
  quotient_kernel<<<blocks_for(m), kThreads, 0, r.stream>>>(values[0], values[1], values[2], m,
                                                            z_inv);
  check_launch("quotient_kernel");
  transform(values[0], m, log_m, inverse, nullptr, &m_inv, &g_inv, r.stream);
  r.end(device_ms);
}

}  // namespace groth16_gpu

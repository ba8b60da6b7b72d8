// Fp's Montgomery product on the integer pipe (MontField::mul_chains) against
// the FP64-pipe product (fp64_product.cuh, beside this file): equality on the
// host (its exact emulation of the FP64 split) and on the device, for random
// and special operands, then each product's rate.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -Iinclude -o fp64_mul scripts/probes/fp64_mul.cu
//   ./fp64_mul
//
// The rate kernels run kChains independent chains x = x * y per thread, in
// the modes below; CUDA events after a warm-up, median of kRepeats.
// On one H200 (2026-12-02) the FP64 product ran at 0.85-0.95 of the integer
// product in every mode: docs/NOTES-msm.md has the figures and ncu's reading.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "../../cuda/ff/bls12_381.cuh"
#include "fp64_product.cuh"

using groth16_gpu::ff::Fp;
using groth16_gpu::ff::FpParams;

namespace {

constexpr int kChains = 4;
constexpr int kSteps = 256;
constexpr int kRepeats = 7;

__device__ __noinline__ Fp mul_integer(Fp a, Fp b) { return Fp::mul_chains(a, b); }

__device__ __forceinline__ Fp mul_fp64_inline(Fp a, Fp b) {
  Fp r;
  uint32_t high;
  groth16_gpu::ff::fp64::montgomery_product<FpParams>(a.l, b.l, r.l, high);
  r.reduce_once(high);
  return r;
}

__device__ __noinline__ Fp mul_fp64(Fp a, Fp b) { return mul_fp64_inline(a, b); }

__device__ uint64_t next(uint64_t& s) {
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return s;
}

__device__ Fp random_fp(uint64_t& s) {
  Fp r;
  for (int i = 0; i < 12; i += 2) {
    uint64_t v = next(s);
    r.l[i] = uint32_t(v);
    r.l[i + 1] = uint32_t(v >> 32);
  }
  r.l[11] &= 0x1fffffff;  // below 2^381: at most three subtractions
  for (int k = 0; k < 3; k++) r.reduce_once(0);
  return r;
}

/// p - 1, 0, 1 (plain), R mod p, or random: operand kinds for the edges.
__device__ Fp operand(uint64_t& s, int kind) {
  Fp r = Fp::zero();
  switch (kind) {
    case 0:
      for (int i = 0; i < 12; i++) r.l[i] = FpParams::modulus(i);
      r.l[0] -= 1;
      return r;
    case 1:
      return r;
    case 2:
      r.l[0] = 1;
      return r;
    case 3:
      return Fp::one();
    default:
      return random_fp(s);
  }
}

__global__ void check(unsigned long long* mismatches, uint64_t seed) {
  uint64_t s = seed ^ (0x9e3779b97f4a7c15ull * (blockIdx.x * blockDim.x + threadIdx.x + 1));
  for (int k = 0; k < 16; k++) next(s);
  for (int round = 0; round < 8; round++) {
    int kind_a = (threadIdx.x + round) % 16, kind_b = (threadIdx.x / 16 + round) % 16;
    Fp a = operand(s, kind_a), b = operand(s, kind_b);
    Fp want = mul_integer(a, b), got = mul_fp64(a, b);
    if (!(want == got)) atomicAdd(mismatches, 1ull);
  }
}

/// How the rate kernel multiplies.
enum Mode : int {
  kIntegerCalled,  // as the bucket kernels do
  kFp64Called,
  kIntegerInlined,  // the chains' products inlined: ptxas may interleave them
  kFp64Inlined,
  kMixedWarps,   // even warps integer, odd warps FP64, both called
  kMixedChains,  // even chains integer, odd chains FP64, inlined
  kModes
};
constexpr const char* kModeNames[kModes] = {"integer called", "fp64 called", "integer inlined",
                                            "fp64 inlined",   "mixed warps", "mixed chains"};

template <int kMode>
__device__ __forceinline__ Fp product(Fp a, Fp b, int chain) {
  bool odd_warp = (threadIdx.x / 32) % 2 == 1;
  switch (kMode) {
    case kIntegerCalled: return mul_integer(a, b);
    case kFp64Called: return mul_fp64(a, b);
    case kIntegerInlined: return Fp::mul_chains(a, b);
    case kFp64Inlined: return mul_fp64_inline(a, b);
    case kMixedWarps: return odd_warp ? mul_fp64(a, b) : mul_integer(a, b);
    default: return chain % 2 ? mul_fp64_inline(a, b) : Fp::mul_chains(a, b);
  }
}

/// kBlocksPerSm > 0 caps the registers (__launch_bounds__) so that many
/// 128-thread blocks fit on an SM: more warps to hide the product's latency.
template <int kMode, int kBlocksPerSm = 0>
__global__ void __launch_bounds__(128, kBlocksPerSm) rate(Fp* out, uint64_t seed) {
  uint64_t s = seed ^ (blockIdx.x * blockDim.x + threadIdx.x + 1);
  Fp x[kChains];
  for (int k = 0; k < kChains; k++) x[k] = random_fp(s);
  Fp y = random_fp(s);
  for (int step = 0; step < kSteps; step++) {
#pragma unroll
    for (int k = 0; k < kChains; k++) x[k] = product<kMode>(x[k], y, k);
  }
  Fp acc = x[0];
  for (int k = 1; k < kChains; k++) acc = acc + x[k];
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

#define CHECK(call)                                                       \
  do {                                                                    \
    cudaError_t e = (call);                                               \
    if (e != cudaSuccess) {                                               \
      std::printf("%s: %s\n", #call, cudaGetErrorString(e));              \
      std::exit(1);                                                       \
    }                                                                     \
  } while (0)

template <int kMode, int kBlocksPerSm = 0>
double products_per_second(int blocks, int threads, Fp* out) {
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  rate<kMode, kBlocksPerSm><<<blocks, threads>>>(out, 1);
  CHECK(cudaDeviceSynchronize());
  std::vector<float> ms;
  for (int r = 0; r < kRepeats; r++) {
    CHECK(cudaEventRecord(start));
    rate<kMode, kBlocksPerSm><<<blocks, threads>>>(out, r + 2);
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float t;
    CHECK(cudaEventElapsedTime(&t, start, stop));
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  double products = double(blocks) * threads * kChains * kSteps;
  return products / (ms[kRepeats / 2] * 1e-3);
}

}  // namespace

/// The host path of the FP64 product (the same schedule, the split computed
/// exactly with 128-bit integers) against mul_chains.
bool host_check() {
  uint64_t s = 0x2545f4914f6cdd1dull;
  auto next_host = [&s] {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  };
  auto random_host = [&] {
    Fp r;
    for (int i = 0; i < 12; i++) r.l[i] = uint32_t(next_host());
    r.l[11] &= 0x1fffffff;
    for (int k = 0; k < 3; k++) r.reduce_once(0);
    return r;
  };
  Fp p_minus_1 = Fp::zero(), plain_one = Fp::zero();
  for (int i = 0; i < 12; i++) p_minus_1.l[i] = FpParams::modulus(i);
  p_minus_1.l[0] -= 1;
  plain_one.l[0] = 1;
  const Fp special[] = {Fp::zero(), Fp::one(), plain_one, p_minus_1};
  long cases = 0, bad = 0;
  for (int k = 0; k < 100000; k++) {
    Fp a = k < 16 ? special[k % 4] : random_host();
    Fp b = k < 16 ? special[k / 4] : k % 3 == 0 ? a : random_host();
    Fp got;
    uint32_t high = 0;
    groth16_gpu::ff::fp64::montgomery_product<FpParams>(a.l, b.l, got.l, high);
    got.reduce_once(high);
    cases++;
    if (!(got == Fp::mul_chains(a, b))) bad++;
  }
  std::printf("host check: %ld products compared, %ld mismatches\n", cases, bad);
  return bad == 0;
}

int main() {
  if (!host_check()) return 1;
  unsigned long long* mismatches;
  CHECK(cudaMalloc(&mismatches, sizeof *mismatches));
  CHECK(cudaMemset(mismatches, 0, sizeof *mismatches));
  const int check_blocks = 4096, check_threads = 256;
  for (uint64_t seed = 1; seed <= 8; seed++) check<<<check_blocks, check_threads>>>(mismatches, seed);
  CHECK(cudaDeviceSynchronize());
  unsigned long long bad = 0;
  CHECK(cudaMemcpy(&bad, mismatches, sizeof bad, cudaMemcpyDeviceToHost));
  std::printf("check: %llu products compared, %llu mismatches\n",
              8ull * check_blocks * check_threads * 8, bad);

  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  Fp* out;
  const int max_blocks = sms * 32, threads = 128;
  CHECK(cudaMalloc(&out, sizeof(Fp) * max_blocks * threads));
  for (int per_sm : {4, 16}) {
    int blocks = sms * per_sm;
    double rates[kModes] = {
        products_per_second<kIntegerCalled>(blocks, threads, out),
        products_per_second<kFp64Called>(blocks, threads, out),
        products_per_second<kIntegerInlined>(blocks, threads, out),
        products_per_second<kFp64Inlined>(blocks, threads, out),
        products_per_second<kMixedWarps>(blocks, threads, out),
        products_per_second<kMixedChains>(blocks, threads, out),
    };
    for (int m = 0; m < kModes; m++) {
      std::printf("blocks/SM %2d, %-15s: %.3e products/s (%.2f of integer called)\n", per_sm,
                  kModeNames[m], rates[m], rates[m] / rates[0]);
    }
    double capped[] = {products_per_second<kIntegerCalled, 5>(blocks, threads, out),
                       products_per_second<kFp64Called, 4>(blocks, threads, out),
                       products_per_second<kFp64Called, 5>(blocks, threads, out),
                       products_per_second<kFp64Called, 6>(blocks, threads, out)};
    const char* names[] = {"integer, 5 blocks", "fp64, 4 blocks", "fp64, 5 blocks", "fp64, 6 blocks"};
    for (int m = 0; m < 4; m++) {
      std::printf("blocks/SM %2d, registers for %-17s: %.3e products/s (%.2f of integer called)\n",
                  per_sm, names[m], capped[m], capped[m] / rates[0]);
    }
  }
  return bad != 0;
}

// Multiply-pipe rates of the GPU, for the MSM floor (docs/NOTES-msm.md).
//
//   nvcc -O3 -arch=sm_90 -o mul_rate scripts/probes/mul_rate.cu && ./mul_rate
//
// Each thread runs kChains independent dependency chains; every step's
// multiplicand is the previous step's result, so ptxas can neither fold nor
// hoist the multiplies. Kernels time with CUDA events after a warm-up;
// the median of kRepeats is reported as operations per second.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

constexpr int kChains = 8;
constexpr int kSteps = 4096;
constexpr int kRepeats = 7;

// r = a * b + r, 32 x 32 -> 64 bits (IMAD.WIDE.U32); next a = low word of r.
__global__ void imad_wide(uint64_t* out, uint32_t b) {
  uint64_t r[kChains];
  for (int i = 0; i < kChains; ++i) r[i] = threadIdx.x + i + 1;
  for (int s = 0; s < kSteps; ++s) {
#pragma unroll
    for (int i = 0; i < kChains; ++i) {
      asm volatile("mad.wide.u32 %0, %1, %2, %0;" : "+l"(r[i]) : "r"(uint32_t(r[i])), "r"(b));
    }
  }
  uint64_t sum = 0;
  for (int i = 0; i < kChains; ++i) sum += r[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

// The carry-chain form the Fp product uses: lo and hi of a * b added with
// carries into a register pair (IMAD.WIDE.U32.X once ptxas pairs them).
__global__ void imad_wide_carry(uint64_t* out, uint32_t b) {
  uint32_t lo[kChains], hi[kChains];
  for (int i = 0; i < kChains; ++i) {
    lo[i] = threadIdx.x + i + 1;
    hi[i] = i;
  }
  for (int s = 0; s < kSteps; ++s) {
#pragma unroll
    for (int i = 0; i < kChains; ++i) {
      asm volatile(
          "{\n\t"
          "mad.lo.cc.u32 %0, %0, %2, %0;\n\t"
          "madc.hi.u32 %1, %0, %2, %1;\n\t"
          "}"
          : "+r"(lo[i]), "+r"(hi[i])
          : "r"(b));
    }
  }
  uint64_t sum = 0;
  for (int i = 0; i < kChains; ++i) sum += (uint64_t(hi[i]) << 32) | lo[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

// r = r * b + c, 32 bits (IMAD).
__global__ void imad32(uint64_t* out, uint32_t b) {
  uint32_t r[kChains];
  for (int i = 0; i < kChains; ++i) r[i] = threadIdx.x + i + 1;
  for (int s = 0; s < kSteps; ++s) {
#pragma unroll
    for (int i = 0; i < kChains; ++i) {
      asm volatile("mad.lo.u32 %0, %0, %1, %2;" : "+r"(r[i]) : "r"(b), "r"(i));
    }
  }
  uint64_t sum = 0;
  for (int i = 0; i < kChains; ++i) sum += r[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

// r = r * b + c in FP64 (DFMA).
__global__ void dfma(uint64_t* out, double b) {
  double r[kChains];
  for (int i = 0; i < kChains; ++i) r[i] = 1.0 + threadIdx.x * 1e-9 + i;
  for (int s = 0; s < kSteps; ++s) {
#pragma unroll
    for (int i = 0; i < kChains; ++i) {
      asm volatile("fma.rn.f64 %0, %0, %1, %2;" : "+d"(r[i]) : "d"(b), "d"(1e-12));
    }
  }
  double sum = 0;
  for (int i = 0; i < kChains; ++i) sum += r[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = static_cast<uint64_t>(sum);
}

#define CHECK(call)                                                        \
  do {                                                                     \
    cudaError_t e = (call);                                                \
    if (e != cudaSuccess) {                                                \
      std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e));      \
      return 1;                                                            \
    }                                                                      \
  } while (0)

template <typename Launch>
int measure(const char* name, double ops_per_step_per_thread, int blocks, int threads,
            Launch launch) {
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  launch();  // warm-up
  CHECK(cudaDeviceSynchronize());
  std::vector<float> ms;
  for (int i = 0; i < kRepeats; ++i) {
    CHECK(cudaEventRecord(start));
    launch();
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float t = 0;
    CHECK(cudaEventElapsedTime(&t, start, stop));
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  double ops = double(blocks) * threads * kSteps * kChains * ops_per_step_per_thread;
  std::printf("%-34s %8.3f ms  %.3e /s\n", name, ms[kRepeats / 2], ops / (ms[kRepeats / 2] * 1e-3));
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return 0;
}

}  // namespace

int main() {
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  int clock_khz = 0;
  CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
  std::printf("%s: %d SMs, %.2f GHz max clock\n", prop.name, prop.multiProcessorCount,
              clock_khz * 1e-6);
  const int threads = 256;
  const int blocks = prop.multiProcessorCount * 8;
  uint64_t* out = nullptr;
  CHECK(cudaMalloc(&out, sizeof(uint64_t) * blocks * threads));
  int rc = 0;
  rc |= measure("IMAD (32-bit mad.lo)", 1, blocks, threads,
                [&] { imad32<<<blocks, threads>>>(out, 0x9e3779b9u); });
  rc |= measure("IMAD.WIDE (mad.wide.u32)", 1, blocks, threads,
                [&] { imad_wide<<<blocks, threads>>>(out, 0x9e3779b9u); });
  rc |= measure("mad.lo.cc + madc.hi (one 32x32)", 1, blocks, threads,
                [&] { imad_wide_carry<<<blocks, threads>>>(out, 0x9e3779b9u); });
  rc |= measure("DFMA (fma.rn.f64)", 1, blocks, threads,
                [&] { dfma<<<blocks, threads>>>(out, 1.0000001); });
  CHECK(cudaGetLastError());
  cudaFree(out);
  return rc;
}

// Multiply-accumulate chains in PTX for the device's Montgomery product.
// ptxas fuses a madc.lo.cc / madc.hi.cc pair on one limb product, added
// into an aligned register pair, into a single IMAD.WIDE.U32.X (a 64-bit
// multiply-add with carry in and out). The portable 64-bit C++ form costs
// an IMAD.WIDE plus carry moves (IMAD.X, VIADD, zeroing IMAD.MOV) on the
// same multiply pipe, which is what bounds the bucket kernels.
#pragma once

#include "common.cuh"

#if defined(__CUDA_ARCH__)

namespace groth16_gpu {
namespace ff {
namespace chains {

// One asm per instruction: the carry flag runs from each to the next.
__device__ __forceinline__ void mad_lo_cc(uint32_t& d, uint32_t x, uint32_t y) {
  asm volatile("mad.lo.cc.u32 %0, %1, %2, %0;" : "+r"(d) : "r"(x), "r"(y));
}
__device__ __forceinline__ void madc_lo_cc(uint32_t& d, uint32_t x, uint32_t y) {
  asm volatile("madc.lo.cc.u32 %0, %1, %2, %0;" : "+r"(d) : "r"(x), "r"(y));
}
__device__ __forceinline__ void madc_hi_cc(uint32_t& d, uint32_t x, uint32_t y) {
  asm volatile("madc.hi.cc.u32 %0, %1, %2, %0;" : "+r"(d) : "r"(x), "r"(y));
}
__device__ __forceinline__ void add_cc(uint32_t& d, uint32_t x) {
  asm volatile("add.cc.u32 %0, %0, %1;" : "+r"(d) : "r"(x));
}
__device__ __forceinline__ void addc_cc(uint32_t& d, uint32_t x) {
  asm volatile("addc.cc.u32 %0, %0, %1;" : "+r"(d) : "r"(x));
}
__device__ __forceinline__ void addc(uint32_t& d, uint32_t x) {
  asm volatile("addc.u32 %0, %0, %1;" : "+r"(d) : "r"(x));
}

/// acc[0 .. LEN) += Σ a[j] b 2^(32 (j - OFF)) over the limbs j = OFF,
/// OFF + 2, ... < N: every product lands on the pair (acc[2k], acc[2k+1]),
/// so one parity of limbs never straddles a pair. The caller bounds the sum
/// below 2^(32 LEN).
template <int N, int OFF, int LEN>
__device__ __forceinline__ void mul_add_pairs(uint32_t* acc, const uint32_t* a, uint32_t b) {
  static_assert(N % 2 == 0 && (OFF == 0 || OFF == 1), "limbs pair up");
  mad_lo_cc(acc[0], a[OFF], b);
  madc_hi_cc(acc[1], a[OFF], b);
#pragma unroll
  for (int j = OFF + 2; j < N; j += 2) {
    madc_lo_cc(acc[j - OFF], a[j], b);
    madc_hi_cc(acc[j - OFF + 1], a[j], b);
  }
  // The last pair ends at acc[N - 1] for either parity.
#pragma unroll
  for (int k = N; k < LEN - 1; k++) addc_cc(acc[k], 0);
  addc(acc[LEN - 1], 0);
}

/// acc[0 .. LEN) += x.
template <int LEN>
__device__ __forceinline__ void add_word(uint32_t* acc, uint32_t x) {
  add_cc(acc[0], x);
#pragma unroll
  for (int k = 1; k < LEN - 1; k++) addc_cc(acc[k], 0);
  addc(acc[LEN - 1], 0);
}

}  // namespace chains
}  // namespace ff
}  // namespace groth16_gpu

#endif

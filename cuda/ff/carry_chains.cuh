// Multiply-accumulate rows as PTX carry chains, for the device's Montgomery
// product. ptxas fuses each madc.lo.cc / madc.hi.cc pair on one limb
// product into a single IMAD.WIDE.U32.X (a 64-bit multiply-add with carry
// in and out), where the portable 64-bit C++ form costs an IMAD.WIDE plus
// separate carry moves on the same (saturated) multiply pipe.
#pragma once

#include "common.cuh"

#if defined(__CUDA_ARCH__)

namespace groth16_gpu {
namespace ff {
namespace chains {

// One asm per instruction, as the carry flag runs from each to the next.
__device__ __forceinline__ void mad_lo_cc(uint32_t& d, uint32_t x, uint32_t y) {
  asm volatile("mad.lo.cc.u32 %0, %1, %2, %0;" : "+r"(d) : "r"(x), "r"(y));
}
__device__ __forceinline__ void madc_lo_cc(uint32_t& d, uint32_t x, uint32_t y) {
  asm volatile("madc.lo.cc.u32 %0, %1, %2, %0;" : "+r"(d) : "r"(x), "r"(y));
}
__device__ __forceinline__ void madc_hi_cc(uint32_t& d, uint32_t x, uint32_t y) {
  asm volatile("madc.hi.cc.u32 %0, %1, %2, %0;" : "+r"(d) : "r"(x), "r"(y));
}
__device__ __forceinline__ void addc_cc(uint32_t& d) {
  asm volatile("addc.cc.u32 %0, %0, 0;" : "+r"(d));
}
__device__ __forceinline__ void addc(uint32_t& d) { asm volatile("addc.u32 %0, %0, 0;" : "+r"(d)); }

/// t[0 .. N+2) += a[0 .. N) * b, N even: the even limbs' products in one
/// chain (lo into t[j], hi into t[j+1]), the odd limbs' in another.
template <int N>
__device__ __forceinline__ void mul_add_row(uint32_t* t, const uint32_t* a, uint32_t b) {
  static_assert(N % 2 == 0, "the two chains pair limbs");
  mad_lo_cc(t[0], a[0], b);
  madc_hi_cc(t[1], a[0], b);
#pragma unroll
  for (int j = 2; j < N; j += 2) {
    madc_lo_cc(t[j], a[j], b);
    madc_hi_cc(t[j + 1], a[j], b);
  }
  addc_cc(t[N]);
  addc(t[N + 1]);
  mad_lo_cc(t[1], a[1], b);
  madc_hi_cc(t[2], a[1], b);
#pragma unroll
  for (int j = 3; j < N; j += 2) {
    madc_lo_cc(t[j], a[j], b);
    madc_hi_cc(t[j + 1], a[j], b);
  }
  addc(t[N + 1]);
}

}  // namespace chains
}  // namespace ff
}  // namespace groth16_gpu

#endif

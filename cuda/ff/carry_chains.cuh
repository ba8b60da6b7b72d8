// Multiply-accumulate chains for the Montgomery product (mont.cuh), one
// `Chain` per side:
//  - device: PTX with the hardware carry flag. ptxas fuses a madc.lo.cc /
//    madc.hi.cc pair on one limb product, added into an aligned register
//    pair, into a single IMAD.WIDE.U32.X (a 64-bit multiply-add with carry
//    in and out). The portable 64-bit C++ form costs an IMAD.WIDE plus
//    carry moves (IMAD.X, VIADD, zeroing IMAD.MOV) on the same multiply
//    pipe, which is what bounds the bucket kernels.
//  - host: the same instructions with the carry flag in a variable, so the
//    host reference tests run the device's product step for step.
#pragma once

#include "common.cuh"

namespace groth16_gpu {
namespace ff {
namespace chains {

#if defined(__CUDA_ARCH__)
/// One asm per instruction: the carry flag runs from each to the next.
struct Chain {
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
};
#else
/// The PTX instructions' meaning, with the carry flag in `carry`.
struct Chain {
  uint32_t carry = 0;

  void sum(uint32_t& d, uint64_t addend, uint32_t carry_in) {
    uint64_t s = static_cast<uint64_t>(d) + addend + carry_in;
    d = static_cast<uint32_t>(s);
    carry = static_cast<uint32_t>(s >> 32);
  }
  static uint32_t lo(uint32_t x, uint32_t y) { return static_cast<uint32_t>(uint64_t(x) * y); }
  static uint32_t hi(uint32_t x, uint32_t y) { return static_cast<uint32_t>(uint64_t(x) * y >> 32); }

  void mad_lo_cc(uint32_t& d, uint32_t x, uint32_t y) { sum(d, lo(x, y), 0); }
  void madc_lo_cc(uint32_t& d, uint32_t x, uint32_t y) { sum(d, lo(x, y), carry); }
  void madc_hi_cc(uint32_t& d, uint32_t x, uint32_t y) { sum(d, hi(x, y), carry); }
  void add_cc(uint32_t& d, uint32_t x) { sum(d, x, 0); }
  void addc_cc(uint32_t& d, uint32_t x) { sum(d, x, carry); }
  void addc(uint32_t& d, uint32_t x) { d = d + x + carry; }  // no carry out
};
#endif

/// Runs the pending carry through acc[FROM .. LEN) (none out of the top).
template <int FROM, int LEN>
G16_FIELD void carry_through(Chain& c, uint32_t* acc) {
  G16_UNROLL for (int k = FROM; k < LEN - 1; k++) c.addc_cc(acc[k], 0);
  c.addc(acc[LEN - 1], 0);
}

/// acc[0 .. LEN) += Σ a[j] b 2^(32 (j - OFF)) over the limbs j = OFF,
/// OFF + 2, ... < N: every product lands on the pair (acc[2k], acc[2k+1]),
/// so one parity of limbs never straddles a pair. The caller bounds the sum
/// below 2^(32 LEN).
template <int N, int OFF, int LEN>
G16_FIELD void mul_add_pairs(Chain& c, uint32_t* acc, const uint32_t* a, uint32_t b) {
  static_assert(N % 2 == 0 && (OFF == 0 || OFF == 1), "limbs pair up");
  c.mad_lo_cc(acc[0], a[OFF], b);
  c.madc_hi_cc(acc[1], a[OFF], b);
  G16_UNROLL for (int j = OFF + 2; j < N; j += 2) {
    c.madc_lo_cc(acc[j - OFF], a[j], b);
    c.madc_hi_cc(acc[j - OFF + 1], a[j], b);
  }
  // The last pair ends at acc[N - 1] for either parity.
  carry_through<N, LEN>(c, acc);
}

/// acc[0 .. LEN) += x.
template <int LEN>
G16_FIELD void add_word(Chain& c, uint32_t* acc, uint32_t x) {
  c.add_cc(acc[0], x);
  carry_through<1, LEN>(c, acc);
}

}  // namespace chains
}  // namespace ff
}  // namespace groth16_gpu

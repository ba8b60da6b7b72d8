// Shared by every arithmetic header: the qualifier that makes a function
// callable from both host and device code. Compiled by g++ (or by nvcc's host
// pass) the same functions run on the CPU, which is how the host reference
// path in cuda/msm tests the arithmetic without a GPU.
#pragma once

#include <cstdint>

// G16_FIELD: field operations, forced inline on the device (the hot inner
// loops), except that the Fp and Fp2 products inline only a call to one
// shared copy (MontField::mul_device, Fp2::mul_device: the instruction
// cache); G16_HD: everything else, inlined as the compiler sees fit. Host
// code is never forced: fully inlined point formulas take g++ minutes.
#if defined(__CUDACC__)
#define G16_HD __host__ __device__ inline
#else
#define G16_HD inline
#endif
// G16_POINT: point formulas, compiled once per translation unit on the
// device and called (a dozen multiplications amortize the call; inlining
// them into every kernel multiplied ptxas time and registers).
#if defined(__CUDACC__)
#define G16_POINT __host__ __device__ __noinline__
#else
#define G16_POINT inline
#endif
#if defined(__CUDA_ARCH__)
#define G16_FIELD __host__ __device__ __forceinline__
#define G16_UNROLL _Pragma("unroll")
#elif defined(__CUDACC__)
#define G16_FIELD __host__ __device__ inline
#define G16_UNROLL
#else
#define G16_FIELD inline
#define G16_UNROLL
#endif

namespace groth16_gpu {
namespace ff {

/// a + b + carry; returns the low word, leaves the high word in `carry`.
G16_FIELD uint32_t add_carry(uint32_t a, uint32_t b, uint32_t& carry) {
  uint64_t s = static_cast<uint64_t>(a) + b + carry;
  carry = static_cast<uint32_t>(s >> 32);
  return static_cast<uint32_t>(s);
}

/// a - b - borrow; returns the low word, leaves 1 in `borrow` on underflow.
G16_FIELD uint32_t sub_borrow(uint32_t a, uint32_t b, uint32_t& borrow) {
  uint64_t d = static_cast<uint64_t>(a) - b - borrow;
  borrow = static_cast<uint32_t>(d >> 63);
  return static_cast<uint32_t>(d);
}

}  // namespace ff
}  // namespace groth16_gpu

// BLS12-381's fields: Fp (381 bits, 12 limbs, R = 2^384), Fr (255 bits,
// 8 limbs, R = 2^256) and Fp2 = Fp[u] / (u^2 + 1). Layouts are blst's:
// Fp as blst_fp, Fr as blst_fr (Montgomery), Fp2 as {c0, c1}.
#pragma once

#include "mont.cuh"

namespace groth16_gpu {
namespace ff {

/// Base field constants. A switch on a constant index folds away once the
/// limb loops are unrolled, and needs no memory in device code.
struct FpParams {
  static constexpr int N = 12;
  G16_FIELD static constexpr uint32_t modulus(int i) {
    return i == 0 ? 0xffffaaabu : i == 1 ? 0xb9feffffu : i == 2 ? 0xb153ffffu
         : i == 3 ? 0x1eabfffeu : i == 4 ? 0xf6b0f624u : i == 5 ? 0x6730d2a0u
         : i == 6 ? 0xf38512bfu : i == 7 ? 0x64774b84u : i == 8 ? 0x434bacd7u
         : i == 9 ? 0x4b1ba7b6u : i == 10 ? 0x397fe69au : 0x1a0111eau;
  }
  G16_FIELD static constexpr uint32_t m0() { return 0xfffcfffdu; }
  G16_FIELD static constexpr uint32_t one(int i) {
    return i == 0 ? 0x0002fffdu : i == 1 ? 0x76090000u : i == 2 ? 0xc40c0002u
         : i == 3 ? 0xebf4000bu : i == 4 ? 0x53c758bau : i == 5 ? 0x5f489857u
         : i == 6 ? 0x70525745u : i == 7 ? 0x77ce5853u : i == 8 ? 0xa256ec6du
         : i == 9 ? 0x5c071a97u : i == 10 ? 0xfa80e493u : 0x15f65ec3u;
  }
};

/// Scalar field constants.
struct FrParams {
  static constexpr int N = 8;
  G16_FIELD static constexpr uint32_t modulus(int i) {
    return i == 0 ? 0x00000001u : i == 1 ? 0xffffffffu : i == 2 ? 0xfffe5bfeu
         : i == 3 ? 0x53bda402u : i == 4 ? 0x09a1d805u : i == 5 ? 0x3339d808u
         : i == 6 ? 0x299d7d48u : 0x73eda753u;
  }
  G16_FIELD static constexpr uint32_t m0() { return 0xffffffffu; }
  G16_FIELD static constexpr uint32_t one(int i) {
    return i == 0 ? 0xfffffffeu : i == 1 ? 0x00000001u : i == 2 ? 0x00034802u
         : i == 3 ? 0x5884b7fau : i == 4 ? 0xecbc4ff5u : i == 5 ? 0x998c4fefu
         : i == 6 ? 0xacc5056fu : 0x1824b159u;
  }
};

using Fp = MontField<FpParams>;
using Fr = MontField<FrParams>;

/// c0 + c1 u with u^2 = -1, laid out as blst_fp2.
struct Fp2 {
  Fp c0, c1;

  G16_FIELD static Fp2 zero() { return {Fp::zero(), Fp::zero()}; }
  G16_FIELD static Fp2 one() { return {Fp::one(), Fp::zero()}; }
  G16_FIELD bool is_zero() const { return c0.is_zero() && c1.is_zero(); }
  G16_FIELD bool operator==(const Fp2& o) const { return c0 == o.c0 && c1 == o.c1; }
  G16_FIELD Fp2 operator+(const Fp2& b) const { return {c0 + b.c0, c1 + b.c1}; }
  G16_FIELD Fp2 operator-(const Fp2& b) const { return {c0 - b.c0, c1 - b.c1}; }
  G16_FIELD Fp2 operator-() const { return {-c0, -c1}; }
  G16_FIELD Fp2 dbl() const { return {c0.dbl(), c1.dbl()}; }

  G16_FIELD Fp2 operator*(const Fp2& b) const {
#if defined(__CUDA_ARCH__)
    return mul_device(*this, b);
#else
    return karatsuba(b);
#endif
  }

  G16_FIELD Fp2 sqr() const {
#if defined(__CUDA_ARCH__)
    return sqr_device(*this);
#else
    return complex_square();
#endif
  }

#if defined(__CUDA_ARCH__)
  /// Called, not inlined, on the device, as Fp's product is: G2's point
  /// formulas then hold one copy of each (G2 MSMs 2-3 % faster on an H200
  /// than with the three products inlined at every use).
  static __device__ __noinline__ Fp2 mul_device(Fp2 a, Fp2 b) { return a.karatsuba(b); }
  static __device__ __noinline__ Fp2 sqr_device(Fp2 a) { return a.complex_square(); }
#endif

  /// Karatsuba: three Fp multiplications.
  G16_FIELD Fp2 karatsuba(const Fp2& b) const {
    Fp v0 = c0 * b.c0;
    Fp v1 = c1 * b.c1;
    Fp s = (c0 + c1) * (b.c0 + b.c1);
    return {v0 - v1, s - v0 - v1};
  }

  /// (c0 - c1 u) / (c0^2 + c1^2), since u^2 = -1; 0 for 0.
  G16_HD Fp2 inverse() const {
    Fp norm_inverse = (c0 * c0 + c1 * c1).inverse();
    return {c0 * norm_inverse, -(c1 * norm_inverse)};
  }

  /// (c0 + c1 u)^2 = (c0 + c1)(c0 - c1) + 2 c0 c1 u: two multiplications.
  G16_FIELD Fp2 complex_square() const {
    Fp m = c0 * c1;
    return {(c0 + c1) * (c0 - c1), m.dbl()};
  }
};

}  // namespace ff
}  // namespace groth16_gpu

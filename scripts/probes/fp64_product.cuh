// Montgomery multiplication on the FP64 pipe, for fields whose integer
// product is bound by the GPU's wide multiply-add (IMAD.WIDE issues at ~0.4
// of the IMAD rate on an H200, DFMA at the full rate: docs/NOTES-msm.md).
// A probe, not part of the crate: on an H200 it ran at 0.85-0.95 of the
// integer product (fp64_mul.cu beside it measures both).
//
// The idea is Emmart, Luo and Weems' (ARITH 2018): limbs of 52 bits held
// exactly in doubles; each limb product a b < 2^104 is split by two FMAs into
// the bit patterns of two doubles whose mantissas are its high and low 52
// bits, and those patterns are summed as 64-bit integers in column
// accumulators. The exponent bits every pattern carries have zero low 52
// bits, so they never disturb a column's low 52 bits; their total is known
// per column and subtracted up front.
//
// Input and output are the field's usual N 32-bit words in Montgomery form
// with R = 2^(32 N); only the inner product runs in 52-bit limbs. With
// 32 N = 52 (L - 1) + s, the reduction runs L - 1 rows of 52 bits and one of
// s bits, so the result is a b / R, the same as the integer product's.
#pragma once

#include "../../cuda/ff/common.cuh"

namespace groth16_gpu {
namespace ff {
namespace fp64 {

constexpr uint64_t kMask52 = (uint64_t{1} << 52) - 1;
/// Bit patterns of 2^52 and 2^104: a double in [2^52, 2^53) holds an
/// integer's low 52 bits in its mantissa, one in [2^104, 2^105) (with ulp
/// 2^52) the integer's bits above 52.
constexpr uint64_t kBits2p52 = uint64_t{0x433} << 52;
constexpr uint64_t kBits2p104 = uint64_t{0x467} << 52;

template <int N>
struct Shape {
  static constexpr int kBits = 32 * N;
  static constexpr int kLimbs = (kBits + 51) / 52;
  static constexpr int kColumns = 2 * kLimbs;
  /// Bits the last reduction row clears (20 for Fp's 384).
  static constexpr int kLastRowBits = kBits - 52 * (kLimbs - 1);
  static_assert(kLastRowBits > 0 && kLastRowBits <= 32, "last row's m fits a word");

  /// Limb products landing on column c: #{(i, j) : i + j = c}.
  G16_FIELD static constexpr uint64_t products_at(int c) {
    return c < 0 || c > 2 * kLimbs - 2 ? 0 : uint64_t(c < kLimbs ? c + 1 : 2 * kLimbs - 1 - c);
  }
  /// What column c's low and high patterns add on top of their integers:
  /// the a b rows and the reduction rows put the same count on each column.
  G16_FIELD static constexpr uint64_t exponent_bits(int c) {
    return 2 * (products_at(c) * kBits2p52 + products_at(c - 1) * kBits2p104);
  }
};

/// Bits [shift, shift + 52) of the 96-bit w0 + w1 2^32 + w2 2^64.
G16_FIELD constexpr uint64_t window52(uint32_t w0, uint32_t w1, uint32_t w2, int shift) {
  uint64_t low = uint64_t{w0} | uint64_t{w1} << 32;
  uint64_t v = low >> shift;
  if (shift > 12) v |= uint64_t{w2} << (64 - shift);
  return v & kMask52;
}

/// Limb k (bits [52 k, 52 k + 52)) of an N-word integer.
template <int N>
G16_FIELD uint64_t limb52(const uint32_t* w, int k) {
  int bit = 52 * k, word = bit / 32;
  uint32_t w0 = word < N ? w[word] : 0;
  uint32_t w1 = word + 1 < N ? w[word + 1] : 0;
  uint32_t w2 = word + 2 < N ? w[word + 2] : 0;
  return window52(w0, w1, w2, bit % 32);
}

/// The modulus' limb k, at compile time.
template <class P>
G16_FIELD constexpr uint64_t modulus_limb(int k) {
  int bit = 52 * k, word = bit / 32;
  uint32_t w0 = word < P::N ? P::modulus(word) : 0;
  uint32_t w1 = word + 1 < P::N ? P::modulus(word + 1) : 0;
  uint32_t w2 = word + 2 < P::N ? P::modulus(word + 2) : 0;
  return window52(w0, w1, w2, bit % 32);
}

/// -p^-1 mod 2^52 (Newton's iteration doubles the correct low bits).
template <class P>
G16_FIELD constexpr uint64_t neg_inverse52() {
  uint64_t p = uint64_t{P::modulus(0)} | uint64_t{P::modulus(1)} << 32;
  uint64_t inv = p;  // p p = 1 mod 8 for odd p: 3 bits
  for (int i = 0; i < 5; i++) inv *= 2 - p * inv;
  return (0 - inv) & kMask52;
}

/// x < 2^52 as a double (exact). On the device by its bit pattern: the
/// conversion instruction runs on a slower pipe.
G16_FIELD double exact_double(uint64_t x) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(__longlong_as_double(static_cast<long long>(x | kBits2p52)), 0x1p52);
#else
  return static_cast<double>(x);
#endif
}

/// a b for integers a, b < 2^52 held in doubles, as bit patterns:
/// high = kBits2p104 + floor(a b / 2^52), low = kBits2p52 + (a b mod 2^52).
struct Halves {
  uint64_t high, low;
};

G16_FIELD Halves split_product(double a, double b) {
#if defined(__CUDA_ARCH__)
  // Rounded toward zero, a b + 2^104 keeps floor(a b / 2^52) in the mantissa.
  double high = __fma_rz(a, b, 0x1p104);
  // 2^104 + 2^52 - high = 2^52 - (high part) exactly; the FMA's exact sum
  // a b - (high part) + 2^52 lies in [2^52, 2^53), so it is not rounded.
  double low = __fma_rn(a, b, __dsub_rn(0x1p104 + 0x1p52, high));
  return {static_cast<uint64_t>(__double_as_longlong(high)),
          static_cast<uint64_t>(__double_as_longlong(low))};
#else
  // The host reference: the same bit patterns from the exact product.
  unsigned __int128 ab = static_cast<unsigned __int128>(static_cast<uint64_t>(a)) *
                         static_cast<uint64_t>(b);
  return {kBits2p104 + static_cast<uint64_t>(ab >> 52),
          kBits2p52 + (static_cast<uint64_t>(ab) & kMask52)};
#endif
}

/// out = a b 2^(-32 N) mod p, below 2p (the caller's reduce_once takes it
/// below p; `high` is word N, always 0 for p < 2^(32 N) / 2). Inputs below p.
template <class P>
G16_FIELD void montgomery_product(const uint32_t* a, const uint32_t* b, uint32_t* out,
                                  uint32_t& high) {
  constexpr int N = P::N;
  using S = Shape<N>;
  constexpr int L = S::kLimbs, C = S::kColumns;
  constexpr uint64_t kN0 = neg_inverse52<P>();

  double x[L], y[L];
  G16_UNROLL for (int k = 0; k < L; k++) {
    x[k] = exact_double(limb52<N>(a, k));
    y[k] = exact_double(limb52<N>(b, k));
  }
  uint64_t col[C];
  G16_UNROLL for (int c = 0; c < C; c++) col[c] = 0 - S::exponent_bits(c);

  // Row i adds x[i] y into the columns, then clears column i with m p.
  G16_UNROLL for (int i = 0; i < L; i++) {
    G16_UNROLL for (int j = 0; j < L; j++) {
      Halves h = split_product(x[i], y[j]);
      col[i + j] += h.low;
      col[i + j + 1] += h.high;
    }
    // Column i's low 52 bits are final here (the patterns still to come
    // into it add only exponent bits), so m can be taken from them.
    uint64_t m = i < L - 1 ? (col[i] * kN0) & kMask52
                           : uint64_t{static_cast<uint32_t>(col[i]) * static_cast<uint32_t>(kN0) &
                                      ((uint32_t{1} << S::kLastRowBits) - 1)};
    double md = exact_double(m);
    G16_UNROLL for (int j = 0; j < L; j++) {
      Halves h = split_product(md, static_cast<double>(modulus_limb<P>(j)));
      col[i + j] += h.low;
      col[i + j + 1] += h.high;
    }
    if (i < L - 1) col[i + 1] += col[i] >> 52;  // column i is 0 mod 2^52
  }
  // Columns L - 1 onwards hold the result times 2^(32 N); 52-bit limbs.
  G16_UNROLL for (int c = L - 1; c < C - 1; c++) {
    col[c + 1] += col[c] >> 52;
    col[c] &= kMask52;
  }
  G16_UNROLL for (int t = 0; t <= N; t++) {
    constexpr int kBase = 32 * N;
    int bit = kBase + 32 * t, c = bit / 52, s = bit % 52;
    uint64_t v = c < C ? col[c] >> s : 0;
    if (s > 20 && c + 1 < C) v |= col[c + 1] << (52 - s);
    if (t < N) {
      out[t] = static_cast<uint32_t>(v);
    } else {
      high = static_cast<uint32_t>(v);
    }
  }
}

}  // namespace fp64
}  // namespace ff
}  // namespace groth16_gpu

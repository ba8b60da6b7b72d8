// Fp2 spread over a pair of threads: lane 0 of the pair holds an element's
// c0, lane 1 its c1, and each computes its own half of a product from its
// halves and its partner's. A G2 point then takes an Fp-sized share of
// each thread's registers, as a G1 point does, where one thread holding
// whole Fp2 values runs at 255 registers and two warps a scheduler, its
// products' dependency chains exposed (docs/NOTES-msm.md). The arithmetic is
// the same as one thread's Karatsuba: a product is one sum of two
// products per lane (3 N^2 limb products each, 6 N^2 in all; Karatsuba's
// three Montgomery products are 6 N^2 too).
#pragma once

#include "bls12_381.cuh"

namespace groth16_gpu {
namespace ff {

/// Lane `odd`'s half of x y, from its own halves x, y and its partner's
/// xp, yp: lane 0 c0 = x0 y0 + (-x1) y1, lane 1 c1 = x1 y0 + x0 y1.
G16_FIELD Fp pair_mul(const Fp& x, const Fp& xp, const Fp& y, const Fp& yp, bool odd) {
  Fp a = odd ? xp : x;
  Fp c = odd ? x : -xp;
  return Fp::sum_of_products(a, y, c, yp);
}

/// Both lanes' halves computed in one thread: the pair formulas checked
/// against Fp2's on the host.
G16_HD Fp2 pair_mul_both(const Fp2& x, const Fp2& y) {
  return {pair_mul(x.c0, x.c1, y.c0, y.c1, false), pair_mul(x.c1, x.c0, y.c1, y.c0, true)};
}

#if defined(__CUDACC__)
/// One thread's half of an Fp2 element that a pair of neighbouring threads
/// holds (lanes 2k and 2k + 1 of a warp, in one-dimensional blocks), with
/// the operations ec::Xyzz needs. The pair trades halves by shuffles, so
/// both of its threads must run the same code: every branch taken on
/// these values (is_zero) is decided for the pair, and a caller must let
/// no other condition part them.
struct PairLane {
  Fp h;

  __device__ static bool odd() { return threadIdx.x & 1; }
  /// The pair's two lanes, for the shuffles' synchronization.
  __device__ static unsigned pair_mask() { return 3u << (threadIdx.x & 30); }

  /// The partner thread's half.
  __device__ static Fp partner(const Fp& x) {
    Fp r;
    G16_UNROLL for (int i = 0; i < Fp::N; i++) r.l[i] = __shfl_xor_sync(pair_mask(), x.l[i], 1);
    return r;
  }

  __device__ static PairLane zero() { return {Fp::zero()}; }
  __device__ static PairLane one() { return {odd() ? Fp::zero() : Fp::one()}; }
  /// Whether the element (both halves) is 0. Both lanes always reach the
  /// shuffle: a short-circuited one would leave its partner waiting.
  __device__ bool is_zero() const {
    int mine = h.is_zero() ? 1 : 0;
    int theirs = __shfl_xor_sync(pair_mask(), mine, 1);
    return (mine & theirs) != 0;
  }
  __device__ PairLane operator+(const PairLane& b) const { return {h + b.h}; }
  __device__ PairLane operator-(const PairLane& b) const { return {h - b.h}; }
  __device__ PairLane operator-() const { return {-h}; }
  __device__ PairLane dbl() const { return {h.dbl()}; }
  __device__ PairLane operator*(const PairLane& b) const { return mul_device(*this, b); }
  /// Squares through the product. A square of its own ((x0 + x1)(x0 -
  /// x1) and 2 x0 x1, one Fp product a lane) did less arithmetic but
  /// added two functions to G2's hot loop, which then outgrew the
  /// instruction cache: dropping it made G2 MSMs ~10 % faster
  /// (docs/NOTES-gpu.md, twenty-sixth session).
  __device__ PairLane sqr() const { return mul_device(*this, *this); }

  /// Called, not inlined, as Fp's and Fp2's products are (the instruction
  /// cache); the shuffles go inside.
  static __device__ __noinline__ PairLane mul_device(PairLane x, PairLane y) {
    return {pair_mul(x.h, partner(x.h), y.h, partner(y.h), odd())};
  }
};
#endif

}  // namespace ff
}  // namespace groth16_gpu

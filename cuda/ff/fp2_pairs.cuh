// Fp2 spread over a pair of threads: lane 0 of the pair holds an element's
// c0, lane 1 its c1, and each computes its own half of a product from its
// halves and its partner's. A G2 point then takes an Fp-sized share of
// each thread's registers, as a G1 point does, where one thread holding
// whole Fp2 values runs at 255 registers and two warps a scheduler, its
// products' dependency chains exposed (NOTES-msm.md). The arithmetic is
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

/// Lane `odd`'s half of x^2: lane 0 c0 = (x0 + x1)(x0 - x1), lane 1
/// c1 = (x1 + x1) x0. One product per lane.
G16_FIELD Fp pair_sqr(const Fp& x, const Fp& xp, bool odd) {
  Fp sum = x + (odd ? x : xp);
  Fp other = odd ? xp : x - xp;
  return sum * other;
}

/// Both lanes' halves computed in one thread: the pair formulas checked
/// against Fp2's on the host.
G16_HD Fp2 pair_mul_both(const Fp2& x, const Fp2& y) {
  return {pair_mul(x.c0, x.c1, y.c0, y.c1, false), pair_mul(x.c1, x.c0, y.c1, y.c0, true)};
}

G16_HD Fp2 pair_sqr_both(const Fp2& x) {
  return {pair_sqr(x.c0, x.c1, false), pair_sqr(x.c1, x.c0, true)};
}

}  // namespace ff
}  // namespace groth16_gpu

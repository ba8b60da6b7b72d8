// Short Weierstrass points y^2 = x^3 + b (a = 0) over a field F (Fp for G1,
// Fp2 for G2), for bucket accumulation:
//  - Affine<F>: blst's affine layout {x, y}; blst encodes the identity as all
//    zeros (blst_p1_affine_is_inf tests exactly that), and so does this.
//  - Xyzz<F>: x = X/ZZ, y = Y/ZZZ with ZZ^3 = ZZZ^2; the identity has ZZ = 0.
// Formulas: Bernstein-Lange's EFD, "xyzz" for a = 0 (madd-2008-s,
// add-2008-s, dbl-2008-s-1, mdbl-2008-s-1), with the special cases (identity
// operands, P == Q, P == -Q) handled explicitly.
#pragma once

#include "../ff/bls12_381.cuh"

namespace groth16_gpu {
namespace ec {

template <class F>
struct Affine {
  F x, y;

  G16_HD bool is_identity() const { return x.is_zero() && y.is_zero(); }
  G16_HD Affine operator-() const { return is_identity() ? *this : Affine{x, -y}; }
};

template <class F>
struct Xyzz {
  F x, y, zz, zzz;

  G16_HD static Xyzz identity() { return {F::zero(), F::zero(), F::zero(), F::zero()}; }
  G16_HD bool is_identity() const { return zz.is_zero(); }

  G16_HD static Xyzz from_affine(const Affine<F>& p) {
    if (p.is_identity()) return identity();
    return {p.x, p.y, F::one(), F::one()};
  }

  G16_HD Xyzz operator-() const { return {x, -y, zz, zzz}; }

  /// 2 * this (dbl-2008-s-1, a = 0).
  G16_POINT Xyzz dbl() const {
    if (is_identity()) return *this;
    F u = y.dbl();
    F v = u.sqr();
    F w = u * v;
    F s = x * v;
    F xx = x.sqr();
    F m = xx.dbl() + xx;
    F x3 = m.sqr() - s.dbl();
    F y3 = m * (s - x3) - w * y;
    return {x3, y3, v * zz, w * zzz};
  }

  /// 2 * p for an affine p (mdbl-2008-s-1).
  G16_POINT static Xyzz dbl_affine(const Affine<F>& p) {
    F u = p.y.dbl();
    F v = u.sqr();
    F w = u * v;
    F s = p.x * v;
    F xx = p.x.sqr();
    F m = xx.dbl() + xx;
    F x3 = m.sqr() - s.dbl();
    F y3 = m * (s - x3) - w * p.y;
    return {x3, y3, v, w};
  }

  /// this + p for an affine p (madd-2008-s).
  G16_POINT Xyzz add_affine(const Affine<F>& p) const {
    if (p.is_identity()) return *this;
    if (is_identity()) return from_affine(p);
    F pp_ = p.x * zz - x;   // P = X2 ZZ1 - X1
    F r = p.y * zzz - y;    // R = Y2 ZZZ1 - Y1
    if (pp_.is_zero()) {
      // Same x: the same point (double it) or its negation (identity).
      return r.is_zero() ? dbl_affine(p) : identity();
    }
    F pp = pp_.sqr();
    F ppp = pp_ * pp;
    F q = x * pp;
    F x3 = r.sqr() - ppp - q.dbl();
    F y3 = r * (q - x3) - y * ppp;
    return {x3, y3, zz * pp, zzz * ppp};
  }

  /// this + o (add-2008-s).
  G16_POINT Xyzz operator+(const Xyzz& o) const {
    if (o.is_identity()) return *this;
    if (is_identity()) return o;
    F u1 = x * o.zz;
    F u2 = o.x * zz;
    F s1 = y * o.zzz;
    F s2 = o.y * zzz;
    F pp_ = u2 - u1;
    F r = s2 - s1;
    if (pp_.is_zero()) {
      return r.is_zero() ? dbl() : identity();
    }
    F pp = pp_.sqr();
    F ppp = pp_ * pp;
    F q = u1 * pp;
    F x3 = r.sqr() - ppp - q.dbl();
    F y3 = r * (q - x3) - s1 * ppp;
    return {x3, y3, zz * o.zz * pp, zzz * o.zzz * ppp};
  }

  /// k * this by double-and-add, most significant bit first.
  G16_POINT Xyzz mul_small(uint32_t k) const {
    Xyzz acc = identity();
    int top = 31;
    while (top >= 0 && !((k >> top) & 1)) top--;
    for (int bit = top; bit >= 0; bit--) {
      acc = acc.dbl();
      if ((k >> bit) & 1) acc = acc + *this;
    }
    return acc;
  }
};

/// Jacobian (X, Y, Z) as blst_p1 / blst_p2 hold it: x = X/Z^2, y = Y/Z^3.
template <class F>
struct Jacobian {
  F x, y, z;
};

/// XYZZ -> Jacobian without an inversion: Z = ZZ ZZZ, X = X ZZ ZZZ^2,
/// Y = Y ZZ^3 ZZZ^2; then X/Z^2 = X/ZZ and Y/Z^3 = Y/ZZZ. The identity
/// (ZZ = 0) maps to Z = 0, blst's identity.
template <class F>
G16_POINT Jacobian<F> to_jacobian(const Xyzz<F>& p) {
  F z = p.zz * p.zzz;
  F zzz2 = p.zzz.sqr();
  F zz3 = p.zz.sqr() * p.zz;
  return {p.x * p.zz * zzz2, p.y * zz3 * zzz2, z};
}

using G1Affine = Affine<ff::Fp>;
using G1Xyzz = Xyzz<ff::Fp>;
using G2Affine = Affine<ff::Fp2>;
using G2Xyzz = Xyzz<ff::Fp2>;

}  // namespace ec
}  // namespace groth16_gpu

// A prime field in Montgomery form over N 32-bit limbs, least significant
// first: exactly blst's layout of its u64 limbs on a little-endian machine,
// so blstrs values cross to the device as bytes, without conversion.
//
// `P` supplies the constants as constexpr functions (device code cannot read
// host arrays): N, modulus(i), m0() = -modulus^-1 mod 2^32, one(i) = R mod p.
#pragma once

#include "carry_chains.cuh"
#include "common.cuh"

namespace groth16_gpu {
namespace ff {

template <class P>
struct MontField {
  static constexpr int N = P::N;
  uint32_t l[N];

  G16_FIELD static MontField zero() {
    MontField r;
    G16_UNROLL for (int i = 0; i < N; i++) r.l[i] = 0;
    return r;
  }

  /// 1 in Montgomery form (R mod p).
  G16_FIELD static MontField one() {
    MontField r;
    G16_UNROLL for (int i = 0; i < N; i++) r.l[i] = P::one(i);
    return r;
  }

  G16_FIELD bool is_zero() const {
    uint32_t acc = 0;
    G16_UNROLL for (int i = 0; i < N; i++) acc |= l[i];
    return acc == 0;
  }

  G16_FIELD bool operator==(const MontField& o) const {
    uint32_t acc = 0;
    G16_UNROLL for (int i = 0; i < N; i++) acc |= l[i] ^ o.l[i];
    return acc == 0;
  }

  /// Subtracts p once when the value (with `high` as limb N) is >= p.
  G16_FIELD void reduce_once(uint32_t high) {
    uint32_t t[N];
    uint32_t borrow = 0;
    G16_UNROLL for (int i = 0; i < N; i++) t[i] = sub_borrow(l[i], P::modulus(i), borrow);
    // Keep t when no borrow out of the N+1-limb subtraction.
    bool take = high != 0 || borrow == 0;
    G16_UNROLL for (int i = 0; i < N; i++) l[i] = take ? t[i] : l[i];
  }

  G16_FIELD MontField operator+(const MontField& b) const {
    MontField r;
    uint32_t carry = 0;
    G16_UNROLL for (int i = 0; i < N; i++) r.l[i] = add_carry(l[i], b.l[i], carry);
    r.reduce_once(carry);
    return r;
  }

  G16_FIELD MontField operator-(const MontField& b) const {
    MontField r;
    uint32_t borrow = 0;
    G16_UNROLL for (int i = 0; i < N; i++) r.l[i] = sub_borrow(l[i], b.l[i], borrow);
    // On underflow add p back; the mask avoids a branch.
    uint32_t mask = 0u - borrow;
    uint32_t carry = 0;
    G16_UNROLL for (int i = 0; i < N; i++) r.l[i] = add_carry(r.l[i], P::modulus(i) & mask, carry);
    return r;
  }

  G16_FIELD MontField operator-() const { return zero() - *this; }

  G16_FIELD MontField dbl() const { return *this + *this; }

  G16_FIELD MontField operator*(const MontField& b) const {
#if defined(__CUDA_ARCH__)
    return mul_device(*this, b);
#else
    return mul_chains(*this, b);
#endif
  }

#if defined(__CUDA_ARCH__)
  /// Called, never inlined: one copy per translation unit. Inlined into
  /// the point formulas, products made the bucket kernels tens of
  /// thousands of straight-line instructions, and ncu found warps waiting
  /// on instruction fetch 31 % (G1) to 58 % (G2) of their cycles.
  static __device__ __noinline__ MontField mul_device(MontField a, MontField b) {
    return mul_chains(a, b);
  }
#endif

  /// CIOS Montgomery multiplication, a * b * 2^(-32 N) mod p, on carry
  /// chains (carry_chains.cuh: PTX on the device, the same steps in C++ on
  /// the host). The accumulator is kept as A = E + O 2^32: the even limbs'
  /// products go to E and the odd limbs' to O, so every product adds into
  /// an aligned register pair. The one-word shift of each row then swaps
  /// the roles (O is the next E, E from word 2 the next O) and only E's
  /// word 1 moves, by one carry-propagating add; a plain shift of one
  /// accumulator would re-pair every register each row (~400 moves per
  /// product on the device).
  G16_FIELD static MontField mul_chains(const MontField& a, const MontField& b) {
    chains::Chain c;
    uint32_t e[N + 2], o[N + 2], p[N];
    G16_UNROLL for (int i = 0; i < N; i++) p[i] = P::modulus(i);
    G16_UNROLL for (int i = 0; i < N + 2; i++) e[i] = o[i] = 0;
    G16_UNROLL for (int i = 0; i < N; i++) {
      chains::mul_add_pairs<N, 0, N + 2>(c, e, a.l, b.l[i]);
      chains::mul_add_pairs<N, 1, N + 1>(c, o, a.l, b.l[i]);
      reduce_row(c, e, o, p);
    }
    // E + O 2^32 < 2p: word N is the top bit.
    return folded(c, e, o);
  }

  /// (a b + c d) 2^(-32 N) mod p in one CIOS pass: each row adds both
  /// products' limbs and reduces once, 3 N^2 limb products against 4 N^2
  /// for two Montgomery products and an addition. For p < 2^(32 N - 2)
  /// (Fp: 381 of 384 bits) the result is below p + 2 p^2 / R < 1.25 p
  /// before its one subtraction, and the accumulator below 3 p between
  /// rows, within the words mul_chains' accumulators have.
  G16_FIELD static MontField sum_of_products(const MontField& a, const MontField& b,
                                             const MontField& c, const MontField& d) {
    chains::Chain ch;
    uint32_t e[N + 2], o[N + 2], p[N];
    G16_UNROLL for (int i = 0; i < N; i++) p[i] = P::modulus(i);
    G16_UNROLL for (int i = 0; i < N + 2; i++) e[i] = o[i] = 0;
    G16_UNROLL for (int i = 0; i < N; i++) {
      chains::mul_add_pairs<N, 0, N + 2>(ch, e, a.l, b.l[i]);
      chains::mul_add_pairs<N, 1, N + 1>(ch, o, a.l, b.l[i]);
      chains::mul_add_pairs<N, 0, N + 2>(ch, e, c.l, d.l[i]);
      chains::mul_add_pairs<N, 1, N + 1>(ch, o, c.l, d.l[i]);
      reduce_row(ch, e, o, p);
    }
    return folded(ch, e, o);
  }

  /// A CIOS row's reduction and one-word shift of A = E + O 2^32: m p
  /// added (A's word 0 becomes 0), then O is the next E, E from word 2 the
  /// next O, and E's word 1 is added in.
  G16_FIELD static void reduce_row(chains::Chain& c, uint32_t* e, uint32_t* o,
                                   const uint32_t* p) {
    uint32_t m = e[0] * P::m0();  // O has no word 0
    chains::mul_add_pairs<N, 0, N + 2>(c, e, p, m);  // e[0] becomes 0
    chains::mul_add_pairs<N, 1, N + 1>(c, o, p, m);
    uint32_t word1 = e[1];
    G16_UNROLL for (int k = 0; k < N + 2; k++) {
      uint32_t next_o = k + 2 < N + 2 ? e[k + 2] : 0;
      e[k] = k < N + 1 ? o[k] : 0;
      o[k] = next_o;
    }
    chains::add_word<N + 2>(c, e, word1);
  }

  /// E + O 2^32 (below 2p after the rows: word N is the top bit), reduced.
  G16_FIELD static MontField folded(chains::Chain& c, uint32_t* e, const uint32_t* o) {
    c.add_cc(e[1], o[0]);
    G16_UNROLL for (int k = 2; k < N; k++) c.addc_cc(e[k], o[k - 1]);
    c.addc(e[N], o[N - 1]);
    MontField r;
    G16_UNROLL for (int i = 0; i < N; i++) r.l[i] = e[i];
    r.reduce_once(e[N]);
    return r;
  }

  G16_FIELD MontField sqr() const { return *this * *this; }

  /// Out of Montgomery form: the canonical integer (a Montgomery
  /// multiplication by 1). Any N-limb input x (even x >= p) gives
  /// x * R^-1 mod p, fully reduced: REDC of x < p R is < 2p before the last
  /// subtraction.
  G16_FIELD MontField from_montgomery() const {
    MontField one_int = zero();
    one_int.l[0] = 1;
    return *this * one_int;
  }

  /// this^(p - 2): the inverse (Fermat), 0 for 0. A square and at most one
  /// product per bit of p, so only for inversions shared by many values
  /// (Montgomery's trick), not for a hot loop.
  G16_HD MontField inverse() const {
    uint32_t e[N];  // p - 2
    uint32_t borrow = 0;
    for (int i = 0; i < N; i++) e[i] = sub_borrow(P::modulus(i), i == 0 ? 2u : 0u, borrow);
    MontField acc = one();
    for (int i = N - 1; i >= 0; i--) {
      for (int bit = 31; bit >= 0; bit--) {
        acc = acc.sqr();
        if ((e[i] >> bit) & 1) acc = acc * *this;
      }
    }
    return acc;
  }
};

}  // namespace ff
}  // namespace groth16_gpu

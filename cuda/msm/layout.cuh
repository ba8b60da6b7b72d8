// Between blst's word layouts and the arithmetic types: the reinterpretation
// is exact (same limbs, same order), checked by static_asserts here and by
// the Rust layout tests (tests/gpu_ffi_layout.rs).
#pragma once

#include <cstring>
#include <stdexcept>

#include "../ec/xyzz.cuh"

namespace groth16_gpu {
namespace msm {

static_assert(sizeof(ff::Fp) == 48, "Fp is blst_fp: 6 x u64");
static_assert(sizeof(ff::Fr) == 32, "Fr is blst_fr: 4 x u64");
static_assert(sizeof(ff::Fp2) == 96, "Fp2 is blst_fp2");
static_assert(sizeof(ec::G1Affine) == 96, "G1Affine is blst_p1_affine");
static_assert(sizeof(ec::G2Affine) == 192, "G2Affine is blst_p2_affine");

/// Words of one affine point / one Jacobian point of the group over F.
template <class F>
constexpr size_t affine_words() { return sizeof(ec::Affine<F>) / 8; }
template <class F>
constexpr size_t jacobian_words() { return sizeof(ec::Jacobian<F>) / 8; }

/// Writes the windows' sums as Jacobian points into out (checked length).
template <class F>
void write_windows(const ec::Xyzz<F>* windows, size_t count, uint64_t* out,
                   size_t out_words) {
  if (count * jacobian_words<F>() > out_words) {
    throw std::invalid_argument("MSM output buffer too small for its windows");
  }
  for (size_t w = 0; w < count; w++) {
    ec::Jacobian<F> j = ec::to_jacobian(windows[w]);
    std::memcpy(out + w * jacobian_words<F>(), &j, sizeof(j));
  }
}

}  // namespace msm
}  // namespace groth16_gpu

// Precomputed shifted copies of a base set (see Geometry in pippenger.cuh):
// copy k + 1 of every base is 2^c times its copy k, kept affine so the
// bucket additions stay mixed. The per-thread step is __host__ __device__:
// the GPU's fill (device_msm.cuh) and the host reference run the same one.
#pragma once

#include "../ec/xyzz.cuh"

namespace groth16_gpu {
namespace msm {

/// Bases per thread of a shift: one inversion is shared by this many.
constexpr uint32_t kShiftRun = 16;

/// out[i] = 2^bits in[i] for i < len, affine, the identity staying the
/// identity. The doublings run in XYZZ; the way back to affine (x = X / ZZ,
/// y = Y / ZZZ) inverts every ZZ ZZZ of the run with one inversion
/// (Montgomery's trick). `scratch` holds len points and `prefix` len field
/// elements of the caller's.
template <class F>
G16_HD void shift_run(const ec::Affine<F>* in, ec::Affine<F>* out, ec::Xyzz<F>* scratch,
                      F* prefix, uint32_t len, uint32_t bits) {
  F running = F::one();
  for (uint32_t i = 0; i < len; i++) {
    ec::Xyzz<F> p = ec::Xyzz<F>::from_affine(in[i]);
    for (uint32_t b = 0; b < bits; b++) p = p.dbl();
    scratch[i] = p;
    if (!p.is_identity()) running = running * (p.zz * p.zzz);
    prefix[i] = running;
  }
  F inverse = running.inverse();  // of the product of every ZZ ZZZ so far
  for (uint32_t i = len; i-- > 0;) {
    const ec::Xyzz<F>& p = scratch[i];
    if (p.is_identity()) {
      out[i] = {F::zero(), F::zero()};
      continue;
    }
    F before = i > 0 ? prefix[i - 1] : F::one();
    F inverse_zz_zzz = inverse * before;
    inverse = inverse * (p.zz * p.zzz);
    out[i] = {p.x * (p.zzz * inverse_zz_zzz), p.y * (p.zz * inverse_zz_zzz)};
  }
}

}  // namespace msm
}  // namespace groth16_gpu

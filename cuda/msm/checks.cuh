// The argument checks every MSM and batch addition entry makes before any
// work, and its selection of the device (cudaSetDevice on the calling
// thread).
#pragma once

#include <stdexcept>
#include <string>

#include "../ec/xyzz.cuh"
#include "groth16_gpu/cuda_check.h"
#include "groth16_gpu/msm.h"

namespace groth16_gpu {
namespace msm {

/// Point indices and counts travel as 31 bits (bit 31 of an entry is the sign).
inline void check_point_count(size_t n) {
  if (n >= (size_t(1) << 31)) throw std::invalid_argument("MSM of 2^31 or more points");
}

/// Checks that `bases` lives on `device`, holds the curve F and points
/// [first, first + n), and selects the device; returns the point `first`.
template <class F>
const ec::Affine<F>* checked_bases(const GpuDevice& device, const MsmBases& bases, size_t first,
                                   size_t n) {
  constexpr bool g2 = sizeof(F) == sizeof(ff::Fp2);
  require_on_device(device, bases.ordinal(), "MSM bases");
  if (bases.is_g2() != g2) throw std::invalid_argument("MSM bases are of the other group");
  if (first > bases.len() || n > bases.len() - first) {
    throw std::invalid_argument("MSM of " + std::to_string(n) + " points from point " +
                                std::to_string(first) + " over " + std::to_string(bases.len()) +
                                " resident bases");
  }
  check_point_count(n);
  G16_CUDA_CHECK(cudaSetDevice(device.cuda_ordinal()));
  return static_cast<const ec::Affine<F>*>(bases.points()) + first;
}

/// Throws unless every index names one of the `len` bases.
inline void check_indices(const uint32_t* indices, size_t n, size_t len) {
  for (size_t i = 0; i < n; i++) {
    if (indices[i] >= len) {
      throw std::invalid_argument("MSM index " + std::to_string(indices[i]) + " at " +
                                  std::to_string(i) + " is past the " + std::to_string(len) +
                                  " resident bases");
    }
  }
}

}  // namespace msm
}  // namespace groth16_gpu

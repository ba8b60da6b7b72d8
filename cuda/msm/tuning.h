// Tuning knobs read from the environment, for sweeps on a GPU machine
// without rebuilding (see docs/NOTES-msm.md for what each one measured). Unset,
// or outside its range, a knob reads 0 and the built-in choice stands.
//   G16_MSM_FIRST_BLOCK    sorted entries per first-level thread (32..4096)
//   G16_MSM_INLINE_PIECES  partial sums a bucket may hold when the window
//                          segments walk it (1..1024)
//   G16_MSM_SEGMENT        buckets per window segment, a power of two
//                          (4..1024; shorter where too few segments result)
//   G16_MSM_G2_FIRST_LEVEL G2's first level with each point whole in a
//                          thread (1), split over a pair of threads (2,
//                          ff/fp2_pairs.cuh), or the same held to 128
//                          registers (3, the default); G2FirstLevel in msm.h.
//                          The pair layouts run G2's task levels and window
//                          reduction over pairs too...
//   G16_MSM_G2_WHOLE_REDUCTION  ...unless this is 1 (device_msm.cuh's
//                          pair_reduction)
// G16_COPY_BITS, the window bits of a resident key's shifted copies, is
// read on the Rust side (src/groth16/gpu/copies.rs), which knows the curve.
// G16_MSM_PHASES (phase_timer.cuh), set to anything, prints where each MSM
// chunk's device time goes.
#pragma once

#include <cstdint>
#include <cstdlib>

namespace groth16_gpu {
namespace msm {

/// The value of environment variable `name` if it is a number in [lo, hi],
/// else 0. Call once and keep the result: it reads the environment.
inline uint32_t tuning_knob(const char* name, uint32_t lo, uint32_t hi) {
  const char* text = std::getenv(name);
  if (text == nullptr) return 0;
  char* end = nullptr;
  unsigned long value = std::strtoul(text, &end, 10);
  if (end == text || *end != '\0' || value < lo || value > hi) return 0;
  return static_cast<uint32_t>(value);
}

}  // namespace msm
}  // namespace groth16_gpu

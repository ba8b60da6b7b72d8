// The MSM's tuning: the built-in choices, and the settings one call runs
// with. The caller passes them with each call (g16_msm_tuning, from Rust's
// MsmTuning); settle() checks them and fills the zeros with the built-in
// choices. Nothing here reads the environment or keeps state, so two calls
// in one process, on one device or two, may run with different settings.
// docs/NOTES-msm.md has what each setting measured.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "groth16_gpu/ffi_types.h"
#include "groth16_gpu/msm.h"

namespace groth16_gpu {
namespace msm {

/// Items per task in the levels after the first, and the shortest
/// first-level block.
constexpr uint32_t kDevicePerTask = 32;
/// First-level threads worth keeping: about 16 waves of the G1 kernel on
/// an H200 (32 of G2), so the last wave's tail stays small. At 2^19
/// (8 waves) the blocks grew to 256 for G1 2^24 and the first level took
/// 4 % longer (105 -> 109 ms), the levels 6 ms less.
constexpr size_t kFirstLevelThreads = size_t(1) << 20;
/// The longest first-level block the size chooses.
constexpr uint32_t kMaxFirstBlock = 512;
/// The longest first-level block a caller may force.
constexpr uint32_t kMaxForcedFirstBlock = 4096;
/// Buckets per window segment. 8 (four times the threads, each with a
/// shorter walk but its own multiplication by j L) measured slower on the
/// H200: G1 2^20 40.1 -> 43.5 ms, G2 2^20 142.6 -> 155.5 ms.
constexpr uint32_t kDeviceSegment = 32;
/// The shortest segment.
constexpr uint32_t kMinSegment = 4;
/// The longest segment a caller may force.
constexpr uint32_t kMaxForcedSegment = 1024;
/// Partial sums a bucket may hold when the window segments walk it (more
/// run a task level first). The first level's blocks leave about entries
/// a bucket / block + 1: ~5 for random scalars at 2^24 points, more in the
/// buckets that the top window's digits (15 bits at c = 20) also fill.
constexpr uint32_t kInlinePieces = 8;
/// The most inline pieces a caller may ask for.
constexpr uint32_t kMaxInlinePieces = 1024;
/// G2's first level with each point split over a pair of threads, held to
/// 128 registers (G2FirstLevel::kPairs128): G2 2^22 points with 20-bit
/// copies 120.6 -> 109.5 ms on the H200 against a point a thread, and 2^24
/// proofs 1034-1047 -> 986-994 ms best of 5 (docs/NOTES-gpu.md, 2026-12-04).
constexpr G2FirstLevel kG2FirstLevel = G2FirstLevel::kPairs128;

/// The settings of one MSM call: the caller's, checked, with the built-in
/// choices where it left them 0.
struct MsmSettings {
  /// Forced window bits (0: plan() chooses, through copies where there are).
  uint32_t window_bits;
  /// Forced first-level block (0: first_level_block grows it).
  uint32_t first_block;
  /// First-level threads kept as the blocks grow.
  size_t first_level_threads;
  /// Partial sums a bucket may hold when the window segments walk it.
  uint32_t inline_pieces;
  /// Buckets per window segment before shortening.
  uint32_t segment;
  /// G2's first-level layout.
  G2FirstLevel g2_first_level;
  /// Whether G2's levels after the first stay whole behind a pair layout.
  bool g2_whole_reduction;
  /// Whether each chunk prints its phases.
  bool phase_timing;
  /// Most points a chunk takes (0: no cap).
  size_t chunk_cap;
};

/// Throws invalid_argument naming `what` unless `value` is 0 or in lo..=hi.
inline void check_setting(const char* what, uint64_t value, uint64_t lo, uint64_t hi) {
  if (value != 0 && (value < lo || value > hi)) {
    throw std::invalid_argument(std::string("MSM tuning: ") + what + " " + std::to_string(value) +
                                " outside " + std::to_string(lo) + "..=" + std::to_string(hi));
  }
}

/// `tuning` checked (invalid_argument for a value out of range), its zeros
/// filled with the built-in choices.
inline MsmSettings settle(const g16_msm_tuning& tuning) {
  check_setting("window bits", tuning.window_bits, 4, kMaxForcedWindowBits);
  check_setting("first-level block", tuning.first_block, kDevicePerTask, kMaxForcedFirstBlock);
  check_setting("inline pieces", tuning.inline_pieces, 1, kMaxInlinePieces);
  check_setting("segment", tuning.segment, kMinSegment, kMaxForcedSegment);
  if ((tuning.segment & (tuning.segment - 1)) != 0) {
    throw std::invalid_argument("MSM tuning: segment " + std::to_string(tuning.segment) +
                                " is not a power of two");
  }
  check_setting("G2 first level", tuning.g2_first_level, 1,
                static_cast<uint32_t>(G2FirstLevel::kPairs128));
  check_setting("G2 whole reduction", tuning.g2_whole_reduction, 1, 1);
  check_setting("phase timing", tuning.phase_timing, 1, 1);
  MsmSettings s{};
  s.window_bits = tuning.window_bits;
  s.first_block = tuning.first_block;
  s.first_level_threads =
      tuning.first_level_threads ? static_cast<size_t>(tuning.first_level_threads)
                                 : kFirstLevelThreads;
  s.inline_pieces = tuning.inline_pieces ? tuning.inline_pieces : kInlinePieces;
  s.segment = tuning.segment ? tuning.segment : kDeviceSegment;
  s.g2_first_level = tuning.g2_first_level ? static_cast<G2FirstLevel>(tuning.g2_first_level)
                                           : kG2FirstLevel;
  s.g2_whole_reduction = tuning.g2_whole_reduction != 0;
  s.phase_timing = tuning.phase_timing != 0;
  s.chunk_cap = static_cast<size_t>(tuning.chunk_cap);
  return s;
}

}  // namespace msm
}  // namespace groth16_gpu

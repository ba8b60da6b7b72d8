// Multi-scalar multiplication and batch addition over BLS12-381 G1 and G2
// (cuda/msm), as the cxx bridge (src/bridge.rs) sees them. Only std and
// plain pointer types cross here, so the header needs no CUDA and no cxx.
//
// Data layouts are blstrs' own, read as 64-bit words:
//  - bases: G1Affine (12 words) / G2Affine (24 words), identity = all zero;
//  - scalars: blstrs::Scalar (4 words, Montgomery form). A value >= r is
//    taken mod r (the device's conversion out of Montgomery form reduces
//    fully), so it stands for (value * 2^-256 mod r);
//  - results: per window, a Jacobian point as blst_p1 / blst_p2 (3 or 6 Fp,
//    6 words each); the caller combines windows: Σ_w 2^(c w) window_w.
//
// Every entry point selects the device first and throws std::runtime_error
// on failure (CUDA errors included); nothing aborts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "groth16_gpu/device.h"
#include "groth16_gpu/device_scalars.h"
#include "groth16_gpu/ffi_types.h"

namespace groth16_gpu {

/// Bases resident in one device's memory (freed, on that device, on drop).
class MsmBases {
 public:
  MsmBases(int ordinal, bool g2, size_t len, void* points, uint32_t copies = 1,
           uint32_t copy_bits = 0);
  ~MsmBases();
  MsmBases(const MsmBases&) = delete;
  MsmBases& operator=(const MsmBases&) = delete;

  /// Number of points.
  size_t len() const { return len_; }
  /// Points the device allocation holds room for (len() or more after a
  /// refill with fewer).
  size_t capacity() const { return capacity_; }
  /// Whether the points are G2 (else G1).
  bool is_g2() const { return g2_; }
  /// The CUDA ordinal of the device holding them.
  size_t ordinal() const { return static_cast<size_t>(ordinal_); }
  /// Device pointer to the affine points (copy 0, then the other copies,
  /// len() points apart).
  const void* points() const { return points_; }
  /// Copies of the points held: 1 for the points alone, else see
  /// precompute_msm_bases.
  uint32_t copies() const { return copies_; }
  /// The window bits whose shifts the copies hold (0 without copies).
  uint32_t copy_bits() const { return copy_bits_; }
  /// Replaces the points with `len` others from the host in the same
  /// allocation (see refill_msm_bases).
  void refill(const uint64_t* words, size_t len);

 private:
  int ordinal_;
  bool g2_;
  size_t len_;
  size_t capacity_;
  void* points_;
  uint32_t copies_;
  uint32_t copy_bits_;
};

/// Device memory held until drop: lets tests leave a device short of memory.
class DeviceReservation {
 public:
  DeviceReservation(int ordinal, void* ptr, size_t bytes);
  ~DeviceReservation();
  DeviceReservation(const DeviceReservation&) = delete;
  DeviceReservation& operator=(const DeviceReservation&) = delete;
  /// Bytes held.
  uint64_t bytes() const { return bytes_; }

 private:
  int ordinal_;
  void* ptr_;
  size_t bytes_;
};

/// Largest number of windows any MSM result holds (c >= 4 bits).
constexpr size_t kMaxMsmWindows = 64;

/// Copies `len` affine points (`words`: 12 or 24 per point) to the device.
std::unique_ptr<MsmBases> upload_msm_bases(const GpuDevice& device, bool g2,
                                           const uint64_t* words, size_t len);

/// Copies `len` affine points into `bases`' allocation in place of its
/// points, with no allocation or free: a chunked upload reuses its buffers
/// without cudaFree's wait for the whole device. An error for bases with
/// shifted copies, or `len` past their capacity. No MSM may be reading the
/// bases meanwhile.
void refill_msm_bases(const GpuDevice& device, MsmBases& bases, const uint64_t* words,
                      size_t len);

/// New resident bases: `bases`' points and their shifted copies for
/// `bits`-bit windows (0: the library's choice for their number), `copies`
/// in all (0: one per window, ceil(256 / bits)), copy k holding 2^(bits k) P
/// for every base P. An MSM of enough points over them adds window w into
/// bucket set w / copies through copy w % copies: with a copy per window
/// into one set (fewer windows for the same reduction), with fewer into
/// ceil(windows / copies) sets for less memory; smaller MSMs and batch
/// additions use copy 0 as before. Throws invalid_argument for bases that
/// already have copies, bits outside 4..=kMaxCopyBits, copies outside
/// 2..=windows, or copies of 2^31 points or more, and "out of device
/// memory" where they do not fit (nothing kept).
std::unique_ptr<MsmBases> precompute_msm_bases(const GpuDevice& device, const MsmBases& bases,
                                               uint32_t bits, uint32_t copies);
/// How many copies precompute_msm_bases makes of `len` bases for `bits`-bit
/// windows (0: its own choice for their number): one per window. Throws
/// invalid_argument for bits outside 4..=kMaxCopyBits.
uint32_t shifted_copy_count(size_t len, uint32_t bits);
/// The window bits of those copies: `bits`, or the choice for `len` bases
/// where it is 0. Throws invalid_argument as shifted_copy_count does.
uint32_t shifted_copy_bits(size_t len, uint32_t bits);
/// `copies` (0: shifted_copy_count's one per window) checked against
/// `bits`-bit windows: 2..=windows, else invalid_argument.
uint32_t checked_copy_count(size_t len, uint32_t bits, uint32_t copies);
/// Points from which an MSM over bases with copies goes through them.
size_t msm_copies_from();
/// The widest window shifted copies may be made for.
constexpr uint32_t kMaxCopyBits = 24;

/// Throws invalid_argument where `*tuning` holds a value out of its range
/// (ffi_types.h lists them), or is null; every MSM entry below checks it
/// so first. The MSM entries take their tuning and report by pointer
/// (never null) as the bridge passes them.
void check_msm_tuning(const g16_msm_tuning* tuning);

/// Σ scalars[i] bases[first + i] for i < n (first + n <= bases.len(), else
/// invalid_argument), per window: writes the window sums (Jacobian) to
/// `out` (out_words >= kMaxMsmWindows * 18 or 36) and returns the bits s
/// between them (the caller adds Σ_w 2^(s w) sum_w): the window bits c, or
/// c times the copies where the MSM went through shifted copies. It runs
/// as `*tuning` says (all zero: the built-in choices); `*report` gets the
/// settings it ran with and the time of the device work (scalar upload to
/// window sums) by CUDA events. A range of the bases lets one MSM be split
/// over devices that each hold all of them.
uint32_t msm_windows(const GpuDevice& device, const MsmBases& bases, size_t first,
                     const uint64_t* scalars, size_t n, uint64_t* out,
                     size_t out_words, const g16_msm_tuning* tuning, g16_msm_report* report);

/// msm_windows of a sparse subset: Σ scalars[i] bases[indices[i]] for
/// i < n (host arrays; every index < bases.len(), else invalid_argument).
uint32_t msm_windows_indexed(const GpuDevice& device, const MsmBases& bases,
                             const uint64_t* scalars, const uint32_t* indices, size_t n,
                             uint64_t* out, size_t out_words, const g16_msm_tuning* tuning,
                             g16_msm_report* report);

/// msm_windows over the `n` scalars already on the device from
/// `scalar_first`, times the bases from `first` (a streamed chunk of bases
/// reads its share of a resident H polynomial from where it starts).
uint32_t msm_windows_resident(const GpuDevice& device, const MsmBases& bases, size_t first,
                              const DeviceScalars& scalars, size_t scalar_first, size_t n,
                              uint64_t* out, size_t out_words, const g16_msm_tuning* tuning,
                              g16_msm_report* report);

/// Σ of the bases[first + i] whose bit i is set (bit i of bitmap word
/// i / 64), for i < n (first + n <= bases.len()); writes one Jacobian point
/// to `out` (18 or 36 words). It takes no tuning.
void batch_add(const GpuDevice& device, const MsmBases& bases, size_t first,
               const uint64_t* bitmap, size_t n, uint64_t* out,
               size_t out_words, float* device_ms);

/// The widest window an MSM's tuning may force (g16_msm_tuning::window_bits).
constexpr uint32_t kMaxForcedWindowBits = 22;

/// How G2's first bucket level holds its points: the values of
/// g16_msm_tuning::g2_first_level. With either pair layout the task levels
/// and the window reduction run over pairs too (at ptxas's register
/// choice) unless the tuning keeps them whole; with whole points, whole.
/// Results do not change with the layout.
enum class G2FirstLevel : uint32_t {
  /// Each point whole in one thread (255 registers, two warps a scheduler).
  kWholePoints = 1,
  /// Each point split over a pair of threads, ptxas's register choice (154).
  kPairs = 2,
  /// The same held to 128 registers (four blocks an SM): the default.
  kPairs128 = 3,
};

/// Holds `bytes` of device memory until the handle drops.
std::unique_ptr<DeviceReservation> reserve_device_memory(const GpuDevice& device,
                                                         uint64_t bytes);

/// Host-only reference of msm_windows (no GPU): the same steps on the CPU.
/// `window_bits` 0 chooses as the GPU does. `copy_bits` > 0 first makes the
/// bases' shifted copies for that window (`copy_count` of them, 0: one per
/// window), as precompute_msm_bases does, and runs through them
/// (window_bits is then ignored). Returns the bits between the sums.
uint32_t host_msm_windows(bool g2, const uint64_t* bases, const uint64_t* scalars,
                          size_t n, uint32_t window_bits, uint32_t copy_bits,
                          uint32_t copy_count, uint64_t* out, size_t out_words);

/// Host-only reference of batch_add.
void host_batch_add(bool g2, const uint64_t* bases, const uint64_t* bitmap,
                    size_t n, uint64_t* out, size_t out_words);

/// Host-only field arithmetic for tests: op 0 Fp a*b, 1 Fp a+b, 2 Fp a-b,
/// 3 Fp2 a*b, 4 Fp2 a^2, 5 Fr out of Montgomery form (a only), 6 Fr a*b,
/// 7 Fp a^2, 8 Fr a^2, 9 Fp a^-1, 10 Fp2 a^-1 (0 for 0).
/// Operands and result in blst layout (6 words per Fp, 4 per Fr).
void host_field_op(uint32_t op, const uint64_t* a, const uint64_t* b,
                   uint64_t* out);

}  // namespace groth16_gpu

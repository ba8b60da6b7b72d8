// Scalars (blstrs::Scalar, 4 words each, Montgomery form) resident in one
// device's memory: the H polynomial's a, b, c evaluations and its result,
// which the H MSM then reads where it lies. Plain pointers only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "groth16_gpu/device.h"

namespace groth16_gpu {

/// `len` scalars in device memory, freed on that device on drop.
class DeviceScalars {
 public:
  DeviceScalars(int ordinal, size_t len, void* ptr);
  ~DeviceScalars();
  DeviceScalars(const DeviceScalars&) = delete;
  DeviceScalars& operator=(const DeviceScalars&) = delete;

  /// Number of scalars.
  size_t len() const { return len_; }
  /// The CUDA ordinal of the device that holds them.
  size_t ordinal() const { return static_cast<size_t>(ordinal_); }
  /// Device pointer to the scalars (device memory is not the handle's state,
  /// so a const handle still lets kernels write it).
  void* data() const { return ptr_; }

 private:
  int ordinal_;
  size_t len_;
  void* ptr_;
};

/// Page-locked host memory for `len` scalars (cudaHostAlloc, usable with
/// every device): copies from it run at the bus's speed, where copies from
/// ordinary memory are staged through the driver's own bounce buffers.
class PinnedScalars {
 public:
  PinnedScalars(void* ptr, size_t len) : ptr_(ptr), len_(len) {}
  ~PinnedScalars();
  PinnedScalars(const PinnedScalars&) = delete;
  PinnedScalars& operator=(const PinnedScalars&) = delete;

  /// Number of scalars.
  size_t len() const { return len_; }
  /// The memory, 4 words per scalar.
  uint64_t* data() const { return static_cast<uint64_t*>(ptr_); }

 private:
  void* ptr_;
  size_t len_;
};

/// Allocates pinned host memory for `len` scalars; throws when the system
/// refuses (the caller can go on with ordinary memory).
std::unique_ptr<PinnedScalars> alloc_pinned_scalars(size_t len);

/// Copies `n` scalars to a new device buffer of `len` >= n scalars, the rest
/// zero. Returns when the copy has landed.
std::unique_ptr<DeviceScalars> upload_scalars(const GpuDevice& device, const uint64_t* words,
                                              size_t n, size_t len);

/// Copies the first `n` scalars back to the host.
void download_scalars(const GpuDevice& device, const DeviceScalars& scalars, uint64_t* out,
                      size_t n);

}  // namespace groth16_gpu

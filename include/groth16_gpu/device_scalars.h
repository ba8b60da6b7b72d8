// Scalars (blstrs::Scalar, 4 words each, Montgomery form) resident in one
// device's memory: the H polynomial's a, b, c evaluations and its result,
// which the H MSM then reads where it lies. Plain pointers only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include <cuda_runtime.h>

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

/// Ordinary host memory page-locked in place (cudaHostRegister, usable with
/// every device) until this handle drops: a buffer the caller already owns
/// then crosses the bus as pinned memory does, with no staging through the
/// driver's bounce buffers on the calling thread's core.
class HostRegistration {
 public:
  HostRegistration(int ordinal, void* ptr) : ordinal_(ordinal), ptr_(ptr) {}
  ~HostRegistration();
  HostRegistration(const HostRegistration&) = delete;
  HostRegistration& operator=(const HostRegistration&) = delete;

 private:
  int ordinal_;
  void* ptr_;
};

/// Page-locks the `n` scalars at `words` (the caller keeps them allocated
/// until the handle drops); throws when the system refuses, and the memory
/// then stays as it was.
std::unique_ptr<HostRegistration> register_host_scalars(const GpuDevice& device,
                                                        const uint64_t* words, size_t n);

/// A stream for copying host scalars to a device in pieces through pinned
/// slots, with an event per slot (two slots) so the host refills a slot
/// once its last copy has read it.
class UploadStream {
 public:
  UploadStream(int ordinal, cudaStream_t stream, cudaEvent_t slot0, cudaEvent_t slot1);
  ~UploadStream();
  UploadStream(const UploadStream&) = delete;
  UploadStream& operator=(const UploadStream&) = delete;

  /// The CUDA ordinal of its device.
  size_t ordinal() const { return static_cast<size_t>(ordinal_); }
  cudaStream_t stream() const { return stream_; }
  cudaEvent_t slot_event(size_t slot) const { return slots_[slot]; }

 private:
  int ordinal_;
  cudaStream_t stream_;
  cudaEvent_t slots_[2];
};

/// A new upload stream on `device`.
std::unique_ptr<UploadStream> new_upload_stream(const GpuDevice& device);

/// Queues the copy of `n` scalars from pinned host memory `words` (left
/// untouched until wait_upload_slot(slot) returns) into `to` from scalar
/// `offset`; slot 0 or 1.
void queue_upload(const GpuDevice& device, const UploadStream& stream, size_t slot,
                  const uint64_t* words, size_t n, const DeviceScalars& to, size_t offset);

/// Waits until the last copy queued on `slot` has read its host memory.
void wait_upload_slot(const UploadStream& stream, size_t slot);

/// Waits until every queued copy has landed.
void finish_uploads(const UploadStream& stream);

/// Whether `words` lies in page-locked host memory (cudaHostAlloc'd or
/// registered), which the copy engines read directly.
bool is_pinned(const uint64_t* words);

/// Copies `n` scalars to a new device buffer of `len` >= n scalars, the rest
/// zero. Returns when the copy has landed.
std::unique_ptr<DeviceScalars> upload_scalars(const GpuDevice& device, const uint64_t* words,
                                              size_t n, size_t len);

/// Copies the first `n` scalars back to the host.
void download_scalars(const GpuDevice& device, const DeviceScalars& scalars, uint64_t* out,
                      size_t n);

}  // namespace groth16_gpu

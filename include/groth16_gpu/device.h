// One CUDA device as the Rust side sees it through the cxx bridge
// (src/bridge.rs). The handle is plain data: no CUDA context, stream or
// allocation lives in it, and every entry point selects the handle's device
// with cudaSetDevice before doing anything. Nothing here keeps a global list
// of devices or looks at CUDA_VISIBLE_DEVICES.
//
// Errors are thrown as std::runtime_error (CUDA failures through
// cuda_check.h); cxx turns them into Rust `Err(cxx::Exception)`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace groth16_gpu {

/// A CUDA device named by its ordinal, with the properties read when opened.
class GpuDevice {
 public:
  GpuDevice(int ordinal, std::string name, uint32_t sm_count,
            uint64_t total_memory, uint32_t major, uint32_t minor);

  /// The CUDA ordinal this handle selects at every entry.
  size_t ordinal() const { return static_cast<size_t>(ordinal_); }
  /// The ordinal in the type CUDA's API takes.
  int cuda_ordinal() const { return ordinal_; }
  /// The marketing name, e.g. "NVIDIA H200".
  const std::string& name() const { return name_; }
  /// Streaming multiprocessors.
  uint32_t sm_count() const { return sm_count_; }
  /// Global memory in bytes.
  uint64_t total_memory() const { return total_memory_; }
  /// Free global memory in bytes, queried now.
  uint64_t free_memory() const;
  /// Whether threads waiting on this device sleep (cudaDeviceScheduleBlockingSync,
  /// which open_device asks for) rather than spin.
  bool waits_by_blocking() const;
  /// Compute capability, major part (9 for sm_90).
  uint32_t compute_capability_major() const { return major_; }
  /// Compute capability, minor part.
  uint32_t compute_capability_minor() const { return minor_; }

 private:
  int ordinal_;
  std::string name_;
  uint32_t sm_count_;
  uint64_t total_memory_;
  uint32_t major_;
  uint32_t minor_;
};

/// CUDA devices this process sees; 0 when the driver reports none.
size_t device_count();

/// Opens the device `ordinal`; throws when ordinal >= device_count().
std::unique_ptr<GpuDevice> open_device(size_t ordinal);

/// A second handle to the same device: a copy of the plain data.
std::unique_ptr<GpuDevice> duplicate_device(const GpuDevice& device);

/// Throws std::invalid_argument ("<what> live on device N, not on device
/// M") unless data held on device `ordinal` is on `device`.
void require_on_device(const GpuDevice& device, size_t ordinal, const std::string& what);

/// `launches` times: a kernel writes the device's ordinal to device memory,
/// the host reads it back and checks it, and checks that the current device
/// and the buffer's device are the handle's. Throws on any mismatch.
void write_ordinal_roundtrip(const GpuDevice& device, uint32_t launches);

/// Starts `threads` std::threads; each selects the device itself and runs
/// write_ordinal_roundtrip(device, launches). The first failure of any
/// thread is rethrown on the caller's thread after all have joined.
void threaded_ordinal_check(const GpuDevice& device, uint32_t threads,
                            uint32_t launches);

}  // namespace groth16_gpu

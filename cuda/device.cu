// Device enumeration and properties behind the cxx bridge's GpuDevice.
#include "groth16_gpu/cuda_check.h"
#include "groth16_gpu/device.h"

#include <stdexcept>
#include <string>
#include <utility>

namespace groth16_gpu {

GpuDevice::GpuDevice(int ordinal, std::string name, uint32_t sm_count,
                     uint64_t total_memory, uint32_t major, uint32_t minor)
    : ordinal_(ordinal),
      name_(std::move(name)),
      sm_count_(sm_count),
      total_memory_(total_memory),
      major_(major),
      minor_(minor) {}

bool GpuDevice::waits_by_blocking() const {
  G16_CUDA_CHECK(cudaSetDevice(ordinal_));
  unsigned int flags = 0;
  G16_CUDA_CHECK(cudaGetDeviceFlags(&flags));
  return (flags & cudaDeviceScheduleMask) == cudaDeviceScheduleBlockingSync;
}

uint64_t GpuDevice::free_memory() const {
  G16_CUDA_CHECK(cudaSetDevice(ordinal_));
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  G16_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return free_bytes;
}

void require_on_device(const GpuDevice& device, size_t ordinal, const std::string& what) {
  if (ordinal != device.ordinal()) {
    throw std::invalid_argument(what + " live on device " + std::to_string(ordinal) +
                                ", not on device " + std::to_string(device.ordinal()));
  }
}

size_t device_count() {
  int count = 0;
  cudaError_t error = cudaGetDeviceCount(&count);
  // "No device" is an answer, not a failure; a missing or too old driver is
  // a failure and keeps its own error name.
  if (error == cudaErrorNoDevice) {
    return 0;
  }
  cuda_check(error, "cudaGetDeviceCount(&count)", __FILE__, __LINE__);
  return static_cast<size_t>(count);
}

// Threads that wait on the current device sleep instead of spinning. A
// proof's lanes spend most of their time waiting, and with fewer contexts
// than cores CUDA's default spins: two proofs in flight on each of two
// devices kept a dozen cores busy doing nothing while synthesis needed
// them. Other flags (set by the host application) are kept. A driver that
// refuses changes nothing but speed, so its error is cleared, not thrown.
static void wait_by_blocking() {
  unsigned int flags = 0;
  if (cudaGetDeviceFlags(&flags) != cudaSuccess) {
    cudaGetLastError();
    return;
  }
  unsigned int wanted = (flags & ~cudaDeviceScheduleMask) | cudaDeviceScheduleBlockingSync;
  if (wanted != flags && cudaSetDeviceFlags(wanted) != cudaSuccess) {
    cudaGetLastError();
  }
}

std::unique_ptr<GpuDevice> open_device(size_t ordinal) {
  size_t count = device_count();
  if (ordinal >= count) {
    throw std::out_of_range("device ordinal " + std::to_string(ordinal) +
                            " is out of range: " + std::to_string(count) +
                            " CUDA devices");
  }
  int cuda_ordinal = static_cast<int>(ordinal);
  G16_CUDA_CHECK(cudaSetDevice(cuda_ordinal));
  wait_by_blocking();
  cudaDeviceProp props{};
  G16_CUDA_CHECK(cudaGetDeviceProperties(&props, cuda_ordinal));
  return std::make_unique<GpuDevice>(
      cuda_ordinal, std::string(props.name),
      static_cast<uint32_t>(props.multiProcessorCount),
      static_cast<uint64_t>(props.totalGlobalMem),
      static_cast<uint32_t>(props.major), static_cast<uint32_t>(props.minor));
}

std::unique_ptr<GpuDevice> duplicate_device(const GpuDevice& device) {
  return std::make_unique<GpuDevice>(device);
}

}  // namespace groth16_gpu

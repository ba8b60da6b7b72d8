// RAII holders for a stream, an event and stream-ordered device memory, so
// an exception thrown mid-MSM releases everything and leaves the device
// usable (destructors never throw: errors there are ignored), and the
// carving of one such allocation into buffers.
#pragma once

#include "groth16_gpu/cuda_check.h"

namespace groth16_gpu {
namespace msm {

struct ScopedStream {
  cudaStream_t stream = nullptr;
  ScopedStream() { G16_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)); }
  ~ScopedStream() {
    cudaStreamSynchronize(stream);
    cudaStreamDestroy(stream);
  }
  ScopedStream(const ScopedStream&) = delete;
  ScopedStream& operator=(const ScopedStream&) = delete;
};

struct ScopedEvent {
  cudaEvent_t event = nullptr;
  ScopedEvent() { G16_CUDA_CHECK(cudaEventCreate(&event)); }
  ~ScopedEvent() { cudaEventDestroy(event); }
  ScopedEvent(const ScopedEvent&) = delete;
  ScopedEvent& operator=(const ScopedEvent&) = delete;
};

/// Stream-ordered memory (cudaMallocAsync), freed on the same stream.
struct ScopedDeviceMemory {
  void* ptr = nullptr;
  cudaStream_t stream = nullptr;
  ScopedDeviceMemory() = default;
  ScopedDeviceMemory(const ScopedDeviceMemory&) = delete;
  ScopedDeviceMemory& operator=(const ScopedDeviceMemory&) = delete;
  /// False when the device is out of memory (the error is cleared); other
  /// failures throw.
  bool allocate(size_t bytes, cudaStream_t s) {
    cudaError_t error = cudaMallocAsync(&ptr, bytes, s);
    if (error == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // not sticky; clear it so later checks pass
      ptr = nullptr;
      return false;
    }
    G16_CUDA_CHECK(error);
    stream = s;
    return true;
  }
  ~ScopedDeviceMemory() {
    if (ptr) cudaFreeAsync(ptr, stream);
  }
};

/// Carves one allocation into aligned buffers.
struct Carver {
  char* base;
  size_t used = 0;
  template <class T>
  T* take(size_t count) {
    used = (used + 255) & ~size_t(255);
    T* p = reinterpret_cast<T*>(base ? base + used : nullptr);
    used += count * sizeof(T);
    return p;
  }
};

}  // namespace msm
}  // namespace groth16_gpu

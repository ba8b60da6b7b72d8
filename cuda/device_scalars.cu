// Device-resident scalars (include/groth16_gpu/device_scalars.h).
#include <cstring>
#include <stdexcept>
#include <string>

#include "groth16_gpu/cuda_check.h"
#include "groth16_gpu/device_scalars.h"

namespace groth16_gpu {

namespace {

constexpr size_t kScalarBytes = 32;

void check_device(const GpuDevice& device, const DeviceScalars& scalars) {
  require_on_device(device, scalars.ordinal(), "scalars");
}

}  // namespace

DeviceScalars::DeviceScalars(int ordinal, size_t len, void* ptr)
    : ordinal_(ordinal), len_(len), ptr_(ptr) {}

DeviceScalars::~DeviceScalars() {
  // Destructors must not throw: a failure here leaks at worst. Every call
  // that used the buffer synchronized its stream before returning, so a
  // stream-ordered free (on the legacy stream, which our non-blocking
  // streams do not wait for) is safe, and unlike cudaFree it does not wait
  // for the whole device. Synchronizing the legacy stream (which waits for
  // none of our streams either) lets the pool hand the memory back, so free
  // memory reads as before.
  if (ptr_ && cudaSetDevice(ordinal_) == cudaSuccess && cudaFreeAsync(ptr_, 0) == cudaSuccess) {
    cudaStreamSynchronize(0);
  }
}

PinnedScalars::~PinnedScalars() {
  if (ptr_) cudaFreeHost(ptr_);
}

std::unique_ptr<PinnedScalars> alloc_pinned_scalars(size_t len) {
  void* ptr = nullptr;
  if (len > 0) {
    G16_CUDA_CHECK(cudaHostAlloc(&ptr, len * kScalarBytes, cudaHostAllocPortable));
    // Zeroed once, so the Rust side never sees uninitialized memory.
    std::memset(ptr, 0, len * kScalarBytes);
  }
  return std::make_unique<PinnedScalars>(ptr, len);
}

std::unique_ptr<DeviceScalars> upload_scalars(const GpuDevice& device, const uint64_t* words,
                                              size_t n, size_t len) {
  if (n > len) throw std::invalid_argument("more scalars than the buffer holds");
  G16_CUDA_CHECK(cudaSetDevice(device.cuda_ordinal()));
  if (len == 0) return std::make_unique<DeviceScalars>(device.cuda_ordinal(), len, nullptr);
  // One stream, synchronized: the buffer exists and the copy has landed when
  // this returns, for whichever stream reads the buffer next.
  cudaStream_t stream = nullptr;
  G16_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  void* ptr = nullptr;
  cudaError_t allocated = cudaMallocAsync(&ptr, len * kScalarBytes, stream);
  if (allocated != cudaSuccess) {
    cudaStreamDestroy(stream);
    if (allocated == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      throw std::runtime_error("out of device memory: " + std::to_string(len) +
                               " scalars need " + std::to_string(len * kScalarBytes) +
                               " bytes");
    }
    G16_CUDA_CHECK(allocated);
  }
  auto scalars = std::make_unique<DeviceScalars>(device.cuda_ordinal(), len, ptr);
  cudaError_t error = cudaMemcpyAsync(ptr, words, n * kScalarBytes, cudaMemcpyHostToDevice,
                                      stream);
  if (error == cudaSuccess && len > n) {
    error = cudaMemsetAsync(static_cast<char*>(ptr) + n * kScalarBytes, 0,
                            (len - n) * kScalarBytes, stream);
  }
  cudaError_t synced = cudaStreamSynchronize(stream);
  cudaStreamDestroy(stream);
  G16_CUDA_CHECK(error);
  G16_CUDA_CHECK(synced);
  return scalars;
}

void download_scalars(const GpuDevice& device, const DeviceScalars& scalars, uint64_t* out,
                      size_t n) {
  check_device(device, scalars);
  if (n > scalars.len()) throw std::invalid_argument("download past the scalars' end");
  G16_CUDA_CHECK(cudaSetDevice(device.cuda_ordinal()));
  if (n > 0) G16_CUDA_CHECK(cudaMemcpy(out, scalars.data(), n * kScalarBytes, cudaMemcpyDefault));
}

}  // namespace groth16_gpu

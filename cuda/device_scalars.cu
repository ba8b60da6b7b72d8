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

HostRegistration::~HostRegistration() {
  // Destructors must not throw: a failure leaves the pages locked, no worse.
  // The device is named so that this thread's first CUDA call does not
  // make a context on device 0.
  if (ptr_ && cudaSetDevice(ordinal_) == cudaSuccess && cudaHostUnregister(ptr_) != cudaSuccess) {
    cudaGetLastError();
  }
}

std::unique_ptr<HostRegistration> register_host_scalars(const GpuDevice& device,
                                                        const uint64_t* words, size_t n) {
  if (n == 0) return std::make_unique<HostRegistration>(device.cuda_ordinal(), nullptr);
  G16_CUDA_CHECK(cudaSetDevice(device.cuda_ordinal()));
  void* ptr = const_cast<uint64_t*>(words);
  G16_CUDA_CHECK(cudaHostRegister(ptr, n * kScalarBytes, cudaHostRegisterPortable));
  return std::make_unique<HostRegistration>(device.cuda_ordinal(), ptr);
}

UploadStream::UploadStream(int ordinal, cudaStream_t stream, cudaEvent_t slot0,
                           cudaEvent_t slot1)
    : ordinal_(ordinal), stream_(stream), slots_{slot0, slot1} {}

UploadStream::~UploadStream() {
  // Copies still queued read pinned memory the caller frees next: wait.
  if (cudaSetDevice(ordinal_) != cudaSuccess) return;
  cudaStreamSynchronize(stream_);
  for (cudaEvent_t event : slots_) cudaEventDestroy(event);
  cudaStreamDestroy(stream_);
}

std::unique_ptr<UploadStream> new_upload_stream(const GpuDevice& device) {
  G16_CUDA_CHECK(cudaSetDevice(device.cuda_ordinal()));
  cudaStream_t stream = nullptr;
  G16_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t slots[2] = {nullptr, nullptr};
  for (cudaEvent_t& event : slots) {
    cudaError_t error = cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
    if (error != cudaSuccess) {
      for (cudaEvent_t made : slots) {
        if (made) cudaEventDestroy(made);
      }
      cudaStreamDestroy(stream);
      G16_CUDA_CHECK(error);
    }
  }
  return std::make_unique<UploadStream>(device.cuda_ordinal(), stream, slots[0], slots[1]);
}

void queue_upload(const GpuDevice& device, const UploadStream& stream, size_t slot,
                  const uint64_t* words, size_t n, const DeviceScalars& to, size_t offset) {
  check_device(device, to);
  require_on_device(device, stream.ordinal(), "upload stream");
  if (slot > 1) throw std::invalid_argument("upload slot past 1");
  if (offset > to.len() || n > to.len() - offset) {
    throw std::invalid_argument("upload of " + std::to_string(n) + " scalars at " +
                                std::to_string(offset) + " into a buffer of " +
                                std::to_string(to.len()));
  }
  G16_CUDA_CHECK(cudaSetDevice(device.cuda_ordinal()));
  if (n > 0) {
    G16_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(to.data()) + offset * kScalarBytes, words,
                                   n * kScalarBytes, cudaMemcpyHostToDevice, stream.stream()));
  }
  G16_CUDA_CHECK(cudaEventRecord(stream.slot_event(slot), stream.stream()));
}

void wait_upload_slot(const UploadStream& stream, size_t slot) {
  if (slot > 1) throw std::invalid_argument("upload slot past 1");
  G16_CUDA_CHECK(cudaEventSynchronize(stream.slot_event(slot)));
}

void finish_uploads(const UploadStream& stream) {
  G16_CUDA_CHECK(cudaStreamSynchronize(stream.stream()));
}

bool is_pinned(const uint64_t* words) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, words) != cudaSuccess) {
    cudaGetLastError();  // not a pointer CUDA knows: ordinary memory
    return false;
  }
  return attributes.type == cudaMemoryTypeHost;
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

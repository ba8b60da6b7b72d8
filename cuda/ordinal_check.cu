// Self-checks that work lands on the device a handle names: from the calling
// thread and from threads started here.
#include "groth16_gpu/cuda_check.h"
#include "groth16_gpu/device.h"

#include <exception>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace groth16_gpu {
namespace {

/// Writes the device's ordinal and the launch's sequence number, so a stale
/// value from an earlier launch cannot pass for this one.
__global__ void write_ordinal_kernel(int* out, int ordinal, int sequence) {
  out[0] = ordinal;
  out[1] = sequence;
}

/// A non-blocking stream on the current device, destroyed on scope exit.
class ScopedStream {
 public:
  ScopedStream() {
    G16_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  ~ScopedStream() { cudaStreamDestroy(stream_); }
  ScopedStream(const ScopedStream&) = delete;
  ScopedStream& operator=(const ScopedStream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

/// Device memory on the current device, freed on scope exit.
class ScopedDeviceBuffer {
 public:
  explicit ScopedDeviceBuffer(size_t bytes) {
    G16_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
  }
  ~ScopedDeviceBuffer() { cudaFree(ptr_); }
  ScopedDeviceBuffer(const ScopedDeviceBuffer&) = delete;
  ScopedDeviceBuffer& operator=(const ScopedDeviceBuffer&) = delete;
  int* get() const { return static_cast<int*>(ptr_); }

 private:
  void* ptr_ = nullptr;
};

void expect_equal(int actual, int expected, const char* what) {
  if (actual != expected) {
    throw std::runtime_error(std::string(what) + ": expected " +
                             std::to_string(expected) + ", got " +
                             std::to_string(actual));
  }
}

/// The roundtrip proper; the caller has already selected the device.
void roundtrip_on_current_device(const GpuDevice& device, uint32_t launches) {
  const int ordinal = device.cuda_ordinal();
  ScopedStream stream;
  ScopedDeviceBuffer buffer(2 * sizeof(int));

  cudaPointerAttributes attributes{};
  G16_CUDA_CHECK(cudaPointerGetAttributes(&attributes, buffer.get()));
  expect_equal(attributes.device, ordinal, "device of the allocation");

  for (uint32_t launch = 0; launch < launches; ++launch) {
    const int sequence = static_cast<int>(launch);
    G16_CUDA_CHECK(
        cudaMemsetAsync(buffer.get(), 0xff, 2 * sizeof(int), stream.get()));
    write_ordinal_kernel<<<1, 1, 0, stream.get()>>>(buffer.get(), ordinal,
                                                    sequence);
    G16_CUDA_CHECK(cudaGetLastError());
    int host[2] = {-1, -1};
    G16_CUDA_CHECK(cudaMemcpyAsync(host, buffer.get(), sizeof(host),
                                   cudaMemcpyDeviceToHost, stream.get()));
    G16_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    expect_equal(host[0], ordinal, "ordinal written by the kernel");
    expect_equal(host[1], sequence, "launch number written by the kernel");

    int current = -1;
    G16_CUDA_CHECK(cudaGetDevice(&current));
    expect_equal(current, ordinal, "current device");
  }
}

}  // namespace

void write_ordinal_roundtrip(const GpuDevice& device, uint32_t launches) {
  G16_CUDA_CHECK(cudaSetDevice(device.cuda_ordinal()));
  roundtrip_on_current_device(device, launches);
}

void threaded_ordinal_check(const GpuDevice& device, uint32_t threads,
                            uint32_t launches) {
  G16_CUDA_CHECK(cudaSetDevice(device.cuda_ordinal()));
  std::vector<std::exception_ptr> failures(threads);
  std::vector<std::thread> workers;
  workers.reserve(threads);

  // A std::thread still joinable when destroyed calls std::terminate, so
  // join what was started even when starting another one fails.
  auto join_all = [&workers] {
    for (std::thread& worker : workers) {
      if (worker.joinable()) worker.join();
    }
  };
  try {
    for (uint32_t index = 0; index < threads; ++index) {
      workers.emplace_back([&device, &failures, index, launches] {
        try {
          // A new thread starts on device 0: select ours first.
          G16_CUDA_CHECK(cudaSetDevice(device.cuda_ordinal()));
          roundtrip_on_current_device(device, launches);
        } catch (...) {
          failures[index] = std::current_exception();
        }
      });
    }
  } catch (...) {
    join_all();
    throw;
  }
  join_all();

  for (const std::exception_ptr& failure : failures) {
    if (failure) std::rethrow_exception(failure);
  }
}

}  // namespace groth16_gpu

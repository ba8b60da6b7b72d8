// Turns a failed CUDA runtime call into a C++ exception that names the call.
// Only for CUDA translation units: it needs cuda_runtime.h.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace groth16_gpu {

/// The exception text for a failed call. src/device.rs parses this shape
/// ("CUDA call `<call>` failed with <name>: <text> (<file>:<line>)"), so keep
/// the two in step.
inline std::string cuda_failure_message(cudaError_t error, const char* call,
                                        const char* file, int line) {
  return std::string("CUDA call `") + call + "` failed with " +
         cudaGetErrorName(error) + ": " + cudaGetErrorString(error) + " (" +
         file + ":" + std::to_string(line) + ")";
}

/// Throws std::runtime_error when `error` is not cudaSuccess, after
/// resetting the thread's last-error slot: a failure left there (an
/// out-of-memory one, say) resurfaces from later, unrelated runtime calls,
/// and cub caches what such a call answers (its device count) for the life
/// of the process, which left every later sort failing with
/// cudaErrorInvalidDevice. Sticky errors stay; they are the context's.
inline void cuda_check(cudaError_t error, const char* call, const char* file,
                       int line) {
  if (error != cudaSuccess) {
    cudaGetLastError();
    throw std::runtime_error(cuda_failure_message(error, call, file, line));
  }
}

}  // namespace groth16_gpu

/// Runs a CUDA runtime call and throws, naming the call, when it fails.
#define G16_CUDA_CHECK(call) \
  ::groth16_gpu::cuda_check((call), #call, __FILE__, __LINE__)

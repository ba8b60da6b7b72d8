// Where one MSM chunk's device time goes, for tuning: where the call's
// settings ask for it (g16_msm_tuning::phase_timing), run_chunk records an
// event after each phase and prints one line per chunk to stderr. Off (the
// default), it records nothing. The events sit on the chunk's own stream,
// so a phase's time is its kernels' time plus any wait for other lanes'
// work on the device.
#pragma once

#include <cstdio>

#include "scoped.cuh"

namespace groth16_gpu {
namespace msm {

/// Events between the phases of one chunk, named as they are marked.
class PhaseTimer {
 public:
  static constexpr int kMaxPhases = 16;
  /// Creates no event unless `on`.
  PhaseTimer(cudaStream_t stream, bool on) : stream_(stream), on_(on) {
    if (!on_) return;
    for (auto& event : events_) G16_CUDA_CHECK(cudaEventCreate(&event));
    G16_CUDA_CHECK(cudaEventRecord(events_[0], stream_));
  }
  ~PhaseTimer() {
    for (auto event : events_) {
      if (event) cudaEventDestroy(event);
    }
  }
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;
  /// Ends the phase called `name` (a string literal) at this point of the stream.
  void mark(const char* name) {
    if (!on_ || marks_ + 1 >= kMaxPhases) return;
    names_[marks_] = name;
    marks_++;
    G16_CUDA_CHECK(cudaEventRecord(events_[marks_], stream_));
  }
  /// Waits for the last mark and prints "label: name ms, ..." to stderr.
  void print(const char* curve, size_t points, uint32_t c, uint32_t copies, uint32_t levels) {
    if (!on_ || marks_ == 0) return;
    G16_CUDA_CHECK(cudaEventSynchronize(events_[marks_]));
    char line[1024];
    int used = std::snprintf(line, sizeof line, "msm phases %s n=%zu c=%u copies=%u levels=%u:",
                             curve, points, c, copies, levels);
    float total = 0;
    for (int i = 0; i < marks_ && used > 0 && size_t(used) < sizeof line; i++) {
      float ms = 0;
      G16_CUDA_CHECK(cudaEventElapsedTime(&ms, events_[i], events_[i + 1]));
      total += ms;
      used += std::snprintf(line + used, sizeof line - used, " %s %.2f", names_[i], ms);
    }
    std::fprintf(stderr, "%s; total %.2f ms\n", line, total);
  }

 private:
  cudaStream_t stream_;
  bool on_;
  int marks_ = 0;
  const char* names_[kMaxPhases] = {};
  cudaEvent_t events_[kMaxPhases] = {};
};

}  // namespace msm
}  // namespace groth16_gpu

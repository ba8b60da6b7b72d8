// Device-to-host copies into ordinary (pageable) memory through page-locked
// slots the caller lends: the copy engine fills one slot at the bus's speed
// while host threads copy filled ones on. A copy straight into pageable
// memory goes through the driver's bounce buffers on the calling thread
// (about 5 GB/s for points on an H100), and a key's queries are GBs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "groth16_gpu/cuda_check.h"

namespace groth16_gpu {
namespace keygen {

class SlotDownloader {
 public:
  /// Slots are cut from `staging` (`bytes` of page-locked memory; null or
  /// too small for two slots a thread means none): two for each of up to
  /// `threads` host threads, at most `max_slot_bytes` each.
  SlotDownloader(int ordinal, uint8_t* staging, size_t bytes, unsigned threads,
                 size_t max_slot_bytes)
      : ordinal_(ordinal) {
    if (staging == nullptr || threads == 0) return;
    slot_bytes_ = std::min(max_slot_bytes, bytes / (2 * size_t{threads}));
    slot_bytes_ -= slot_bytes_ % 256;
    if (slot_bytes_ == 0) return;
    try {
      for (unsigned t = 0; t < threads; t++) {
        lanes_.emplace_back();
        Lane& lane = lanes_.back();
        G16_CUDA_CHECK(cudaStreamCreateWithFlags(&lane.stream, cudaStreamNonBlocking));
        for (int s = 0; s < 2; s++) {
          G16_CUDA_CHECK(cudaEventCreateWithFlags(&lane.filled[s], cudaEventDisableTiming));
          lane.slot[s] = staging + (2 * size_t{t} + s) * slot_bytes_;
        }
      }
    } catch (...) {
      release();
      throw;
    }
  }
  ~SlotDownloader() { release(); }
  SlotDownloader(const SlotDownloader&) = delete;
  SlotDownloader& operator=(const SlotDownloader&) = delete;

  /// Whether it has slots (else callers copy straight).
  bool usable() const { return !lanes_.empty(); }

  /// Copies `bytes` from device memory `from` to host memory `to` once
  /// `ready` has happened; returns when all of it has landed.
  void download(const void* from, void* to, size_t bytes, cudaEvent_t ready) {
    size_t pieces = (bytes + slot_bytes_ - 1) / slot_bytes_;
    size_t threads = std::min(lanes_.size(), pieces);
    std::mutex lock;
    std::string first_error;
    std::vector<std::thread> workers;
    auto work = [&](size_t t) {
      try {
        copy_lane(t, threads, pieces, static_cast<const uint8_t*>(from),
                  static_cast<uint8_t*>(to), bytes, ready);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> guard(lock);
        if (first_error.empty()) first_error = e.what();
      }
    };
    try {
      for (size_t t = 0; t < threads; t++) workers.emplace_back(work, t);
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> guard(lock);
      if (first_error.empty()) first_error = std::string("a download thread: ") + e.what();
    }
    for (std::thread& worker : workers) worker.join();
    if (!first_error.empty()) throw std::runtime_error(first_error);
  }

 private:
  struct Lane {
    cudaStream_t stream = nullptr;
    cudaEvent_t filled[2] = {nullptr, nullptr};
    uint8_t* slot[2] = {nullptr, nullptr};
  };

  /// Lane `t` takes pieces t, t + threads, ...: one lands in a slot while
  /// the one before it is copied out of the other.
  void copy_lane(size_t t, size_t threads, size_t pieces, const uint8_t* from, uint8_t* to,
                 size_t bytes, cudaEvent_t ready) {
    G16_CUDA_CHECK(cudaSetDevice(ordinal_));
    Lane& lane = lanes_[t];
    // Whatever happens, no copy still writes a slot once this returns.
    struct Drain {
      cudaStream_t stream;
      ~Drain() { cudaStreamSynchronize(stream); }
    } drain{lane.stream};
    G16_CUDA_CHECK(cudaStreamWaitEvent(lane.stream, ready, 0));
    auto length = [&](size_t p) { return std::min(slot_bytes_, bytes - p * slot_bytes_); };
    auto queue = [&](size_t p, int s) {
      G16_CUDA_CHECK(cudaMemcpyAsync(lane.slot[s], from + p * slot_bytes_, length(p),
                                     cudaMemcpyDeviceToHost, lane.stream));
      G16_CUDA_CHECK(cudaEventRecord(lane.filled[s], lane.stream));
    };
    int s = 0;
    queue(t, s);
    for (size_t p = t; p < pieces; p += threads, s ^= 1) {
      if (p + threads < pieces) queue(p + threads, s ^ 1);
      G16_CUDA_CHECK(cudaEventSynchronize(lane.filled[s]));
      std::memcpy(to + p * slot_bytes_, lane.slot[s], length(p));
    }
  }

  void release() {
    for (Lane& lane : lanes_) {
      if (lane.stream) {
        cudaStreamSynchronize(lane.stream);
        cudaStreamDestroy(lane.stream);
      }
      for (cudaEvent_t event : lane.filled) {
        if (event) cudaEventDestroy(event);
      }
    }
    lanes_.clear();
  }

  int ordinal_;
  size_t slot_bytes_ = 0;
  std::vector<Lane> lanes_;
};

}  // namespace keygen
}  // namespace groth16_gpu

// The bridge's MSM entry points (include/groth16_gpu/msm.h): resident bases,
// memory reservations, and dispatch to the per-curve GPU code.
#include <stdexcept>
#include <string>

#include "device_entry.h"
#include "groth16_gpu/cuda_check.h"
#include "groth16_gpu/msm.h"
#include "pippenger.cuh"
#include "scoped.cuh"
#include "tuning.h"

namespace groth16_gpu {

MsmBases::MsmBases(int ordinal, bool g2, size_t len, void* points, uint32_t copies,
                   uint32_t copy_bits)
    : ordinal_(ordinal),
      g2_(g2),
      len_(len),
      capacity_(len),
      points_(points),
      copies_(copies),
      copy_bits_(copy_bits) {}

MsmBases::~MsmBases() {
  // Destructors must not throw: a failure here leaks at worst.
  if (points_ && cudaSetDevice(ordinal_) == cudaSuccess) cudaFree(points_);
}

DeviceReservation::DeviceReservation(int ordinal, void* ptr, size_t bytes)
    : ordinal_(ordinal), ptr_(ptr), bytes_(bytes) {}

DeviceReservation::~DeviceReservation() {
  if (ptr_ && cudaSetDevice(ordinal_) == cudaSuccess) cudaFree(ptr_);
}

void check_msm_tuning(const g16_msm_tuning* tuning) {
  if (!tuning) throw std::invalid_argument("MSM tuning: null");
  msm::settle(*tuning);
}

namespace {

/// cudaMalloc that reports running out of memory in words, clearing the error.
void* device_alloc(size_t bytes, const char* what) {
  void* ptr = nullptr;
  if (bytes == 0) return nullptr;
  cudaError_t error = cudaMalloc(&ptr, bytes);
  if (error == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    throw std::runtime_error(std::string("out of device memory: ") + what + " needs " +
                             std::to_string(bytes) + " bytes");
  }
  G16_CUDA_CHECK(error);
  return ptr;
}

/// Copies `bytes` from the host to `points` on the current device, complete
/// on return. Not a plain cudaMemcpy: from pageable memory it may return
/// once the bytes are staged, before the DMA lands, and the MSM kernels run
/// on non-blocking streams that do not wait for the legacy default stream
/// (a batch addition launched right after the upload read bases not yet
/// there). The copy is complete when this stream is synchronized.
void copy_points_to_device(void* points, const uint64_t* words, size_t bytes) {
  if (bytes == 0) return;
  msm::ScopedStream stream;
  G16_CUDA_CHECK(
      cudaMemcpyAsync(points, words, bytes, cudaMemcpyHostToDevice, stream.stream));
  G16_CUDA_CHECK(cudaStreamSynchronize(stream.stream));
}

size_t point_bytes(bool g2) { return g2 ? 192 : 96; }

}  // namespace

std::unique_ptr<MsmBases> upload_msm_bases(const GpuDevice& device, bool g2,
                                           const uint64_t* words, size_t len) {
  G16_CUDA_CHECK(cudaSetDevice(device.cuda_ordinal()));
  size_t bytes = len * point_bytes(g2);
  auto bases = std::make_unique<MsmBases>(device.cuda_ordinal(), g2, len,
                                          device_alloc(bytes, "resident MSM bases"));
  copy_points_to_device(const_cast<void*>(bases->points()), words, bytes);
  return bases;
}

void MsmBases::refill(const uint64_t* words, size_t len) {
  if (copies_ > 1) throw std::invalid_argument("refilling MSM bases that hold shifted copies");
  if (len > capacity_) {
    throw std::invalid_argument("refilling MSM bases with " + std::to_string(len) +
                                " points, room for " + std::to_string(capacity_));
  }
  // Empty until the copy lands: a failed copy leaves no mix of old and new.
  len_ = 0;
  copy_points_to_device(points_, words, len * point_bytes(g2_));
  len_ = len;
}

void refill_msm_bases(const GpuDevice& device, MsmBases& bases, const uint64_t* words,
                      size_t len) {
  require_on_device(device, bases.ordinal(), "MSM bases");
  G16_CUDA_CHECK(cudaSetDevice(device.cuda_ordinal()));
  bases.refill(words, len);
}

namespace {

/// `bits`, or the choice for `len` bases where it is 0, checked.
uint32_t checked_copy_bits(size_t len, uint32_t bits) {
  if (bits == 0) bits = msm::copy_window_bits(len);
  if (bits < 4 || bits > kMaxCopyBits) {
    throw std::invalid_argument("shifted copies for " + std::to_string(bits) +
                                "-bit windows: outside 4..=" + std::to_string(kMaxCopyBits));
  }
  return bits;
}

}  // namespace

uint32_t shifted_copy_count(size_t len, uint32_t bits) {
  return msm::Geometry::of(checked_copy_bits(len, bits)).windows;
}

uint32_t shifted_copy_bits(size_t len, uint32_t bits) { return checked_copy_bits(len, bits); }

uint32_t checked_copy_count(size_t len, uint32_t bits, uint32_t copies) {
  uint32_t windows = shifted_copy_count(len, bits);
  if (copies == 0) return windows;
  if (copies < 2 || copies > windows) {
    throw std::invalid_argument(std::to_string(copies) + " shifted copies for " +
                                std::to_string(checked_copy_bits(len, bits)) +
                                "-bit windows: outside 2..=" + std::to_string(windows));
  }
  return copies;
}

size_t msm_copies_from() { return static_cast<size_t>(msm::kCopiesFrom); }

std::unique_ptr<MsmBases> precompute_msm_bases(const GpuDevice& device, const MsmBases& bases,
                                               uint32_t bits, uint32_t copies) {
  require_on_device(device, bases.ordinal(), "MSM bases");
  if (bases.copies() > 1) throw std::invalid_argument("MSM bases already hold shifted copies");
  copies = checked_copy_count(bases.len(), bits, copies);
  bits = checked_copy_bits(bases.len(), bits);
  // Entry values name a copy's point in 31 bits (bit 31 is the sign).
  if (uint64_t(copies) * bases.len() >= (uint64_t(1) << 31)) {
    throw std::invalid_argument(std::to_string(copies) + " shifted copies of " +
                                std::to_string(bases.len()) + " bases pass 2^31 points");
  }
  G16_CUDA_CHECK(cudaSetDevice(device.cuda_ordinal()));
  size_t bytes = bases.len() * point_bytes(bases.is_g2());
  auto copied = std::make_unique<MsmBases>(device.cuda_ordinal(), bases.is_g2(), bases.len(),
                                           device_alloc(bytes * copies, "shifted MSM bases"),
                                           copies, bits);
  if (bytes == 0) return copied;
  void* points = const_cast<void*>(copied->points());
  if (bases.is_g2()) {
    msm::device_fill_copies_g2(bases.points(), points, bases.len(), bits, copies);
  } else {
    msm::device_fill_copies_g1(bases.points(), points, bases.len(), bits, copies);
  }
  return copied;
}

namespace {

uint32_t dispatch_msm(const GpuDevice& device, const MsmBases& bases, size_t first,
                      const uint64_t* scalars, const uint32_t* indices, size_t n, uint64_t* out,
                      size_t out_words, const g16_msm_tuning* tuning, g16_msm_report* report) {
  if (!tuning || !report) throw std::invalid_argument("MSM tuning or report: null");
  return bases.is_g2() ? msm::device_msm_g2(device, bases, first, scalars, indices, n, out,
                                            out_words, *tuning, *report)
                       : msm::device_msm_g1(device, bases, first, scalars, indices, n, out,
                                            out_words, *tuning, *report);
}

}  // namespace

uint32_t msm_windows(const GpuDevice& device, const MsmBases& bases, size_t first,
                     const uint64_t* scalars, size_t n, uint64_t* out, size_t out_words,
                     const g16_msm_tuning* tuning, g16_msm_report* report) {
  return dispatch_msm(device, bases, first, scalars, nullptr, n, out, out_words, tuning, report);
}

uint32_t msm_windows_indexed(const GpuDevice& device, const MsmBases& bases,
                             const uint64_t* scalars, const uint32_t* indices, size_t n,
                             uint64_t* out, size_t out_words, const g16_msm_tuning* tuning,
                             g16_msm_report* report) {
  return dispatch_msm(device, bases, 0, scalars, indices, n, out, out_words, tuning, report);
}

uint32_t msm_windows_resident(const GpuDevice& device, const MsmBases& bases, size_t first,
                              const DeviceScalars& scalars, size_t scalar_first, size_t n,
                              uint64_t* out, size_t out_words, const g16_msm_tuning* tuning,
                              g16_msm_report* report) {
  require_on_device(device, scalars.ordinal(), "MSM scalars");
  if (scalar_first > scalars.len() || n > scalars.len() - scalar_first) {
    throw std::invalid_argument("MSM of " + std::to_string(n) + " scalars from " +
                                std::to_string(scalar_first) + " over " +
                                std::to_string(scalars.len()) + " resident scalars");
  }
  // A scalar is four 64-bit words, as the host side lays them out.
  const uint64_t* words = static_cast<const uint64_t*>(scalars.data()) + scalar_first * 4;
  return msm_windows(device, bases, first, words, n, out, out_words, tuning, report);
}

void batch_add(const GpuDevice& device, const MsmBases& bases, size_t first,
               const uint64_t* bitmap, size_t n, uint64_t* out, size_t out_words,
               float* device_ms) {
  if (bases.is_g2()) {
    msm::device_batch_add_g2(device, bases, first, bitmap, n, out, out_words, device_ms);
  } else {
    msm::device_batch_add_g1(device, bases, first, bitmap, n, out, out_words, device_ms);
  }
}

std::unique_ptr<DeviceReservation> reserve_device_memory(const GpuDevice& device,
                                                         uint64_t bytes) {
  G16_CUDA_CHECK(cudaSetDevice(device.cuda_ordinal()));
  void* ptr = device_alloc(bytes, "a memory reservation");
  return std::make_unique<DeviceReservation>(device.cuda_ordinal(), ptr, bytes);
}

}  // namespace groth16_gpu

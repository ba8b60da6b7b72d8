// G2 MSM and batch addition on the GPU: the curve's instance of device_msm.cuh
// and batch_add.cuh.
#include "device_entry.h"
#include "batch_add.cuh"
#include "device_msm.cuh"

namespace groth16_gpu {
namespace msm {

uint32_t device_msm_g2(const GpuDevice& device, const MsmBases& bases, size_t first,
                       const uint64_t* scalars, const uint32_t* indices, size_t n, uint64_t* out,
                       size_t out_words, const g16_msm_tuning& tuning, g16_msm_report& report) {
  return device_msm<ff::Fp2>(device, bases, first, scalars, indices, n, out, out_words, tuning,
                          report);
}

void device_batch_add_g2(const GpuDevice& device, const MsmBases& bases, size_t first,
                         const uint64_t* bitmap, size_t n, uint64_t* out, size_t out_words,
                         float* device_ms) {
  device_batch_add<ff::Fp2>(device, bases, first, bitmap, n, out, out_words, device_ms);
}

void device_fill_copies_g2(const void* source, void* points, size_t len, uint32_t bits,
                           uint32_t copies) {
  using Point = ec::Affine<ff::Fp2>;
  fill_shifted_copies<ff::Fp2>(static_cast<const Point*>(source), static_cast<Point*>(points), len,
                           bits, copies);
}

}  // namespace msm
}  // namespace groth16_gpu

// The per-curve GPU entry points that msm_api.cu dispatches to (one
// translation unit per curve keeps each nvcc run small). `first` is the
// resident base that scalar (or bit) 0 multiplies; an MSM runs as `tuning`
// says and fills `report`.
#pragma once

#include "groth16_gpu/ffi_types.h"
#include "groth16_gpu/msm.h"

namespace groth16_gpu {
namespace msm {

uint32_t device_msm_g1(const GpuDevice& device, const MsmBases& bases, size_t first,
                       const uint64_t* scalars, const uint32_t* indices, size_t n, uint64_t* out,
                       size_t out_words, const g16_msm_tuning& tuning, g16_msm_report& report);
uint32_t device_msm_g2(const GpuDevice& device, const MsmBases& bases, size_t first,
                       const uint64_t* scalars, const uint32_t* indices, size_t n, uint64_t* out,
                       size_t out_words, const g16_msm_tuning& tuning, g16_msm_report& report);
void device_batch_add_g1(const GpuDevice& device, const MsmBases& bases, size_t first,
                         const uint64_t* bitmap, size_t n, uint64_t* out, size_t out_words,
                         float* device_ms);
void device_batch_add_g2(const GpuDevice& device, const MsmBases& bases, size_t first,
                         const uint64_t* bitmap, size_t n, uint64_t* out, size_t out_words,
                         float* device_ms);
/// Fills `copies` copies of the `len` bases at `source` into `points`
/// (device memory, copies x len points): copy 0 is the bases, copy k 2^bits
/// times copy k - 1.
void device_fill_copies_g1(const void* source, void* points, size_t len, uint32_t bits,
                           uint32_t copies);
void device_fill_copies_g2(const void* source, void* points, size_t len, uint32_t bits,
                           uint32_t copies);

}  // namespace msm
}  // namespace groth16_gpu

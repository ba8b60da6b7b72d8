// Number-theoretic transforms over BLS12-381's scalar field on the GPU
// (cuda/ntt), as the cxx bridge (src/bridge.rs) sees them. Plain pointers
// only: the header needs neither CUDA nor cxx.
//
// Values are blstrs Scalars as they lie in memory: 4 little-endian 64-bit
// words in Montgomery form. Constants (roots, coset generators, scale) come
// the same way, computed by the caller with blstrs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "groth16_gpu/device.h"
#include "groth16_gpu/device_scalars.h"

namespace groth16_gpu {

/// Largest transform: 2^27 values (the field's 2-adicity is 32; memory is the limit).
constexpr uint32_t kMaxNttLog = 27;

/// In place on `n` = 2^k values (`values`: 4 words each):
///   1. values[i] *= pre_coset^i          (if `pre_coset` is not null),
///   2. a radix-2 transform with root `omega` (order n): out[i] = Σ_j v[j] omega^(ij),
///   3. values[i] *= scale · post_coset^i (each if not null).
/// Forward coset NTT: pre_coset = g. Inverse: omega^-1, scale = n^-1; inverse
/// coset: also post_coset = g^-1. Copies in, transforms on the device, copies
/// back; `device_ms` gets the device time by CUDA events.
void ntt_fr(const GpuDevice& device, uint64_t* values, size_t n, const uint64_t* omega,
            const uint64_t* pre_coset, const uint64_t* scale, const uint64_t* post_coset,
            float* device_ms);

/// Scalars the H polynomial takes, in this order: omega, omega^-1, m^-1,
/// g, g^-1, z^-1 (z = g^m - 1, the vanishing polynomial on the coset).
constexpr size_t kHConstants = 6;

/// A proof's H polynomial in steps on one device: each of a, b, c (the m =
/// 2^k evaluations of A, B, C on the domain, zero-padded) goes to the coset
/// on its own, as soon as it has landed, while the host still stages the
/// next; then h_quotient makes (A B - C) / Z from the three. Holds the
/// twiddles and a stream; its destructor waits for what it queued, so it
/// must go before the buffers it transforms.
class HPolynomial {
 public:
  struct State;
  explicit HPolynomial(std::unique_ptr<State> state);
  ~HPolynomial();
  HPolynomial(const HPolynomial&) = delete;
  HPolynomial& operator=(const HPolynomial&) = delete;
  State& state() const { return *state_; }

 private:
  std::unique_ptr<State> state_;
};

/// The H polynomial's work over a domain of `m` values on `device`; its
/// twiddles start on its stream. `constants`: kHConstants scalars.
std::unique_ptr<HPolynomial> new_h_polynomial(const GpuDevice& device, size_t m,
                                              const uint64_t* constants);

/// Queues `values` (m scalars) from the domain to the coset: coefficients
/// by the inverse transform, then the forward transform on the coset.
void h_to_coset(const GpuDevice& device, const HPolynomial& h, const DeviceScalars& values);

/// As h_to_coset, after every copy queued so far on `uploads` has landed;
/// returns without waiting.
void h_to_coset_after_uploads(const GpuDevice& device, const HPolynomial& h,
                              const UploadStream& uploads, const DeviceScalars& values);

/// With a, b and c on the coset (each through h_to_coset): `a` gets the
/// coefficients of (A B - C) / Z (the last one zero), left on the device
/// for the H MSM; b and c are overwritten. Returns when done, with the
/// device time since new_h_polynomial in `device_ms`.
void h_quotient(const GpuDevice& device, const HPolynomial& h, const DeviceScalars& a,
                const DeviceScalars& b, const DeviceScalars& c, float* device_ms);

}  // namespace groth16_gpu

// Radix-2 NTT over Fr on the device, in passes over shared-memory tiles
// (tile_passes.cuh). Twiddles and coset powers are computed on the device
// from two small tables of powers (see PowerTables), so nothing of size n is
// computed on the host. Also the H polynomial of a proof, on buffers that
// stay on the device for the H MSM.
#include <cuda_runtime.h>

#include <algorithm>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include "../ff/bls12_381.cuh"
#include "tile_passes.cuh"
#include "groth16_gpu/cuda_check.h"
#include "groth16_gpu/device_scalars.h"
#include "groth16_gpu/ntt.h"

namespace groth16_gpu {
namespace {

using ff::Fr;
using ntt::Order;
using ntt::PowerIndex;
using ntt::PowerTables;
using ntt::Scaling;

constexpr int kThreads = 256;

/// A blstrs Scalar's words as limbs: the same bytes, read as 32-bit halves.
G16_HD Fr fr_from_words(const uint64_t* words) {
  Fr r;
  for (int i = 0; i < 4; i++) {
    r.l[2 * i] = static_cast<uint32_t>(words[i]);
    r.l[2 * i + 1] = static_cast<uint32_t>(words[i] >> 32);
  }
  return r;
}

/// base^e by square-and-multiply over e's bits.
__device__ Fr pow_fr(Fr base, uint64_t e) {
  Fr acc = Fr::one();
  while (e != 0) {
    if (e & 1) acc = acc * base;
    base = base.sqr();
    e >>= 1;
  }
  return acc;
}

unsigned blocks_for(size_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

/// Entries of the tables for indices below 2^log_n: lo first, then hi.
struct TableSizes {
  int lo_bits;
  size_t lo_len, hi_len;
  explicit TableSizes(int log_n)
      : lo_bits((log_n + 1) / 2),
        lo_len(size_t{1} << lo_bits),
        hi_len(size_t{1} << (log_n - lo_bits)) {}
  size_t total() const { return lo_len + hi_len; }
};

/// table[i] = scale · base^i for i < lo_len, then base^((i - lo_len) 2^lo_bits).
__global__ void power_tables_kernel(Fr* table, size_t lo_len, size_t hi_len, int lo_bits,
                                    Fr base, Fr scale) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < lo_len) {
    table[i] = scale * pow_fr(base, i);
  } else if (i < lo_len + hi_len) {
    table[i] = pow_fr(base, (i - lo_len) << lo_bits);
  }
}

/// out[i] = tables.at(i).
__global__ void powers_kernel(Fr* out, size_t n, PowerTables tables) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = tables.at(i);
}

/// values[i] *= tables.at(i).
__global__ void multiply_powers_kernel(Fr* values, size_t n, PowerTables tables) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) values[i] = values[i] * tables.at(i);
}

/// Swaps values[i] and values[rev(i)] once per pair.
__global__ void bit_reverse_kernel(Fr* values, size_t n, int log_n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) {
    size_t j = __brevll(static_cast<unsigned long long>(i)) >> (64 - log_n);
    if (i < j) {
      Fr t = values[i];
      values[i] = values[j];
      values[j] = t;
    }
  }
}

/// a[i] = (a[i] b[i] - c[i]) z_inv: the quotient by the vanishing polynomial,
/// which is the constant z on the coset.
__global__ void quotient_kernel(Fr* a, const Fr* b, const Fr* c, size_t n, Fr z_inv) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) a[i] = (a[i] * b[i] - c[i]) * z_inv;
}

void check_launch(const char* what) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    throw std::runtime_error(std::string("CUDA launch `") + what + "` failed with " +
                             cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
  }
}

/// Device memory, a stream and two events, released on every path. The
/// memory is stream-ordered (cudaMallocAsync / cudaFreeAsync): a plain
/// cudaFree waits for the whole device, stalling a proof that runs beside.
struct NttResources {
  static constexpr int kSlots = 8;
  Fr* buffers[kSlots] = {};
  cudaEvent_t start = nullptr, stop = nullptr;
  cudaStream_t stream = nullptr;
  NttResources() {
    G16_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    G16_CUDA_CHECK(cudaEventCreate(&start));
    G16_CUDA_CHECK(cudaEventCreate(&stop));
  }
  ~NttResources() {
    // The frees are ordered after the stream's work; the one wait, after
    // them, returns the memory before the caller reads free memory.
    for (Fr* b : buffers) {
      if (b) cudaFreeAsync(b, stream);
    }
    if (stream) cudaStreamSynchronize(stream);
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    if (stream) cudaStreamDestroy(stream);
  }
  NttResources(const NttResources&) = delete;
  NttResources& operator=(const NttResources&) = delete;

  /// buffers[slot] = `count` scalars; too little memory is a clear error.
  Fr* allocate(int slot, size_t count, const char* what) {
    cudaError_t error =
        cudaMallocAsync(&buffers[slot], std::max<size_t>(count, 1) * sizeof(Fr), stream);
    if (error == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      buffers[slot] = nullptr;
      throw std::runtime_error(std::string("out of device memory: ") + what + " needs " +
                               std::to_string(count * sizeof(Fr)) + " bytes");
    }
    G16_CUDA_CHECK(error);
    return buffers[slot];
  }

  /// Starts the event timer.
  void begin() { G16_CUDA_CHECK(cudaEventRecord(start, stream)); }

  /// Waits for the stream; writes the time since begin() to `device_ms`.
  void end(float* device_ms) {
    G16_CUDA_CHECK(cudaEventRecord(stop, stream));
    G16_CUDA_CHECK(cudaStreamSynchronize(stream));
    float ms = 0;
    G16_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (device_ms) *device_ms = ms;
  }
};

/// log2 of n, which must be a power of two up to 2^kMaxNttLog.
int checked_log(size_t n) {
  if (n == 0 || (n & (n - 1)) != 0) throw std::runtime_error("NTT size must be a power of two");
  int log_n = 0;
  while ((size_t{1} << log_n) < n) log_n++;
  if (log_n > static_cast<int>(kMaxNttLog)) throw std::runtime_error("NTT larger than 2^27");
  return log_n;
}

/// Builds scale · base^i tables for i < 2^log_n in resources slot `slot`.
PowerTables power_tables(NttResources& r, int slot, int log_n, Fr base, Fr scale) {
  TableSizes sizes(log_n);
  Fr* table = r.allocate(slot, sizes.total(), "an NTT's power tables");
  power_tables_kernel<<<blocks_for(sizes.total()), kThreads, 0, r.stream>>>(
      table, sizes.lo_len, sizes.hi_len, sizes.lo_bits, base, scale);
  check_launch("power_tables_kernel");
  return PowerTables{table, table + sizes.lo_len, sizes.lo_bits};
}

/// twiddles[j] = omega^j for j < n / 2, in resources slot `slot`.
Fr* twiddles_for(NttResources& r, int slot, int tables_slot, int log_n, Fr omega) {
  size_t half = (size_t{1} << log_n) / 2;
  Fr* twiddles = r.allocate(slot, half, "an NTT's twiddles");
  if (half > 0) {
    PowerTables tables = power_tables(r, tables_slot, log_n, omega, Fr::one());
    powers_kernel<<<blocks_for(half), kThreads, 0, r.stream>>>(twiddles, half, tables);
    check_launch("powers_kernel");
  }
  return twiddles;
}

/// In place on the device: the transform of 2^log_n values in `order`
/// with the root whose powers `twiddles` holds; the first pass multiplies
/// its input by `pre`, the last its output by `post`. With no stages
/// (n = 1) the two scalings run as kernels of their own.
void transform(Fr* values, int log_n, Order order, const Fr* twiddles, const Scaling& pre,
               const Scaling& post, cudaStream_t stream) {
  size_t n = size_t{1} << log_n;
  if (log_n == 0) {
    for (const Scaling* scaling : {&pre, &post}) {
      if (scaling->index == PowerIndex::kNone) continue;
      multiply_powers_kernel<<<1, kThreads, 0, stream>>>(values, n, scaling->tables);
      check_launch("multiply_powers_kernel");
    }
    return;
  }
  std::vector<ntt::PassShape> passes = ntt::plan_passes(log_n, order);
  Scaling none;
  for (size_t i = 0; i < passes.size(); i++) {
    const Scaling& first = i == 0 ? pre : none;
    const Scaling& last = i + 1 == passes.size() ? post : none;
    unsigned blocks = static_cast<unsigned>(n >> passes[i].tile_log);
    if (order == Order::kDit) {
      ntt::tile_pass_kernel<Order::kDit>
          <<<blocks, ntt::kPassThreads, 0, stream>>>(values, passes[i], twiddles, first, last);
    } else {
      ntt::tile_pass_kernel<Order::kDif>
          <<<blocks, ntt::kPassThreads, 0, stream>>>(values, passes[i], twiddles, first, last);
    }
    check_launch("tile_pass_kernel");
  }
}

void bit_reverse(Fr* values, int log_n, cudaStream_t stream) {
  size_t n = size_t{1} << log_n;
  if (n < 2) return;
  bit_reverse_kernel<<<blocks_for(n), kThreads, 0, stream>>>(values, n, log_n);
  check_launch("bit_reverse_kernel");
}

void check_on_device(const GpuDevice& device, const DeviceScalars& scalars, size_t len,
                     const char* what) {
  require_on_device(device, scalars.ordinal(), what);
  if (scalars.len() != len) {
    throw std::invalid_argument(std::string(what) + " hold " + std::to_string(scalars.len()) +
                                " scalars, expected " + std::to_string(len));
  }
}

}  // namespace

void ntt_fr(const GpuDevice& device, uint64_t* values, size_t n, const uint64_t* omega,
            const uint64_t* pre_coset, const uint64_t* scale, const uint64_t* post_coset,
            float* device_ms) {
  G16_CUDA_CHECK(cudaSetDevice(device.cuda_ordinal()));
  int log_n = checked_log(n);
  Fr pre = pre_coset ? fr_from_words(pre_coset) : Fr::one();
  Fr factor = scale ? fr_from_words(scale) : Fr::one();
  Fr post = post_coset ? fr_from_words(post_coset) : Fr::one();

  NttResources r;
  Fr* d_values = r.allocate(0, n, "an NTT's values");
  r.begin();
  G16_CUDA_CHECK(cudaMemcpyAsync(d_values, values, n * sizeof(Fr), cudaMemcpyHostToDevice,
                                 r.stream));
  const Fr* twiddles = twiddles_for(r, 1, 2, log_n, fr_from_words(omega));
  // DIF takes the natural order to the bit-reversed one: the input's powers
  // are at natural indices, the output's at reversed ones, and one bit
  // reversal at the end restores the natural order.
  Scaling pre_scaling, post_scaling;
  if (pre_coset) pre_scaling = {power_tables(r, 3, log_n, pre, Fr::one()), PowerIndex::kNatural};
  if (scale || post_coset) {
    post_scaling = {power_tables(r, 4, log_n, post, factor), PowerIndex::kReversed};
  }
  transform(d_values, log_n, Order::kDif, twiddles, pre_scaling, post_scaling, r.stream);
  bit_reverse(d_values, log_n, r.stream);
  G16_CUDA_CHECK(cudaMemcpyAsync(values, d_values, n * sizeof(Fr), cudaMemcpyDeviceToHost,
                                 r.stream));
  r.end(device_ms);
}

struct HPolynomial::State {
  NttResources r;
  int ordinal = 0;
  size_t m = 0;
  int log_m = 0;
  const Fr* forward = nullptr;
  const Fr* inverse = nullptr;
  Scaling to_coset, from_coset;
  Fr z_inv;
  /// Recorded on an upload stream for this stream to wait on.
  cudaEvent_t landed = nullptr;
  /// The buffers already on the coset.
  std::vector<const void*> on_coset;

  // A drop may come on any thread: the resources' frees and wait (run
  // after this body) go to this state's device.
  ~State() {
    cudaSetDevice(ordinal);
    if (landed) cudaEventDestroy(landed);
  }

  /// `device` is the one this state was made on.
  void check_device(const GpuDevice& device) const {
    if (device.cuda_ordinal() != ordinal) {
      throw std::invalid_argument("an H polynomial's work used with another device");
    }
  }

  /// `values` on this state's device and of its length, not yet on the coset.
  void check_input(const GpuDevice& device, const DeviceScalars& values) const {
    check_device(device);
    check_on_device(device, values, m, "H polynomial's input");
    if (is_on_coset(values)) {
      throw std::invalid_argument("H polynomial's input already on the coset");
    }
  }

  bool is_on_coset(const DeviceScalars& values) const {
    return std::find(on_coset.begin(), on_coset.end(), values.data()) != on_coset.end();
  }

  /// Evaluations on the domain -> coefficients -> evaluations on the coset.
  /// Coefficients come out of the inverse DIF bit-reversed, so the scaling
  /// to the coset (m^-1 with g^i) is taken at reversed indices, and the
  /// forward DIT takes them in that order.
  void queue_to_coset(const DeviceScalars& values) {
    Fr* v = static_cast<Fr*>(values.data());
    Scaling none;
    transform(v, log_m, Order::kDif, inverse, none, to_coset, r.stream);
    transform(v, log_m, Order::kDit, forward, none, none, r.stream);
    on_coset.push_back(values.data());
  }
};

HPolynomial::HPolynomial(std::unique_ptr<State> state) : state_(std::move(state)) {}

HPolynomial::~HPolynomial() = default;

std::unique_ptr<HPolynomial> new_h_polynomial(const GpuDevice& device, size_t m,
                                              const uint64_t* constants) {
  G16_CUDA_CHECK(cudaSetDevice(device.cuda_ordinal()));
  auto s = std::make_unique<HPolynomial::State>();
  s->ordinal = device.cuda_ordinal();
  s->m = m;
  s->log_m = checked_log(m);
  Fr k[kHConstants];
  for (size_t i = 0; i < kHConstants; i++) k[i] = fr_from_words(constants + 4 * i);
  const Fr &omega = k[0], &omega_inv = k[1], &m_inv = k[2], &g = k[3], &g_inv = k[4];
  s->z_inv = k[5];
  G16_CUDA_CHECK(cudaEventCreateWithFlags(&s->landed, cudaEventDisableTiming));
  s->r.begin();
  s->forward = twiddles_for(s->r, 0, 1, s->log_m, omega);
  s->inverse = twiddles_for(s->r, 2, 3, s->log_m, omega_inv);
  // The scalings are taken at reversed indices: see queue_to_coset.
  s->to_coset = {power_tables(s->r, 4, s->log_m, g, m_inv), PowerIndex::kReversed};
  s->from_coset = {power_tables(s->r, 5, s->log_m, g_inv, m_inv), PowerIndex::kReversed};
  return std::make_unique<HPolynomial>(std::move(s));
}

void h_to_coset(const GpuDevice& device, const HPolynomial& h, const DeviceScalars& values) {
  HPolynomial::State& s = h.state();
  s.check_input(device, values);
  G16_CUDA_CHECK(cudaSetDevice(device.cuda_ordinal()));
  s.queue_to_coset(values);
}

void h_to_coset_after_uploads(const GpuDevice& device, const HPolynomial& h,
                              const UploadStream& uploads, const DeviceScalars& values) {
  HPolynomial::State& s = h.state();
  s.check_input(device, values);
  require_on_device(device, uploads.ordinal(), "an upload stream");
  G16_CUDA_CHECK(cudaSetDevice(device.cuda_ordinal()));
  G16_CUDA_CHECK(cudaEventRecord(s.landed, uploads.stream()));
  G16_CUDA_CHECK(cudaStreamWaitEvent(s.r.stream, s.landed, 0));
  s.queue_to_coset(values);
}

void h_quotient(const GpuDevice& device, const HPolynomial& h, const DeviceScalars& a,
                const DeviceScalars& b, const DeviceScalars& c, float* device_ms) {
  HPolynomial::State& s = h.state();
  s.check_device(device);
  for (const DeviceScalars* values : {&a, &b, &c}) {
    check_on_device(device, *values, s.m, "H polynomial's a, b, c");
    if (!s.is_on_coset(*values)) {
      throw std::invalid_argument("H polynomial's a, b, c not all on the coset");
    }
  }
  G16_CUDA_CHECK(cudaSetDevice(device.cuda_ordinal()));
  Fr* values[3] = {static_cast<Fr*>(a.data()), static_cast<Fr*>(b.data()),
                   static_cast<Fr*>(c.data())};
  quotient_kernel<<<blocks_for(s.m), kThreads, 0, s.r.stream>>>(values[0], values[1], values[2],
                                                                s.m, s.z_inv);
  check_launch("quotient_kernel");
  Scaling none;
  transform(values[0], s.log_m, Order::kDif, s.inverse, none, s.from_coset, s.r.stream);
  bit_reverse(values[0], s.log_m, s.r.stream);
  s.r.end(device_ms);
}

}  // namespace groth16_gpu

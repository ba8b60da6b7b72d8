//! The one cxx bridge to the C++/CUDA side (include/groth16_gpu/device.h,
//! cuda/*.cu). Only `device.rs` uses it; everything public goes through the
//! safe wrappers there.
//!
//! Every function that can fail returns `Result`: a C++ exception (CUDA
//! failures included) comes back as `Err(cxx::Exception)`, never as a panic
//! or an abort across the boundary.

#[cxx::bridge(namespace = "groth16_gpu")]
pub(crate) mod ffi {
    unsafe extern "C++" {
        include!("groth16_gpu/device.h");

        /// A CUDA device handle: plain data (ordinal and properties), no CUDA state.
        type GpuDevice;

        /// The CUDA ordinal the handle selects at every entry.
        fn ordinal(self: &GpuDevice) -> usize;
        /// The device's name, e.g. "NVIDIA H200".
        fn name(self: &GpuDevice) -> &CxxString;
        /// Streaming multiprocessors.
        fn sm_count(self: &GpuDevice) -> u32;
        /// Global memory in bytes.
        fn total_memory(self: &GpuDevice) -> u64;
        /// Free global memory in bytes, queried now.
        fn free_memory(self: &GpuDevice) -> Result<u64>;
        /// Whether threads waiting on the device sleep rather than spin.
        fn waits_by_blocking(self: &GpuDevice) -> Result<bool>;
        /// Compute capability, major part.
        fn compute_capability_major(self: &GpuDevice) -> u32;
        /// Compute capability, minor part.
        fn compute_capability_minor(self: &GpuDevice) -> u32;

        /// CUDA devices this process sees; 0 when the driver reports none.
        fn device_count() -> Result<usize>;
        /// Opens a device; an ordinal past the count is an error.
        fn open_device(ordinal: usize) -> Result<UniquePtr<GpuDevice>>;
        /// A second handle to the same device (plain data, no CUDA call).
        fn duplicate_device(device: &GpuDevice) -> Result<UniquePtr<GpuDevice>>;
        /// `launches` kernel launches that write the ordinal and read it back.
        fn write_ordinal_roundtrip(device: &GpuDevice, launches: u32) -> Result<()>;
        /// The same roundtrip from `threads` threads started on the C++ side.
        fn threaded_ordinal_check(device: &GpuDevice, threads: u32, launches: u32) -> Result<()>;
    }

    // ---- Multi-scalar multiplication and batch addition (issue 9) ----
    // include/groth16_gpu/msm.h, cuda/msm/; safe wrappers in
    // src/backend/cuda/. Pointers carry blstrs slices as u64 words; each
    // function's wrapper checks the lengths before the call.
    unsafe extern "C++" {
        include!("groth16_gpu/msm.h");

        /// Affine bases resident on one device, freed there on drop.
        type MsmBases;
        /// Device memory held until drop (tests: a device short of memory).
        type DeviceReservation;
        /// How one MSM call runs (include/groth16_gpu/ffi_types.h): plain
        /// fields, 0 for the built-in choice; passed with every MSM call
        /// (by pointer: cxx's references to extern types call
        /// `ptr::from_ref`, past the crate's rust-version).
        #[namespace = ""]
        type g16_msm_tuning = crate::ffi_types::g16_msm_tuning;
        /// What one MSM call ran with, and its device time.
        #[namespace = ""]
        type g16_msm_report = crate::ffi_types::g16_msm_report;

        /// Number of resident points.
        fn len(self: &MsmBases) -> usize;
        /// Whether the points are G2.
        fn is_g2(self: &MsmBases) -> bool;
        /// The CUDA ordinal of the device that holds them.
        #[cxx_name = "ordinal"]
        fn bases_ordinal(self: &MsmBases) -> usize;
        /// Copies of the points held (1: none besides the points).
        fn copies(self: &MsmBases) -> u32;
        /// The window bits the copies are shifted for (0: no copies).
        fn copy_bits(self: &MsmBases) -> u32;
        /// Bytes held.
        fn bytes(self: &DeviceReservation) -> u64;

        /// Copies `len` affine points (12 or 24 words each) to the device.
        unsafe fn upload_msm_bases(
            device: &GpuDevice,
            g2: bool,
            words: *const u64,
            len: usize,
        ) -> Result<UniquePtr<MsmBases>>;
        /// Copies `len` affine points into `bases`' allocation in place of
        /// its points (no shifted copies, `len` within its capacity).
        unsafe fn refill_msm_bases(
            device: &GpuDevice,
            bases: Pin<&mut MsmBases>,
            words: *const u64,
            len: usize,
        ) -> Result<()>;
        /// Points `bases`' allocation has room for.
        fn capacity(self: &MsmBases) -> usize;
        /// New bases: `bases`' points and their shifted copies for
        /// `bits`-bit windows (0: chosen by their number), `copies` in all
        /// (0: one per window; else 2..=windows).
        fn precompute_msm_bases(
            device: &GpuDevice,
            bases: &MsmBases,
            bits: u32,
            copies: u32,
        ) -> Result<UniquePtr<MsmBases>>;
        /// Copies precompute_msm_bases makes of `len` bases for `bits`-bit
        /// windows (0: its own choice); bits outside 4..=24 an error.
        fn shifted_copy_count(len: usize, bits: u32) -> Result<u32>;
        /// The window bits of those copies: `bits`, or the choice for `len`
        /// bases where it is 0; an error as for shifted_copy_count.
        fn shifted_copy_bits(len: usize, bits: u32) -> Result<u32>;
        /// Points from which an MSM goes through shifted copies.
        fn msm_copies_from() -> usize;
        /// An error where `*tuning` holds a value out of its range.
        unsafe fn check_msm_tuning(tuning: *const g16_msm_tuning) -> Result<()>;
        /// Per-window sums (Jacobian) of Σ scalars[i] bases[first + i] for
        /// i < n, run as `*tuning` says; returns the bits between the sums
        /// and fills `*report`.
        #[allow(clippy::too_many_arguments)]
        unsafe fn msm_windows(
            device: &GpuDevice,
            bases: &MsmBases,
            first: usize,
            scalars: *const u64,
            n: usize,
            out: *mut u64,
            out_words: usize,
            tuning: *const g16_msm_tuning,
            report: *mut g16_msm_report,
        ) -> Result<u32>;
        /// msm_windows of a sparse subset: Σ scalars[i] bases[indices[i]]
        /// for i < n (both host arrays of n).
        #[allow(clippy::too_many_arguments)]
        unsafe fn msm_windows_indexed(
            device: &GpuDevice,
            bases: &MsmBases,
            scalars: *const u64,
            indices: *const u32,
            n: usize,
            out: *mut u64,
            out_words: usize,
            tuning: *const g16_msm_tuning,
            report: *mut g16_msm_report,
        ) -> Result<u32>;
        /// msm_windows over the `n` scalars already on the device from
        /// `scalar_first`, with the bases from `first`.
        #[allow(clippy::too_many_arguments)]
        unsafe fn msm_windows_resident(
            device: &GpuDevice,
            bases: &MsmBases,
            first: usize,
            scalars: &DeviceScalars,
            scalar_first: usize,
            n: usize,
            out: *mut u64,
            out_words: usize,
            tuning: *const g16_msm_tuning,
            report: *mut g16_msm_report,
        ) -> Result<u32>;
        /// Σ of the bases[first + i], i < n, whose bitmap bit i is set
        /// (Jacobian).
        #[allow(clippy::too_many_arguments)]
        unsafe fn batch_add(
            device: &GpuDevice,
            bases: &MsmBases,
            first: usize,
            bitmap: *const u64,
            n: usize,
            out: *mut u64,
            out_words: usize,
            device_ms: *mut f32,
        ) -> Result<()>;
        /// Holds `bytes` of device memory until dropped.
        fn reserve_device_memory(
            device: &GpuDevice,
            bytes: u64,
        ) -> Result<UniquePtr<DeviceReservation>>;

        /// msm_windows on the CPU alone (no GPU), `window_bits` 0 = auto;
        /// `copy_bits` > 0 goes through `copy_count` shifted copies made
        /// for it (0: one per window).
        #[allow(clippy::too_many_arguments)]
        unsafe fn host_msm_windows(
            g2: bool,
            bases: *const u64,
            scalars: *const u64,
            n: usize,
            window_bits: u32,
            copy_bits: u32,
            copy_count: u32,
            out: *mut u64,
            out_words: usize,
        ) -> Result<u32>;
        /// batch_add on the CPU alone.
        unsafe fn host_batch_add(
            g2: bool,
            bases: *const u64,
            bitmap: *const u64,
            n: usize,
            out: *mut u64,
            out_words: usize,
        ) -> Result<()>;
        /// One field operation on the CPU (see msm.h for the op codes).
        unsafe fn host_field_op(op: u32, a: *const u64, b: *const u64, out: *mut u64)
            -> Result<()>;
    }

    // ---- NTT over Fr and the H polynomial (issue 8) ----
    // include/groth16_gpu/ntt.h and device_scalars.h, cuda/ntt/,
    // cuda/device_scalars.cu; safe wrappers in src/backend/cuda/ntt.rs and
    // device_scalars.rs, which check lengths and supply the roots.
    unsafe extern "C++" {
        include!("groth16_gpu/ntt.h");
        include!("groth16_gpu/device_scalars.h");

        /// Scalars resident in one device's memory, freed there on drop.
        type DeviceScalars;

        /// Number of scalars.
        #[cxx_name = "len"]
        fn scalars_len(self: &DeviceScalars) -> usize;
        /// The CUDA ordinal of the device that holds them.
        #[cxx_name = "ordinal"]
        fn scalars_ordinal(self: &DeviceScalars) -> usize;

        /// Page-locked host memory for scalars, freed on drop.
        type PinnedScalars;
        /// Number of scalars it holds.
        #[cxx_name = "len"]
        fn pinned_len(self: &PinnedScalars) -> usize;
        /// The memory, 4 words per scalar.
        #[cxx_name = "data"]
        fn pinned_data(self: &PinnedScalars) -> *mut u64;
        /// Allocates pinned host memory for `len` scalars.
        fn alloc_pinned_scalars(len: usize) -> Result<UniquePtr<PinnedScalars>>;

        /// Ordinary host memory page-locked in place until dropped.
        type HostRegistration;
        /// Page-locks the `n` scalars at `words`, which must stay allocated
        /// until the registration drops.
        unsafe fn register_host_scalars(
            device: &GpuDevice,
            words: *const u64,
            n: usize,
        ) -> Result<UniquePtr<HostRegistration>>;

        /// A stream with two slot events, for uploads in pieces.
        type UploadStream;
        /// The CUDA ordinal of its device.
        #[cxx_name = "ordinal"]
        fn upload_stream_ordinal(self: &UploadStream) -> usize;
        /// A new upload stream on the device.
        fn new_upload_stream(device: &GpuDevice) -> Result<UniquePtr<UploadStream>>;
        /// Queues `n` scalars from pinned `words` into `to` at `offset`;
        /// `words` must stay untouched until `wait_upload_slot(slot)`.
        unsafe fn queue_upload(
            device: &GpuDevice,
            stream: &UploadStream,
            slot: usize,
            words: *const u64,
            n: usize,
            to: &DeviceScalars,
            offset: usize,
        ) -> Result<()>;
        /// Waits until the slot's last copy has read its host memory.
        fn wait_upload_slot(stream: &UploadStream, slot: usize) -> Result<()>;
        /// Waits until every queued copy has landed.
        fn finish_uploads(stream: &UploadStream) -> Result<()>;
        /// Whether `words` lies in page-locked host memory.
        unsafe fn is_pinned(words: *const u64) -> bool;

        /// Copies `n` scalars into a new device buffer of `len` (zero-padded).
        unsafe fn upload_scalars(
            device: &GpuDevice,
            words: *const u64,
            n: usize,
            len: usize,
        ) -> Result<UniquePtr<DeviceScalars>>;
        /// Copies the first `n` scalars back.
        unsafe fn download_scalars(
            device: &GpuDevice,
            scalars: &DeviceScalars,
            out: *mut u64,
            n: usize,
        ) -> Result<()>;
        /// A proof's H polynomial in steps: twiddles and a stream on one
        /// device, waiting on drop for what it queued.
        type HPolynomial;
        /// The H polynomial's work over a domain of `m`; six constants.
        unsafe fn new_h_polynomial(
            device: &GpuDevice,
            m: usize,
            constants: *const u64,
        ) -> Result<UniquePtr<HPolynomial>>;
        /// Queues `values` from the domain to the coset.
        fn h_to_coset(device: &GpuDevice, h: &HPolynomial, values: &DeviceScalars) -> Result<()>;
        /// As `h_to_coset`, once the copies queued on `uploads` have landed.
        fn h_to_coset_after_uploads(
            device: &GpuDevice,
            h: &HPolynomial,
            uploads: &UploadStream,
            values: &DeviceScalars,
        ) -> Result<()>;
        /// (a b - c) / Z from a, b, c on the coset, into `a` as coefficients;
        /// waits for it.
        unsafe fn h_quotient(
            device: &GpuDevice,
            h: &HPolynomial,
            a: &DeviceScalars,
            b: &DeviceScalars,
            c: &DeviceScalars,
            device_ms: *mut f32,
        ) -> Result<()>;

        /// In place on `n` Scalars: optional pre-coset powers, the transform
        /// with root `omega`, optional scale and post-coset powers (null skips).
        #[allow(clippy::too_many_arguments)]
        unsafe fn ntt_fr(
            device: &GpuDevice,
            values: *mut u64,
            n: usize,
            omega: *const u64,
            pre_coset: *const u64,
            scale: *const u64,
            post_coset: *const u64,
            device_ms: *mut f32,
        ) -> Result<()>;
    }

    // ---- Fixed-base scalar multiplication, for key generation (issue 46) ----
    // include/groth16_gpu/fixed_base.h, cuda/keygen/; safe wrapper in
    // src/backend/cuda/fixed_base.rs, which checks the lengths.
    unsafe extern "C++" {
        include!("groth16_gpu/fixed_base.h");

        /// Windows of `bits` bits that cover a 255-bit scalar.
        fn fixed_base_windows(bits: u32) -> usize;
        /// out[i] = scalars[i] · base through `table` (window multiples of
        /// the base, affine), `n` scalars, passes of `batch` (0: by memory),
        /// the points back through `staging_bytes` of page-locked
        /// `staging` (null: straight into `out`).
        #[allow(clippy::too_many_arguments)]
        unsafe fn fixed_base_mul(
            device: &GpuDevice,
            g2: bool,
            table: *const u64,
            table_points: usize,
            bits: u32,
            scalars: *const u64,
            n: usize,
            out: *mut u64,
            batch: usize,
            staging: *mut u64,
            staging_bytes: usize,
        ) -> Result<()>;
    }

    unsafe extern "C++" {
        include!("groth16_gpu/device_shape.h");

        /// A recorded shape's A, B, C resident on one device.
        type DeviceShape;
        /// The CUDA ordinal of the device that holds it.
        #[cxx_name = "ordinal"]
        fn shape_ordinal(self: &DeviceShape) -> usize;
        /// Device bytes it holds.
        #[cxx_name = "bytes"]
        fn shape_bytes(self: &DeviceShape) -> usize;
        /// An empty shape on the device.
        fn new_device_shape(
            device: &GpuDevice,
            rows: usize,
            inputs: usize,
            aux: usize,
        ) -> Result<UniquePtr<DeviceShape>>;
        /// Checks and uploads matrix `which` (0 A, 1 B, 2 C).
        #[allow(clippy::too_many_arguments)]
        unsafe fn upload_shape_matrix(
            device: &GpuDevice,
            shape: Pin<&mut DeviceShape>,
            which: usize,
            row_starts: *const u64,
            columns: *const u32,
            coefficients: *const u32,
            entries: usize,
            constants: *const u64,
            constants_len: usize,
        ) -> Result<()>;
        /// Rows of A, B, C times the witness into a, b, c; the first row
        /// whose a·b differs from c, or the row count.
        fn evaluate_shape(
            device: &GpuDevice,
            shape: &DeviceShape,
            input: &DeviceScalars,
            aux: &DeviceScalars,
            a: &DeviceScalars,
            b: &DeviceScalars,
            c: &DeviceScalars,
        ) -> Result<usize>;
        /// The host reference of one matrix's rows times the witness,
        /// after the upload's checks of the matrix.
        #[allow(clippy::too_many_arguments)]
        unsafe fn reference_matrix_rows(
            row_starts: *const u64,
            rows: usize,
            columns: *const u32,
            coefficients: *const u32,
            entries: usize,
            constants: *const u64,
            constants_len: usize,
            witness: *const u64,
            inputs: usize,
            aux: usize,
            out: *mut u64,
        ) -> Result<()>;
        /// The host reference of the check: the first unsatisfied row, or
        /// the row count.
        unsafe fn reference_first_unsatisfied(
            a: *const u64,
            b: *const u64,
            c: *const u64,
            rows: usize,
        ) -> usize;
    }
}

// SAFETY: both are plain C structs of integers and bools (bindgen's layout
// of include/groth16_gpu/ffi_types.h, checked by its layout tests and by
// tests/gpu_bindgen.rs), trivially copyable and movable on the C++ side.
unsafe impl cxx::ExternType for crate::ffi_types::g16_msm_tuning {
    type Id = cxx::type_id!("g16_msm_tuning");
    type Kind = cxx::kind::Trivial;
}

// SAFETY: as above.
unsafe impl cxx::ExternType for crate::ffi_types::g16_msm_report {
    type Id = cxx::type_id!("g16_msm_report");
    type Kind = cxx::kind::Trivial;
}

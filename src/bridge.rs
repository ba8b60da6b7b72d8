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
        /// Compute capability, major part.
        fn compute_capability_major(self: &GpuDevice) -> u32;
        /// Compute capability, minor part.
        fn compute_capability_minor(self: &GpuDevice) -> u32;

        /// CUDA devices this process sees; 0 when the driver reports none.
        fn device_count() -> Result<usize>;
        /// Opens a device; an ordinal past the count is an error.
        fn open_device(ordinal: usize) -> Result<UniquePtr<GpuDevice>>;
        /// `launches` kernel launches that write the ordinal and read it back.
        fn write_ordinal_roundtrip(device: &GpuDevice, launches: u32) -> Result<()>;
        /// The same roundtrip from `threads` threads started on the C++ side.
        fn threaded_ordinal_check(device: &GpuDevice, threads: u32, launches: u32) -> Result<()>;
    }
}

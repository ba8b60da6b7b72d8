//! CUDA devices: enumeration, properties, and exclusive access for launches.
//!
//! A [`Device`] is one CUDA device named by its ordinal. Work is launched only
//! through a [`DeviceGuard`], which [`DeviceMutex::lock`] hands out: one lock
//! per device, so threads serialize per device and devices run in parallel.
//!
//! Every call into the C++ side selects the device by its ordinal
//! (`cudaSetDevice`) first, in whichever thread it runs. Nothing here reads
//! or writes `CUDA_VISIBLE_DEVICES`; the one process-wide list is that of
//! the locks, one per device ([`DeviceMutex::all`]).
//!
//! ```no_run
//! use groth16_gpu::device::DeviceMutex;
//! # fn main() -> Result<(), groth16_gpu::device::GpuError> {
//! for device in DeviceMutex::all()? {
//!     println!("{:?}", device.properties());
//! }
//! let guard = DeviceMutex::get(0)?.lock(); // work launched with it runs on GPU 0
//! println!("{} bytes free", guard.device().free_memory()?);
//! # Ok(()) }
//! ```

use crate::bridge::ffi;
use crate::urgent_lock::{UrgentFirstGuard, UrgentFirstMutex};

/// A failure of the GPU layer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GpuError {
    /// A CUDA runtime call failed.
    #[error("CUDA call `{call}` failed with {message}")]
    Cuda {
        /// The call as written in the C++ source, e.g. `cudaSetDevice(ordinal)`.
        call: String,
        /// CUDA's error name and description, and where the call is.
        message: String,
    },
    /// The C++ side failed outside a CUDA call (a self-check, a thread, memory).
    #[error("GPU code failed: {0}")]
    Native(String),
    /// The driver reports no CUDA device.
    #[error("no CUDA device")]
    NoDevice,
    /// Work started on one device was handed to another device's guard.
    #[error("work of device {expected} was given device {got}'s guard")]
    WrongDevice {
        /// The device that holds the work.
        expected: usize,
        /// The device whose guard was given.
        got: usize,
    },
    /// A request that cannot fit in the device's free memory, refused
    /// before anything was allocated.
    #[error("out of device memory: {what} needs {needed} bytes, device {ordinal} has {free} free")]
    OutOfMemory {
        /// What the memory was for.
        what: String,
        /// Bytes needed.
        needed: u64,
        /// Bytes free when asked.
        free: u64,
        /// The device.
        ordinal: usize,
    },
    /// An ordinal at or past the number of devices.
    #[error("device ordinal {ordinal} is out of range: {count} CUDA devices")]
    InvalidOrdinal {
        /// The ordinal asked for.
        ordinal: usize,
        /// The devices there are.
        count: usize,
    },
}

impl GpuError {
    /// Whether the device ran out of memory: a request refused before
    /// allocating, or an allocation (by us or inside CUDA, e.g. creating a
    /// stream) that failed. The device stays usable either way.
    pub fn is_out_of_memory(&self) -> bool {
        match self {
            GpuError::OutOfMemory { .. } => true,
            GpuError::Cuda { message, .. } => message.starts_with("cudaErrorMemoryAllocation"),
            GpuError::Native(message) => message.contains("out of device memory"),
            _ => false,
        }
    }
}

impl From<cxx::Exception> for GpuError {
    fn from(exception: cxx::Exception) -> Self {
        parse_native_error(exception.what())
    }
}

/// Splits the message `cuda_check.h` builds,
/// "CUDA call `<call>` failed with <message>", into its parts; any other
/// exception text becomes [`GpuError::Native`].
fn parse_native_error(what: &str) -> GpuError {
    what.strip_prefix("CUDA call `")
        .and_then(|rest| rest.split_once("` failed with "))
        .map(|(call, message)| GpuError::Cuda {
            call: call.to_owned(),
            message: message.to_owned(),
        })
        .unwrap_or_else(|| GpuError::Native(what.to_owned()))
}

/// The fixed properties of a device, read when it is opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceProperties {
    /// The CUDA ordinal.
    pub ordinal: usize,
    /// The device's name, e.g. "NVIDIA H200".
    pub name: String,
    /// Streaming multiprocessors.
    pub sm_count: u32,
    /// Global memory in bytes.
    pub total_memory: u64,
    /// Compute capability as (major, minor), e.g. (9, 0).
    pub compute_capability: (u32, u32),
}

/// Owns the C++ handle of one device.
struct DeviceHandle(cxx::UniquePtr<ffi::GpuDevice>);

// SAFETY: the C++ `GpuDevice` holds only plain data (an int ordinal, a
// std::string, integers) and no CUDA context, stream or allocation, and every
// C++ entry point calls cudaSetDevice(ordinal) before any other CUDA call in
// the thread it runs in. So the handle may move to, and be dropped on, any
// thread. It is not `Sync`: shared use goes through `DeviceMutex`.
unsafe impl Send for DeviceHandle {}

impl DeviceHandle {
    fn get(&self) -> &ffi::GpuDevice {
        // `open_device` either returns a handle or throws, never null.
        self.0.as_ref().expect("open_device never returns null")
    }
}

/// One CUDA device: its properties and its handle. Launching work needs a
/// [`DeviceGuard`]: wrap the device in a [`DeviceMutex`] and lock it.
pub struct Device {
    properties: DeviceProperties,
    handle: DeviceHandle,
}

impl Device {
    /// The number of CUDA devices this process sees (0 when there are none).
    pub fn count() -> Result<usize, GpuError> {
        Ok(ffi::device_count()?)
    }

    /// Opens the device with this ordinal.
    pub fn open(ordinal: usize) -> Result<Device, GpuError> {
        let count = Device::count()?;
        if count == 0 {
            return Err(GpuError::NoDevice);
        }
        if ordinal >= count {
            return Err(GpuError::InvalidOrdinal { ordinal, count });
        }
        let handle = DeviceHandle(ffi::open_device(ordinal)?);
        let device = handle.get();
        let properties = DeviceProperties {
            ordinal: device.ordinal(),
            name: device.name().to_string_lossy().into_owned(),
            sm_count: device.sm_count(),
            total_memory: device.total_memory(),
            compute_capability: (
                device.compute_capability_major(),
                device.compute_capability_minor(),
            ),
        };
        Ok(Device { properties, handle })
    }

    /// A second handle to this device (no CUDA call): lets a worker thread
    /// launch on the device its caller named.
    pub(crate) fn duplicate(&self) -> Result<Device, GpuError> {
        Ok(Device {
            properties: self.properties.clone(),
            handle: DeviceHandle(ffi::duplicate_device(self.handle.get())?),
        })
    }

    /// Opens every device, in ordinal order.
    pub fn all() -> Result<Vec<Device>, GpuError> {
        (0..Device::count()?).map(Device::open).collect()
    }

    /// The properties read when the device was opened.
    pub fn properties(&self) -> &DeviceProperties {
        &self.properties
    }

    /// The CUDA ordinal.
    pub fn ordinal(&self) -> usize {
        self.properties.ordinal
    }

    /// The device's name.
    pub fn name(&self) -> &str {
        &self.properties.name
    }

    /// Streaming multiprocessors.
    pub fn sm_count(&self) -> u32 {
        self.properties.sm_count
    }

    /// Global memory in bytes.
    pub fn total_memory(&self) -> u64 {
        self.properties.total_memory
    }

    /// Compute capability as (major, minor).
    pub fn compute_capability(&self) -> (u32, u32) {
        self.properties.compute_capability
    }

    /// Free global memory in bytes, queried now.
    pub fn free_memory(&self) -> Result<u64, GpuError> {
        Ok(self.handle.get().free_memory()?)
    }

    /// Whether threads waiting on this device sleep rather than spin. Opening
    /// a device asks for sleeping waits (cudaDeviceScheduleBlockingSync), so
    /// a proof's waiting lanes leave the cores to synthesis.
    pub fn waits_by_blocking(&self) -> Result<bool, GpuError> {
        Ok(self.handle.get().waits_by_blocking()?)
    }
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device")
            .field("properties", &self.properties)
            .finish()
    }
}

/// One device behind its own lock: the only way to launch work on it.
///
/// `Sync` through the mutex (a [`Device`] is `Send`), so one `DeviceMutex`
/// per device can be shared by all threads.
pub struct DeviceMutex {
    properties: DeviceProperties,
    device: UrgentFirstMutex<Device>,
}

impl DeviceMutex {
    /// Puts a device behind its lock. Private: [`DeviceMutex::all`] makes
    /// the process's one lock per device, and no other can exist.
    fn wrap(device: Device) -> DeviceMutex {
        DeviceMutex {
            properties: device.properties().clone(),
            device: UrgentFirstMutex::new(device),
        }
    }

    /// Every device behind its one lock, in ordinal order: the same set for
    /// every caller in this process, opened on first use (an empty slice
    /// when there is no device). Two callers that lock the same device
    /// always exclude each other.
    ///
    /// ```no_run
    /// use groth16_gpu::device::DeviceMutex;
    /// # fn run() -> Result<(), groth16_gpu::device::GpuError> {
    /// for device in DeviceMutex::all()? {
    ///     let guard = device.lock();
    ///     println!("{}: {} bytes free", guard.device().name(), guard.device().free_memory()?);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn all() -> Result<&'static [DeviceMutex], GpuError> {
        static ALL: std::sync::OnceLock<Vec<DeviceMutex>> = std::sync::OnceLock::new();
        if let Some(devices) = ALL.get() {
            return Ok(devices);
        }
        let devices = match Device::all() {
            Ok(devices) => devices.into_iter().map(DeviceMutex::wrap).collect(),
            Err(GpuError::NoDevice) => Vec::new(),
            Err(error) => return Err(error),
        };
        // A thread that lost the race drops its handles; every caller gets
        // the first set stored.
        Ok(ALL.get_or_init(|| devices))
    }

    /// The lock of the device with this ordinal (one of [`DeviceMutex::all`]).
    pub fn get(ordinal: usize) -> Result<&'static DeviceMutex, GpuError> {
        let devices = DeviceMutex::all()?;
        match devices.get(ordinal) {
            Some(device) => Ok(device),
            None if devices.is_empty() => Err(GpuError::NoDevice),
            None => Err(GpuError::InvalidOrdinal {
                ordinal,
                count: devices.len(),
            }),
        }
    }

    /// The device's properties, readable without locking.
    pub fn properties(&self) -> &DeviceProperties {
        &self.properties
    }

    /// Whether someone holds the device now (for monitoring: it may change
    /// at once).
    pub fn is_locked(&self) -> bool {
        self.device.is_locked()
    }

    /// Exclusive use of the device if nobody holds it now and no
    /// [`lock_urgent`](Self::lock_urgent) caller waits for it.
    pub fn try_lock(&self) -> Option<DeviceGuard<'_>> {
        self.device.try_lock().map(|device| DeviceGuard {
            access: Access::Locked(device),
        })
    }

    /// Waits for exclusive use of the device, behind any
    /// [`lock_urgent`](Self::lock_urgent) callers.
    pub fn lock(&self) -> DeviceGuard<'_> {
        DeviceGuard {
            access: Access::Locked(self.device.lock()),
        }
    }

    /// Waits for exclusive use of the device ahead of every [`lock`](Self::lock)
    /// caller: for work with a deadline (a WinningPoSt proof). A holder
    /// doing long work hands the device over between its pieces
    /// ([`DeviceGuard::yield_to_urgent`]); nothing is preempted.
    pub fn lock_urgent(&self) -> DeviceGuard<'_> {
        DeviceGuard {
            access: Access::Locked(self.device.lock_urgent()),
        }
    }
}

impl std::fmt::Debug for DeviceMutex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceMutex")
            .field("properties", &self.properties)
            .finish()
    }
}

/// Exclusive use of one device while it lives; every launch goes through it.
pub struct DeviceGuard<'a> {
    access: Access<'a>,
}

/// How a guard holds its device.
enum Access<'a> {
    /// The device's one lock, held.
    Locked(UrgentFirstGuard<'a, Device>),
    /// A second handle to a device whose lock a caller up the stack holds
    /// for the whole of this guard's life (see [`DeviceGuard::lane`]).
    Lane(&'a Device),
}

impl<'a> DeviceGuard<'a> {
    /// A guard for a worker thread on `device`, a handle duplicated from a
    /// guard that the caller holds until the worker is done: the backend
    /// launches through guards, and the device's lock is already taken.
    /// Crate-private so that outside the crate the lock is the only way in.
    pub(crate) fn lane(device: &'a Device) -> DeviceGuard<'a> {
        DeviceGuard {
            access: Access::Lane(device),
        }
    }
}

impl DeviceGuard<'_> {
    /// The locked device.
    pub fn device(&self) -> &Device {
        match &self.access {
            Access::Locked(device) => device,
            Access::Lane(device) => device,
        }
    }

    /// Whether a [`DeviceMutex::lock_urgent`] caller waits for this device:
    /// long work should finish what it has in flight and
    /// [`yield_to_urgent`](Self::yield_to_urgent).
    pub fn urgent_waiting(&self) -> bool {
        match &self.access {
            Access::Locked(device) => device.urgent_waiting(),
            Access::Lane(_) => false,
        }
    }

    /// Lets the urgent callers waiting now use the device first, and takes
    /// it back once they are done (at once when none waits). Work in flight
    /// on this guard must be finished before: the urgent caller has the
    /// device to itself.
    pub fn yield_to_urgent(&mut self) {
        if let Access::Locked(device) = &mut self.access {
            device.yield_to_urgent();
        }
    }

    /// The C++ handle, for the CUDA backend's launches (src/backend/cuda).
    pub(crate) fn ffi_device(&self) -> &ffi::GpuDevice {
        self.device().handle.get()
    }

    /// `launches` times: a kernel writes the device's ordinal into device
    /// memory and the host reads it back; checks the value, the current
    /// device and the allocation's device each time.
    pub fn write_ordinal_roundtrip(&mut self, launches: u32) -> Result<(), GpuError> {
        Ok(ffi::write_ordinal_roundtrip(
            self.device().handle.get(),
            launches,
        )?)
    }

    /// The same roundtrip from `threads` threads started on the C++ side,
    /// each selecting the device itself; the first failure is returned.
    pub fn threaded_ordinal_check(&mut self, threads: u32, launches: u32) -> Result<(), GpuError> {
        Ok(ffi::threaded_ordinal_check(
            self.device().handle.get(),
            threads,
            launches,
        )?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_failure_text_splits_into_call_and_message() {
        let error = parse_native_error(
            "CUDA call `cudaSetDevice(ordinal_)` failed with cudaErrorInvalidDevice: \
             invalid device ordinal (cuda/device.cu:20)",
        );
        assert_eq!(
            error,
            GpuError::Cuda {
                call: "cudaSetDevice(ordinal_)".into(),
                message: "cudaErrorInvalidDevice: invalid device ordinal (cuda/device.cu:20)"
                    .into(),
            }
        );
    }

    #[test]
    fn other_exception_text_is_native() {
        let error = parse_native_error("current device: expected 1, got 0");
        assert_eq!(
            error,
            GpuError::Native("current device: expected 1, got 0".into())
        );
    }

    #[test]
    fn device_mutex_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        fn assert_send<T: Send>() {}
        assert_send_sync::<DeviceMutex>();
        assert_send::<Device>();
    }
}

//! The GPU behind the bellperson-shaped functions: a free device of this
//! process's shared set, with the key uploaded for the call; none (the CPU
//! path) when there is no device or the key does not fit.

use blstrs::Scalar;

use super::{prove_on_device, GpuProvingKey};
use crate::device::{DeviceGuard, DeviceMutex};
use crate::groth16::Proof;
use crate::params::ProvingKey;
use crate::synthesis::Assignment;
use crate::Error;

/// One device held, with the key resident on it.
pub(crate) struct GpuSession {
    guard: DeviceGuard<'static>,
    key: GpuProvingKey,
}

impl GpuSession {
    /// A device and the key on it; `None` when there is no device or the key
    /// cannot fit one (logged), so the caller proves on the CPU.
    pub fn open(key: &ProvingKey) -> Result<Option<Self>, Error> {
        let devices = match DeviceMutex::shared() {
            Ok(devices) if !devices.is_empty() => devices,
            Ok(_) => return Ok(None),
            Err(error) => {
                log::warn!("no usable CUDA device ({error}); proving on the CPU");
                return Ok(None);
            }
        };
        let guard = lock_a_device(devices);
        match GpuProvingKey::upload(&guard, key) {
            Ok(key) => Ok(Some(Self { guard, key })),
            Err(Error::Gpu(error)) if error.is_out_of_memory() => {
                log::warn!("{error}; proving on the CPU");
                Ok(None)
            }
            Err(error) => Err(error),
        }
    }

    /// Proves on the session's device.
    pub fn prove(&self, assignment: &Assignment, r: Scalar, s: Scalar) -> Result<Proof, Error> {
        prove_on_device(&self.guard, &self.key, assignment, r, s).map(|(proof, _)| proof)
    }
}

/// The first device nobody holds, else waits for one, taking turns so that
/// concurrent callers spread over the devices.
fn lock_a_device(devices: &'static [DeviceMutex]) -> DeviceGuard<'static> {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    if let Some(guard) = devices.iter().find_map(DeviceMutex::try_lock) {
        return guard;
    }
    let turn = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    devices[turn % devices.len()].lock()
}

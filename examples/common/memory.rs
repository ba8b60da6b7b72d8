//! What the examples share about memory: the process's peak resident
//! memory, and a device's peak memory in use, sampled.
#![allow(dead_code)]

/// The process's peak resident memory, where /proc says it (Linux).
pub fn peak_host_memory() -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    Some(line.trim_start_matches("VmHWM:").trim().to_string())
}

/// Polls a device's free memory from a thread of its own (a second handle,
/// no lock: the query launches nothing) and keeps the lowest value seen.
#[cfg(feature = "cuda")]
pub struct DeviceMemorySampler {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<u64>,
}

#[cfg(feature = "cuda")]
impl DeviceMemorySampler {
    pub fn start(ordinal: usize) -> Result<Self, groth16_gpu::device::GpuError> {
        use std::sync::atomic::Ordering;
        let device = groth16_gpu::device::Device::open(ordinal)?;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let total = device.total_memory();
            let mut lowest_free = total;
            while !flag.load(Ordering::Relaxed) {
                if let Ok(free) = device.free_memory() {
                    lowest_free = lowest_free.min(free);
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            total - lowest_free
        });
        Ok(Self { stop, thread })
    }

    /// Peak bytes in use while it ran.
    pub fn stop(self) -> u64 {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().unwrap_or(0)
    }
}

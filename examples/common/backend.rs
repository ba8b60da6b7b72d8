//! Where an example's proofs run: `--backend auto|cpu|gpu` and `--device N`
//! resolved against the process's devices (shared by the examples).

/// Where the proofs run.
pub enum Backend {
    Cpu,
    #[cfg(feature = "cuda")]
    Gpu(&'static groth16_gpu::device::DeviceMutex),
}

/// `backend` "auto" takes device `device` when there is one, else the CPU.
pub fn choose_backend(backend: &str, device: usize) -> Result<Backend, Box<dyn std::error::Error>> {
    #[cfg(not(feature = "cuda"))]
    let _ = device; // only a GPU build has devices to choose from
    let cpu_note = format!("CPU ({} threads)", rayon::current_num_threads());
    match backend {
        "cpu" => {
            println!("backend: {cpu_note}");
            Ok(Backend::Cpu)
        }
        #[cfg(feature = "cuda")]
        "auto" | "gpu" => {
            let devices = match groth16_gpu::device::DeviceMutex::all() {
                Ok(devices) => devices,
                Err(e) if backend == "auto" => {
                    println!("backend: {cpu_note}; no usable GPU ({e})");
                    return Ok(Backend::Cpu);
                }
                Err(e) => return Err(e.into()),
            };
            match devices.get(device) {
                Some(device) => {
                    let p = device.properties();
                    println!(
                        "backend: GPU {} ({}, {} SMs, {} GiB)",
                        p.ordinal,
                        p.name,
                        p.sm_count,
                        p.total_memory >> 30
                    );
                    Ok(Backend::Gpu(device))
                }
                None if backend == "auto" && devices.is_empty() => {
                    println!("backend: {cpu_note}; no CUDA device");
                    Ok(Backend::Cpu)
                }
                None => {
                    Err(format!("no CUDA device {} ({} devices)", device, devices.len()).into())
                }
            }
        }
        #[cfg(not(feature = "cuda"))]
        "auto" => {
            println!("backend: {cpu_note}; built without feature `cuda`");
            Ok(Backend::Cpu)
        }
        #[cfg(not(feature = "cuda"))]
        "gpu" => Err("--backend gpu needs a build with --features cuda".into()),
        other => Err(format!("unknown backend {other}").into()),
    }
}

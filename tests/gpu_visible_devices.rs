//! Setting CUDA_VISIBLE_DEVICES inside a running process changes nothing:
//! handles name devices by ordinal and the C++ side never reads the variable
//! (the CUDA runtime reads it once, when it starts, which has happened by then).
//! Its own test binary, so no other test thread reads the environment while
//! this one writes it.
#![cfg(feature = "cuda")]

use groth16_gpu::device::{Device, DeviceMutex, DeviceProperties};

#[test]
fn setting_cuda_visible_devices_later_changes_nothing() {
    let count = match Device::count() {
        Ok(0) => return println!("skipped: no CUDA device (the driver reports none)"),
        Err(error) => return println!("skipped: no CUDA device ({error})"),
        Ok(count) => count,
    };
    let before: Vec<DeviceProperties> = DeviceMutex::all()
        .expect("open every device")
        .iter()
        .map(|device| device.properties().clone())
        .collect();

    // Hide every device but the last one, as a launcher might.
    std::env::set_var("CUDA_VISIBLE_DEVICES", (count - 1).to_string());

    assert_eq!(Device::count().expect("count after the change"), count);
    for expected in &before {
        let reopened = Device::open(expected.ordinal).expect("reopen");
        assert_eq!(reopened.properties(), expected);
        let device = DeviceMutex::get(expected.ordinal).expect("the device's lock");
        assert_eq!(device.properties(), expected);
        // Checks on the C++ side that the kernel ran on this ordinal.
        device
            .lock()
            .write_ordinal_roundtrip(100)
            .expect("roundtrip after the change");
        device
            .lock()
            .threaded_ordinal_check(2, 100)
            .expect("threaded check after the change");
    }
    std::env::remove_var("CUDA_VISIBLE_DEVICES");
    println!(
        "CUDA_VISIBLE_DEVICES={} set at run time: {count} devices, ordinals unchanged",
        count - 1
    );
}

//! The `.params` reader on arbitrary bytes: an error or a key, never a panic,
//! and never an allocation sized by a count the bytes cannot back.
#![no_main]

use groth16_gpu::params::CheckMode;
use groth16_gpu::ProvingKey;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let in_memory = ProvingKey::from_bytes(data, CheckMode::OnCurve);
    let streamed = ProvingKey::read(data, CheckMode::OnCurve);
    assert_eq!(in_memory.is_ok(), streamed.is_ok());
    if let Ok(key) = in_memory {
        // What decodes writes back to the same bytes.
        let mut out = Vec::new();
        key.write(&mut out).unwrap();
        assert_eq!(out, data);
    }
});

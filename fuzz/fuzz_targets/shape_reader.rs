//! The circuit-shape reader on arbitrary bytes: an error or a shape that
//! writes back to the same bytes, never a panic.
#![no_main]

use groth16_gpu::synthesis::CircuitShape;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(shape) = CircuitShape::from_bytes(data) {
        let mut out = Vec::new();
        shape.write(&mut out).unwrap();
        assert_eq!(out, data);
    }
});

//! The proof decoder on arbitrary bytes: an error or a proof that encodes
//! back to the same bytes, never a panic.
#![no_main]

use groth16_gpu::Proof;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(proof) = Proof::from_bytes(data) {
        assert_eq!(&proof.to_bytes()[..], data);
    }
    let _ = Proof::read(data);
});

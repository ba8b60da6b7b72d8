//! Bad input gets a clear error, never a panic or a wrong proof.

#[path = "common/circuits.rs"]
mod circuits;

use blstrs::{Fp, G1Affine, Scalar};
use circuits::*;
use ff::Field;
use groth16_gpu::params::{CheckMode, ParamsError};
use groth16_gpu::synthesis::CircuitShape;
use groth16_gpu::{create_proof, generate_random_parameters, Error, Proof, ProvingKey};
use group::prime::PrimeCurveAffine;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

fn small_key() -> (ProvingKey, Vec<u8>) {
    let mut rng = ChaCha20Rng::seed_from_u64(rand_core::OsRng.next_u64());
    let key = generate_random_parameters(
        ManyInputs {
            values: vec![None; 3],
        },
        &mut rng,
    )
    .unwrap();
    let mut bytes = Vec::new();
    key.write(&mut bytes).unwrap();
    (key, bytes)
}

/// Byte offsets of each section's count in the `.params` layout.
fn section_offsets(key: &ProvingKey) -> [(usize, &'static str); 5] {
    let vk_len = 3 * 96 + 3 * 192 + 4 + key.vk.ic.len() * 96;
    let h = vk_len;
    let l = h + 4 + key.h.len() * 96;
    let a = l + 4 + key.l.len() * 96;
    let b_g1 = a + 4 + key.a.len() * 96;
    let b_g2 = b_g1 + 4 + key.b_g1.len() * 96;
    [(h, "h"), (l, "l"), (a, "a"), (b_g1, "b_g1"), (b_g2, "b_g2")]
}

fn read_both(bytes: &[u8]) -> [Result<ProvingKey, ParamsError>; 2] {
    [
        ProvingKey::from_bytes(bytes, CheckMode::OnCurve),
        ProvingKey::read(bytes, CheckMode::OnCurve),
    ]
}

#[test]
fn every_truncation_is_an_error_naming_a_section() {
    let (key, bytes) = small_key();
    assert_eq!(
        ProvingKey::from_bytes(&bytes, CheckMode::Subgroup).unwrap(),
        key
    );
    for cut in (0..bytes.len()).step_by(13).chain([bytes.len() - 1]) {
        for result in read_both(&bytes[..cut]) {
            match result {
                Err(ParamsError::Truncated { section, .. }) => assert!(!section.is_empty()),
                other => panic!("cut at {cut}: expected truncation, got {other:?}"),
            }
        }
    }
}

#[test]
fn a_lying_count_fails_before_allocating() {
    let (key, bytes) = small_key();
    for (offset, name) in section_offsets(&key) {
        let mut bad = bytes.clone();
        bad[offset..offset + 4].copy_from_slice(&u32::MAX.to_be_bytes());
        for result in read_both(&bad) {
            match result {
                Err(ParamsError::Truncated { section, .. }) => assert_eq!(section, name),
                other => panic!("{name}: expected truncation, got {other:?}"),
            }
        }
        // A count one smaller leaves bytes over, or misreads the next section.
        let mut short = bytes.clone();
        let count = u32::from_be_bytes(short[offset..offset + 4].try_into().unwrap());
        short[offset..offset + 4].copy_from_slice(&(count - 1).to_be_bytes());
        assert!(
            ProvingKey::from_bytes(&short, CheckMode::OnCurve).is_err(),
            "{name}"
        );
    }
}

#[test]
fn trailing_bytes_are_refused() {
    let (_, mut bytes) = small_key();
    bytes.extend_from_slice(&[0u8; 5]);
    for result in read_both(&bytes) {
        assert!(
            matches!(result, Err(ParamsError::TrailingBytes(5))),
            "{result:?}"
        );
    }
}

#[test]
fn points_off_the_curve_are_named() {
    let (key, bytes) = small_key();
    let [_, (l_offset, _), ..] = section_offsets(&key);
    let mut bad = bytes.clone();
    // Second l point, a byte inside its y coordinate.
    bad[l_offset + 4 + 96 + 80] ^= 0x01;
    for result in read_both(&bad) {
        match result {
            Err(ParamsError::InvalidPoint { section, index, .. }) => {
                assert_eq!((section, index), ("l", 1))
            }
            other => panic!("expected an invalid point, got {other:?}"),
        }
    }
    // The identity is refused, as bellperson does.
    let mut identity = bytes;
    let encoded = G1Affine::identity().to_uncompressed();
    identity[l_offset + 4..l_offset + 4 + 96].copy_from_slice(&encoded);
    assert!(matches!(
        ProvingKey::from_bytes(&identity, CheckMode::OnCurve),
        Err(ParamsError::InvalidPoint {
            section: "l",
            index: 0,
            ..
        })
    ));
}

/// A point on the curve but outside the prime-order subgroup.
fn point_outside_subgroup() -> G1Affine {
    let mut x = Fp::ONE;
    loop {
        let rhs = x.square() * x + Fp::from(4u64);
        if let Some(y) = Option::<Fp>::from(rhs.sqrt()) {
            let p = G1Affine::from_raw_unchecked(x, y, false);
            if bool::from(p.is_on_curve()) && !bool::from(p.is_torsion_free()) {
                return p;
            }
        }
        x += Fp::ONE;
    }
}

#[test]
fn subgroup_check_only_in_checked_mode() {
    let (key, bytes) = small_key();
    let [(h_offset, _), ..] = section_offsets(&key);
    let mut bad = bytes;
    bad[h_offset + 4..h_offset + 4 + 96]
        .copy_from_slice(&point_outside_subgroup().to_uncompressed());
    assert!(ProvingKey::from_bytes(&bad, CheckMode::OnCurve).is_ok());
    assert!(matches!(
        ProvingKey::from_bytes(&bad, CheckMode::Subgroup),
        Err(ParamsError::InvalidPoint {
            section: "h",
            index: 0,
            ..
        })
    ));
}

#[test]
fn file_round_trip() {
    let (key, bytes) = small_key();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("key.params");
    key.write_file(&path).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    assert_eq!(
        ProvingKey::read_file(&path, CheckMode::Subgroup).unwrap(),
        key
    );
    assert!(matches!(
        ProvingKey::read_file(dir.path().join("missing"), CheckMode::OnCurve),
        Err(ParamsError::Io(_))
    ));
}

#[test]
fn a_circuit_larger_than_its_key_is_refused() {
    let mut rng = ChaCha20Rng::seed_from_u64(rand_core::OsRng.next_u64());
    let key = generate_random_parameters(
        FieldHeavy {
            steps: 100,
            start: None,
        },
        &mut rng,
    )
    .unwrap();
    let bigger = FieldHeavy {
        steps: 300,
        start: Some(Scalar::ONE),
    };
    let err = create_proof(bigger, &key, Scalar::ONE, Scalar::ONE).unwrap_err();
    assert!(matches!(err, Error::KeyMismatch { .. }), "{err}");
    // Same size, other inputs: the ic query does not fit.
    let other = ManyInputs {
        values: random_scalars(2, &mut rng),
    };
    assert!(matches!(
        create_proof(other, &key, Scalar::ONE, Scalar::ONE),
        Err(Error::KeyMismatch { .. })
    ));
}

#[test]
fn synthesis_errors_come_back() {
    let mut rng = ChaCha20Rng::seed_from_u64(rand_core::OsRng.next_u64());
    let key = generate_random_parameters(
        FieldHeavy {
            steps: 10,
            start: None,
        },
        &mut rng,
    )
    .unwrap();
    let err = create_proof(FailingCircuit, &key, Scalar::ONE, Scalar::ONE).unwrap_err();
    assert!(matches!(err, Error::Synthesis(_)), "{err}");
    assert!(err.to_string().contains("division by zero"));
    let missing = create_proof(
        FieldHeavy {
            steps: 10,
            start: None,
        },
        &key,
        Scalar::ONE,
        Scalar::ONE,
    );
    assert!(matches!(missing, Err(Error::Synthesis(_))));
}

#[test]
fn a_recorded_shape_refuses_another_circuit() {
    let shape = CircuitShape::record(FieldHeavy {
        steps: 10,
        start: None,
    })
    .unwrap();
    let err = shape
        .synthesize(FieldHeavy {
            steps: 11,
            start: Some(Scalar::ONE),
        })
        .unwrap_err();
    assert!(matches!(err, Error::ShapeMismatch(_)), "{err}");
}

#[test]
fn malformed_proofs_are_refused() {
    let mut rng = ChaCha20Rng::seed_from_u64(rand_core::OsRng.next_u64());
    assert!(matches!(
        Proof::from_bytes(&[0u8; 10]),
        Err(Error::MalformedProof(_))
    ));
    assert!(matches!(
        Proof::from_bytes(&[0u8; 192]),
        Err(Error::MalformedProof(_))
    ));
    let mut junk = [0u8; 192];
    for _ in 0..50 {
        rng.fill_bytes(&mut junk);
        assert!(Proof::from_bytes(&junk).is_err());
    }
}

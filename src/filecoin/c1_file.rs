//! Commit phase 1 outputs as files: the JSON that filecoin-ffi writes
//! (filecoin-proofs-api's `SealCommitPhase1Output`: the registered proof,
//! the vanilla proofs tagged by sector shape, the commitments), bare or
//! inside lotus-bench's wrapper (`{"SectorNum", "Phase1Out": base64,
//! "SectorSize"}`), and C2 over one for whatever sector size it holds.

use std::path::Path;

use filecoin_proofs::{
    PoRepConfig, ProverId, SealCommitOutput, SealCommitPhase1Output, SectorShape2KiB,
    SectorShape32GiB, SectorShape512MiB, SectorShape64GiB, SectorShape8MiB,
};
use serde_json::Value;
use storage_proofs_core::api_version::{ApiFeature, ApiVersion};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::sector::SectorId;

use super::{seal_commit_phase2, FilecoinError};
use crate::pool::ProverPool;
use crate::Error;

/// Sector sizes of registered seal proofs, in the order of their ids.
const SIZES: [(&str, u64); 5] = [
    ("2KiB", 2 << 10),
    ("8MiB", 8 << 20),
    ("512MiB", 512 << 20),
    ("32GiB", 32 << 30),
    ("64GiB", 64 << 30),
];

/// Versions of registered seal proofs, in the order of their ids: the
/// name's suffix, the API version and features.
const VERSIONS: [(&str, ApiVersion, Option<ApiFeature>); 4] = [
    ("V1", ApiVersion::V1_0_0, None),
    ("V1_1", ApiVersion::V1_1_0, None),
    (
        "V1_1_Feat_SyntheticPoRep",
        ApiVersion::V1_2_0,
        Some(ApiFeature::SyntheticPoRep),
    ),
    (
        "V1_2_Feat_NonInteractivePoRep",
        ApiVersion::V1_2_0,
        Some(ApiFeature::NonInteractivePoRep),
    ),
];

/// A registered seal proof (filecoin-proofs-api's `RegisteredSealProof`),
/// such as `StackedDrg32GiBV1_1`: a sector size and an API version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegisteredSealProof {
    /// Its name, as in the JSON.
    pub name: String,
    /// Sector size in bytes.
    pub sector_size: u64,
    /// Its number (filecoin-ffi's and the chain's).
    pub id: u64,
}

impl RegisteredSealProof {
    /// The proof of that name; an error names one that is not known.
    pub fn from_name(name: &str) -> Result<Self, Error> {
        for (v, (suffix, _, _)) in VERSIONS.iter().enumerate() {
            for (s, (size_name, size)) in SIZES.iter().enumerate() {
                if name == format!("StackedDrg{size_name}{suffix}") {
                    return Ok(Self {
                        name: name.to_string(),
                        sector_size: *size,
                        id: (v * SIZES.len() + s) as u64,
                    });
                }
            }
        }
        Err(malformed(format!("unknown registered seal proof {name:?}")))
    }

    /// The proof of `sector_size` at `version` (0: V1, 1: V1_1, 2: V1_1
    /// with synthetic PoRep, 3: V1_2 with NI-PoRep).
    pub fn of(sector_size: u64, version: usize) -> Result<Self, Error> {
        let (size_name, _) = SIZES
            .iter()
            .find(|(_, size)| *size == sector_size)
            .ok_or_else(|| {
                malformed(format!(
                    "no registered seal proof for {sector_size}-byte sectors"
                ))
            })?;
        let (suffix, _, _) = VERSIONS
            .get(version)
            .ok_or_else(|| malformed(format!("no seal proof version {version}")))?;
        Self::from_name(&format!("StackedDrg{size_name}{suffix}"))
    }

    /// filecoin-proofs' configuration for this proof: its sector size,
    /// partitions, API version and features, and the PoRep id that
    /// filecoin-proofs-api derives (the proof's number, little-endian,
    /// then a zero nonce).
    pub fn porep_config(&self) -> Result<PoRepConfig, Error> {
        let (_, api_version, feature) = VERSIONS[self.id as usize / SIZES.len()];
        let mut porep_id = [0u8; 32];
        porep_id[..8].copy_from_slice(&self.id.to_le_bytes());
        PoRepConfig::new_groth16_with_features(
            self.sector_size,
            porep_id,
            api_version,
            feature.into_iter().collect(),
        )
        .map_err(|e| FilecoinError::from_crate("the PoRep configuration", e))
    }
}

/// A C1 output read from its JSON: the registered proof, the sector
/// number where lotus-bench's wrapper gives it, and the output itself,
/// typed once the sector shape is known ([`C1Output::phase1_output`]).
#[derive(Clone, Debug)]
pub struct C1Output {
    /// The registered seal proof the sector was sealed with.
    pub registered_proof: RegisteredSealProof,
    /// The sector number, where the file gives it (lotus-bench).
    pub sector_num: Option<u64>,
    /// filecoin-proofs' `SealCommitPhase1Output` as JSON.
    phase1: Value,
}

impl C1Output {
    /// Reads a C1 output file (either form).
    pub fn read_file(path: impl AsRef<Path>) -> Result<Self, Error> {
        let bytes = std::fs::read(path.as_ref())?;
        Self::from_json(&bytes).map_err(|error| match error {
            Error::Filecoin(FilecoinError::MalformedC1(message)) => {
                malformed(format!("{}: {message}", path.as_ref().display()))
            }
            other => other,
        })
    }

    /// Parses a C1 output (either form); a truncated or corrupted one is
    /// [`FilecoinError::MalformedC1`] saying where.
    pub fn from_json(bytes: &[u8]) -> Result<Self, Error> {
        let value: Value =
            serde_json::from_slice(bytes).map_err(|e| malformed(format!("not JSON: {e}")))?;
        let Value::Object(mut fields) = value else {
            return Err(malformed("not a JSON object".into()));
        };
        if let Some(inner) = fields.remove("Phase1Out") {
            let sector_num = fields.get("SectorNum").and_then(Value::as_u64);
            let text = inner
                .as_str()
                .ok_or_else(|| malformed("Phase1Out is not a string".into()))?;
            let mut output = Self::from_json(&decode_base64(text)?)?;
            output.sector_num = sector_num;
            return Ok(output);
        }
        let name = fields
            .get("registered_proof")
            .and_then(Value::as_str)
            .ok_or_else(|| malformed("no registered_proof".into()))?;
        let registered_proof = RegisteredSealProof::from_name(name)?;
        // {"StackedDrg32GiBV1": [[proof, ...], ...]}: the shape's tag, then the proofs.
        let vanilla = match fields.remove("vanilla_proofs") {
            Some(Value::Object(tagged)) if tagged.len() == 1 => {
                tagged.into_iter().next().expect("one entry").1
            }
            _ => {
                return Err(malformed(
                    "vanilla_proofs is not one tagged list of partitions".into(),
                ))
            }
        };
        fields.insert("vanilla_proofs".into(), vanilla);
        fields.remove("registered_proof");
        Ok(Self {
            registered_proof,
            sector_num: None,
            phase1: Value::Object(fields),
        })
    }

    /// The C1 output of filecoin-proofs' `seal_commit_phase1` with the
    /// registered proof it was sealed with, for writing.
    pub fn from_phase1<Tree: 'static + MerkleTreeTrait>(
        registered_proof: RegisteredSealProof,
        output: &SealCommitPhase1Output<Tree>,
    ) -> Result<Self, Error> {
        let phase1 = serde_json::to_value(output).map_err(|e| malformed(e.to_string()))?;
        Ok(Self {
            registered_proof,
            sector_num: None,
            phase1,
        })
    }

    /// The JSON filecoin-ffi writes (filecoin-proofs-api's form).
    pub fn to_json(&self) -> Vec<u8> {
        let mut fields = match &self.phase1 {
            Value::Object(fields) => fields.clone(),
            _ => Default::default(),
        };
        let vanilla = fields.remove("vanilla_proofs").unwrap_or(Value::Null);
        let size_name = SIZES[self.registered_proof.id as usize % SIZES.len()].0;
        let mut tagged = serde_json::Map::new();
        tagged.insert(format!("StackedDrg{size_name}V1"), vanilla);
        fields.insert("vanilla_proofs".into(), Value::Object(tagged));
        fields.insert(
            "registered_proof".into(),
            Value::String(self.registered_proof.name.clone()),
        );
        serde_json::to_vec(&Value::Object(fields)).expect("JSON values serialize")
    }

    /// The output typed for sector shape `Tree`; an error where the
    /// proofs do not have that shape.
    pub fn phase1_output<Tree: 'static + MerkleTreeTrait>(
        &self,
    ) -> Result<SealCommitPhase1Output<Tree>, Error> {
        serde_json::from_value(self.phase1.clone())
            .map_err(|e| malformed(format!("the C1 output does not decode: {e}")))
    }
}

/// [`seal_commit_phase2`] over a C1 output file's contents, for the
/// sector size and API version of its registered proof.
pub fn seal_commit_phase2_c1(
    pool: &ProverPool,
    c1: &C1Output,
    prover_id: ProverId,
    sector_id: SectorId,
) -> Result<SealCommitOutput, Error> {
    fn prove<Tree: 'static + MerkleTreeTrait>(
        pool: &ProverPool,
        c1: &C1Output,
        prover_id: ProverId,
        sector_id: SectorId,
    ) -> Result<SealCommitOutput, Error> {
        let config = c1.registered_proof.porep_config()?;
        seal_commit_phase2::<Tree>(pool, &config, c1.phase1_output()?, prover_id, sector_id)
    }
    match c1.registered_proof.sector_size {
        s if s == SIZES[0].1 => prove::<SectorShape2KiB>(pool, c1, prover_id, sector_id),
        s if s == SIZES[1].1 => prove::<SectorShape8MiB>(pool, c1, prover_id, sector_id),
        s if s == SIZES[2].1 => prove::<SectorShape512MiB>(pool, c1, prover_id, sector_id),
        s if s == SIZES[3].1 => prove::<SectorShape32GiB>(pool, c1, prover_id, sector_id),
        _ => prove::<SectorShape64GiB>(pool, c1, prover_id, sector_id),
    }
}

fn malformed(message: String) -> Error {
    FilecoinError::MalformedC1(message).into()
}

/// Standard base64 with its padding, as Go's JSON writes `[]byte`.
fn decode_base64(text: &str) -> Result<Vec<u8>, Error> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|error| malformed(format!("Phase1Out is not base64: {error}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_decodes_go_output() {
        assert_eq!(decode_base64("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(decode_base64("aGVsbG8h").unwrap(), b"hello!");
        assert!(decode_base64("aGVsb*8=").is_err());
    }

    #[test]
    fn registered_proofs_have_filecoins_numbers() {
        let p = RegisteredSealProof::from_name("StackedDrg32GiBV1_1").unwrap();
        assert_eq!((p.id, p.sector_size), (8, 32 << 30));
        let p =
            RegisteredSealProof::from_name("StackedDrg2KiBV1_2_Feat_NonInteractivePoRep").unwrap();
        assert_eq!(p.id, 15);
        assert!(RegisteredSealProof::from_name("StackedDrg3KiBV1").is_err());
    }
}

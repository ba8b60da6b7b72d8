//! What can go wrong in Filecoin's calls, each case naming what is wrong.

use std::path::PathBuf;

use crate::params::ParamsError;

/// A failure of one of Filecoin's calls ([`crate::filecoin`]) before or
/// after the SNARK work; failures of the proving itself are the crate's
/// other [`Error`](crate::Error) variants.
#[derive(Debug, thiserror::Error)]
pub enum FilecoinError {
    /// An input of the call is malformed (a zero commitment, a value that
    /// is not a field element, a wrong count).
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// A C1 output (commit phase 1's JSON) that is truncated, corrupted or
    /// of an unknown form.
    #[error("malformed C1 output: {0}")]
    MalformedC1(String),
    /// The vanilla proofs are for sectors of another size than the
    /// configuration's (and so than its parameters').
    #[error("the vanilla proofs are for {found}-byte sectors, the configuration is for {expected}-byte sectors")]
    SectorSizeMismatch {
        /// Sector size of the configuration, in bytes.
        expected: u64,
        /// Sector size the vanilla proofs were made for, in bytes.
        found: u64,
    },
    /// A vanilla proof does not verify against the call's public inputs
    /// (commitments, replica id, seed, sector ids, prover id, randomness).
    #[error("the vanilla proof of {what} does not verify against the public inputs")]
    VanillaProofInvalid {
        /// Which proof: the partition, or the sector.
        what: String,
    },
    /// No parameters file where filecoin-proofs looks for this circuit's.
    #[error("no parameters for {circuit} at {path} (filecoin-proofs' parameter cache)")]
    MissingParameters {
        /// The circuit's parameter cache identifier.
        circuit: String,
        /// Where the `.params` file should be.
        path: PathBuf,
    },
    /// The parameters file exists but cannot be read as a proving key.
    #[error("cannot read the parameters {path}: {source}")]
    Parameters {
        /// The `.params` file.
        path: PathBuf,
        /// Why it cannot be read.
        #[source]
        source: ParamsError,
    },
    /// filecoin-proofs or a storage-proofs crate failed (building public
    /// parameters, circuits or public inputs, aggregating, verifying).
    #[error("{step} failed: {message}")]
    Crate {
        /// What was being done.
        step: &'static str,
        /// The crate's error, with its causes.
        message: String,
    },
    /// The proofs were made but filecoin-proofs' verifier refuses them, so
    /// they are not returned.
    #[error("the proofs do not verify: {0}")]
    NotVerified(String),
}

impl FilecoinError {
    /// Wraps an error of filecoin-proofs or storage-proofs met in `step`.
    pub(crate) fn from_crate(step: &'static str, error: anyhow::Error) -> crate::Error {
        FilecoinError::Crate {
            step,
            message: format!("{error:#}"),
        }
        .into()
    }
}

use crate::params::ParamsError;

/// The crate's top-level error: every fallible public function returns it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The circuit failed while synthesizing (assignment missing, division by zero, ...).
    #[error("circuit synthesis failed: {0}")]
    Synthesis(#[from] bellpepper_core::SynthesisError),
    /// A proving or verifying key could not be read, or is malformed.
    #[error(transparent)]
    Params(#[from] ParamsError),
    /// The key does not fit the circuit: a query has another length than the circuit needs.
    #[error("the proving key does not fit the circuit: {query} query holds {available} points, the circuit needs {needed}")]
    KeyMismatch {
        /// Which query (h, l, a, b_g1, b_g2, ic).
        query: &'static str,
        /// Points the circuit needs.
        needed: usize,
        /// Points the key holds.
        available: usize,
    },
    /// A pre-compiled circuit shape was used with a circuit of another shape.
    #[error("the circuit does not match the recorded shape: {0}")]
    ShapeMismatch(String),
    /// The witness does not satisfy a recorded constraint (A·B ≠ C in that
    /// row): the circuit is wrong, or its shape differs from the recorded one
    /// while its counts agree. No proof is made from it.
    #[error("the witness does not satisfy constraint {constraint} of the recorded shape")]
    Unsatisfied {
        /// The first row whose A·B differs from C.
        constraint: usize,
    },
    /// The circuit panicked while synthesizing; the panic was caught.
    #[error("circuit synthesis panicked: {0}")]
    CircuitPanicked(String),
    /// A saved circuit shape that does not decode to a well-formed shape.
    #[error("malformed circuit shape file: {0}")]
    MalformedShape(String),
    /// Circuits of one batch differ in shape, or batch arguments differ in length.
    #[error("invalid batch: {0}")]
    InvalidBatch(String),
    /// Proof bytes that do not decode to a valid proof.
    #[error("malformed proof: {0}")]
    MalformedProof(&'static str),
    /// The wrong number of public inputs was given to the verifier.
    #[error("the verifying key expects {expected} public inputs, {given} were given")]
    PublicInputCount {
        /// Public inputs the key expects (without the constant one).
        expected: usize,
        /// Public inputs given.
        given: usize,
    },
    /// An MSM was given different numbers of bases and scalars.
    #[error("MSM needs as many bases as scalars: {bases} bases, {scalars} scalars")]
    LengthMismatch {
        /// Bases given.
        bases: usize,
        /// Scalars given.
        scalars: usize,
    },
    /// The circuit needs a larger evaluation domain than the scalar field supports.
    #[error("the circuit has {0} constraints, more than a radix-2 domain of BLS12-381's scalar field holds")]
    DomainTooLarge(usize),
    /// The point τ a key is made at lies in the evaluation domain (τ^m = 1,
    /// m its size): the key would be degenerate (Z(τ) = 0 makes every h
    /// point the identity), so none is made. A random τ is one with
    /// probability m/r, about 2^-228 for m = 2^27.
    #[error("τ lies in the evaluation domain of {0} points (τ^m = 1): a key made at it would be degenerate")]
    TauInDomain(usize),
    /// A GPU call failed (feature `cuda`).
    #[cfg(feature = "cuda")]
    #[error(transparent)]
    Gpu(#[from] crate::device::GpuError),
    /// The prover pool failed a job, or could not be built.
    #[error(transparent)]
    Pool(#[from] PoolError),
    /// A job that needs more host memory than is available, refused before
    /// allocating it; the process can go on with a smaller one.
    #[error("out of host memory: {what} needs {needed} bytes, {available} are available")]
    OutOfHostMemory {
        /// What the memory was for.
        what: String,
        /// Bytes needed.
        needed: u64,
        /// Bytes available when asked.
        available: u64,
    },
    /// One of Filecoin's calls failed outside the proving (feature `filecoin`).
    #[cfg(feature = "filecoin")]
    #[error(transparent)]
    Filecoin(#[from] crate::filecoin::FilecoinError),
    /// An I/O error while reading or writing.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

/// The text of a caught panic's payload (a `&str` or `String` message).
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".into())
}

/// Runs circuit code (synthesis), turning a panic in it into
/// [`Error::CircuitPanicked`]: a bad circuit fails its own proof only.
pub(crate) fn catch_circuit_panic<T>(
    synthesis: impl FnOnce() -> Result<T, Error>,
) -> Result<T, Error> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(synthesis))
        .unwrap_or_else(|payload| Err(Error::CircuitPanicked(panic_message(&*payload))))
}

/// A failure of the prover pool.
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    /// One job of a batch failed; `index` is its position in the batch.
    #[error("job {index} of the batch failed: {source}")]
    Job {
        /// The job's position in the batch (its assignment's or circuit's index).
        index: usize,
        /// Why it failed.
        #[source]
        source: Box<Error>,
    },
    /// A worker failed a job as a device does (an injected failure or a
    /// panic inside the prover); the job is retried on another worker.
    #[error("worker {worker} failed: {message}")]
    WorkerFailed {
        /// The worker's label, e.g. "gpu 1" or "cpu 0".
        worker: String,
        /// What went wrong.
        message: String,
    },
    /// Another job of the same batch failed first, so this one was not
    /// proved ([`ProverPool::prove_batch`](crate::ProverPool::prove_batch)
    /// stops a batch at its first failure).
    #[error("not proved: another job of the batch failed")]
    Cancelled,
    /// A pool was asked for with no workers.
    #[error("a prover pool needs at least one worker")]
    NoWorkers,
    /// The same device was named twice for one pool.
    #[error("device {0} is named twice")]
    DuplicateDevice(usize),
    /// A worker thread could not be started.
    #[error("cannot start a worker thread: {0}")]
    Spawn(String),
}

impl PoolError {
    /// Wraps `source` as the failure of job `index`.
    pub(crate) fn job(index: usize, source: Error) -> Error {
        Error::Pool(PoolError::Job {
            index,
            source: Box::new(source),
        })
    }
}

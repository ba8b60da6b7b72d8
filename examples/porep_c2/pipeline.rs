//! porep_c2's proving side: the key resident on the device or streamed to
//! it, and every partition from circuit to proof with synthesis on the
//! host's cores overlapped with the device.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use blstrs::Scalar;
use ff::Field;
use groth16_gpu::device::DeviceGuard;
use groth16_gpu::groth16::gpu::{
    finish_proof_timed, prove_streamed, start_proof_shaped, GpuProvingKey, PendingProof,
};
use groth16_gpu::groth16::StageTimes;
use groth16_gpu::synthesis::{CircuitShape, WitnessAssignment, WitnessValues};
use groth16_gpu::{Error, Proof, ProvingKey};
use rand_core::OsRng;

use crate::filecoin::{PorepCircuit, PorepParts};
use crate::in_order;
use crate::witness_buffers::{Witness, WitnessBuffers};

fn random() -> Scalar {
    Scalar::random(OsRng)
}

/// The key on the device, or on the host where the device cannot hold it
/// (each proof then streams it, chunk by chunk).
pub enum Prover {
    Resident(GpuProvingKey),
    Streamed(Box<ProvingKey>),
}

/// A proof under way on the device, or already made (streamed proofs are
/// made whole in `start`).
pub enum Started {
    Pending(PendingProof),
    Done(Box<Proof>),
}

impl Prover {
    pub fn start(
        &self,
        guard: &DeviceGuard<'_>,
        shape: &CircuitShape,
        witness: WitnessValues<'_>,
    ) -> Result<Started, Error> {
        Ok(match self {
            Prover::Resident(key) => Started::Pending(start_proof_shaped(
                guard,
                key,
                shape,
                witness,
                random(),
                random(),
            )?),
            Prover::Streamed(key) => {
                let assignment = shape.assign(WitnessAssignment {
                    input: witness.input.to_vec(),
                    aux: witness.aux.to_vec(),
                    constraints: witness.constraints,
                })?;
                Started::Done(Box::new(prove_streamed(
                    guard,
                    key,
                    &assignment,
                    random(),
                    random(),
                )?))
            }
        })
    }

    pub fn finish(&self, guard: &DeviceGuard<'_>, started: Started) -> Result<Proof, Error> {
        self.finish_timed(guard, started).map(|(proof, _)| proof)
    }

    /// The proof, with its stages' times where the key is resident (a
    /// streamed proof has no such breakdown).
    pub fn finish_timed(
        &self,
        guard: &DeviceGuard<'_>,
        started: Started,
    ) -> Result<(Proof, Option<StageTimes>), Error> {
        match started {
            Started::Pending(pending) => {
                finish_proof_timed(guard, pending).map(|(proof, times)| (proof, Some(times)))
            }
            Started::Done(proof) => Ok((*proof, None)),
        }
    }
}

/// A partition's witness, how long it took, or why it failed.
pub type Synthesized = (usize, Duration, Result<Witness, groth16_gpu::Error>);

/// How the pipeline computes witnesses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Synthesis {
    /// This many partitions at a time, each one's challenges over every
    /// core (one partition's challenges leave cores idle: 18 challenges
    /// make 9 runs of two on 16 cores).
    InParts(usize),
    /// This many partitions at a time, each one's challenges a run of
    /// their own, the runs of all of them dealt over every core by rayon:
    /// 18 runs of one challenge leave no core idle at the end of a
    /// partition when another partition's runs are waiting.
    ByChallenge(usize),
    /// Every core takes the next challenge of the earliest partition that
    /// still has one, with at most this many partitions begun and not yet
    /// handed to the prover: the first witness is ready after one
    /// partition's share of the cores' time, not after the first few
    /// partitions' (their runs interleave in rayon's pool in `challenges`).
    /// On `workers` threads (None: every core), so that fewer can leave
    /// cores to the prover's split of the proof before.
    InOrder {
        at_once: usize,
        workers: Option<usize>,
    },
    /// This many partitions at a time, each one's witness on one thread.
    OneThreadEach(usize),
}

impl Synthesis {
    /// "parts:N", "challenges:N", "ordered:N", "ordered:N/WORKERS" or
    /// "threads:N".
    pub fn parse(spec: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "{spec:?} is not parts:N, challenges:N, ordered:N[/WORKERS] or threads:N (N at least 1)"
            )
        };
        let positive = |text: &str| text.parse().ok().filter(|&n: &usize| n > 0).ok_or_else(bad);
        let (kind, count) = spec.split_once(':').ok_or_else(bad)?;
        if kind == "ordered" {
            let (at_once, workers) = match count.split_once('/') {
                Some((at_once, workers)) => (positive(at_once)?, Some(positive(workers)?)),
                None => (positive(count)?, None),
            };
            return Ok(Synthesis::InOrder { at_once, workers });
        }
        let count = positive(count)?;
        match kind {
            "parts" => Ok(Synthesis::InParts(count)),
            "challenges" => Ok(Synthesis::ByChallenge(count)),
            "threads" => Ok(Synthesis::OneThreadEach(count)),
            _ => Err(bad()),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Synthesis::InParts(at_once) => format!(
                "{at_once} partition(s) at a time, challenges on {} threads",
                rayon::current_num_threads()
            ),
            Synthesis::ByChallenge(at_once) => format!(
                "{at_once} partition(s) at a time, a run a challenge on {} threads",
                rayon::current_num_threads()
            ),
            Synthesis::InOrder { at_once, workers } => format!(
                "challenges in partition order on {} threads, at most {at_once} partition(s) begun",
                workers.unwrap_or_else(rayon::current_num_threads)
            ),
            Synthesis::OneThreadEach(threads) => {
                format!("{threads} partitions at a time, one thread each")
            }
        }
    }

    /// Finished witnesses that may wait for the device: with two proofs in
    /// flight this bounds the witnesses in host memory.
    fn waiting(&self) -> usize {
        match self {
            Synthesis::InParts(at_once)
            | Synthesis::ByChallenge(at_once)
            | Synthesis::InOrder { at_once, .. }
            | Synthesis::OneThreadEach(at_once) => *at_once,
        }
    }

    /// Computes every partition's witness and sends each when ready.
    fn run(
        self,
        shape: &CircuitShape,
        circuits: Vec<PorepCircuit>,
        parts: Vec<PorepParts>,
        buffers: &WitnessBuffers,
        sender: mpsc::SyncSender<Synthesized>,
    ) {
        use rayon::prelude::*;
        // A failed send means the prover stopped on an error: stop too.
        match self {
            Synthesis::InParts(at_once) => {
                let cores = rayon::current_num_threads();
                in_parts(shape, &parts, at_once, cores, buffers, sender);
            }
            // Runs of one challenge: run_length clamps the parts to them.
            Synthesis::ByChallenge(at_once) => {
                in_parts(shape, &parts, at_once, usize::MAX, buffers, sender)
            }
            Synthesis::InOrder { at_once, workers } => {
                let workers = workers.unwrap_or_else(rayon::current_num_threads);
                let runs = in_order::ChallengeRuns {
                    shape,
                    parts: &parts,
                };
                in_order::synthesize(&runs, at_once, workers, buffers, sender)
            }
            Synthesis::OneThreadEach(threads) => {
                let Ok(pool) = rayon::ThreadPoolBuilder::new().num_threads(threads).build() else {
                    return;
                };
                pool.install(|| {
                    circuits.into_par_iter().enumerate().for_each_with(
                        sender,
                        |sender, (i, circuit)| {
                            let start = Instant::now();
                            let witness = shape.witness(circuit).map(Witness::Owned);
                            let _ = sender.send((i, start.elapsed(), witness));
                        },
                    )
                });
            }
        }
    }
}

/// `at_once` threads each take the next partition and synthesize it in
/// `runs` runs of its challenges, joined into a buffer of `buffers` where
/// there are any; the runs of all of them share rayon's pool. Each witness
/// is sent when ready; a failed send (or a closed pool) means the prover
/// stopped, and the threads stop too.
fn in_parts(
    shape: &CircuitShape,
    parts: &[PorepParts],
    at_once: usize,
    runs: usize,
    buffers: &WitnessBuffers,
    sender: mpsc::SyncSender<Synthesized>,
) {
    let next = &AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..at_once {
            let sender = sender.clone();
            scope.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(partition) = parts.get(i) else {
                    return;
                };
                let buffer = if buffers.count() > 0 {
                    let Some(buffer) = buffers.take() else {
                        return;
                    };
                    Some(buffer)
                } else {
                    None
                };
                let start = Instant::now();
                let witness = match buffer {
                    Some(mut buffer) => partition
                        .witness_in_parts_into(shape, runs, buffer.as_mut_slice())
                        .map(|joined| Witness::Pinned(joined, buffer)),
                    None => partition.witness_in_parts(shape, runs).map(Witness::Owned),
                };
                if sender.send((i, start.elapsed(), witness)).is_err() {
                    return;
                }
            });
        }
    });
}

/// What [`prove_pipelined`] made, and how.
pub struct PipelineRun {
    pub proofs: Vec<Proof>,
    /// Each partition's witness, in the order they became ready.
    pub synthesis_times: Vec<Duration>,
    /// Starts that waited for the proof in flight (device memory).
    pub memory_waits: usize,
}

/// Every partition from circuit to proof: witnesses computed as
/// `synthesis` says (joined into `buffers` where it synthesizes in parts
/// and there are any), each handed to the device as it is ready, two
/// proofs in flight there.
pub fn prove_pipelined(
    guard: &DeviceGuard<'_>,
    prover: &Prover,
    shape: &CircuitShape,
    circuits: Vec<PorepCircuit>,
    parts: Vec<PorepParts>,
    synthesis: Synthesis,
    buffers: &WitnessBuffers,
) -> Result<PipelineRun, Box<dyn std::error::Error>> {
    let count = circuits.len();
    let (sender, ready) = mpsc::sync_channel::<Synthesized>(synthesis.waiting());
    let mut proofs: Vec<Option<Proof>> = (0..count).map(|_| None).collect();
    let mut times = Vec::with_capacity(count);
    let mut memory_waits = 0;
    std::thread::scope(|scope| -> Result<(), Box<dyn std::error::Error>> {
        // Closed when this returns, on an error too: a synthesis thread
        // waiting for a buffer then stops.
        let _open = buffers.open();
        scope.spawn(move || synthesis.run(shape, circuits, parts, buffers, sender));
        let mut in_flight = std::collections::VecDeque::new();
        for (i, took, witness) in ready {
            times.push(took);
            let witness = witness?;
            let pending = loop {
                match prover.start(guard, shape, witness.values()) {
                    // Two proofs' working memory beside the key may not fit
                    // (an H100 with the shape's matrices resident): wait
                    // for the one in flight, then start.
                    Err(Error::Gpu(e)) if e.is_out_of_memory() && !in_flight.is_empty() => {
                        let (j, pending) = in_flight.pop_front().expect("one in flight");
                        proofs[j] = Some(prover.finish(guard, pending)?);
                        memory_waits += 1;
                    }
                    started => break started?,
                }
            };
            // The start has read the witness.
            buffers.give_back(witness);
            in_flight.push_back((i, pending));
            if in_flight.len() > 1 {
                let (j, pending) = in_flight.pop_front().expect("two in flight");
                proofs[j] = Some(prover.finish(guard, pending)?);
            }
        }
        for (j, pending) in in_flight {
            proofs[j] = Some(prover.finish(guard, pending)?);
        }
        Ok(())
    })?;
    let proofs = proofs
        .into_iter()
        .map(|p| p.ok_or("a partition was not proved"))
        .collect::<Result<_, _>>()?;
    Ok(PipelineRun {
        proofs,
        synthesis_times: times,
        memory_waits,
    })
}

#[cfg(test)]
mod tests {
    use super::Synthesis;

    #[test]
    fn pipelines_parse_with_their_counts_and_workers() {
        let parsed = |spec| Synthesis::parse(spec);
        assert_eq!(parsed("challenges:3"), Ok(Synthesis::ByChallenge(3)));
        assert_eq!(
            parsed("ordered:2"),
            Ok(Synthesis::InOrder {
                at_once: 2,
                workers: None
            })
        );
        assert_eq!(
            parsed("ordered:2/14"),
            Ok(Synthesis::InOrder {
                at_once: 2,
                workers: Some(14)
            })
        );
        for bad in [
            "ordered:0",
            "ordered:2/0",
            "ordered:2/",
            "ordered:x",
            "parts:0",
            "lanes:2",
        ] {
            assert!(parsed(bad).is_err(), "{bad}");
        }
    }
}

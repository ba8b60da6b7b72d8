//! porep_c2's `ordered:N` synthesis: the partitions' challenges as one
//! queue in partition order, taken by every core. The earliest partition's
//! runs go first, so its witness is ready after its own share of the
//! cores' time and the device starts early; cores left idle by a
//! partition's last runs take the next partition's first ones. At most N
//! partitions are begun and not yet handed to the prover, which bounds the
//! runs' witnesses in host memory.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::OnceLock;
use std::time::Instant;

use groth16_gpu::synthesis::{CircuitShape, WitnessAssignment};
use parking_lot::{Condvar, Mutex};

use crate::filecoin::PorepParts;
use crate::pipeline::Synthesized;
use crate::witness_buffers::{Witness, WitnessBuffers};

/// Partitions whose witnesses are made in runs, each run beginning with the
/// partition's shared prefix (`WitnessAssignment::join_parts`).
pub trait PartitionRuns: Sync {
    fn partitions(&self) -> usize;
    /// Runs of `partition`, at least one.
    fn run_count(&self, partition: usize) -> usize;
    fn prefix(&self, partition: usize) -> Result<WitnessAssignment, groth16_gpu::Error>;
    fn run(&self, partition: usize, run: usize) -> Result<WitnessAssignment, groth16_gpu::Error>;
}

/// PoRep partitions in runs of one challenge: the finest cut, so no core
/// waits for a long run at the end of a partition.
pub struct ChallengeRuns<'a> {
    pub shape: &'a CircuitShape,
    pub parts: &'a [PorepParts],
}

const ONE_CHALLENGE_RUNS: usize = usize::MAX;

impl PartitionRuns for ChallengeRuns<'_> {
    fn partitions(&self) -> usize {
        self.parts.len()
    }

    fn run_count(&self, partition: usize) -> usize {
        self.parts[partition].run_count(ONE_CHALLENGE_RUNS)
    }

    fn prefix(&self, partition: usize) -> Result<WitnessAssignment, groth16_gpu::Error> {
        self.parts[partition].prefix_witness()
    }

    fn run(&self, partition: usize, run: usize) -> Result<WitnessAssignment, groth16_gpu::Error> {
        self.parts[partition].run_witness(self.shape, ONE_CHALLENGE_RUNS, run)
    }
}

/// Where the queue stands.
struct Queue {
    /// The next run to hand out: (partition, run).
    next: (usize, usize),
    /// Partitions whose witness has been sent (or has failed).
    handed_over: usize,
    /// Set on an error or when the prover has stopped.
    stopped: bool,
}

/// One partition's runs as they finish.
struct Partition {
    count: usize,
    runs: Mutex<Vec<Option<WitnessAssignment>>>,
    left: AtomicUsize,
    started: OnceLock<Instant>,
}

/// Everything the workers share.
struct Work<'a, R> {
    runs: &'a R,
    at_once: usize,
    partitions: Vec<Partition>,
    queue: Mutex<Queue>,
    /// Signalled when a partition is handed over or the work stops.
    turn: Condvar,
    buffers: &'a WitnessBuffers,
    sender: mpsc::SyncSender<Synthesized>,
}

/// Synthesizes the partitions of `runs` on `workers` threads in partition
/// order, each witness joined (into a buffer of `buffers` where there are
/// any) and sent when its last run is done. A failed run is sent as that
/// partition's error and stops the rest; a failed send (the prover
/// stopped) stops it too.
pub fn synthesize<R: PartitionRuns>(
    runs: &R,
    at_once: usize,
    workers: usize,
    buffers: &WitnessBuffers,
    sender: mpsc::SyncSender<Synthesized>,
) {
    let partitions = (0..runs.partitions())
        .map(|partition| {
            let count = runs.run_count(partition).max(1);
            Partition {
                count,
                runs: Mutex::new((0..count).map(|_| None).collect()),
                left: AtomicUsize::new(count),
                started: OnceLock::new(),
            }
        })
        .collect();
    let work = Work {
        runs,
        at_once: at_once.max(1),
        partitions,
        queue: Mutex::new(Queue {
            next: (0, 0),
            handed_over: 0,
            stopped: false,
        }),
        turn: Condvar::new(),
        buffers,
        sender,
    };
    std::thread::scope(|scope| {
        for _ in 0..workers.max(1) {
            scope.spawn(|| {
                while let Some((partition, run)) = work.next_run() {
                    work.do_run(partition, run);
                }
            });
        }
    });
}

impl<R: PartitionRuns> Work<'_, R> {
    /// The next run, waiting while `at_once` partitions are begun and not
    /// handed over; None once every run is handed out or the work stopped.
    fn next_run(&self) -> Option<(usize, usize)> {
        let mut queue = self.queue.lock();
        loop {
            let (partition, run) = queue.next;
            if queue.stopped || partition >= self.partitions.len() {
                return None;
            }
            // A partition's later runs never wait: it is already begun.
            if run > 0 || partition < queue.handed_over + self.at_once {
                queue.next = if run + 1 < self.partitions[partition].count {
                    (partition, run + 1)
                } else {
                    (partition + 1, 0)
                };
                return Some((partition, run));
            }
            self.turn.wait(&mut queue);
        }
    }

    /// Synthesizes one run; the worker that finishes a partition's last run
    /// joins and sends its witness.
    fn do_run(&self, partition: usize, run: usize) {
        let slot = &self.partitions[partition];
        let started = *slot.started.get_or_init(Instant::now);
        match self.runs.run(partition, run) {
            Ok(witness) => slot.runs.lock()[run] = Some(witness),
            Err(error) => {
                let _ = self.sender.send((partition, started.elapsed(), Err(error)));
                self.stop();
                return;
            }
        }
        if slot.left.fetch_sub(1, Ordering::AcqRel) != 1 {
            return;
        }
        let runs: Vec<WitnessAssignment> = slot.runs.lock().drain(..).flatten().collect();
        let runs_done = started.elapsed();
        let Some(witness) = self.join(partition, runs) else {
            // The pool closed: the prover has stopped.
            self.stop();
            return;
        };
        log::info!(
            "partition {partition}: {} runs done {runs_done:.2?} after its first began, joined {:.2?} later (a free buffer awaited)",
            slot.count,
            started.elapsed() - runs_done
        );
        let sent = self.sender.send((partition, started.elapsed(), witness));
        let mut queue = self.queue.lock();
        queue.handed_over += 1;
        queue.stopped |= sent.is_err();
        self.turn.notify_all();
    }

    /// The partition's witness from its runs, in a page-locked buffer where
    /// the pool has them; None where the pool closed while waiting for one.
    fn join(
        &self,
        partition: usize,
        runs: Vec<WitnessAssignment>,
    ) -> Option<Result<Witness, groth16_gpu::Error>> {
        let prefix = match self.runs.prefix(partition) {
            Ok(prefix) => prefix,
            Err(error) => return Some(Err(error)),
        };
        if self.buffers.count() == 0 {
            return Some(WitnessAssignment::join_parts(prefix, runs).map(Witness::Owned));
        }
        let mut buffer = self.buffers.take()?;
        Some(
            WitnessAssignment::join_parts_into(prefix, runs, buffer.as_mut_slice())
                .map(|joined| Witness::Pinned(joined, buffer)),
        )
    }

    fn stop(&self) {
        self.queue.lock().stopped = true;
        self.turn.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;

    use blstrs::Scalar;

    use super::*;

    /// Partitions of 1, 3 and 5 runs (cycling) whose values name their
    /// partition and run; run `fail` fails where given. Each run checks
    /// that it was not begun past the bound the queue promises.
    struct FakeRuns {
        partitions: usize,
        at_once: usize,
        fail: Option<(usize, usize)>,
        received: AtomicUsize,
        too_early: AtomicBool,
        started: Mutex<Vec<(usize, usize)>>,
    }

    const CHANNEL: usize = 2;

    impl FakeRuns {
        fn new(partitions: usize, at_once: usize, fail: Option<(usize, usize)>) -> Self {
            FakeRuns {
                partitions,
                at_once,
                fail,
                received: AtomicUsize::new(0),
                too_early: AtomicBool::new(false),
                started: Mutex::new(Vec::new()),
            }
        }

        fn prefix_values(partition: usize) -> WitnessAssignment {
            WitnessAssignment {
                input: vec![Scalar::from(1u64), Scalar::from(partition as u64)],
                aux: vec![Scalar::from(1000 * partition as u64 + 999)],
                constraints: None,
            }
        }

        fn own_values(partition: usize, run: usize) -> [Scalar; 2] {
            let base = 1000 * partition as u64 + run as u64;
            [Scalar::from(base), Scalar::from(base + 500)]
        }
    }

    impl PartitionRuns for FakeRuns {
        fn partitions(&self) -> usize {
            self.partitions
        }

        fn run_count(&self, partition: usize) -> usize {
            [1, 3, 5][partition % 3]
        }

        fn prefix(&self, partition: usize) -> Result<WitnessAssignment, groth16_gpu::Error> {
            Ok(Self::prefix_values(partition))
        }

        fn run(
            &self,
            partition: usize,
            run: usize,
        ) -> Result<WitnessAssignment, groth16_gpu::Error> {
            self.started.lock().push((partition, run));
            // Handed over means sent: counted by the receiver, in the
            // channel, or just taken and not yet counted (one).
            let bound = self.received.load(Ordering::SeqCst) + CHANNEL + 1 + self.at_once;
            if partition >= bound {
                self.too_early.store(true, Ordering::SeqCst);
            }
            std::thread::sleep(Duration::from_millis(2));
            if self.fail == Some((partition, run)) {
                return Err(groth16_gpu::Error::ShapeMismatch("a failing run".into()));
            }
            let mut witness = Self::prefix_values(partition);
            witness.aux.extend(Self::own_values(partition, run));
            Ok(witness)
        }
    }

    /// Runs `runs` on four workers with a slow receiver; what it received,
    /// by partition.
    fn received(runs: &FakeRuns, stop_at_error: bool) -> Vec<(usize, Result<Witness, String>)> {
        let buffers = WitnessBuffers::new(0, 0);
        let (sender, ready) = mpsc::sync_channel(CHANNEL);
        let mut got = Vec::new();
        std::thread::scope(|scope| {
            scope.spawn(|| synthesize(runs, runs.at_once, 4, &buffers, sender));
            for (partition, _, witness) in ready {
                std::thread::sleep(Duration::from_millis(5));
                runs.received.fetch_add(1, Ordering::SeqCst);
                let failed = witness.is_err();
                got.push((partition, witness.map_err(|e| e.to_string())));
                if failed && stop_at_error {
                    break;
                }
            }
        });
        got
    }

    #[test]
    fn every_partition_is_joined_in_run_order_within_the_bound() {
        for at_once in [1, 2, 3] {
            let runs = FakeRuns::new(8, at_once, None);
            let mut got = received(&runs, true);
            assert_eq!(got.len(), 8, "at_once {at_once}");
            got.sort_by_key(|(partition, _)| *partition);
            for (partition, witness) in got {
                let Ok(Witness::Owned(witness)) = witness else {
                    panic!("partition {partition}: no witness of its own");
                };
                let mut want = FakeRuns::prefix_values(partition);
                for run in 0..runs.run_count(partition) {
                    want.aux.extend(FakeRuns::own_values(partition, run));
                }
                assert_eq!(witness.aux, want.aux, "partition {partition}");
                assert_eq!(witness.input, want.input, "partition {partition}");
            }
            assert!(!runs.too_early.load(Ordering::SeqCst), "at_once {at_once}");
            let started = runs.started.lock().clone();
            assert_eq!(
                started.len(),
                [1, 3, 5, 1, 3, 5, 1, 3].iter().sum::<usize>()
            );
            if at_once == 1 {
                // A partition begins once the one before is handed over.
                let order: Vec<usize> = started.iter().map(|(p, _)| *p).collect();
                assert!(order.windows(2).all(|w| w[0] <= w[1]), "{order:?}");
            }
        }
    }

    #[test]
    fn a_failed_run_is_its_partitions_error_and_stops_the_rest() {
        let runs = FakeRuns::new(12, 1, Some((2, 1)));
        let got = received(&runs, true);
        let (partition, last) = got.last().expect("something received");
        assert_eq!(*partition, 2);
        let error = last.as_ref().err().expect("the failure");
        assert!(error.contains("a failing run"), "{error}");
        // Nothing far past the failure was begun.
        let latest = runs.started.lock().iter().map(|(p, _)| *p).max();
        assert!(latest <= Some(2 + CHANNEL + 1 + 1), "{latest:?}");
    }
}

//! The prover pool's scheduling on CPU workers (no GPU needed; the GPU pool
//! runs the same code with a different prover): input order, many
//! submitting threads, retries after worker failures, priority, failures
//! that stay with their job, and shutdown.

#[path = "common/circuits.rs"]
mod circuits;

use std::sync::Arc;
use std::time::Duration;

use blstrs::Scalar;
use circuits::{FieldHeavy, Mixed};
use ff::Field;
use groth16_gpu::groth16::prove;
use groth16_gpu::pool::{JobReport, PoolError, Priority};
use groth16_gpu::synthesis::{synthesize, Assignment, CircuitShape};
use groth16_gpu::{
    generate_random_parameters, prepare_verifying_key, verify_proof, Error, Proof, ProverPool,
    ProvingKey,
};
use rand_core::OsRng;

const STEPS: usize = 500;

fn key(steps: usize) -> Arc<ProvingKey> {
    Arc::new(generate_random_parameters(FieldHeavy { steps, start: None }, &mut OsRng).unwrap())
}

fn circuits(n: usize, steps: usize) -> Vec<FieldHeavy> {
    (0..n)
        .map(|_| FieldHeavy {
            steps,
            start: Some(Scalar::random(OsRng)),
        })
        .collect()
}

fn assignments(circuits: &[FieldHeavy]) -> Vec<Assignment> {
    circuits
        .iter()
        .map(|c| synthesize(c.clone()).unwrap())
        .collect()
}

fn scalars(n: usize) -> Vec<Scalar> {
    (0..n).map(|_| Scalar::random(OsRng)).collect()
}

fn assert_verifies(key: &ProvingKey, circuits: &[FieldHeavy], proofs: &[Proof]) {
    assert_eq!(circuits.len(), proofs.len());
    let pvk = prepare_verifying_key(&key.vk);
    for (circuit, proof) in circuits.iter().zip(proofs) {
        assert!(verify_proof(&pvk, proof, &[circuit.result()]).unwrap());
    }
}

fn total_proofs(pool: &ProverPool) -> u64 {
    pool.stats().iter().map(|w| w.proofs).sum()
}

/// Waits (polling) until `done` holds; panics after a minute.
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..60_000 {
        if done() {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    panic!("timed out waiting until {what}");
}

#[test]
fn results_come_in_input_order_and_equal_the_cpu_prover() {
    let key = key(STEPS);
    let pool = ProverPool::cpu(2).unwrap();
    let circuits = circuits(8, STEPS);
    let assignments = assignments(&circuits);
    let (r_s, s_s) = (scalars(8), scalars(8));
    let expected: Vec<Proof> = assignments
        .iter()
        .zip(r_s.iter().zip(&s_s))
        .map(|(a, (r, s))| prove(&key, a, *r, *s).unwrap())
        .collect();

    let batch = pool
        .prove_batch(&key, assignments, r_s.clone(), s_s.clone())
        .unwrap();
    assert_eq!(batch, expected);
    let direct = pool
        .prove_circuits(&key, None, circuits.clone(), r_s.clone(), s_s.clone())
        .unwrap();
    assert_eq!(direct, expected);
    let shape = CircuitShape::record(FieldHeavy {
        steps: STEPS,
        start: None,
    })
    .unwrap();
    let shaped = pool
        .prove_circuits(&key, Some(&shape), circuits.clone(), r_s, s_s)
        .unwrap();
    assert_eq!(shaped, expected);
    assert_verifies(&key, &circuits, &shaped);

    let stats = pool.stats();
    assert_eq!(total_proofs(&pool), 24);
    for (i, worker) in stats.iter().enumerate() {
        assert_eq!(worker.worker, i);
        assert_eq!(worker.label, format!("cpu {i}"));
        assert_eq!(worker.ordinal, None);
        assert_eq!((worker.bytes_uploaded, worker.key_uploads), (0, 0));
        assert_eq!((worker.failures, worker.last_failure.clone()), (0, None));
        assert_eq!(worker.busy.is_zero(), worker.proofs == 0);
    }
}

#[test]
fn four_threads_share_two_workers() {
    let rounds = 3;
    let key = key(STEPS);
    let pool = ProverPool::cpu(2).unwrap(); // clones share the workers
    let threads: Vec<_> = (0..4)
        .map(|thread| {
            let (pool, key) = (pool.clone(), key.clone());
            std::thread::spawn(move || {
                for round in 0..rounds {
                    let circuits = circuits(10, STEPS);
                    let (r_s, s_s) = (scalars(10), scalars(10));
                    let proofs = if (thread + round) % 2 == 0 {
                        pool.prove_circuits(&key, None, circuits.clone(), r_s, s_s)
                    } else {
                        pool.prove_batch(&key, assignments(&circuits), r_s, s_s)
                    }
                    .unwrap();
                    assert_verifies(&key, &circuits, &proofs);
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let stats = pool.stats();
    assert_eq!(total_proofs(&pool), 4 * rounds as u64 * 10);
    for worker in &stats {
        assert!(worker.proofs > 0, "worker {} did no work", worker.label);
        assert!(!worker.busy.is_zero());
        assert_eq!(worker.failures, 0);
    }
    assert_eq!(pool.queued(), 0);
}

/// Each report's proof is the CPU prover's for the same inputs, and the
/// completion numbers are distinct.
fn assert_reports_prove(
    key: &ProvingKey,
    assignments: &[Assignment],
    r_s: &[Scalar],
    s_s: &[Scalar],
    reports: &[JobReport],
) {
    for (i, report) in reports.iter().enumerate() {
        let expected = prove(key, &assignments[i], r_s[i], s_s[i]).unwrap();
        assert_eq!(report.result.as_ref().unwrap(), &expected, "job {i}");
    }
    let mut completed: Vec<u64> = reports.iter().map(|r| r.completed).collect();
    completed.sort_unstable();
    completed.dedup();
    assert_eq!(completed.len(), reports.len());
}

#[test]
fn a_failed_worker_job_is_retried_on_another_worker() {
    let key = key(STEPS);
    let pool = ProverPool::cpu(2).unwrap();
    pool.inject_failures(0, 3);
    let assignments = assignments(&circuits(10, STEPS));
    let (r_s, s_s) = (scalars(10), scalars(10));
    let reports = pool
        .prove_batch_reports(&key, assignments.clone(), r_s.clone(), s_s.clone())
        .unwrap();
    assert_reports_prove(&key, &assignments, &r_s, &s_s, &reports);

    let retried: Vec<&JobReport> = reports.iter().filter(|r| r.attempts > 1).collect();
    assert_eq!(retried.len(), 3, "each injected failure costs one retry");
    for report in &retried {
        assert_eq!(report.attempts, 2);
        assert_eq!(report.worker, Some(1), "retried on the other worker");
    }
    let stats = pool.stats();
    assert_eq!(stats[0].failures, 3);
    assert!(stats[0]
        .last_failure
        .as_deref()
        .unwrap()
        .contains("injected failure"));
    assert_eq!(
        (stats[1].failures, stats[1].last_failure.clone()),
        (0, None)
    );
    // No proof lost or made twice.
    assert_eq!(total_proofs(&pool), 10);
    assert_eq!(
        reports.iter().filter(|r| r.worker == Some(0)).count() as u64,
        stats[0].proofs
    );
}

#[test]
fn a_lone_worker_retries_its_own_failures_up_to_the_limit() {
    let key = key(STEPS);
    let assignments = assignments(&circuits(4, STEPS));
    let (r_s, s_s) = (scalars(4), scalars(4));

    // Within the limit: the batch succeeds.
    let pool = ProverPool::cpu(1).unwrap();
    pool.inject_failures(0, 2);
    let proofs = pool
        .prove_batch(&key, assignments.clone(), r_s.clone(), s_s.clone())
        .unwrap();
    assert_eq!(proofs.len(), 4);
    assert_eq!(pool.stats()[0].failures, 2);
    assert_eq!(pool.stats()[0].proofs, 4);

    // Past it: jobs 0 and 1 use up 3 attempts each, job 2 fails once.
    let pool = ProverPool::cpu(1).unwrap().with_retry_limit(2);
    pool.inject_failures(0, 7);
    let reports = pool
        .prove_batch_reports(&key, assignments.clone(), r_s.clone(), s_s.clone())
        .unwrap();
    let attempts: Vec<u32> = reports.iter().map(|r| r.attempts).collect();
    assert_eq!(attempts, [3, 3, 2, 1]);
    for report in &reports[..2] {
        assert!(matches!(
            report.result,
            Err(Error::Pool(PoolError::WorkerFailed { .. }))
        ));
    }
    assert_reports_prove(&key, &assignments[2..], &r_s[2..], &s_s[2..], &reports[2..]);
    let stats = &pool.stats()[0];
    assert_eq!((stats.failures, stats.proofs), (7, 2));

    // prove_batch names the first failed job.
    pool.inject_failures(0, 3);
    match pool.prove_batch(&key, assignments, r_s, s_s) {
        Err(Error::Pool(PoolError::Job { index: 0, source })) => {
            assert!(matches!(
                *source,
                Error::Pool(PoolError::WorkerFailed { .. })
            ))
        }
        other => panic!("expected job 0 to fail, got {other:?}"),
    }
}

/// With the CPU fallback on (the default pool's setting), a job that
/// failed on the workers as often as its limit allows is proved on the
/// CPU: a proof with no worker named, the failures still counted.
#[test]
fn past_the_limit_the_cpu_proves_a_job_where_fallback_is_on() {
    let key = key(STEPS);
    let assignments = assignments(&circuits(3, STEPS));
    let (r_s, s_s) = (scalars(3), scalars(3));
    let pool = ProverPool::cpu(1)
        .unwrap()
        .with_retry_limit(1)
        .with_cpu_fallback(true);
    pool.inject_failures(0, 2);
    let reports = pool
        .prove_batch_reports(&key, assignments.clone(), r_s.clone(), s_s.clone())
        .unwrap();
    assert_reports_prove(&key, &assignments, &r_s, &s_s, &reports);
    let workers: Vec<Option<usize>> = reports.iter().map(|r| r.worker).collect();
    assert_eq!(workers, [None, Some(0), Some(0)], "job 0 on the CPU");
    assert_eq!(reports[0].attempts, 2);
    let stats = &pool.stats()[0];
    assert_eq!((stats.failures, stats.proofs), (2, 2));
}

/// The bellperson-shaped functions called from every thread of rayon's
/// global pool at once: their jobs' CPU proofs need that pool too, so the
/// waiting callers run its work meanwhile instead of starving it.
#[test]
fn calls_from_every_rayon_thread_finish() {
    use rayon::prelude::*;
    let key = key(STEPS);
    let calls = 2 * rayon::current_num_threads();
    let circuits = circuits(calls, STEPS);
    let proofs: Vec<Proof> = circuits
        .par_iter()
        .map(|circuit| groth16_gpu::create_random_proof(circuit.clone(), &key, &mut OsRng).unwrap())
        .collect();
    assert_verifies(&key, &circuits, &proofs);
}

#[test]
fn urgent_jobs_go_ahead_of_queued_batch_work() {
    let key = key(STEPS);
    let pool = Arc::new(ProverPool::cpu(1).unwrap());
    pool.pause(true);
    let submit = |n: usize, priority: Priority| {
        let (pool, key) = (pool.clone(), key.clone());
        std::thread::spawn(move || {
            let assignments = assignments(&circuits(n, STEPS));
            pool.with_priority(priority)
                .prove_batch_reports(&key, assignments, scalars(n), scalars(n))
                .unwrap()
        })
    };
    let batch = submit(6, Priority::Normal);
    wait_until("the batch is queued", || pool.queued() == 6);
    let urgent = submit(2, Priority::Urgent);
    wait_until("the urgent jobs are queued", || pool.queued() == 8);
    pool.pause(false);
    let (batch, urgent) = (batch.join().unwrap(), urgent.join().unwrap());

    let first_batch = batch.iter().map(|r| r.completed).min().unwrap();
    assert!(urgent.iter().all(|r| r.completed < first_batch));
    assert!(
        urgent[0].completed < urgent[1].completed,
        "urgent jobs in turn"
    );
    let order: Vec<u64> = batch.iter().map(|r| r.completed).collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "batch jobs in turn");
}

#[test]
fn an_urgent_job_overtakes_a_busy_worker_long_batch() {
    let jobs = 12;
    let key = key(STEPS);
    let pool = Arc::new(ProverPool::cpu(1).unwrap());
    let batch = {
        let (pool, key) = (pool.clone(), key.clone());
        std::thread::spawn(move || {
            let assignments = assignments(&circuits(jobs, STEPS));
            pool.prove_batch_reports(&key, assignments, scalars(jobs), scalars(jobs))
                .unwrap()
        })
    };
    wait_until("the worker is busy on the batch", || {
        total_proofs(&pool) >= 1
    });
    let done_before = total_proofs(&pool);
    let urgent = pool
        .with_priority(Priority::Urgent)
        .prove_batch_reports(
            &key,
            assignments(&circuits(1, STEPS)),
            scalars(1),
            scalars(1),
        )
        .unwrap();
    let batch = batch.join().unwrap();

    let urgent_done = urgent[0].completed;
    let before: u64 = batch.iter().filter(|r| r.completed < urgent_done).count() as u64;
    // Done before the urgent job: what was done when it came, the job then
    // running, and (for a slow submitting thread) one more at most.
    assert!(
        before <= done_before + 2,
        "{before} batch jobs finished before the urgent one; {done_before} were done when it came"
    );
    assert!(
        before < jobs as u64,
        "the urgent job waited for the whole batch"
    );
}

#[test]
fn a_job_that_fails_anywhere_fails_alone_and_is_not_retried() {
    let key = key(STEPS);
    let pool = ProverPool::cpu(2).unwrap();
    // Jobs 2 and 4 come from a circuit the key does not fit.
    let circuits = circuits(6, STEPS);
    let mut assignments = assignments(&circuits);
    for i in [2, 4] {
        assignments[i] = synthesize(FieldHeavy {
            steps: STEPS - 100,
            start: Some(Scalar::ONE),
        })
        .unwrap();
    }
    let (r_s, s_s) = (scalars(6), scalars(6));
    let reports = pool
        .prove_batch_reports(&key, assignments.clone(), r_s.clone(), s_s.clone())
        .unwrap();
    let pvk = prepare_verifying_key(&key.vk);
    for (i, report) in reports.iter().enumerate() {
        if i == 2 || i == 4 {
            assert!(matches!(report.result, Err(Error::KeyMismatch { .. })));
            assert_eq!((report.worker, report.attempts), (None, 0));
        } else {
            let proof = report.result.as_ref().unwrap();
            assert!(verify_proof(&pvk, proof, &[circuits[i].result()]).unwrap());
        }
    }
    let isolated = pool
        .prove_batch_isolated(&key, assignments.clone(), r_s.clone(), s_s.clone())
        .unwrap();
    let failed: Vec<usize> = (0..6).filter(|&i| isolated[i].is_err()).collect();
    assert_eq!(failed, [2, 4]);
    match pool.prove_batch(&key, assignments, r_s.clone(), s_s.clone()) {
        Err(Error::Pool(PoolError::Job { index: 2, source })) => {
            assert!(matches!(*source, Error::KeyMismatch { .. }))
        }
        other => panic!("expected job 2 to fail, got {other:?}"),
    }
    // Not the workers' failures: nothing retried, nothing counted.
    assert!(pool.stats().iter().all(|w| w.failures == 0));

    // Synthesis failures and panics on the submitting side.
    let mixed: Vec<Mixed> = circuits.iter().cloned().map(Mixed::Fine).collect();
    let mut mixed = mixed;
    mixed[1] = Mixed::Fails;
    mixed[3] = Mixed::Panics;
    // Directly, and through a shape (witnesses first, then evaluations).
    let shape = CircuitShape::record(FieldHeavy {
        steps: STEPS,
        start: None,
    })
    .unwrap();
    for shape in [None, Some(&shape)] {
        let reports = pool
            .prove_circuits_reports(&key, shape, mixed.clone(), r_s.clone(), s_s.clone())
            .unwrap();
        assert!(matches!(reports[1].result, Err(Error::Synthesis(_))));
        assert!(matches!(reports[3].result, Err(Error::CircuitPanicked(_))));
        for i in [0, 2, 4, 5] {
            let proof = reports[i].result.as_ref().unwrap();
            assert!(verify_proof(&pvk, proof, &[circuits[i].result()]).unwrap());
        }
        // The first failure in time stops the call and cancels what had not
        // started: job 1's or job 3's, whichever synthesis reached first.
        match pool.prove_circuits(&key, shape, mixed.clone(), r_s.clone(), s_s.clone()) {
            Err(Error::Pool(PoolError::Job { index: 1, source })) => {
                assert!(matches!(*source, Error::Synthesis(_)), "{source:?}")
            }
            Err(Error::Pool(PoolError::Job { index: 3, source })) => {
                assert!(matches!(*source, Error::CircuitPanicked(_)), "{source:?}")
            }
            other => panic!("expected job 1 or job 3 to fail, got {other:?}"),
        }
    }
}

#[test]
fn arguments_that_do_not_fit_are_refused() {
    assert!(matches!(
        ProverPool::cpu(0),
        Err(Error::Pool(PoolError::NoWorkers))
    ));
    let key = key(10);
    let pool = ProverPool::cpu(1).unwrap();
    let assignments = assignments(&circuits(2, 10));
    assert!(matches!(
        pool.prove_batch(&key, assignments, scalars(2), scalars(1)),
        Err(Error::InvalidBatch(_))
    ));
    assert_eq!(pool.prove_batch(&key, vec![], vec![], vec![]).unwrap(), []);
}

#[test]
fn dropping_the_pool_joins_its_workers() {
    let key = key(10);
    // Idle, paused, and after work; from the last thread holding it.
    drop(ProverPool::cpu(3).unwrap());
    let paused = ProverPool::cpu(2).unwrap();
    paused.pause(true);
    drop(paused);
    let pool = ProverPool::new().unwrap();
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let (pool, key) = (pool.clone(), key.clone());
            std::thread::spawn(move || {
                let circuits = circuits(3, 10);
                let proofs = pool
                    .prove_circuits(&key, None, circuits.clone(), scalars(3), scalars(3))
                    .unwrap();
                assert_verifies(&key, &circuits, &proofs);
            })
        })
        .collect();
    drop(pool);
    for thread in threads {
        thread.join().unwrap();
    }
}

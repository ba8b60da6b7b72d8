//! A batch's proofs handed out one at a time to the devices proving it:
//! each takes the next one nobody has taken, so a faster device (or one
//! whose key was already resident) proves more of them.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::device::GpuError;
use crate::Error;

/// The indices 0..len, each taken once, by any number of threads.
pub(crate) struct WorkQueue {
    next: AtomicUsize,
    len: usize,
    stopped: AtomicBool,
}

impl WorkQueue {
    pub fn new(len: usize) -> Self {
        Self {
            next: AtomicUsize::new(0),
            len,
            stopped: AtomicBool::new(false),
        }
    }

    /// The next index nobody has taken; None once all are taken or the
    /// queue was stopped.
    pub fn take(&self) -> Option<usize> {
        if self.stopped.load(Ordering::Relaxed) {
            return None;
        }
        let index = self.next.fetch_add(1, Ordering::Relaxed);
        (index < self.len).then_some(index)
    }

    /// No more indices for anyone: one device failed, so the batch fails
    /// and the others stop after their proofs in flight.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
    }
}

/// The items proved by each device, by index, back in index order; None
/// where an index is missing (or came twice).
pub(crate) fn in_order<T>(len: usize, parts: Vec<Vec<(usize, T)>>) -> Option<Vec<T>> {
    let mut slots: Vec<Option<T>> = (0..len).map(|_| None).collect();
    for (index, item) in parts.into_iter().flatten() {
        let slot = slots.get_mut(index)?;
        if slot.replace(item).is_some() {
            return None;
        }
    }
    slots.into_iter().collect()
}

/// Shares a batch of `len` items out among workers: `first` opens one on
/// this thread, each of `helpers` one on a thread of its own (`None`: that
/// worker cannot take part), and every open worker runs `work` with the
/// queue, taking items until none is left. The items come back in order;
/// `None` when no worker opened. The first error (in the order of the
/// workers) fails the batch and stops the queue, so the others end after
/// the item in hand; a worker that panics is an error, as promptly.
pub(crate) fn share_out<S, T: Send>(
    len: usize,
    first: impl FnOnce() -> Result<Option<S>, Error>,
    helpers: Vec<impl FnOnce() -> Result<Option<S>, Error> + Send>,
    work: impl Fn(&mut S, &WorkQueue) -> Result<Vec<(usize, T)>, Error> + Sync,
) -> Result<Option<Vec<T>>, Error> {
    let queue = WorkQueue::new(len);
    let work = &work;
    let queue = &queue;
    let shares = std::thread::scope(|scope| {
        let helping: Vec<_> = helpers
            .into_iter()
            .map(|open| scope.spawn(move || run_worker(open, work, queue)))
            .collect();
        let mut shares = vec![run_worker(first, work, queue)];
        shares.extend(
            helping
                .into_iter()
                .map(|helper| helper.join().unwrap_or_else(|_| Err(share_panicked()))),
        );
        shares
    });
    let mut done = Vec::new();
    for share in shares {
        done.extend(share?);
    }
    if done.is_empty() {
        return Ok(None);
    }
    in_order(len, done)
        .map(Some)
        .ok_or_else(|| GpuError::Native("a batch's proofs did not all come back".into()).into())
}

/// One worker's part of [`share_out`]: opens it and runs `work`; a failure
/// or a panic stops the queue for everyone.
fn run_worker<S, T>(
    open: impl FnOnce() -> Result<Option<S>, Error>,
    work: &impl Fn(&mut S, &WorkQueue) -> Result<Vec<(usize, T)>, Error>,
    queue: &WorkQueue,
) -> Result<Option<Vec<(usize, T)>>, Error> {
    let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match open()? {
        Some(mut worker) => work(&mut worker, queue).map(Some),
        None => Ok(None),
    }))
    .unwrap_or_else(|_| Err(share_panicked()));
    if done.is_err() {
        queue.stop();
    }
    done
}

fn share_panicked() -> Error {
    GpuError::Native("a device's share of a batch panicked".into()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A worker that doubles what it takes, failing or panicking after so
    /// many items on request, and counts what it did.
    struct Doubler {
        fail_after: Option<usize>,
        panic_after: Option<usize>,
        done: std::sync::Arc<AtomicUsize>,
    }

    impl Doubler {
        fn new(done: &std::sync::Arc<AtomicUsize>) -> Self {
            Self {
                fail_after: None,
                panic_after: None,
                done: done.clone(),
            }
        }

        fn work(&mut self, queue: &WorkQueue) -> Result<Vec<(usize, usize)>, Error> {
            let mut out = Vec::new();
            while let Some(index) = queue.take() {
                if self.fail_after == Some(out.len()) {
                    return Err(GpuError::Native(format!("failed after {}", out.len())).into());
                }
                assert_ne!(self.panic_after, Some(out.len()), "asked to panic");
                std::thread::sleep(std::time::Duration::from_micros(200));
                self.done.fetch_add(1, Ordering::Relaxed);
                out.push((index, index * 2));
            }
            Ok(out)
        }
    }

    type Opener = Box<dyn FnOnce() -> Result<Option<Doubler>, Error> + Send>;

    fn opener(worker: Option<Doubler>) -> Opener {
        Box::new(move || Ok(worker))
    }

    #[test]
    fn workers_share_a_batch_and_it_comes_back_in_order() {
        let counts: Vec<_> = (0..3)
            .map(|_| std::sync::Arc::new(AtomicUsize::new(0)))
            .collect();
        let helpers = vec![
            opener(Some(Doubler::new(&counts[1]))),
            opener(Some(Doubler::new(&counts[2]))),
        ];
        let out = share_out(
            300,
            || Ok(Some(Doubler::new(&counts[0]))),
            helpers,
            Doubler::work,
        )
        .unwrap()
        .expect("workers opened");
        assert_eq!(out, (0..300).map(|i| 2 * i).collect::<Vec<_>>());
        let done: Vec<usize> = counts.iter().map(|c| c.load(Ordering::Relaxed)).collect();
        assert_eq!(done.iter().sum::<usize>(), 300);
        assert!(
            done.iter().all(|&n| n > 0),
            "a worker did nothing: {done:?}"
        );
    }

    #[test]
    fn workers_that_cannot_open_leave_the_batch_to_the_others() {
        let count = std::sync::Arc::new(AtomicUsize::new(0));
        let helpers = vec![opener(None), opener(Some(Doubler::new(&count)))];
        let out = share_out(20, || Ok(None), helpers, Doubler::work).unwrap();
        assert_eq!(out, Some((0..20).map(|i| 2 * i).collect()));
        assert_eq!(count.load(Ordering::Relaxed), 20);
        // Nobody opened: the caller proves elsewhere.
        let none = share_out(5, || Ok(None::<Doubler>), vec![opener(None)], Doubler::work);
        assert!(matches!(none, Ok(None)));
    }

    #[test]
    fn one_failure_fails_the_batch_and_stops_the_others() {
        let counts: Vec<_> = (0..2)
            .map(|_| std::sync::Arc::new(AtomicUsize::new(0)))
            .collect();
        let mut failing = Doubler::new(&counts[1]);
        failing.fail_after = Some(5);
        let result = share_out(
            10_000,
            || Ok(Some(Doubler::new(&counts[0]))),
            vec![opener(Some(failing))],
            Doubler::work,
        );
        match result {
            Err(Error::Gpu(GpuError::Native(message))) => assert_eq!(message, "failed after 5"),
            other => panic!("expected the helper's failure, got {other:?}"),
        }
        let done: usize = counts.iter().map(|c| c.load(Ordering::Relaxed)).sum();
        // Generous bounds: the failure came ~1 ms in, the batch is ~2 s of work.
        assert!(done < 9_000, "the others went on after the failure: {done}");
        // An opener's own error fails the batch too.
        let refused: Opener = Box::new(|| Err(GpuError::Native("no room".into()).into()));
        assert!(share_out(3, || Ok(None::<Doubler>), vec![refused], Doubler::work).is_err());
    }

    #[test]
    fn a_worker_that_panics_is_an_error_and_stops_the_others() {
        let counts: Vec<_> = (0..2)
            .map(|_| std::sync::Arc::new(AtomicUsize::new(0)))
            .collect();
        let mut panicking = Doubler::new(&counts[1]);
        panicking.panic_after = Some(3);
        let result = share_out(
            10_000,
            || Ok(Some(Doubler::new(&counts[0]))),
            vec![opener(Some(panicking))],
            Doubler::work,
        );
        assert!(
            matches!(result, Err(Error::Gpu(GpuError::Native(ref m))) if m.contains("panicked")),
            "{result:?}"
        );
        let done: usize = counts.iter().map(|c| c.load(Ordering::Relaxed)).sum();
        assert!(done < 9_000, "the others went on after the panic: {done}");
    }

    #[test]
    fn every_index_is_taken_once_across_threads() {
        let queue = WorkQueue::new(10_000);
        let parts: Vec<Vec<(usize, usize)>> = std::thread::scope(|scope| {
            let takers: Vec<_> = (0..4)
                .map(|_| {
                    scope.spawn(|| {
                        std::iter::from_fn(|| queue.take())
                            .map(|index| (index, index * 2))
                            .collect()
                    })
                })
                .collect();
            takers.into_iter().map(|t| t.join().unwrap()).collect()
        });
        let merged = in_order(10_000, parts).expect("each index once");
        assert!(merged.iter().enumerate().all(|(i, v)| *v == 2 * i));
        assert_eq!(queue.take(), None);
    }

    #[test]
    fn a_stopped_queue_hands_out_nothing_more() {
        let queue = WorkQueue::new(5);
        assert_eq!(queue.take(), Some(0));
        queue.stop();
        assert_eq!(queue.take(), None);
        assert_eq!(WorkQueue::new(0).take(), None);
    }

    #[test]
    fn missing_or_repeated_indices_are_no_batch() {
        assert_eq!(
            in_order(3, vec![vec![(2, 'c'), (0, 'a')], vec![(1, 'b')]]),
            Some(vec!['a', 'b', 'c'])
        );
        assert_eq!(in_order(3, vec![vec![(0, 'a'), (2, 'c')]]), None);
        assert_eq!(
            in_order(2, vec![vec![(0, 'a'), (1, 'b')], vec![(1, 'b')]]),
            None
        );
        assert_eq!(in_order(1, vec![vec![(0, 'a'), (5, 'x')]]), None);
        assert_eq!(in_order::<char>(0, Vec::new()), Some(Vec::new()));
    }
}

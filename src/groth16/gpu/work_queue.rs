//! A batch's proofs handed out one at a time to the devices proving it:
//! each takes the next one nobody has taken, so a faster device (or one
//! whose key was already resident) proves more of them, and a device that
//! fails hands what it had in hand back to the others.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use parking_lot::Mutex;

use crate::device::GpuError;
use crate::Error;

/// The indices 0..len, each taken once (again if given back), by any
/// number of threads.
pub(crate) struct WorkQueue {
    next: AtomicUsize,
    len: usize,
    stopped: AtomicBool,
    given_back: Mutex<Vec<usize>>,
}

impl WorkQueue {
    pub fn new(len: usize) -> Self {
        Self {
            next: AtomicUsize::new(0),
            len,
            stopped: AtomicBool::new(false),
            given_back: Mutex::new(Vec::new()),
        }
    }

    /// The next index nobody holds (one given back first); None once all
    /// are taken or the queue was stopped.
    pub fn take(&self) -> Option<usize> {
        if self.stopped.load(Ordering::Relaxed) {
            return None;
        }
        if let Some(index) = self.given_back.lock().pop() {
            return Some(index);
        }
        let index = self.next.fetch_add(1, Ordering::Relaxed);
        (index < self.len).then_some(index)
    }

    /// Indices a worker took and cannot finish, for the others to take.
    pub fn give_back(&self, indices: &[usize]) {
        self.given_back.lock().extend_from_slice(indices);
    }

    /// No more indices for anyone: one device failed, so the batch fails
    /// and the others stop after their proofs in flight.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
    }
}

/// The items made by each worker, by index, back in index order (None
/// where nobody made one); None where an index is out of range or came
/// twice.
pub(crate) fn in_order<T>(len: usize, parts: Vec<Vec<(usize, T)>>) -> Option<Vec<Option<T>>> {
    let mut slots: Vec<Option<T>> = (0..len).map(|_| None).collect();
    for (index, item) in parts.into_iter().flatten() {
        let slot = slots.get_mut(index)?;
        if slot.replace(item).is_some() {
            return None;
        }
    }
    Some(slots)
}

/// How a worker's share of a batch ended, short of an error that fails
/// the whole batch.
pub(crate) enum ShareEnd<T> {
    /// It took items until none was left.
    Done(Vec<(usize, T)>),
    /// Its device failed: what it made before, the items it had taken and
    /// not made (given back to the queue), and why.
    DeviceFailed {
        made: Vec<(usize, T)>,
        in_hand: Vec<usize>,
        error: Error,
    },
}

/// Shares a batch of `len` items out among workers: `first` opens one on
/// this thread, each of `helpers` one on a thread of its own (`None`: that
/// worker cannot take part), and every open worker runs `work` with the
/// queue, taking items until none is left. A worker whose device fails
/// gives back what it had in hand and leaves; the others take it. The
/// items come back in order, None for those nobody made (no worker
/// opened, or the last ones failed): the caller makes them elsewhere. The
/// first error (in the order of the workers) fails the batch and stops the
/// queue, so the others end after the item in hand; a worker that panics
/// is an error, as promptly.
pub(crate) fn share_out<S, T: Send>(
    len: usize,
    first: impl FnOnce() -> Result<Option<S>, Error>,
    helpers: Vec<impl FnOnce() -> Result<Option<S>, Error> + Send>,
    work: impl Fn(&mut S, &WorkQueue) -> Result<ShareEnd<T>, Error> + Sync,
) -> Result<Vec<Option<T>>, Error> {
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
    let mut made = Vec::new();
    for share in shares {
        made.push(share?);
    }
    in_order(len, made)
        .ok_or_else(|| GpuError::Native("a batch's proofs came back twice".into()).into())
}

/// One worker's part of [`share_out`]: opens it and runs `work`; a failure
/// or a panic stops the queue for everyone.
fn run_worker<S, T>(
    open: impl FnOnce() -> Result<Option<S>, Error>,
    work: &impl Fn(&mut S, &WorkQueue) -> Result<ShareEnd<T>, Error>,
    queue: &WorkQueue,
) -> Result<Vec<(usize, T)>, Error> {
    let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let Some(mut worker) = open()? else {
            return Ok(Vec::new());
        };
        match work(&mut worker, queue)? {
            ShareEnd::Done(made) => Ok(made),
            ShareEnd::DeviceFailed {
                made,
                in_hand,
                error,
            } => {
                log::warn!(
                    "a device failed after {} proof(s) of a batch ({error}); the others take its {} in hand",
                    made.len(),
                    in_hand.len()
                );
                queue.give_back(&in_hand);
                Ok(made)
            }
        }
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
    use std::sync::Arc;

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
        assert!(merged.iter().enumerate().all(|(i, v)| *v == Some(2 * i)));
        assert_eq!(queue.take(), None);
    }

    #[test]
    fn given_back_indices_are_taken_again_and_a_stopped_queue_hands_out_none() {
        let queue = WorkQueue::new(3);
        assert_eq!((queue.take(), queue.take()), (Some(0), Some(1)));
        queue.give_back(&[0]);
        assert_eq!(queue.take(), Some(0));
        assert_eq!(queue.take(), Some(2));
        assert_eq!(queue.take(), None);
        queue.give_back(&[1]);
        queue.stop();
        assert_eq!(queue.take(), None);
        assert_eq!(WorkQueue::new(0).take(), None);
    }

    #[test]
    fn missing_indices_are_none_and_repeated_ones_no_batch() {
        let parts = vec![vec![(2, 'c'), (0, 'a')], vec![(1, 'b')]];
        assert_eq!(
            in_order(3, parts),
            Some(vec![Some('a'), Some('b'), Some('c')])
        );
        assert_eq!(
            in_order(3, vec![vec![(0, 'a'), (2, 'c')]]),
            Some(vec![Some('a'), None, Some('c')])
        );
        assert_eq!(
            in_order(2, vec![vec![(0, 'a'), (1, 'b')], vec![(1, 'b')]]),
            None
        );
        assert_eq!(in_order(1, vec![vec![(0, 'a'), (5, 'x')]]), None);
        assert_eq!(in_order::<char>(0, Vec::new()), Some(Vec::new()));
    }

    /// A worker that doubles what it takes; on request, after so many
    /// items, its device fails, or it fails the batch, or it panics.
    #[derive(Default)]
    struct Doubler {
        device_fails_after: Option<usize>,
        fails_after: Option<usize>,
        panics_after: Option<usize>,
        done: Arc<AtomicUsize>,
    }

    impl Doubler {
        fn counting(done: &Arc<AtomicUsize>) -> Self {
            Self {
                done: done.clone(),
                ..Self::default()
            }
        }

        fn work(&mut self, queue: &WorkQueue) -> Result<ShareEnd<usize>, Error> {
            let mut made = Vec::new();
            while let Some(index) = queue.take() {
                if self.device_fails_after == Some(made.len()) {
                    return Ok(ShareEnd::DeviceFailed {
                        made,
                        in_hand: vec![index],
                        error: GpuError::Native("device lost".into()).into(),
                    });
                }
                if self.fails_after == Some(made.len()) {
                    return Err(GpuError::Native(format!("failed after {}", made.len())).into());
                }
                assert_ne!(self.panics_after, Some(made.len()), "asked to panic");
                std::thread::sleep(std::time::Duration::from_micros(200));
                self.done.fetch_add(1, Ordering::Relaxed);
                made.push((index, index * 2));
            }
            Ok(ShareEnd::Done(made))
        }
    }

    type Opener = Box<dyn FnOnce() -> Result<Option<Doubler>, Error> + Send>;

    fn opener(worker: Option<Doubler>) -> Opener {
        Box::new(move || Ok(worker))
    }

    fn counters(n: usize) -> Vec<Arc<AtomicUsize>> {
        (0..n).map(|_| Arc::new(AtomicUsize::new(0))).collect()
    }

    fn doubled(len: usize) -> Vec<Option<usize>> {
        (0..len).map(|i| Some(2 * i)).collect()
    }

    #[test]
    fn workers_share_a_batch_and_it_comes_back_in_order() {
        let counts = counters(3);
        let helpers = vec![
            opener(Some(Doubler::counting(&counts[1]))),
            opener(Some(Doubler::counting(&counts[2]))),
        ];
        let first = || Ok(Some(Doubler::counting(&counts[0])));
        let out = share_out(300, first, helpers, Doubler::work).unwrap();
        assert_eq!(out, doubled(300));
        let done: Vec<usize> = counts.iter().map(|c| c.load(Ordering::Relaxed)).collect();
        assert_eq!(done.iter().sum::<usize>(), 300);
        assert!(
            done.iter().all(|&n| n > 0),
            "a worker did nothing: {done:?}"
        );
    }

    #[test]
    fn workers_that_cannot_open_leave_the_batch_to_the_others() {
        let count = Arc::new(AtomicUsize::new(0));
        let helpers = vec![opener(None), opener(Some(Doubler::counting(&count)))];
        let out = share_out(20, || Ok(None), helpers, Doubler::work).unwrap();
        assert_eq!(out, doubled(20));
        assert_eq!(count.load(Ordering::Relaxed), 20);
        // Nobody opened: every item is left to the caller.
        let none = share_out(5, || Ok(None::<Doubler>), vec![opener(None)], Doubler::work);
        assert_eq!(none.unwrap(), vec![None; 5]);
    }

    #[test]
    fn a_failed_device_leaves_its_items_to_the_others() {
        let counts = counters(2);
        let failing = Doubler {
            device_fails_after: Some(3),
            ..Doubler::counting(&counts[0])
        };
        let helpers = vec![opener(Some(Doubler::counting(&counts[1])))];
        let out = share_out(200, || Ok(Some(failing)), helpers, Doubler::work).unwrap();
        assert_eq!(out, doubled(200));
        assert_eq!(counts[0].load(Ordering::Relaxed), 3);
        assert_eq!(counts[1].load(Ordering::Relaxed), 197);
    }

    #[test]
    fn items_of_a_failed_device_nobody_can_take_are_left_to_the_caller() {
        let count = Arc::new(AtomicUsize::new(0));
        let failing = Doubler {
            device_fails_after: Some(4),
            ..Doubler::counting(&count)
        };
        let no_helpers: Vec<Opener> = Vec::new();
        let out = share_out(10, || Ok(Some(failing)), no_helpers, Doubler::work).unwrap();
        let made: Vec<Option<usize>> = (0..10).map(|i| (i < 4).then_some(2 * i)).collect();
        assert_eq!(out, made);
    }

    #[test]
    fn one_failure_fails_the_batch_and_stops_the_others() {
        let counts = counters(2);
        let failing = Doubler {
            fails_after: Some(5),
            ..Doubler::counting(&counts[1])
        };
        let first = || Ok(Some(Doubler::counting(&counts[0])));
        let result = share_out(10_000, first, vec![opener(Some(failing))], Doubler::work);
        match result {
            Err(Error::Gpu(GpuError::Native(message))) => assert_eq!(message, "failed after 5"),
            other => panic!("expected the helper's failure, got {other:?}"),
        }
        // Generous bounds: the failure came ~1 ms in, the batch is ~2 s of work.
        let done: usize = counts.iter().map(|c| c.load(Ordering::Relaxed)).sum();
        assert!(done < 9_000, "the others went on after the failure: {done}");
        // An opener's own error fails the batch too.
        let refused: Opener = Box::new(|| Err(GpuError::Native("no room".into()).into()));
        assert!(share_out(3, || Ok(None::<Doubler>), vec![refused], Doubler::work).is_err());
    }

    #[test]
    fn a_worker_that_panics_is_an_error_and_stops_the_others() {
        let counts = counters(2);
        let panicking = Doubler {
            panics_after: Some(3),
            ..Doubler::counting(&counts[1])
        };
        let first = || Ok(Some(Doubler::counting(&counts[0])));
        let result = share_out(10_000, first, vec![opener(Some(panicking))], Doubler::work);
        assert!(
            matches!(result, Err(Error::Gpu(GpuError::Native(ref m))) if m.contains("panicked")),
            "{result:?}"
        );
        let done: usize = counts.iter().map(|c| c.load(Ordering::Relaxed)).sum();
        assert!(done < 9_000, "the others went on after the panic: {done}");
    }
}

//! The queue every worker takes jobs from: urgent jobs first, then the rest,
//! each in the order they came; a job retried after a worker failure goes
//! to the front of its class, for a worker that has not failed it.

use std::collections::VecDeque;

use parking_lot::{Condvar, Mutex};

use super::batch::Reply;
use super::work::Work;
use crate::groth16::Priority;

/// One proof to make, with where its result goes.
pub(super) struct Job {
    pub work: Work,
    pub priority: Priority,
    /// Workers whose attempt failed, each once.
    pub failed_on: Vec<usize>,
    /// Attempts made so far.
    pub attempts: u32,
    /// Attempts after the first that a worker failure may cost.
    pub retry_limit: u32,
    /// Whether the CPU proves the job once those are spent.
    pub cpu_fallback: bool,
    pub reply: Reply,
}

impl Job {
    /// Whether `worker`, one of `workers`, may take this job: not one that
    /// failed it, unless every worker has.
    fn is_for(&self, worker: usize, workers: usize) -> bool {
        !self.failed_on.contains(&worker) || self.failed_on.len() >= workers
    }
}

struct QueueState {
    urgent: VecDeque<Job>,
    normal: VecDeque<Job>,
    /// No more jobs come; workers leave once nothing is left for them.
    closed: bool,
    /// Workers take nothing while set (a test hook), unless closed.
    paused: bool,
}

impl QueueState {
    fn class(&mut self, priority: Priority) -> &mut VecDeque<Job> {
        match priority {
            Priority::Urgent => &mut self.urgent,
            Priority::Normal => &mut self.normal,
        }
    }

    /// Takes the first job `worker` may take, urgent ones first.
    fn take_for(&mut self, worker: usize, workers: usize) -> Option<Job> {
        for class in [&mut self.urgent, &mut self.normal] {
            if let Some(position) = class.iter().position(|job| job.is_for(worker, workers)) {
                return class.remove(position);
            }
        }
        None
    }
}

/// The jobs waiting for a worker, shared by the pool and its workers.
pub(super) struct JobQueue {
    state: Mutex<QueueState>,
    ready: Condvar,
    workers: usize,
}

impl JobQueue {
    pub fn new(workers: usize) -> Self {
        Self {
            state: Mutex::new(QueueState {
                urgent: VecDeque::new(),
                normal: VecDeque::new(),
                closed: false,
                paused: false,
            }),
            ready: Condvar::new(),
            workers,
        }
    }

    /// Queues a new job behind the others of its priority.
    pub fn push(&self, job: Job) {
        job.reply.batch().note_queued();
        let mut state = self.state.lock();
        state.class(job.priority).push_back(job);
        self.ready.notify_all();
    }

    /// Queues a job again after a failed attempt, ahead of the others of
    /// its priority (it came before them).
    pub fn push_front(&self, job: Job) {
        job.reply.batch().note_queued();
        let mut state = self.state.lock();
        state.class(job.priority).push_front(job);
        self.ready.notify_all();
    }

    /// Waits for a job `worker` may take; `None` once the queue is closed
    /// and nothing is left for this worker.
    pub fn pop_for(&self, worker: usize) -> Option<Job> {
        let mut state = self.state.lock();
        loop {
            if !state.paused || state.closed {
                if let Some(job) = state.take_for(worker, self.workers) {
                    drop(state);
                    return Some(Self::taken(job));
                }
                if state.closed {
                    return None;
                }
            }
            self.ready.wait(&mut state);
        }
    }

    /// A job `worker` may take now, if there is one; never waits.
    pub fn try_pop_for(&self, worker: usize) -> Option<Job> {
        let mut state = self.state.lock();
        if state.paused && !state.closed {
            return None;
        }
        let job = state.take_for(worker, self.workers)?;
        drop(state);
        Some(Self::taken(job))
    }

    /// Tells the job's batch (outside the queue's lock) that it was taken.
    fn taken(job: Job) -> Job {
        job.reply.batch().note_taken();
        job
    }

    /// Lets the workers leave once the queue is empty.
    pub fn close(&self) {
        self.state.lock().closed = true;
        self.ready.notify_all();
    }

    /// Stops or resumes handing out jobs.
    pub fn set_paused(&self, paused: bool) {
        self.state.lock().paused = paused;
        self.ready.notify_all();
    }

    /// Jobs waiting for a worker.
    pub fn len(&self) -> usize {
        let state = self.state.lock();
        state.urgent.len() + state.normal.len()
    }
}

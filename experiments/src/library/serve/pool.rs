//! The bounded pool that encodes and searches for `arbor serve`: a fixed number of threads (the cores by
//! default) taking work from a queue of bounded length. A burst of requests waits in the queue instead of
//! oversubscribing the cores; a request that finds the queue full is refused at once ([`Busy`]: the server
//! answers 503 with Retry-After) instead of waiting for as long as the burst lasts. A job that panics
//! loses its own answer (its receiver sees the sender dropped), never a worker.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::oneshot;

type Job = Box<dyn FnOnce() + Send>;

/// Work refused because every worker is busy and the queue is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Busy;

pub struct Pool {
    sender: SyncSender<Job>,
    workers: usize,
    queue: usize,
    /// Jobs accepted that no worker has taken yet.
    waiting: Arc<AtomicUsize>,
    /// Jobs refused as [`Busy`] since the start.
    refused: AtomicU64,
}

impl Pool {
    /// `workers` threads (at least one) and room for `queue` jobs waiting beside those running (0: a job
    /// is accepted only when a worker is free to take it).
    pub fn new(workers: usize, queue: usize) -> std::io::Result<Pool> {
        let workers = workers.max(1);
        let (sender, receiver) = sync_channel::<Job>(queue);
        let receiver = Arc::new(Mutex::new(receiver));
        let waiting = Arc::new(AtomicUsize::new(0));
        for i in 0..workers {
            let (receiver, waiting) = (Arc::clone(&receiver), Arc::clone(&waiting));
            std::thread::Builder::new().name(format!("arbor-serve-{i}")).spawn(move || work(&receiver, &waiting))?;
        }
        Ok(Pool { sender, workers, queue, waiting, refused: AtomicU64::new(0) })
    }

    /// Runs `job` on a worker; its result comes back through the receiver (dropped unanswered if the
    /// job panics). [`Busy`] when the queue is full.
    pub fn submit<T: Send + 'static>(&self, job: impl FnOnce() -> T + Send + 'static) -> Result<oneshot::Receiver<T>, Busy> {
        let (answer, receiver) = oneshot::channel();
        let boxed: Job = Box::new(move || {
            // The requester may have gone (its deadline passed): the answer is dropped.
            let _ = answer.send(job());
        });
        self.waiting.fetch_add(1, Ordering::SeqCst);
        match self.sender.try_send(boxed) {
            Ok(()) => Ok(receiver),
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.waiting.fetch_sub(1, Ordering::SeqCst);
                self.refused.fetch_add(1, Ordering::Relaxed);
                Err(Busy)
            }
        }
    }

    pub fn workers(&self) -> usize {
        self.workers
    }

    /// The queue's length, beside the jobs running.
    pub fn queue(&self) -> usize {
        self.queue
    }

    /// Jobs accepted and not yet taken by a worker.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::SeqCst)
    }

    /// Jobs refused since the start.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }
}

fn work(receiver: &Mutex<Receiver<Job>>, waiting: &AtomicUsize) {
    loop {
        // One worker waits on the channel at a time; the others wait for the lock.
        let job = receiver.lock().unwrap_or_else(PoisonError::into_inner).recv();
        let Ok(job) = job else { return };
        waiting.fetch_sub(1, Ordering::SeqCst);
        // A panicking job drops its answer's sender: its request is answered 500, the worker goes on.
        let _ = catch_unwind(AssertUnwindSafe(job));
    }
}

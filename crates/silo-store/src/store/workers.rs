//! The store's background threads as the other parts see them: the shutdown flag, and how to
//! wake the dispatcher, the flusher and the segment allocator. A leaf: it knows nothing of the
//! parts it wakes.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::Thread;

#[derive(Debug, Default)]
pub(crate) struct Workers {
    pub(crate) shutdown: AtomicBool,
    pub(crate) dispatcher: OnceLock<Thread>,
    /// Set while the dispatcher sleeps for long (idle store): only then do appenders wake it.
    pub(crate) dispatcher_sleeping: AtomicBool,
    pub(crate) flusher: OnceLock<Thread>,
    pub(crate) queue_flusher: OnceLock<Thread>,
    pub(crate) allocator: OnceLock<Thread>,
    pub(crate) allocation_wanted: AtomicBool,
}

impl Workers {
    pub(crate) fn is_shut_down(&self) -> bool {
        self.shutdown.load(Ordering::Acquire)
    }

    /// Called after every append: a syscall only when the dispatcher sleeps for long. Under
    /// load it polls every millisecond (as Java's reput service does), so appends never wake
    /// it one by one.
    pub(crate) fn wake_dispatcher(&self) {
        std::sync::atomic::fence(Ordering::SeqCst);
        if self.dispatcher_sleeping.load(Ordering::SeqCst)
            && let Some(t) = self.dispatcher.get()
        {
            t.unpark();
        }
    }

    pub(crate) fn force_wake_dispatcher(&self) {
        if let Some(t) = self.dispatcher.get() {
            t.unpark();
        }
    }

    pub(crate) fn request_allocation(&self) {
        self.allocation_wanted.store(true, Ordering::Release);
        if let Some(t) = self.allocator.get() {
            t.unpark();
        }
    }
}

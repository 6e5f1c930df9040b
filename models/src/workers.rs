//! Keeping rayon's workers awake through a run of many small products.
//!
//! A decoding step runs ~200 small products with single-thread operations between them; a worker
//! that went to sleep between two products is woken by the kernel for each (the scheduler took
//! 17 % of a SmolLM2 step's time). llama.cpp's threads spin between operations instead;
//! [`with_workers_awake`] has rayon's do the same while a piece of work runs.

use std::sync::atomic::{AtomicBool, Ordering};

use burn::tensor::Device;

/// Whether `device` computes on this process's rayon threads: flex (its products of few rows
/// split their columns over them). burn-dispatch names its devices' variants behind features this
/// crate does not turn on, so flex's device is told by its `Debug` form.
pub(crate) fn computes_on_rayon(device: &Device) -> bool {
    format!("{device:?}").contains("Flex")
}

/// Runs `work` on a worker of rayon's pool while the pool's other workers stay awake: each runs
/// a job that takes the pool's pending jobs (the products' chunks) as they appear and spins
/// between them, until `work` returns. Called on one of the pool's threads (inside an enclosing
/// call, or a job of the caller's), it runs `work` there as it is.
pub(crate) fn with_workers_awake<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    if rayon::current_thread_index().is_some() {
        return work();
    }
    let done = AtomicBool::new(false);
    rayon::scope(|scope| {
        let (home, done) = (rayon::current_thread_index(), &done);
        for _ in 1..rayon::current_num_threads() {
            scope.spawn(move |_| {
                // Taken back by the thread running `work` (while it waits in a join): return, or
                // it would spin for its own end.
                if rayon::current_thread_index() == home {
                    return;
                }
                while !done.load(Ordering::Acquire) {
                    if rayon::yield_now() != Some(rayon::Yield::Executed) {
                        std::hint::spin_loop();
                    }
                }
            });
        }
        let result = work();
        done.store(true, Ordering::Release);
        result
    })
}

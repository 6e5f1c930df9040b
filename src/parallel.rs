//! Work spread over the CPU's cores where the backend would leave them idle. flex and ndarray
//! run most of their kernels on one thread, so independent pieces of work (the parts of a
//! training batch, groups of sentences to translate or embed) run at once on rayon's threads
//! there; LibTorch and the GPUs spread each op over their cores already, and take the pieces one
//! after another.

use burn::tensor::Device;
use rayon::prelude::*;

use crate::error::Result;

/// How many pieces a batch is worth cutting into on `device`: one per rayon thread on flex and
/// ndarray, else one.
pub fn pieces(device: &Device) -> usize {
    if attnzoo_backends::runs_ops_on_one_thread(device) {
        rayon::current_num_threads()
    } else {
        1
    }
}

/// `work` applied to each item, the results in the items' order: at once on rayon's threads on
/// flex and ndarray, one after another elsewhere. The first error (in item order) is returned.
pub fn map_in_order<T, R, F>(device: &Device, items: Vec<T>, work: F) -> Result<Vec<R>>
where
    T: Send,
    R: Send,
    F: Fn(T) -> Result<R> + Sync + Send,
{
    if attnzoo_backends::runs_ops_on_one_thread(device) {
        items.into_par_iter().map(work).collect()
    } else {
        items.into_iter().map(work).collect()
    }
}

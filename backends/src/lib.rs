#![doc = include_str!("../README.md")]
//!
//! Items: [`Backend`] and [`DeviceSpec`] name a device, [`Backend::open`] and [`Backend::auto`]
//! open one, [`probe_all`] says which backends this build can use, [`test_devices`] gives tests
//! every usable device, a [`BackendError`] says in one line why a backend cannot be used, and
//! [`keep_freed_memory`] keeps the host memory that flex and ndarray free for their next tensors,
//! and [`ZeroWritingAllocator`] writes the zeros of zeroed memory instead of leaving fresh pages
//! for the kernel to map.
#![warn(missing_docs)]

mod backend;
mod memory;
mod open;
mod probe;
mod spec;
mod testing;

pub use backend::{runs_ops_on_one_thread, Backend, BackendError, DeviceArgs};
pub use memory::{
    keep_freed_memory, peak_resident_mib, release_freed_memory, ZeroWritingAllocator,
};
pub use probe::{probe, probe_all, Probe};
pub use spec::DeviceSpec;
pub use testing::{test_devices, TestDevice};

pub use burn::tensor::Device;

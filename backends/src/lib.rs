//! Run-time backend selection for attnzoo.
//!
//! Burn 0.22 modules are not generic over a backend: the backend is chosen by the
//! [`Device`] a tensor lives on. This crate turns a user's choice — a [`Backend`] name and
//! a device spec such as `cpu`, `gpu:1` or `cuda:0` — into that `Device`, says which
//! backends this build can really use ([`probe_all`]), and gives tests one list of every
//! usable device ([`test_devices`]).
//!
//! Each backend is a cargo feature of this crate: `ndarray` (default), `wgpu`, `tch`,
//! `flex`, `cuda`. A backend that is not compiled in, or cannot open a device here, is a
//! [`BackendError`] that names what is missing and how to get it.

mod backend;
mod probe;
mod spec;
mod testing;

pub use backend::{runs_ops_on_one_thread, Backend, BackendError, DeviceArgs};
pub use probe::{probe, probe_all, Probe};
pub use spec::DeviceSpec;
pub use testing::{test_devices, TestDevice};

pub use burn::tensor::Device;

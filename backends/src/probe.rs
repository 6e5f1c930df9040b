//! What this build can really run on: for each backend, compiled in or not, and whether its
//! default device opens — a wgpu adapter found, libtorch loaded — with the reason when not.

use std::sync::{Mutex, OnceLock};

use burn::tensor::Device;

use crate::backend::{Backend, BackendError};
use crate::spec::DeviceSpec;

/// One row of `attnzoo backends`.
#[derive(Clone, Debug)]
pub struct Probe {
    /// The backend probed.
    pub backend: Backend,
    /// Whether its cargo feature is on in this build.
    pub compiled: bool,
    /// The opened default device, when it computes.
    pub device: Option<Device>,
    /// A description of that device (adapter name for wgpu/cuda).
    pub description: String,
    /// Why it is not usable, when it is not.
    pub reason: Option<String>,
}

impl Probe {
    /// Whether the backend's default device opened and computed.
    pub fn usable(&self) -> bool {
        self.device.is_some()
    }
}

/// Probes one backend's default device. The answer is cached: opening a GPU is slow and a
/// failed driver initialisation is not retried within a process.
pub fn probe(backend: Backend) -> Probe {
    static CACHE: OnceLock<Mutex<Vec<Probe>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(Vec::new()));
    let mut cache = cache
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(found) = cache.iter().find(|probe| probe.backend == backend) {
        return found.clone();
    }
    let probe = probe_uncached(backend);
    cache.push(probe.clone());
    probe
}

/// Probes every backend attnzoo knows, in [`Backend::ALL`] order.
pub fn probe_all() -> Vec<Probe> {
    Backend::ALL.into_iter().map(probe).collect()
}

fn probe_uncached(backend: Backend) -> Probe {
    match backend.open(DeviceSpec::Default) {
        Ok(device) => Probe {
            backend,
            compiled: true,
            description: describe(backend, &device),
            device: Some(device),
            reason: None,
        },
        Err(error) => Probe {
            backend,
            compiled: !matches!(error, BackendError::NotCompiled(_)),
            device: None,
            description: String::new(),
            reason: Some(match error {
                BackendError::NotCompiled(backend) => {
                    format!("not compiled in (cargo feature `{}`)", backend.name())
                }
                BackendError::Unavailable { reason, .. } => reason,
                other => other.to_string(),
            }),
        },
    }
}

#[allow(deprecated)] // burn-tch is deprecated in Burn 0.22 but still supported.
fn describe(backend: Backend, device: &Device) -> String {
    #[cfg(any(feature = "wgpu", feature = "cuda"))]
    if let Some(identity) = device.identity() {
        return format!("{} ({})", identity.name, identity.fingerprint);
    }
    #[cfg(feature = "tch")]
    if backend == Backend::Tch && *device == Device::libtorch() {
        return "CPU (LibTorch)".to_string();
    }
    match backend {
        Backend::Ndarray => "CPU (burn-ndarray)".to_string(),
        Backend::Flex => "CPU (burn-flex)".to_string(),
        Backend::Tch => format!("LibTorch {device:?}"),
        Backend::Wgpu | Backend::Cuda => format!("{device:?}"),
    }
}

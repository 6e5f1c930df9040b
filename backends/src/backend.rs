//! The [`Backend`] enum, turning a backend name and a [`DeviceSpec`] into a Burn [`Device`].

use std::fmt;

use burn::tensor::Device;

use crate::spec::DeviceSpec;

/// A Burn backend attnzoo can run on. Which ones exist in a build depends on its cargo features.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum Backend {
    /// burn-ndarray: pure-Rust CPU (feature `ndarray`, the default).
    Ndarray,
    /// burn-flex: pure-Rust CPU (feature `flex`).
    Flex,
    /// burn-wgpu: Vulkan, Metal, DX12 or GL GPUs, or a software Vulkan adapter (feature `wgpu`).
    Wgpu,
    /// burn-tch: LibTorch 2.9.0 on CPU, CUDA or MPS (feature `tch`).
    Tch,
    /// CubeCL's CUDA runtime (feature `cuda`).
    Cuda,
}

/// Why a backend or device cannot be used; its `Display` is one line for a user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BackendError {
    /// The backend's cargo feature was off when this binary was built.
    NotCompiled(Backend),
    /// The device spec does not parse.
    BadSpec(String),
    /// The backend has no device of that kind.
    NoSuchDevice {
        /// The backend asked for.
        backend: Backend,
        /// The device it does not have.
        spec: DeviceSpec,
    },
    /// A device was named without a backend, and no compiled-in backend has one of that kind.
    NoBackendHas(DeviceSpec),
    /// The backend is compiled in, but opening the device failed here.
    Unavailable {
        /// The backend asked for.
        backend: Backend,
        /// The device it could not open.
        spec: DeviceSpec,
        /// What went wrong, as the backend or the driver said it.
        reason: String,
    },
}

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BackendError::NotCompiled(backend) => write!(
                f,
                "backend `{backend}` is not compiled into this build: rebuild with `--features {}`{}",
                backend.name(),
                backend.requirements().map(|needs| format!(" ({needs})")).unwrap_or_default()
            ),
            BackendError::BadSpec(message) => write!(f, "{message}"),
            BackendError::NoSuchDevice { backend, spec } => write!(
                f,
                "backend `{backend}` has no device `{spec}`: it accepts {}",
                backend.accepted_devices()
            ),
            BackendError::NoBackendHas(spec) => write!(
                f,
                "no backend of this build has a device `{spec}` (compiled in: {})",
                Backend::ALL
                    .into_iter()
                    .filter(|backend| backend.is_compiled())
                    .map(Backend::name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            BackendError::Unavailable { backend, spec, reason } => write!(
                f,
                "backend `{backend}` cannot open device `{spec}`: {reason}{}",
                backend.requirements().map(|needs| format!(" ({needs})")).unwrap_or_default()
            ),
        }
    }
}

impl std::error::Error for BackendError {}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Backend {
    /// Every backend attnzoo knows, compiled in or not, in order of preference for a CPU default.
    pub const ALL: [Backend; 5] = [
        Backend::Ndarray,
        Backend::Flex,
        Backend::Wgpu,
        Backend::Tch,
        Backend::Cuda,
    ];

    /// The name used on the command line, in `ATTNZOO_REQUIRE_BACKENDS`, and as the cargo feature
    /// (of `attnzoo` and `attnzoo-backends`) that compiles the backend in.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Ndarray => "ndarray",
            Backend::Flex => "flex",
            Backend::Wgpu => "wgpu",
            Backend::Tch => "tch",
            Backend::Cuda => "cuda",
        }
    }

    /// Parses a backend name as written on the command line.
    pub fn from_name(name: &str) -> Option<Backend> {
        Backend::ALL
            .into_iter()
            .find(|backend| backend.name().eq_ignore_ascii_case(name.trim()))
    }

    /// Whether this binary was built with the backend's cargo feature.
    pub fn is_compiled(self) -> bool {
        match self {
            Backend::Ndarray => cfg!(feature = "ndarray"),
            Backend::Flex => cfg!(feature = "flex"),
            Backend::Wgpu => cfg!(feature = "wgpu"),
            Backend::Tch => cfg!(feature = "tch"),
            Backend::Cuda => cfg!(feature = "cuda"),
        }
    }

    /// What the machine needs besides the cargo feature, if anything.
    pub fn requirements(self) -> Option<&'static str> {
        match self {
            Backend::Ndarray | Backend::Flex => None,
            Backend::Wgpu => Some(
                "needs a Vulkan, Metal, DX12 or GL driver; without a GPU on Debian/Ubuntu: \
                 `apt-get install mesa-vulkan-drivers libvulkan1` for the lavapipe CPU adapter",
            ),
            Backend::Tch => Some(
                "needs LibTorch from PyTorch 2.9.0: build with LIBTORCH=<torch folder> \
                 LIBTORCH_CXX11_ABI=1 and run with <torch folder>/lib on LD_LIBRARY_PATH; \
                 `scripts/install-libtorch.sh` sets it up",
            ),
            Backend::Cuda => Some("needs an NVIDIA GPU with its driver and the CUDA toolkit"),
        }
    }

    /// The device specs this backend accepts, for error messages and `--help`.
    pub fn accepted_devices(self) -> &'static str {
        match self {
            Backend::Ndarray | Backend::Flex => "cpu",
            Backend::Wgpu => {
                "gpu (the best adapter), gpu:N / discrete[:N], integrated[:N], virtual[:N], cpu"
            }
            Backend::Tch => "cpu, cuda[:N] (or gpu[:N]), mps",
            Backend::Cuda => "cuda[:N] (or gpu[:N])",
        }
    }

    /// The first device this build can open here, tried in order: CUDA, LibTorch's CUDA, a
    /// discrete then an integrated wgpu adapter (never a software one such as lavapipe),
    /// LibTorch on the CPU, flex, ndarray. On a CPU that is the fastest for inference; flex
    /// trains faster than LibTorch (docs/MEASUREMENTS.md, "Training throughput").
    pub fn auto() -> Result<(Backend, Device), BackendError> {
        Self::first_that_opens(&Self::AUTO_ORDER)
    }

    /// The first backend, in [`Backend::auto`]'s order, that has a device `spec` and opens it:
    /// `--device cuda:1` without `--backend`.
    pub fn auto_for(spec: DeviceSpec) -> Result<(Backend, Device), BackendError> {
        let mut candidates: Vec<(Backend, DeviceSpec)> = Vec::new();
        for (backend, _) in Self::AUTO_ORDER {
            if backend.device(spec).is_ok() && !candidates.contains(&(backend, spec)) {
                candidates.push((backend, spec));
            }
        }
        if candidates.is_empty() {
            return Err(BackendError::NoBackendHas(spec));
        }
        Self::first_that_opens(&candidates)
    }

    const AUTO_ORDER: [(Backend, DeviceSpec); 7] = [
        (Backend::Cuda, DeviceSpec::Default),
        (Backend::Tch, DeviceSpec::Cuda(0)),
        (Backend::Wgpu, DeviceSpec::Discrete(0)),
        (Backend::Wgpu, DeviceSpec::Integrated(0)),
        (Backend::Tch, DeviceSpec::Cpu),
        (Backend::Flex, DeviceSpec::Cpu),
        (Backend::Ndarray, DeviceSpec::Cpu),
    ];

    /// The first of `candidates` this build has and can open; else the last one's error.
    fn first_that_opens(
        candidates: &[(Backend, DeviceSpec)],
    ) -> Result<(Backend, Device), BackendError> {
        let mut last = BackendError::NotCompiled(Backend::Ndarray);
        for &(backend, spec) in candidates.iter().filter(|(b, _)| b.is_compiled()) {
            match backend.open(spec) {
                Ok(device) => return Ok((backend, device)),
                Err(error) => last = error,
            }
        }
        Err(last)
    }

    /// The Burn device for `spec`, without opening it (see [`Backend::open`] for that).
    pub fn device(self, spec: DeviceSpec) -> Result<Device, BackendError> {
        if !self.is_compiled() {
            return Err(BackendError::NotCompiled(self));
        }
        self.compiled_device(spec)
            .ok_or(BackendError::NoSuchDevice {
                backend: self,
                spec,
            })
    }

    /// The device for `spec`, opened: a tiny computation has run on it.
    pub fn open(self, spec: DeviceSpec) -> Result<Device, BackendError> {
        let device = self.device(spec)?;
        crate::open::try_open(&device).map_err(|reason| BackendError::Unavailable {
            backend: self,
            spec,
            reason,
        })?;
        Ok(device)
    }

    #[allow(deprecated)] // burn-ndarray and burn-tch are deprecated in Burn 0.22 but still supported.
    #[allow(unreachable_patterns, unused_variables)] // arms vanish with their features
    fn compiled_device(self, spec: DeviceSpec) -> Option<Device> {
        match (self, spec) {
            #[cfg(feature = "ndarray")]
            (Backend::Ndarray, DeviceSpec::Default | DeviceSpec::Cpu) => Some(Device::ndarray()),
            #[cfg(feature = "flex")]
            (Backend::Flex, DeviceSpec::Default | DeviceSpec::Cpu) => Some(Device::flex()),
            #[cfg(feature = "wgpu")]
            (Backend::Wgpu, spec) => wgpu_kind(spec).map(Device::wgpu),
            #[cfg(feature = "tch")]
            (Backend::Tch, DeviceSpec::Default | DeviceSpec::Cpu) => Some(Device::libtorch()),
            #[cfg(feature = "tch")]
            (Backend::Tch, DeviceSpec::Cuda(index) | DeviceSpec::Gpu(Some(index))) => {
                Some(Device::libtorch_cuda(index))
            }
            #[cfg(feature = "tch")]
            (Backend::Tch, DeviceSpec::Gpu(None)) => Some(Device::libtorch_cuda(0)),
            #[cfg(feature = "tch")]
            (Backend::Tch, DeviceSpec::Mps) => Some(Device::libtorch_mps()),
            #[cfg(feature = "cuda")]
            (Backend::Cuda, DeviceSpec::Default | DeviceSpec::Gpu(None)) => Some(Device::cuda(0)),
            #[cfg(feature = "cuda")]
            (Backend::Cuda, DeviceSpec::Cuda(index) | DeviceSpec::Gpu(Some(index))) => {
                Some(Device::cuda(index))
            }
            _ => None,
        }
    }
}

/// Whether `device` (or the device an autodiff device wraps) belongs to a pure-Rust CPU backend,
/// flex or ndarray: those run most of their kernels on one thread, where LibTorch and the GPUs
/// spread each op over many.
#[allow(deprecated, unused_variables)] // burn-ndarray is deprecated in Burn 0.22 but still supported.
pub fn runs_ops_on_one_thread(device: &Device) -> bool {
    #[cfg(feature = "flex")]
    if *device == Device::flex() || *device == Device::flex().autodiff() {
        return true;
    }
    #[cfg(feature = "ndarray")]
    if *device == Device::ndarray() || *device == Device::ndarray().autodiff() {
        return true;
    }
    false
}

#[cfg(feature = "wgpu")]
fn wgpu_kind(spec: DeviceSpec) -> Option<burn::tensor::DeviceKind> {
    use burn::tensor::DeviceKind;
    Some(match spec {
        DeviceSpec::Default | DeviceSpec::Gpu(None) => DeviceKind::DefaultDevice,
        DeviceSpec::Gpu(Some(index)) | DeviceSpec::Discrete(index) => {
            DeviceKind::DiscreteGpu(index)
        }
        DeviceSpec::Integrated(index) => DeviceKind::IntegratedGpu(index),
        DeviceSpec::Virtual(index) => DeviceKind::VirtualGpu(index),
        DeviceSpec::Cpu => DeviceKind::Cpu,
        DeviceSpec::Cuda(_) | DeviceSpec::Mps => return None,
    })
}

/// `--backend` and `--device`, for any command that computes. With the `cli` feature, flatten
/// it into a clap parser.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct DeviceArgs {
    /// Backend to run on [default: the fastest that opens here: a GPU (cuda, tch on CUDA, wgpu
    /// on a hardware adapter), else tch, flex, ndarray — whichever are compiled in]
    #[cfg_attr(feature = "cli", arg(long, value_enum))]
    pub backend: Option<Backend>,
    /// Device of that backend: `default`, `cpu`, `gpu[:N]`, `discrete[:N]`, `integrated[:N]`,
    /// `virtual[:N]`, `cuda[:N]`, `mps` (as the backend allows).
    #[cfg_attr(
        feature = "cli",
        arg(
            long,
            default_value = "default",
            help = "Device of that backend: default, cpu, gpu[:N], discrete[:N], integrated[:N], \
                    virtual[:N], cuda[:N], mps (as the backend allows)"
        )
    )]
    pub device: String,
}

impl Default for DeviceArgs {
    /// The default backend's default device.
    fn default() -> Self {
        Self {
            backend: None,
            device: "default".into(),
        }
    }
}

impl DeviceArgs {
    /// Opens the chosen device, checking that it really computes; with neither a backend nor a
    /// device named, the fastest one ([`Backend::auto`]); with only a device named, the first
    /// backend that has it ([`Backend::auto_for`]).
    pub fn open(&self) -> Result<(Backend, Device), BackendError> {
        let spec: DeviceSpec = self.device.parse().map_err(BackendError::BadSpec)?;
        match self.backend {
            None if spec == DeviceSpec::Default => Backend::auto(),
            None => Backend::auto_for(spec),
            Some(backend) => Ok((backend, backend.open(spec)?)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backend_left_out_of_the_build_names_its_feature() {
        for backend in Backend::ALL.into_iter().filter(|b| !b.is_compiled()) {
            let error = backend.open(DeviceSpec::Default).unwrap_err();
            assert_eq!(error, BackendError::NotCompiled(backend));
            let message = error.to_string();
            assert!(
                message.contains(&format!("--features {}", backend.name())),
                "{message}"
            );
            assert!(!message.contains('\n'), "one line: {message}");
        }
    }

    #[test]
    fn only_the_pure_rust_cpu_backends_run_ops_on_one_thread() {
        for backend in Backend::ALL.into_iter().filter(|b| b.is_compiled()) {
            let Ok(device) = backend.device(DeviceSpec::Default) else {
                continue;
            };
            let expected = matches!(backend, Backend::Flex | Backend::Ndarray);
            assert_eq!(runs_ops_on_one_thread(&device), expected, "{backend:?}");
            assert_eq!(
                runs_ops_on_one_thread(&device.autodiff()),
                expected,
                "{backend:?}"
            );
        }
    }

    #[cfg(feature = "ndarray")]
    #[test]
    fn ndarray_opens_cpu_and_refuses_a_gpu() {
        assert!(Backend::Ndarray.open(DeviceSpec::Cpu).is_ok());
        let error = Backend::Ndarray.device(DeviceSpec::Cuda(0)).unwrap_err();
        assert_eq!(
            error.to_string(),
            "backend `ndarray` has no device `cuda:0`: it accepts cpu"
        );
    }

    #[test]
    fn a_device_without_a_backend_goes_to_a_backend_that_has_it() {
        let cpu = Backend::auto_for(DeviceSpec::Cpu);
        if Backend::ALL.iter().any(|b| b.is_compiled()) {
            let (backend, _) = cpu.unwrap();
            assert!(backend.device(DeviceSpec::Cpu).is_ok(), "{backend:?}");
        }
        if !Backend::Tch.is_compiled() {
            let error = Backend::auto_for(DeviceSpec::Mps).unwrap_err();
            assert_eq!(error, BackendError::NoBackendHas(DeviceSpec::Mps));
            assert!(error
                .to_string()
                .contains("no backend of this build has a device `mps`"));
        }
    }

    #[test]
    fn names_round_trip() {
        for backend in Backend::ALL {
            assert_eq!(Backend::from_name(backend.name()), Some(backend));
        }
        assert_eq!(Backend::from_name("torch"), None);
    }
}

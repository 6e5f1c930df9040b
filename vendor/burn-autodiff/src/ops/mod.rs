mod activation;
mod attention;
mod backward;
mod base;
mod bool_tensor;
mod distributed;
mod int_tensor;
mod module;
mod qtensor;
mod tensor;
mod transaction;
mod transfer;

pub(crate) mod maxmin;
pub(crate) mod sort;

pub use backward::*;
pub use base::*;
pub use transfer::DifferentiableTransfer;

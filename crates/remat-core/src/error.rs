//! The one typed error of the engine. Every failure reachable from Python is one of these
//! kinds; the binding layer maps each kind to its named Python exception.

use std::fmt;

/// What went wrong, with the op and the offending shapes/dtypes/devices in the message.
#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// Shapes (or axes, indices) that do not fit the op. Python: `remat.ShapeError`, or for
    /// [`ShapeKind::DimOutOfRange`] its subclass `remat.DimensionError`.
    Shape {
        op: String,
        message: String,
        kind: ShapeKind,
    },
    /// A dtype the op does not accept. Python: `remat.DTypeError`.
    DType { op: String, message: String },
    /// A device that is missing or mixed within one op. Python: `remat.DeviceError`.
    Device { op: String, message: String },
    /// Misuse of the autograd graph (backward twice, non-scalar backward, ...).
    /// Python: `remat.GraphError`.
    Graph { op: String, message: String },
    /// A checkpoint whose recompute does not match its forward, or a failed recompute.
    /// Python: `remat.CheckpointError`.
    Checkpoint { op: String, message: String },
    /// An allocation that could not be satisfied. Python: `MemoryError`.
    OutOfMemory {
        op: String,
        bytes: usize,
        device: String,
    },
    /// An allocation that does not fit the memory limit (`set_memory_limit`) even after
    /// evicting every tensor that can be recomputed; the message states the smallest working
    /// set. Python: `MemoryError`.
    MemoryLimit { op: String, message: String },
    /// A bad argument value (negative probability, unknown mode). Python: `ValueError`.
    Value { op: String, message: String },
    /// An error raised by user code called back from the engine (a checkpointed function).
    /// The binding layer re-raises the original exception where it can.
    Callback { message: String },
    /// Internal: a segment's recompute (with early stop) has every tensor its backward needs,
    /// so the rest of the function is skipped by unwinding out of it with this error. The
    /// recompute treats it as success; it never reaches users. The binding layer turns it
    /// into a private Python exception and back, so it unwinds through Python code too.
    EarlyStop,
}

/// Which kind of [`Error::Shape`]: a refinement, so code matching `Error::Shape { .. }`
/// sees every shape error (as Python's `except ShapeError` does) and the binding layer can
/// still raise the more specific class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ShapeKind {
    /// Shapes that do not fit together (`remat.ShapeError`).
    #[default]
    Mismatch,
    /// A dimension (axis) argument outside `[-ndim, ndim)`. PyTorch raises `IndexError`
    /// ("Dimension out of range") there, so Python gets `remat.DimensionError`, both a
    /// `ShapeError` and an `IndexError`.
    DimOutOfRange,
}

/// Result alias used across the engine.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// A shape error for `op`.
    pub fn shape(op: &str, message: impl Into<String>) -> Self {
        Error::Shape {
            op: op.to_string(),
            message: message.into(),
            kind: ShapeKind::Mismatch,
        }
    }
    /// A shape error for `op` about a dimension (axis) argument out of range for the tensor's
    /// rank ([`ShapeKind::DimOutOfRange`]; Python: `remat.DimensionError`). Every axis
    /// normaliser makes its errors with this (`layout::normalize_axis`, the `dim` wrapping of
    /// the PyTorch-style ops), so each op that takes an axis reports it alike.
    pub fn dim_out_of_range(op: &str, message: impl Into<String>) -> Self {
        Error::Shape {
            op: op.to_string(),
            message: message.into(),
            kind: ShapeKind::DimOutOfRange,
        }
    }
    /// Whether this is a dimension-out-of-range shape error.
    pub fn is_dim_out_of_range(&self) -> bool {
        matches!(
            self,
            Error::Shape {
                kind: ShapeKind::DimOutOfRange,
                ..
            }
        )
    }
    /// A dtype error for `op`.
    pub fn dtype(op: &str, message: impl Into<String>) -> Self {
        Error::DType {
            op: op.to_string(),
            message: message.into(),
        }
    }
    /// A device error for `op`.
    pub fn device(op: &str, message: impl Into<String>) -> Self {
        Error::Device {
            op: op.to_string(),
            message: message.into(),
        }
    }
    /// A graph error for `op`.
    pub fn graph(op: &str, message: impl Into<String>) -> Self {
        Error::Graph {
            op: op.to_string(),
            message: message.into(),
        }
    }
    /// A checkpoint error for `op`.
    pub fn checkpoint(op: &str, message: impl Into<String>) -> Self {
        Error::Checkpoint {
            op: op.to_string(),
            message: message.into(),
        }
    }
    /// A value error for `op`.
    pub fn value(op: &str, message: impl Into<String>) -> Self {
        Error::Value {
            op: op.to_string(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Shape { op, message, .. }
            | Error::DType { op, message }
            | Error::Device { op, message }
            | Error::Graph { op, message }
            | Error::Checkpoint { op, message }
            | Error::MemoryLimit { op, message }
            | Error::Value { op, message } => write!(f, "{op}: {message}"),
            Error::OutOfMemory { op, bytes, device } => {
                write!(
                    f,
                    "{op}: out of memory allocating {bytes} bytes on {device}"
                )
            }
            Error::Callback { message } => write!(f, "{message}"),
            Error::EarlyStop => write!(
                f,
                "checkpoint_segment: recompute stopped early (every saved tensor was recomputed)"
            ),
        }
    }
}

impl std::error::Error for Error {}

//! Element types: float32 and float64, and the `Element` trait that kernels are generic over.

use num_traits::Float;
use std::fmt;

/// The element type of a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// 32-bit IEEE float (the default).
    F32,
    /// 64-bit IEEE float.
    F64,
}

impl DType {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::F32 => 4,
            DType::F64 => 8,
        }
    }
    /// NumPy-style name (`"float32"`).
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "float32",
            DType::F64 => "float64",
        }
    }
    /// The dtype two operands promote to (float64 wins, as in NumPy and PyTorch).
    pub fn promote(self, other: DType) -> DType {
        if self == DType::F64 || other == DType::F64 {
            DType::F64
        } else {
            DType::F32
        }
    }
    /// Parse `"float32"`/`"float64"` (and the short forms `f32`/`f64`).
    pub fn parse(name: &str) -> Option<DType> {
        match name {
            "float32" | "f32" | "float" => Some(DType::F32),
            "float64" | "f64" | "double" => Some(DType::F64),
            _ => None,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A scalar type the CPU kernels work on.
pub trait Element:
    Float + num_traits::NumAssign + Send + Sync + Default + fmt::Debug + fmt::Display + 'static
{
    /// The matching runtime dtype.
    const DTYPE: DType;
    /// Lossy conversion from f64 (scalars from Python arrive as f64).
    fn from_f64(v: f64) -> Self;
    /// Widening conversion to f64.
    fn to_f64(self) -> f64;
    /// The error function (for exact GELU). float32: the branch-free [`crate::fastmath::erf`]
    /// (within ~1 ulp), so loops using it vectorise; float64: `libm::erf`.
    fn erf(self) -> Self;
    /// `e^self` inside elementwise kernels (GELU's density). float32: the branch-free
    /// [`crate::fastmath::exp`] (within ~1 ulp for `self <= 88`, flushing results below
    /// `2^-126` to 0), so loops using it vectorise; float64: exactly `exp`.
    fn kernel_exp(self) -> Self;
}

impl Element for f32 {
    const DTYPE: DType = DType::F32;
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as f64
    }
    #[inline(always)]
    fn erf(self) -> Self {
        crate::fastmath::erf(self)
    }
    #[inline(always)]
    fn kernel_exp(self) -> Self {
        crate::fastmath::exp(self)
    }
}

impl Element for f64 {
    const DTYPE: DType = DType::F64;
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }
    #[inline(always)]
    fn erf(self) -> Self {
        libm::erf(self)
    }
    #[inline(always)]
    fn kernel_exp(self) -> Self {
        self.exp()
    }
}

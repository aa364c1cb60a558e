//! Element types: float32, float64, bfloat16, float16, int64, int32 and bool; PyTorch's type
//! promotion; the `Scalar` trait every stored element implements and the `Element` trait (floats) that the
//! differentiable kernels are generic over.

use num_traits::Float;
use std::fmt;
use std::sync::atomic::{AtomicU8, Ordering};

/// The default float dtype, as its index in [`DType::ALL`] (0: float32, PyTorch's default).
static DEFAULT_FLOAT: AtomicU8 = AtomicU8::new(0);

/// The element type of a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// 32-bit IEEE float (the default).
    F32,
    /// 64-bit IEEE float.
    F64,
    /// 64-bit signed integer (Python ints, indices, labels).
    I64,
    /// 32-bit signed integer.
    I32,
    /// Boolean, one byte per element holding 0 or 1 (masks, comparison results).
    Bool,
    /// Brain float: float32's exponent with an 8-bit significand, 2 bytes. Ops compute in
    /// float32 and round their results (see `ops::half_compute`).
    BF16,
    /// IEEE half precision, 2 bytes (`torch.half`). Computes as bfloat16 does.
    F16,
}

/// How a dtype takes part in promotion: bool < integer < float (PyTorch's categories).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Category {
    /// `bool`.
    Bool,
    /// `int32`, `int64`.
    Integer,
    /// `float32`, `float64`, `bfloat16`, `float16`.
    Float,
}

impl DType {
    /// Every dtype, floats first.
    pub const ALL: [DType; 7] = [
        DType::F32,
        DType::F64,
        DType::I64,
        DType::I32,
        DType::Bool,
        DType::BF16,
        DType::F16,
    ];

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::F32 | DType::I32 => 4,
            DType::F64 | DType::I64 => 8,
            DType::BF16 | DType::F16 => 2,
            DType::Bool => 1,
        }
    }
    /// NumPy-style name (`"float32"`).
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::I64 => "int64",
            DType::I32 => "int32",
            DType::Bool => "bool",
            DType::BF16 => "bfloat16",
            DType::F16 => "float16",
        }
    }
    /// Whether this is a floating-point dtype (the dtypes that carry gradients).
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64 | DType::BF16 | DType::F16)
    }
    /// Whether this is bfloat16 or float16 (2-byte floats that compute in float32).
    pub fn is_half(self) -> bool {
        matches!(self, DType::BF16 | DType::F16)
    }
    /// The promotion category.
    pub fn category(self) -> Category {
        match self {
            DType::F32 | DType::F64 | DType::BF16 | DType::F16 => Category::Float,
            DType::I64 | DType::I32 => Category::Integer,
            DType::Bool => Category::Bool,
        }
    }
    /// The dtype two tensor operands promote to, as in PyTorch: the higher category wins
    /// (bool < integer < float); within a category the wider type (`int32 + int64` is
    /// int64, `float32 + float64` is float64); bfloat16 with float16 is float32, as neither
    /// holds the other's values.
    pub fn promote(self, other: DType) -> DType {
        use std::cmp::Ordering::*;
        match self.category().cmp(&other.category()) {
            Greater => self,
            Less => other,
            Equal if self.is_half() && other.is_half() && self != other => DType::F32,
            Equal if self.size() >= other.size() => self,
            Equal => other,
        }
    }
    /// PyTorch's `result_type` of two tensor operands, where a 0-d tensor ranks below one
    /// with dimensions: it decides the dtype only when its category is higher. So
    /// `float32 vector + float64 0-d` is float32 and `int32 vector + int64 0-d` int32, but
    /// `int32 vector + float64 0-d` float64. Operands of the same rank promote as
    /// [`DType::promote`]. (Python scalars arrive as 0-d tensors made like the other
    /// operand, which this rule keeps.)
    pub fn promote_ranked(self, self_0d: bool, other: DType, other_0d: bool) -> DType {
        match (self_0d, other_0d) {
            (true, false) if self.category() <= other.category() => other,
            (false, true) if other.category() <= self.category() => self,
            _ => self.promote(other),
        }
    }
    /// The dtype a float-only op computes in for this input: itself for floats, the default
    /// float dtype for integers and bool (as `torch.exp(int_tensor)` does).
    pub fn to_float(self) -> DType {
        if self.is_float() {
            self
        } else {
            DType::default_float()
        }
    }
    /// The default float dtype, PyTorch's `get_default_dtype()`: what Python floats, float
    /// constructors without a dtype and float results of integer inputs take. float32 until
    /// [`DType::set_default_float`] says otherwise; one setting for the process.
    pub fn default_float() -> DType {
        DType::ALL[DEFAULT_FLOAT.load(Ordering::Relaxed) as usize]
    }
    /// Set the default float dtype (PyTorch's `set_default_dtype`): any float dtype; an
    /// integer or bool dtype is a `DTypeError`.
    pub fn set_default_float(d: DType) -> crate::error::Result<()> {
        match d {
            d if d.is_float() => {
                let i = DType::ALL.iter().position(|&x| x == d).unwrap_or(0);
                DEFAULT_FLOAT.store(i as u8, Ordering::Relaxed);
                Ok(())
            }
            other => Err(crate::error::Error::dtype(
                "set_default_dtype",
                format!("only floating-point types are supported as the default type, got {other}"),
            )),
        }
    }
    /// Parse a dtype name: NumPy's (`"float32"`, `"int64"`, `"bool"`), the short forms
    /// (`f32`, `i64`) and PyTorch's aliases (`float`, `double`, `long`).
    pub fn parse(name: &str) -> Option<DType> {
        match name {
            "float32" | "f32" | "float" => Some(DType::F32),
            "float64" | "f64" | "double" => Some(DType::F64),
            "int64" | "i64" | "long" => Some(DType::I64),
            "int32" | "i32" => Some(DType::I32),
            "bool" => Some(DType::Bool),
            "bfloat16" | "bf16" => Some(DType::BF16),
            "float16" | "f16" | "half" => Some(DType::F16),
            _ => None,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A type tensor storage holds: `f32`, `f64`, `i64`, `i32`, and `u8` for bool (a byte
/// that is 0 or 1; a Rust `bool` would make any other byte, say from a NumPy buffer,
/// undefined behaviour).
pub trait Scalar:
    Copy + Send + Sync + Default + PartialEq + PartialOrd + fmt::Debug + 'static
{
    /// The matching runtime dtype.
    const DTYPE: DType;
    /// Conversion from f64 (floats round, integers truncate toward zero and saturate, bool
    /// is `v != 0`).
    fn from_f64(v: f64) -> Self;
    /// Conversion to f64 (exact for every value but integers beyond 2^53).
    fn to_f64(self) -> f64;
    /// Conversion from i64 (exact for integer types in range; wraps like `as` otherwise).
    fn from_i64(v: i64) -> Self;
    /// Conversion to i64 (floats truncate toward zero and saturate; NaN is 0).
    fn to_i64(self) -> i64;
    /// `self + other` as accumulation needs it: IEEE addition for floats, wrapping for
    /// integers, logical or for bool (PyTorch's `bool + bool`).
    fn accumulate(self, other: Self) -> Self;
}

macro_rules! scalar_impl {
    ($T:ty, $D:ident, |$a:ident, $b:ident| $add:expr) => {
        impl Scalar for $T {
            const DTYPE: DType = DType::$D;
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as $T
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                v as $T
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                self as i64
            }
            #[inline(always)]
            fn accumulate(self, other: Self) -> Self {
                let ($a, $b) = (self, other);
                $add
            }
        }
    };
}
scalar_impl!(f32, F32, |a, b| a + b);
scalar_impl!(f64, F64, |a, b| a + b);
scalar_impl!(i64, I64, |a, b| a.wrapping_add(b));
scalar_impl!(i32, I32, |a, b| a.wrapping_add(b));

macro_rules! half_scalar_impl {
    ($T:ty, $D:ident) => {
        impl Scalar for $T {
            const DTYPE: DType = DType::$D;
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                // Through float32, as PyTorch's `c10::BFloat16(float)`/`c10::Half(float)`
                // convert a double: each step rounds to nearest even. (The `half` crate's own
                // `bf16::from_f64` rounds some values the wrong way: 0x7da08005 as a float32
                // gives 0x7da0, not 0x7da1.)
                <$T>::from_f32(v as f32)
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                <$T>::to_f64(self)
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                <$T>::from_f64(v as f64)
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                <$T>::to_f64(self) as i64
            }
            #[inline(always)]
            fn accumulate(self, other: Self) -> Self {
                // Added in float32 and rounded once (PyTorch's opmath).
                <$T>::from_f32(self.to_f32() + other.to_f32())
            }
        }
    };
}
half_scalar_impl!(half::bf16, BF16);
half_scalar_impl!(half::f16, F16);

impl Scalar for u8 {
    const DTYPE: DType = DType::Bool;
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        (v != 0.0) as u8
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        (self != 0) as u8 as f64
    }
    #[inline(always)]
    fn from_i64(v: i64) -> Self {
        (v != 0) as u8
    }
    #[inline(always)]
    fn to_i64(self) -> i64 {
        (self != 0) as i64
    }
    #[inline(always)]
    fn accumulate(self, other: Self) -> Self {
        self | other
    }
}

/// A float type the differentiable CPU kernels work on.
pub trait Element: Scalar + Float + num_traits::NumAssign + Default + fmt::Display {
    /// The error function (for exact GELU). float32: the branch-free [`crate::fastmath::erf`]
    /// (within ~1 ulp), so loops using it vectorise; float64: `libm::erf`.
    fn erf(self) -> Self;
    /// `e^self` inside elementwise kernels (GELU's density). float32: the branch-free
    /// [`crate::fastmath::exp`] (within ~1 ulp for `self <= 88`, flushing results below
    /// `2^-126` to 0), so loops using it vectorise; float64: exactly `exp`.
    fn kernel_exp(self) -> Self;
    /// `e^self` over the whole range (overflow to `inf`, subnormal results): float32 the
    /// branch-free [`crate::fastmath::exp_full`] (within ~1 ulp), so elementwise loops using it
    /// vectorise; float64 exactly `exp`.
    fn fast_exp(self) -> Self;
    /// `tanh(self)`: float32 the branch-free [`crate::fastmath::tanh`] (within 2 ulp), so
    /// loops using it vectorise; float64 exactly `tanh`.
    fn fast_tanh(self) -> Self;
}

impl Element for f32 {
    #[inline(always)]
    fn erf(self) -> Self {
        crate::fastmath::erf(self)
    }
    #[inline(always)]
    fn kernel_exp(self) -> Self {
        crate::fastmath::exp(self)
    }
    #[inline(always)]
    fn fast_exp(self) -> Self {
        crate::fastmath::exp_full(self)
    }
    #[inline(always)]
    fn fast_tanh(self) -> Self {
        crate::fastmath::tanh(self)
    }
}

impl Element for f64 {
    #[inline(always)]
    fn erf(self) -> Self {
        libm::erf(self)
    }
    #[inline(always)]
    fn kernel_exp(self) -> Self {
        self.exp()
    }
    #[inline(always)]
    fn fast_exp(self) -> Self {
        self.exp()
    }
    #[inline(always)]
    fn fast_tanh(self) -> Self {
        self.tanh()
    }
}

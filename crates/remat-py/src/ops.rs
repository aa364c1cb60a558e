//! The op table: every op that is both a module function `remat.X(t, ...)` and a method
//! `Tensor.X(...)` is declared once here, and `tensor_ops!` generates both bindings from that
//! one row, so the two forms cannot drift apart (same name, parameters, defaults, doc, GIL
//! handling and error messages).
//!
//! Design: the macro emits the `#[pyfunction]`s, extra `#[pymethods] impl PyTensor` blocks
//! (PyO3's `multiple-pymethods` feature, which collects the blocks with `inventory` when the
//! extension loads) and `register`. The alternatives were worse: generating the functions from
//! the methods at import (a Python `lambda t, *a, **k: Tensor.X(t, *a, **k)`) loses the text
//! signature that `help()`, IDEs and stubtest read, and costs a Python call per op; wrapping
//! tensor.rs's whole `#[pymethods]` block in a callback macro avoids `inventory` but turns
//! every hand-written method into a macro argument.
//!
//! In a row `fn name(py, x, args...) { body }`, `x` is the input tensor (`&Tensor`): the method
//! passes its own, the function converts its first argument with `convert::extract_tensor`
//! (so `remat.exp([1.0])` works and a bad argument is reported under the op's name). The
//! methods are `pub(crate)` so hand-written methods can reuse them (`Tensor.view` is
//! `reshape`).
//!
//! The parameterless unary ops are not listed here: `unary_ops!` below binds every row of
//! remat-core's elementwise table written `fn(name)`, from the list the core generates from
//! those rows (`remat_core::for_each_unary_fn!`), with the row's doc as the docstring. A new
//! such row in `crates/remat-core/src/ops/elementwise/table.rs` is `remat.name(x)` and
//! `Tensor.name()` without a line here; its stub lines and re-exports are generated from
//! `_remat._unary_ops` (the same list) by `tools/gen_bindings.py`.
//!
//! Ops that exist in only one form stay where they were: constructors and function-only ops
//! (`concat`, `where`, `dropout`, losses, ...) in `functions.rs`, operators and method-only
//! ops (`view`, `mT`, `to`, ...) in `tensor.rs`; ops returning a tuple (`split`, `chunk`) in
//! `split.rs`. The stub `python/remat/_remat.pyi` and
//! `remat.__all__` are checked against what this file registers by `tests/test_surface.py`
//! (and by `python -m mypy.stubtest remat` in CI).

use crate::args::{self, ReduceArgs};
use crate::call::{binary, heavy, run, unary};
use crate::convert::{self, operand, operand_pair, python_scalar};
use crate::errors::CoreResultExt;
use crate::tensor::{wrap, PyTensor};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use remat_core::{ops, Tensor};

/// Binds the parameterless unary ops of the core table, given by
/// `remat_core::for_each_unary_fn!` as `/// doc` + `name;` rows: each op's `#[pyfunction]`
/// `remat.name(x)` (`x` converted like any other op's first argument, so `remat.exp([1.0])`
/// works), its `Tensor.name()` method (`pub(crate)`, like the table's below), and
/// `register_unary`, which adds the functions and `_remat._unary_ops` (the names, in table
/// order: what `tools/gen_bindings.py` writes the stub and re-exports from).
macro_rules! unary_ops {
    ($( $(#[doc = $doc:literal])* $name:ident; )*) => {
        $(
            $(#[doc = $doc])*
            #[pyfunction]
            fn $name(py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
                let x = convert::extract_tensor(stringify!($name), x)?;
                unary(py, &x, ops::$name)
            }
        )*

        #[pymethods]
        impl PyTensor {
            $(
                $(#[doc = $doc])*
                pub(crate) fn $name(&self, py: Python<'_>) -> PyResult<PyTensor> {
                    unary(py, &self.inner, ops::$name)
                }
            )*
        }

        /// Add the unary functions and their list `_unary_ops` to the module (`setattr`, so
        /// the list stays out of `__all__`).
        fn register_unary(m: &Bound<'_, PyModule>) -> PyResult<()> {
            $( m.add_function(wrap_pyfunction!($name, m)?)?; )*
            m.setattr("_unary_ops", PyTuple::new(m.py(), [$(stringify!($name)),*])?)
        }
    };
}

remat_core::for_each_unary_fn!(unary_ops);

/// Generates, from the three sections of the table below, each op's `#[pyfunction]`, its
/// `Tensor` method and the `register` function that adds the functions to the module.
///
/// `variadic` rows (`*shape`) take a detour. PyO3 binds `*args` through a local variable
/// that carries the hygiene of the `#[pyfunction]` / `#[pymethods]` attribute, then reads it
/// with the hygiene of the parameter's name; a macro-written attribute and a row-written name
/// never see each other. So the parameter's name must be spelled inside the macro, in the
/// same expansion as the attribute: `@variadic` has one arm per name (`shape`, `axes`; a
/// row with another name needs another arm: `shape`, `axes`, `sizes`, `dims`), which passes that name and both attributes to
/// `@emit_variadic`, and the body sees the row's own name bound to it.
macro_rules! tensor_ops {
    (
        binary {
            $(
                $(#[doc = $bdoc:literal])*
                $bname:ident($other:ident) => $bop:path $(, scalar $bscalar:path)?;
            )*
        }
        other {
            $(
                $(#[doc = $odoc:literal])*
                $(#[pyo3(signature = ($($sig:tt)*))])?
                $(#[text_signatures($fts:literal, $mts:literal)])?
                $(#[py_name($pyname:literal)])?
                fn $oname:ident($py:ident, $x:ident $(, $arg:ident: $ty:ty)*) $body:block
            )*
        }
        variadic {
            $(
                $(#[doc = $vdoc:literal])*
                fn $vname:ident($vpy:ident, $vx:ident, *$var:ident) $vbody:block
            )*
        }
    ) => {
        // A binary function `remat.X(a, b)` takes a Python scalar on either side (it becomes
        // a 0-d tensor of the other side's dtype); the method converts only `other`. With a
        // `scalar` op, a Python-scalar right operand uses it instead (cheaper backward).
        $(
            $(#[doc = $bdoc])*
            #[pyfunction]
            fn $bname(py: Python<'_>, a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>)
                -> PyResult<PyTensor>
            {
                $(
                    if let Some(p) = python_scalar(b) {
                        let x = convert::extract_tensor(stringify!($bname), a)?;
                        return unary(py, &x, |x| $bscalar(x, p));
                    }
                )?
                let (a, b) = operand_pair(stringify!($bname), a, b)?;
                binary(py, &a, &b, $bop)
            }
        )*

        $(
            $(#[doc = $odoc])*
            #[pyfunction]
            $(#[pyo3(signature = ($x, $($sig)*))])?
            $(#[pyo3(text_signature = $fts)])?
            $(#[pyo3(name = $pyname)])?
            // The parameters are the Python signature's (`var`/`std` have PyTorch's six).
            #[allow(clippy::too_many_arguments)]
            fn $oname(
                $py: Python<'_>,
                $x: &Bound<'_, PyAny>,
                $($arg: $ty),*
            ) -> PyResult<PyTensor> {
                let $x = convert::extract_tensor(stringify!($oname), $x)?;
                let $x = &$x;
                $body
            }
        )*

        #[pymethods]
        impl PyTensor {
            $(
                $(#[doc = $bdoc])*
                pub(crate) fn $bname(&self, py: Python<'_>, $other: &Bound<'_, PyAny>)
                    -> PyResult<PyTensor>
                {
                    let a = &self.inner;
                    $(
                        if let Some(p) = python_scalar($other) {
                            return unary(py, a, |x| $bscalar(x, p));
                        }
                    )?
                    let b = operand(stringify!($bname), $other, a)?;
                    binary(py, a, &b, $bop)
                }
            )*
            $(
                $(#[doc = $odoc])*
                $(#[pyo3(signature = ($($sig)*))])?
                $(#[pyo3(text_signature = $mts)])?
                $(#[pyo3(name = $pyname)])?
                #[allow(clippy::too_many_arguments)]
                pub(crate) fn $oname(&self, $py: Python<'_>, $($arg: $ty),*)
                    -> PyResult<PyTensor>
                {
                    let $x = &self.inner;
                    $body
                }
            )*
        }

        $(
            tensor_ops!(@variadic $var [$var] [$(#[doc = $vdoc])*] $vname $vpy $vx $vbody);
        )*

        /// Add the table's functions to the module (the methods come with the class).
        pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
            register_unary(m)?;
            $( m.add_function(wrap_pyfunction!($bname, m)?)?; )*
            $( m.add_function(wrap_pyfunction!($oname, m)?)?; )*
            $( m.add_function(wrap_pyfunction!($vname, m)?)?; )*
            Ok(())
        }
    };

    (@variadic shape $($rest:tt)*) => {
        tensor_ops!(@emit_variadic [#[pyfunction]] [#[pymethods]] shape $($rest)*);
    };
    (@variadic axes $($rest:tt)*) => {
        tensor_ops!(@emit_variadic [#[pyfunction]] [#[pymethods]] axes $($rest)*);
    };
    (@variadic sizes $($rest:tt)*) => {
        tensor_ops!(@emit_variadic [#[pyfunction]] [#[pymethods]] sizes $($rest)*);
    };
    (@variadic dims $($rest:tt)*) => {
        tensor_ops!(@emit_variadic [#[pyfunction]] [#[pymethods]] dims $($rest)*);
    };
    (
        @emit_variadic [$($pyfunction:tt)*] [$($pymethods:tt)*] $param:ident [$var:ident]
        [$($doc:tt)*] $name:ident $py:ident $x:ident $body:block
    ) => {
        $($doc)*
        $($pyfunction)*
        #[pyo3(signature = ($x, *$param))]
        fn $name($py: Python<'_>, $x: &Bound<'_, PyAny>, $param: &Bound<'_, PyTuple>)
            -> PyResult<PyTensor>
        {
            let $x = convert::extract_tensor(stringify!($name), $x)?;
            let $x = &$x;
            let $var = $param;
            $body
        }

        $($pymethods)*
        impl PyTensor {
            $($doc)*
            #[pyo3(signature = (*$param))]
            pub(crate) fn $name(&self, $py: Python<'_>, $param: &Bound<'_, PyTuple>)
                -> PyResult<PyTensor>
            {
                let $x = &self.inner;
                let $var = $param;
                $body
            }
        }
    };
}

tensor_ops! {
    // ---- binary ops with broadcasting: `remat.X(a, b)` and `Tensor.X(other)` -------------
    binary {
        /// `a + b` with broadcasting.
        add(other) => ops::add;
        /// `a - b` with broadcasting.
        sub(other) => ops::sub;
        /// `a * b` with broadcasting.
        mul(other) => ops::mul;
        /// `a / b` with broadcasting.
        div(other) => ops::div;
        /// Matrix product with `np.matmul` rules.
        matmul(other) => ops::matmul;
        /// Matrix product of two 2-D tensors (PyTorch's `mm`: no broadcasting, one dtype).
        mm(mat2) => ops::mm;
        /// Batched matrix product of two 3-D tensors with equal batch sizes (PyTorch's `bmm`).
        bmm(mat2) => ops::bmm;
        /// Outer product of two 1-D tensors: `out[i, j] = a[i] * b[j]`.
        outer(vec2) => ops::outer;
        /// `a ** b` (a Python scalar exponent uses the scalar power).
        pow(exponent) => ops::pow, scalar ops::pow_scalar;
        /// Elementwise maximum with broadcasting (NaN propagates; ties split the gradient).
        maximum(other) => ops::maximum;
        /// Elementwise minimum with broadcasting (NaN propagates; ties split the gradient).
        minimum(other) => ops::minimum;
        /// `a == b` elementwise with broadcasting: a bool tensor (NaN is unequal).
        eq(other) => ops::eq;
        /// `a != b` elementwise with broadcasting: a bool tensor (NaN is unequal).
        ne(other) => ops::ne;
        /// `a < b` elementwise with broadcasting: a bool tensor.
        lt(other) => ops::lt;
        /// `a <= b` elementwise with broadcasting: a bool tensor.
        le(other) => ops::le;
        /// `a > b` elementwise with broadcasting: a bool tensor.
        gt(other) => ops::gt;
        /// `a >= b` elementwise with broadcasting: a bool tensor.
        ge(other) => ops::ge;
        /// Alias of `ne`.
        not_equal(other) => ops::ne;
        /// Alias of `lt`.
        less(other) => ops::lt;
        /// Alias of `le`.
        less_equal(other) => ops::le;
        /// Alias of `gt`.
        greater(other) => ops::gt;
        /// Alias of `ge`.
        greater_equal(other) => ops::ge;
        /// Logical and of any dtypes (nonzero is true): a bool tensor.
        logical_and(other) => ops::logical_and;
        /// Logical or of any dtypes (nonzero is true): a bool tensor.
        logical_or(other) => ops::logical_or;
        /// Logical exclusive or of any dtypes (nonzero is true): a bool tensor.
        logical_xor(other) => ops::logical_xor;
        /// `a & b`: bitwise and of integer tensors, logical and of bool tensors.
        bitwise_and(other) => ops::bitwise_and;
        /// `a | b`: bitwise or of integer tensors, logical or of bool tensors.
        bitwise_or(other) => ops::bitwise_or;
        /// `a ^ b`: bitwise xor of integer tensors, logical xor of bool tensors.
        bitwise_xor(other) => ops::bitwise_xor;
        /// `a // b`: division rounded toward -inf (integers exactly; not differentiable).
        floor_divide(other) => ops::floor_divide;
        /// `a % b` with the divisor's sign, as Python's `%` (differentiable for floats).
        remainder(other) => ops::remainder;
    }

    // ---- ops with more arguments: `x` is the tensor (`self` of the method) ----------------
    // `#[pyo3(signature = ...)]` is the method's; the function's gets `x, ` in front. PyO3
    // 0.25 writes a default it cannot render (a negative number) as `...` in the
    // `__text_signature__` that `inspect`, `help()` and stubtest read: such a row spells the
    // function's and the method's text signatures with `#[text_signatures(fn, method)]`.
    // `#[py_name("x")]` names the Python op when its Rust name cannot be `x` (`std` is the
    // standard library inside macro-generated code).
    other {
        /// GELU; `approximate="tanh"` uses the tanh approximation.
        #[pyo3(signature = (approximate="none"))]
        fn gelu(py, x, approximate: &str) {
            let tanh = gelu_mode(approximate)?;
            unary(py, x, |x| ops::gelu(x, tanh))
        }
        /// Softmax along `dim` (default the last axis; `axis` accepted).
        #[pyo3(signature = (dim=None, *, axis=None))]
        #[text_signatures("(x, dim=None, *, axis=None)", "($self, dim=None, *, axis=None)")]
        fn softmax(py, x, dim: Option<&Bound<'_, PyAny>>, axis: Option<&Bound<'_, PyAny>>) {
            let d = ReduceArgs::new("softmax", dim, axis, false, None)?
                .single_dim("softmax")?
                .unwrap_or(-1);
            unary(py, x, |x| ops::softmax(x, d))
        }
        /// Log-softmax along `dim` (default the last axis; `axis` accepted).
        #[pyo3(signature = (dim=None, *, axis=None))]
        #[text_signatures("(x, dim=None, *, axis=None)", "($self, dim=None, *, axis=None)")]
        fn log_softmax(py, x, dim: Option<&Bound<'_, PyAny>>, axis: Option<&Bound<'_, PyAny>>) {
            let d = ReduceArgs::new("log_softmax", dim, axis, false, None)?
                .single_dim("log_softmax")?
                .unwrap_or(-1);
            unary(py, x, |x| ops::log_softmax(x, d))
        }
        /// Sum over `dim` (an int, a tuple or None: all axes); `axis`/`keepdims` are
        /// NumPy's spellings of `dim`/`keepdim`.
        #[pyo3(signature = (
            dim=None, keepdim=false, *, axis=None, keepdims=None, dtype=None, out=None
        ))]
        fn sum(
            py, x, dim: Option<&Bound<'_, PyAny>>, keepdim: bool,
            axis: Option<&Bound<'_, PyAny>>, keepdims: Option<bool>,
            dtype: Option<&Bound<'_, PyAny>>, out: Option<&Bound<'_, PyAny>>
        ) {
            args::no_out("sum", out)?;
            let x = &as_dtype(x, dtype)?;
            let r = ReduceArgs::new("sum", dim, axis, keepdim, keepdims)?;
            unary(py, x, |x| ops::sum(x, r.dims(), r.keepdim))
        }
        /// Mean over `dim` (an int, a tuple or None: all axes); `axis`/`keepdims` accepted.
        #[pyo3(signature = (
            dim=None, keepdim=false, *, axis=None, keepdims=None, dtype=None, out=None
        ))]
        fn mean(
            py, x, dim: Option<&Bound<'_, PyAny>>, keepdim: bool,
            axis: Option<&Bound<'_, PyAny>>, keepdims: Option<bool>,
            dtype: Option<&Bound<'_, PyAny>>, out: Option<&Bound<'_, PyAny>>
        ) {
            args::no_out("mean", out)?;
            let x = &as_dtype(x, dtype)?;
            let r = ReduceArgs::new("mean", dim, axis, keepdim, keepdims)?;
            unary(py, x, |x| ops::mean(x, r.dims(), r.keepdim))
        }
        /// The int64 index of the maximum along `dim` (None: into the flattened tensor);
        /// the first among ties, NaN counts as the maximum. Never differentiable.
        #[pyo3(signature = (dim=None, keepdim=false, *, axis=None, keepdims=None, out=None))]
        fn argmax(
            py, x, dim: Option<&Bound<'_, PyAny>>, keepdim: bool,
            axis: Option<&Bound<'_, PyAny>>, keepdims: Option<bool>, out: Option<&Bound<'_, PyAny>>
        ) {
            args::no_out("argmax", out)?;
            let r = ReduceArgs::new("argmax", dim, axis, keepdim, keepdims)?;
            let d = r.single_dim("argmax")?;
            unary(py, x, |x| ops::argmax(x, d, r.keepdim))
        }
        /// The int64 index of the minimum along `dim` (None: into the flattened tensor);
        /// the first among ties, NaN counts as the minimum. Never differentiable.
        #[pyo3(signature = (dim=None, keepdim=false, *, axis=None, keepdims=None, out=None))]
        fn argmin(
            py, x, dim: Option<&Bound<'_, PyAny>>, keepdim: bool,
            axis: Option<&Bound<'_, PyAny>>, keepdims: Option<bool>, out: Option<&Bound<'_, PyAny>>
        ) {
            args::no_out("argmin", out)?;
            let r = ReduceArgs::new("argmin", dim, axis, keepdim, keepdims)?;
            let d = r.single_dim("argmin")?;
            unary(py, x, |x| ops::argmin(x, d, r.keepdim))
        }
        /// Whether every element over `dim` (an int, a tuple or None: all axes) is nonzero;
        /// a bool tensor, for any input dtype.
        #[pyo3(signature = (dim=None, keepdim=false, *, axis=None, keepdims=None, out=None))]
        fn all(
            py, x, dim: Option<&Bound<'_, PyAny>>, keepdim: bool,
            axis: Option<&Bound<'_, PyAny>>, keepdims: Option<bool>, out: Option<&Bound<'_, PyAny>>
        ) {
            args::no_out("all", out)?;
            let r = ReduceArgs::new("all", dim, axis, keepdim, keepdims)?;
            unary(py, x, |x| ops::all(x, r.dims(), r.keepdim))
        }
        /// Whether any element over `dim` (an int, a tuple or None: all axes) is nonzero;
        /// a bool tensor, for any input dtype.
        #[pyo3(signature = (dim=None, keepdim=false, *, axis=None, keepdims=None, out=None))]
        fn any(
            py, x, dim: Option<&Bound<'_, PyAny>>, keepdim: bool,
            axis: Option<&Bound<'_, PyAny>>, keepdims: Option<bool>, out: Option<&Bound<'_, PyAny>>
        ) {
            args::no_out("any", out)?;
            let r = ReduceArgs::new("any", dim, axis, keepdim, keepdims)?;
            unary(py, x, |x| ops::any(x, r.dims(), r.keepdim))
        }
        /// Maximum over `dim` (an int, a tuple or None: all axes), values only; ties share
        /// the gradient evenly.
        #[pyo3(signature = (dim=None, keepdim=false, *, axis=None, keepdims=None))]
        fn amax(
            py, x, dim: Option<&Bound<'_, PyAny>>, keepdim: bool,
            axis: Option<&Bound<'_, PyAny>>, keepdims: Option<bool>
        ) {
            let r = ReduceArgs::new("amax", dim, axis, keepdim, keepdims)?;
            unary(py, x, |x| ops::amax(x, r.dims(), r.keepdim))
        }
        /// Minimum over `dim` (an int, a tuple or None: all axes), values only; ties share
        /// the gradient evenly.
        #[pyo3(signature = (dim=None, keepdim=false, *, axis=None, keepdims=None))]
        fn amin(
            py, x, dim: Option<&Bound<'_, PyAny>>, keepdim: bool,
            axis: Option<&Bound<'_, PyAny>>, keepdims: Option<bool>
        ) {
            let r = ReduceArgs::new("amin", dim, axis, keepdim, keepdims)?;
            unary(py, x, |x| ops::amin(x, r.dims(), r.keepdim))
        }
        /// Product over `dim` (an int, or None: all elements); exact gradients with zeros.
        #[pyo3(signature = (
            dim=None, keepdim=false, *, axis=None, keepdims=None, dtype=None, out=None
        ))]
        fn prod(
            py, x, dim: Option<&Bound<'_, PyAny>>, keepdim: bool,
            axis: Option<&Bound<'_, PyAny>>, keepdims: Option<bool>,
            dtype: Option<&Bound<'_, PyAny>>, out: Option<&Bound<'_, PyAny>>
        ) {
            args::no_out("prod", out)?;
            let x = &as_dtype(x, dtype)?;
            let r = ReduceArgs::new("prod", dim, axis, keepdim, keepdims)?;
            let d = r.single_dim("prod")?;
            unary(py, x, |x| ops::prod(x, d, r.keepdim))
        }
        /// Variance over `dim` (an int, a tuple or None: all axes), dividing by
        /// `N - correction` (default 1); `unbiased=False` is `correction=0`.
        #[pyo3(signature = (
            dim=None, unbiased=None, keepdim=false, *, correction=None, axis=None, keepdims=None
        ))]
        fn var(
            py, x, dim: Option<&Bound<'_, PyAny>>, unbiased: Option<bool>, keepdim: bool,
            correction: Option<f64>, axis: Option<&Bound<'_, PyAny>>, keepdims: Option<bool>
        ) {
            let (r, c) = moment_args("var", dim, unbiased, correction, axis, keepdim, keepdims)?;
            unary(py, x, |x| ops::var(x, r.dims(), c, r.keepdim))
        }
        /// Standard deviation over `dim`, with `var`'s arguments.
        #[pyo3(signature = (
            dim=None, unbiased=None, keepdim=false, *, correction=None, axis=None, keepdims=None
        ))]
        #[py_name("std")]
        fn std_(
            py, x, dim: Option<&Bound<'_, PyAny>>, unbiased: Option<bool>, keepdim: bool,
            correction: Option<f64>, axis: Option<&Bound<'_, PyAny>>, keepdims: Option<bool>
        ) {
            let (r, c) = moment_args("std", dim, unbiased, correction, axis, keepdim, keepdims)?;
            unary(py, x, |x| ops::std(x, r.dims(), c, r.keepdim))
        }
        /// `log(sum(exp(x)))` over `dim` (an int, a tuple or None: all axes), computed
        /// without overflow.
        #[pyo3(signature = (dim=None, keepdim=false, *, axis=None, keepdims=None))]
        fn logsumexp(
            py, x, dim: Option<&Bound<'_, PyAny>>, keepdim: bool,
            axis: Option<&Bound<'_, PyAny>>, keepdims: Option<bool>
        ) {
            let r = ReduceArgs::new("logsumexp", dim, axis, keepdim, keepdims)?;
            unary(py, x, |x| ops::logsumexp(x, r.dims(), r.keepdim))
        }
        /// The vector `p`-norm over `dim` (an int, a tuple or None: all elements); `p` a
        /// number (`inf`/`-inf` included) or `"fro"` (= 2).
        #[pyo3(signature = (p=None, dim=None, keepdim=false, *, axis=None, keepdims=None))]
        #[text_signatures(
            "(x, p='fro', dim=None, keepdim=False, *, axis=None, keepdims=None)",
            "($self, p='fro', dim=None, keepdim=False, *, axis=None, keepdims=None)"
        )]
        fn norm(
            py, x, p: Option<&Bound<'_, PyAny>>, dim: Option<&Bound<'_, PyAny>>,
            keepdim: bool, axis: Option<&Bound<'_, PyAny>>, keepdims: Option<bool>
        ) {
            let p = norm_order(p)?;
            let r = ReduceArgs::new("norm", dim, axis, keepdim, keepdims)?;
            unary(py, x, |x| ops::norm(x, p, r.dims(), r.keepdim))
        }
        /// Inclusive cumulative sum along `dim` (`axis` accepted).
        #[pyo3(signature = (dim=None, *, axis=None))]
        fn cumsum(py, x, dim: Option<&Bound<'_, PyAny>>, axis: Option<&Bound<'_, PyAny>>) {
            let r = ReduceArgs::new("cumsum", dim, axis, false, None)?;
            let d = r.single_dim("cumsum")?.ok_or_else(|| {
                pyo3::exceptions::PyTypeError::new_err("cumsum: missing the dim argument")
            })?;
            unary(py, x, |x| ops::cumsum(x, d))
        }
        /// A new axis of extent 1 at `dim` (a view).
        fn unsqueeze(_py, x, dim: isize) {
            ops::unsqueeze(x, dim).py().map(wrap)
        }
        /// Axes of extent 1 removed: all (`dim=None`), or those of `dim` (an int or a tuple)
        /// that have extent 1 (a view).
        #[pyo3(signature = (dim=None))]
        fn squeeze(_py, x, dim: Option<&Bound<'_, PyAny>>) {
            let dims = args::axes("squeeze", dim)?;
            ops::squeeze(x, dims.as_deref()).py().map(wrap)
        }
        /// Axes `start_dim..=end_dim` merged into one (a view when contiguous, else a copy).
        #[pyo3(signature = (start_dim=0, end_dim=-1))]
        #[text_signatures("(x, start_dim=0, end_dim=-1)", "($self, start_dim=0, end_dim=-1)")]
        fn flatten(py, x, start_dim: isize, end_dim: isize) {
            unary(py, x, |x| ops::flatten(x, start_dim, end_dim))
        }
        /// Axis `dim` split into `sizes` (one may be -1).
        fn unflatten(py, x, dim: isize, sizes: &Bound<'_, PyAny>) {
            let sizes = args::int_list("unflatten", "sizes", sizes)?;
            unary(py, x, |x| ops::unflatten(x, dim, &sizes))
        }
        /// Axes `source` (an int or a tuple) moved to positions `destination` (a view).
        fn movedim(_py, x, source: &Bound<'_, PyAny>, destination: &Bound<'_, PyAny>) {
            let src = args::int_list("movedim", "source", source)?;
            let dst = args::int_list("movedim", "destination", destination)?;
            ops::movedim(x, &src, &dst).py().map(wrap)
        }
        /// Positions `start..start + length` of axis `dim` (a view).
        fn narrow(_py, x, dim: isize, start: isize, length: isize) {
            ops::narrow(x, dim, start, length).py().map(wrap)
        }
        /// A broadcast view with shape `size` (-1 keeps an extent).
        fn broadcast_to(_py, x, size: &Bound<'_, PyAny>) {
            let size = args::int_list("broadcast_to", "size", size)?;
            ops::broadcast_to(x, &size).py().map(wrap)
        }
        /// A broadcast view with the shape of `other`.
        fn expand_as(_py, x, other: &Bound<'_, PyAny>) {
            let other = convert::extract_tensor("expand_as", other)?;
            ops::expand_as(x, &other).py().map(wrap)
        }
        /// `beta * x + alpha * (mat1 @ mat2)` for 2-D `mat1`, `mat2` and `x` broadcastable to
        /// the product (fused; with `beta=0`, `x` is ignored, NaN included).
        #[pyo3(signature = (mat1, mat2, *, beta=1.0, alpha=1.0))]
        fn addmm(py, x, mat1: &Bound<'_, PyAny>, mat2: &Bound<'_, PyAny>, beta: f64, alpha: f64) {
            let m1 = convert::extract_tensor("addmm", mat1)?;
            let m2 = convert::extract_tensor("addmm", mat2)?;
            run(py, heavy(&[x, &m1, &m2]), || ops::addmm(x, &m1, &m2, beta, alpha)).map(wrap)
        }
        /// `beta * x + alpha * (batch1 @ batch2)` for 3-D `batch1`, `batch2` with equal batch
        /// sizes and `x` broadcastable to the product (fused, like `addmm`).
        #[pyo3(signature = (batch1, batch2, *, beta=1.0, alpha=1.0))]
        fn baddbmm(
            py, x, batch1: &Bound<'_, PyAny>, batch2: &Bound<'_, PyAny>, beta: f64, alpha: f64
        ) {
            let b1 = convert::extract_tensor("baddbmm", batch1)?;
            let b2 = convert::extract_tensor("baddbmm", batch2)?;
            run(py, heavy(&[x, &b1, &b2]), || ops::baddbmm(x, &b1, &b2, beta, alpha)).map(wrap)
        }
        /// A new contiguous tensor with the same values that gradients flow through.
        fn clone(py, x) {
            unary(py, x, ops::clone)
        }
        /// Clamp into `[min, max]`; each bound None, a number or a tensor (not both None).
        /// NaN propagates; the gradient is 0 outside the bounds and at a number bound.
        #[pyo3(signature = (min=None, max=None))]
        fn clamp(py, x, min: Option<&Bound<'_, PyAny>>, max: Option<&Bound<'_, PyAny>>) {
            clamp_args(py, "clamp", x, min, max)
        }
        /// Alias of `clamp`.
        #[pyo3(signature = (min=None, max=None))]
        fn clip(py, x, min: Option<&Bound<'_, PyAny>>, max: Option<&Bound<'_, PyAny>>) {
            clamp_args(py, "clip", x, min, max)
        }
        /// Where `x` is zero (any dtype): a bool tensor.
        fn logical_not(py, x) {
            unary(py, x, ops::logical_not)
        }
        /// `~x`: bitwise not of an integer tensor, logical not of a bool tensor.
        fn bitwise_not(py, x) {
            unary(py, x, ops::bitwise_not)
        }
        /// Where `x` is NaN: a bool tensor (all False for integer tensors).
        fn isnan(py, x) {
            unary(py, x, ops::isnan)
        }
        /// Where `x` is +inf or -inf: a bool tensor (all False for integer tensors).
        fn isinf(py, x) {
            unary(py, x, ops::isinf)
        }
        /// Where `x` is finite: a bool tensor (all True for integer tensors).
        fn isfinite(py, x) {
            unary(py, x, ops::isfinite)
        }
        /// `value` (a number or a 0-d tensor) where the bool `mask` (broadcast to `x`) is
        /// True, else `x`; keeps `x`'s dtype; differentiable (zero gradient where masked).
        fn masked_fill(py, x, mask: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) {
            let mask = convert::extract_tensor("masked_fill", mask)?;
            let value = fill_value("masked_fill", value, x)?;
            run(py, heavy(&[x, &mask]), || ops::masked_fill(x, &mask, &value)).map(wrap)
        }
        /// `x + weight * (end - x)`, broadcast; `weight` a number or a tensor.
        fn lerp(py, x, end: &Bound<'_, PyAny>, weight: &Bound<'_, PyAny>) {
            let end = operand("lerp", end, x)?;
            if let Some(w) = python_scalar(weight) {
                return run(py, heavy(&[x, &end]), || ops::lerp(x, &end, w)).map(wrap);
            }
            let w = operand("lerp", weight, x)?;
            run(py, heavy(&[x, &end, &w]), || ops::lerp_tensor(x, &end, &w)).map(wrap)
        }
    }

    // ---- ops with `*args`: the name after `*` must be one `tensor_ops!` spells (see there)
    variadic {
        /// The same elements with another shape: `reshape(*shape)` or `reshape(shape)`; -1
        /// infers one extent.
        fn reshape(py, x, *shape) {
            let dims = args::signed_dims("reshape", shape)?;
            let shape = ops::shape::infer_shape("reshape", x.shape(), &dims).py()?;
            run(py, heavy(&[x]), || ops::reshape(x, &shape)).map(wrap)
        }
        /// `transpose(a, b)` swaps two axes; `transpose(axes)` permutes; `transpose()`
        /// reverses all axes.
        fn transpose(_py, x, *axes) {
            transpose_args(x, axes).map(wrap)
        }
        /// Reorder the axes: `permute(*axes)` or `permute(axes)`.
        fn permute(_py, x, *axes) {
            let axes = args::signed_dims("permute", axes)?;
            ops::permute(x, &axes).py().map(wrap)
        }
        /// A broadcast view: `expand(*sizes)` or `expand(sizes)`; -1 keeps an extent, extra
        /// leading sizes add axes.
        fn expand(_py, x, *sizes) {
            let sizes = args::signed_dims("expand", sizes)?;
            ops::expand_sizes(x, &sizes).py().map(wrap)
        }
        /// The tensor tiled `sizes[i]` times along axis `i`: `repeat(*sizes)` or
        /// `repeat(sizes)` (a copy; extra leading sizes add axes).
        fn repeat(py, x, *sizes) {
            let sizes = args::shape_from_args("repeat", sizes)?;
            unary(py, x, |x| ops::repeat(x, &sizes))
        }
        /// The elements reversed along `dims`: `flip(*dims)` or `flip(dims)` (a copy).
        fn flip(py, x, *dims) {
            let dims = args::signed_dims("flip", dims)?;
            unary(py, x, |x| ops::flip(x, &dims))
        }
    }
}

/// Swap two axes, or permute with a full list of axes, or reverse all axes (no axes given):
/// `x.transpose(0, 1)`, `x.transpose((2, 0, 1))`, `x.transpose()`.
fn transpose_args(x: &Tensor, axes: &Bound<'_, PyTuple>) -> PyResult<Tensor> {
    if axes.is_empty() {
        return ops::reverse_axes(x).py();
    }
    let axes = args::signed_dims("transpose", axes)?;
    // Two axes swap (PyTorch); on 2-D tensors that is also the permutation they spell.
    if axes.len() == 2 {
        return ops::transpose(x, axes[0], axes[1]).py();
    }
    ops::permute(x, &axes).py()
}

/// The fill value of `masked_fill`: a Python number as a 0-d tensor of `x`'s dtype and
/// device (ints exactly), or a tensor (the core checks it is 0-d).
fn fill_value(op: &str, value: &Bound<'_, PyAny>, x: &Tensor) -> PyResult<Tensor> {
    if let Some(v) = python_scalar(value) {
        let t = match value.extract::<i64>() {
            Ok(i) if !x.dtype().is_float() && value.is_instance_of::<pyo3::types::PyInt>() => {
                Tensor::scalar_i64(i, x.dtype())
            }
            _ => Tensor::scalar(v, x.dtype()),
        };
        return ops::to_device(&t, x.device()).py();
    }
    convert::extract_tensor(op, value)
}

/// `approximate="none" | "tanh"` of gelu.
fn gelu_mode(approximate: &str) -> PyResult<bool> {
    match approximate {
        "none" => Ok(false),
        "tanh" => Ok(true),
        other => Err(PyValueError::new_err(format!(
            "gelu: approximate must be \"none\" or \"tanh\", got {other:?}"
        ))),
    }
}

/// A bound of `clamp` converted from Python: a number, or a tensor.
enum ClampBound {
    Scalar(f64),
    Tensor(Tensor),
}

impl ClampBound {
    /// None, a Python number (a constant bound) or a tensor-like (converted to `like` when
    /// it is not a tensor).
    fn from_py(op: &str, o: Option<&Bound<'_, PyAny>>, like: &Tensor) -> PyResult<Option<Self>> {
        let Some(o) = o.filter(|o| !o.is_none()) else {
            return Ok(None);
        };
        Ok(Some(match python_scalar(o) {
            Some(v) => ClampBound::Scalar(v),
            None => ClampBound::Tensor(operand(op, o, like)?),
        }))
    }
    fn core(&self) -> ops::Bound<'_> {
        match self {
            ClampBound::Scalar(v) => ops::Bound::Scalar(*v),
            ClampBound::Tensor(t) => ops::Bound::Tensor(t),
        }
    }
}

/// `clamp`/`clip` with bounds from Python. Errors name the op `clamp` for the `clip` alias
/// too, as PyTorch's do.
fn clamp_args(
    py: Python<'_>,
    op: &str,
    x: &Tensor,
    min: Option<&Bound<'_, PyAny>>,
    max: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let lo = ClampBound::from_py(op, min, x)?;
    let hi = ClampBound::from_py(op, max, x)?;
    let (lo, hi) = (
        lo.as_ref().map(ClampBound::core),
        hi.as_ref().map(ClampBound::core),
    );
    run(py, heavy(&[x]), || ops::clamp_by(x, lo, hi)).map(wrap)
}

/// Reduction helper: max / min over `axis`.
/// The input of a reduction with a `dtype=` argument: cast first (differentiably), as
/// PyTorch's `sum(dtype=...)`.
fn as_dtype(x: &Tensor, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Tensor> {
    match crate::dtype::parse_opt_dtype(dtype)? {
        Some(d) if d != x.dtype() => ops::to_dtype(x, d).py(),
        _ => Ok(x.clone()),
    }
}

/// `var`/`std` arguments: the reduction's, and the correction from `correction` or
/// PyTorch's older `unbiased` (not both). A bool first argument is that older
/// `var(unbiased)` form, as in PyTorch.
fn moment_args(
    op: &str,
    dim: Option<&Bound<'_, PyAny>>,
    unbiased: Option<bool>,
    correction: Option<f64>,
    axis: Option<&Bound<'_, PyAny>>,
    keepdim: bool,
    keepdims: Option<bool>,
) -> PyResult<(ReduceArgs, f64)> {
    let (dim, unbiased) = match dim {
        Some(d) if d.is_instance_of::<pyo3::types::PyBool>() && unbiased.is_none() => {
            (None, Some(d.extract::<bool>()?))
        }
        d => (d, unbiased),
    };
    let r = ReduceArgs::new(op, dim, axis, keepdim, keepdims)?;
    let c = match (unbiased, correction) {
        (Some(_), Some(_)) => {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "{op}: pass either correction or unbiased, not both"
            )))
        }
        (Some(u), None) => f64::from(u8::from(u)),
        (None, Some(c)) => c,
        (None, None) => 1.0,
    };
    Ok((r, c))
}

/// `norm`'s `p`: None or `"fro"` (2), or a number.
fn norm_order(p: Option<&Bound<'_, PyAny>>) -> PyResult<f64> {
    let Some(p) = p.filter(|p| !p.is_none()) else {
        return Ok(2.0);
    };
    if let Ok(s) = p.extract::<String>() {
        return match s.as_str() {
            "fro" => Ok(2.0),
            other => Err(PyValueError::new_err(format!(
                "norm: p must be a number or \"fro\", got {other:?}"
            ))),
        };
    }
    p.extract::<f64>().map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err(format!(
            "norm: p must be a number or \"fro\", got {}",
            convert::type_name(p)
        ))
    })
}

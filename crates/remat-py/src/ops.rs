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
//! `remat.__all__` are checked against what this file registers by `tests/bindings/test_surface.py`
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
/// same expansion as the attribute: `@variadic` has one arm per name (`shape`, `axes`,
/// `sizes`, `dims`; a row with another name needs another arm), which passes that name and
/// both attributes to `@emit_variadic`, and the body sees the row's own name bound to it.
macro_rules! tensor_ops {
    (
        binary {
            $(
                $(#[doc = $bdoc:literal])*
                $bname:ident($other:ident $(; $kw:ident => $kfn:path)?)
                    => $bop:path $(, scalar $bscalar:path)?;
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
        // `scalar` op, a Python-scalar right operand uses it instead (cheaper backward); it is
        // told whether the number was a Python float (`ints ** 2.0` is float32).
        $(
            $(#[doc = $bdoc])*
            #[pyfunction]
            #[pyo3(signature = (a, b $(, *, $kw = None)?))]
            fn $bname(
                py: Python<'_>,
                a: &Bound<'_, PyAny>,
                b: &Bound<'_, PyAny>,
                $($kw: Option<&Bound<'_, PyAny>>,)?
            ) -> PyResult<PyTensor> {
                $(
                    if let Some(k) = $kw.filter(|k| !k.is_none()) {
                        let (a, b) = operand_pair(stringify!($bname), a, b)?;
                        return $kfn(py, &a, &b, k);
                    }
                )?
                $(
                    if let Some(p) = python_scalar(b) {
                        let x = convert::extract_tensor(stringify!($bname), a)?;
                        let float = b.is_instance_of::<pyo3::types::PyFloat>();
                        return unary(py, &x, |x| $bscalar(x, p, float));
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
                #[pyo3(signature = ($other $(, *, $kw = None)?))]
                pub(crate) fn $bname(
                    &self,
                    py: Python<'_>,
                    $other: &Bound<'_, PyAny>,
                    $($kw: Option<&Bound<'_, PyAny>>,)?
                ) -> PyResult<PyTensor> {
                    let a = &self.inner;
                    $(
                        if let Some(k) = $kw.filter(|k| !k.is_none()) {
                            let b = operand(stringify!($bname), $other, a)?;
                            return $kfn(py, a, &b, k);
                        }
                    )?
                    $(
                        if let Some(p) = python_scalar($other) {
                            let float = $other.is_instance_of::<pyo3::types::PyFloat>();
                            return unary(py, a, |x| $bscalar(x, p, float));
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
        /// Elementwise sum `a + b`, with broadcasting.
        ///
        /// Either operand may be a Python scalar (it becomes a 0-d tensor of the other operand's
        /// dtype; a float next to an integer or bool tensor gives float32) or anything
        /// `remat.tensor` accepts (lists, NumPy arrays). Dtypes promote as in PyTorch.
        /// Differentiable for float tensors. `Tensor.add(other, *, alpha=None)` is the method form
        /// (the tensor is `a`).
        ///
        /// Parameters
        /// ----------
        /// a : Tensor or scalar
        ///     The left operand.
        /// b : Tensor or scalar
        ///     The right operand (`other` in the method form).
        /// alpha : int or float, optional
        ///     Scales `b` first (PyTorch's `alpha`): `a + alpha * b`. Default: `None` (1).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     `a + b` elementwise, of the broadcast shape and the promoted dtype.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When the shapes do not broadcast.
        /// DTypeError
        ///     When an operand cannot be made a tensor (e.g. a string).
        /// DeviceError
        ///     When the two tensors are on different devices.
        ///
        /// Examples
        /// --------
        /// >>> a = remat.tensor([1.0, 2.0])
        /// >>> remat.add(a, remat.tensor([10.0, 20.0]))
        /// tensor([11., 22.])
        /// >>> remat.add(a, 1)
        /// tensor([2., 3.])
        /// >>> a.add(a)
        /// tensor([2., 4.])
        /// >>> remat.add(a, a, alpha=10)
        /// tensor([11., 22.])
        add(other; alpha => add_alpha) => ops::add;
        /// Elementwise difference `a - b`, with broadcasting.
        ///
        /// Either operand may be a Python scalar (it becomes a 0-d tensor of the other operand's
        /// dtype; a float next to an integer or bool tensor gives float32) or anything
        /// `remat.tensor` accepts (lists, NumPy arrays). Dtypes promote as in PyTorch. Two bool
        /// tensors are refused (use `logical_xor`). Differentiable for float tensors.
        /// `Tensor.sub(other, *, alpha=None)` is the method form (the tensor is `a`).
        ///
        /// Parameters
        /// ----------
        /// a : Tensor or scalar
        ///     The left operand.
        /// b : Tensor or scalar
        ///     The right operand (`other` in the method form).
        /// alpha : int or float, optional
        ///     Scales `b` first (PyTorch's `alpha`): `a - alpha * b`. Default: `None` (1).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     `a - b` elementwise, of the broadcast shape and the promoted dtype.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When the shapes do not broadcast.
        /// DTypeError
        ///     When both operands are bool tensors.
        /// DTypeError
        ///     When an operand cannot be made a tensor (e.g. a string).
        /// DeviceError
        ///     When the two tensors are on different devices.
        ///
        /// Examples
        /// --------
        /// >>> remat.sub(remat.tensor([5.0, 7.0]), remat.tensor([1.0, 2.0]))
        /// tensor([4., 5.])
        /// >>> remat.sub(10, remat.tensor([1, 2]))
        /// tensor([9, 8])
        sub(other; alpha => sub_alpha) => ops::sub;
        /// Elementwise product `a * b`, with broadcasting.
        ///
        /// Either operand may be a Python scalar (it becomes a 0-d tensor of the other operand's
        /// dtype; a float next to an integer or bool tensor gives float32) or anything
        /// `remat.tensor` accepts (lists, NumPy arrays). Dtypes promote as in PyTorch.
        /// Differentiable for float tensors. `Tensor.mul(other)` is the method form (the tensor is
        /// `a`).
        ///
        /// Parameters
        /// ----------
        /// a : Tensor or scalar
        ///     The left operand.
        /// b : Tensor or scalar
        ///     The right operand (`other` in the method form).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     `a * b` elementwise, of the broadcast shape and the promoted dtype.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When the shapes do not broadcast.
        /// DTypeError
        ///     When an operand cannot be made a tensor (e.g. a string).
        /// DeviceError
        ///     When the two tensors are on different devices.
        ///
        /// Examples
        /// --------
        /// >>> remat.mul(remat.tensor([1.0, 2.0]), remat.tensor([[1.0], [10.0]]))
        /// tensor([[ 1.,  2.],
        ///         [10., 20.]])
        /// >>> remat.mul(remat.tensor([1, 2]), 2.5)
        /// tensor([2.5000, 5.0000])
        /// >>> x = remat.tensor([1.0, 2.0], requires_grad=True)
        /// >>> remat.mul(x, 3).sum().backward()
        /// >>> x.grad
        /// tensor([3., 3.])
        mul(other) => ops::mul;
        /// Elementwise true division `a / b`, with broadcasting.
        ///
        /// Either operand may be a Python scalar (it becomes a 0-d tensor of the other operand's
        /// dtype; a float next to an integer or bool tensor gives float32) or anything
        /// `remat.tensor` accepts (lists, NumPy arrays). Dtypes promote as in PyTorch. Integer and
        /// bool operands give float32 (`1 / 2` is 0.5); division by zero gives `inf` or `nan` (no
        /// error), as for floats. Differentiable for float tensors. With `rounding_mode`
        /// (PyTorch's), `"trunc"` rounds toward zero and `"floor"` toward -inf (`a // b`);
        /// integers then stay integer, and the result is not differentiable.
        /// `Tensor.div(other, *, rounding_mode=None)` is the method form (the tensor is `a`).
        ///
        /// Parameters
        /// ----------
        /// a : Tensor or scalar
        ///     The left operand.
        /// b : Tensor or scalar
        ///     The right operand (`other` in the method form).
        /// rounding_mode : str, optional
        ///     `"trunc"`, `"floor"` or `None` (true division). Default: `None`.
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     `a / b` elementwise, of the broadcast shape and the promoted dtype.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When the shapes do not broadcast.
        /// DTypeError
        ///     When an operand cannot be made a tensor (e.g. a string).
        /// DeviceError
        ///     When the two tensors are on different devices.
        ///
        /// Examples
        /// --------
        /// >>> remat.div(remat.tensor([1.0, 3.0]), 2)
        /// tensor([0.5000, 1.5000])
        /// >>> remat.div(remat.tensor([1, 3]), remat.tensor([2, 2]))
        /// tensor([0.5000, 1.5000])
        /// >>> remat.div(remat.tensor([-7, 7]), 2, rounding_mode="trunc")
        /// tensor([-3,  3])
        div(other; rounding_mode => div_rounded) => ops::div;
        /// Matrix product with `np.matmul` rules (the `@` operator).
        ///
        /// 1-D operands are promoted to a matrix and the added axis removed afterwards (1-D @ 1-D
        /// is the dot product, a 0-d tensor); operands with more than 2 dims are stacks of matrices
        /// whose batch axes broadcast. Mixed float dtypes promote. Two int64 (or two int32)
        /// operands give the exact integer product of that dtype, wrapping on overflow, as
        /// PyTorch on the CPU (no gradient). `Tensor.matmul(other)` is the method form (the
        /// tensor is `a`).
        ///
        /// Parameters
        /// ----------
        /// a : Tensor
        ///     The left operand.
        /// b : Tensor
        ///     The right operand (`other` in the method form).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     The product: shape `(*batch, n, p)` for `(*, n, m) @ (*, m, p)`, minus the axes
        ///     added for 1-D operands.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When an operand is 0-d, the inner extents differ or the batch axes do not broadcast.
        /// DTypeError
        ///     When an operand is a bool tensor, or an integer tensor meets a float one or an
        ///     integer tensor of another dtype (convert it with `.float()` or `.long()`).
        /// DeviceError
        ///     When the two tensors are on different devices, or integer tensors are on a GPU.
        ///
        /// Examples
        /// --------
        /// >>> m = remat.tensor([[1.0, 2.0], [3.0, 4.0]])
        /// >>> remat.matmul(m, remat.tensor([1.0, 1.0]))
        /// tensor([3., 7.])
        /// >>> remat.tensor([[1, 2], [3, 4]]) @ remat.tensor([1, 1])
        /// tensor([3, 7])
        /// >>> remat.matmul(remat.ones(4, 2, 3), remat.ones(3, 5)).shape
        /// (4, 2, 5)
        /// >>> m.matmul(remat.eye(2))
        /// tensor([[1., 2.],
        ///         [3., 4.]])
        matmul(other) => ops::matmul;
        /// Matrix product of two 2-D tensors (PyTorch's `mm`).
        ///
        /// Unlike `matmul`: no broadcasting, no 1-D rules, and both operands must have the same
        /// dtype: float, or int64/int32 for an exact integer product (no gradient).
        /// `Tensor.mm(mat2)` is the method form (the tensor is `a`).
        ///
        /// Parameters
        /// ----------
        /// a : Tensor
        ///     The left operand.
        /// b : Tensor
        ///     The right operand (`mat2` in the method form).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     The `(n, p)` product of an `(n, m)` and an `(m, p)` matrix.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When an operand is not 2-D or the inner extents differ.
        /// DTypeError
        ///     When the dtypes differ, or the operands are bool tensors.
        /// DeviceError
        ///     When the two tensors are on different devices.
        ///
        /// Examples
        /// --------
        /// >>> m = remat.tensor([[1.0, 2.0], [3.0, 4.0]])
        /// >>> remat.mm(m, remat.tensor([[1.0], [1.0]]))
        /// tensor([[3.],
        ///         [7.]])
        /// >>> remat.ones(2, 3).mm(remat.ones(3, 4)).shape
        /// (2, 4)
        mm(mat2) => ops::mm;
        /// Batched matrix product of two 3-D tensors (PyTorch's `bmm`).
        ///
        /// `out[i] = a[i] @ b[i]`; the batch sizes must be equal (no broadcasting) and both
        /// operands must have the same dtype (float, or int64/int32 for an exact integer
        /// product). `Tensor.bmm(mat2)` is the method form (the tensor is `a`).
        ///
        /// Parameters
        /// ----------
        /// a : Tensor
        ///     The left operand.
        /// b : Tensor
        ///     The right operand (`mat2` in the method form).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     The `(B, n, p)` product of a `(B, n, m)` and a `(B, m, p)` tensor.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When an operand is not 3-D, the batch sizes differ or the inner extents differ.
        /// DTypeError
        ///     When the dtypes differ, or the operands are bool tensors.
        /// DeviceError
        ///     When the two tensors are on different devices.
        ///
        /// Examples
        /// --------
        /// >>> remat.bmm(remat.ones(2, 2, 3), remat.ones(2, 3, 4)).shape
        /// (2, 2, 4)
        /// >>> remat.bmm(remat.ones(1, 1, 2), remat.tensor([[[1.0], [2.0]]])).tolist()
        /// [[[3.0]]]
        bmm(mat2) => ops::bmm;
        /// Outer product of two 1-D tensors: `out[i, j] = a[i] * b[j]`.
        ///
        /// Any numeric dtypes (they promote as for `mul`). `Tensor.outer(vec2)` is the method form
        /// (the tensor is `a`).
        ///
        /// Parameters
        /// ----------
        /// a : Tensor
        ///     The left operand.
        /// b : Tensor
        ///     The right operand (`vec2` in the method form).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A `(len(a), len(b))` tensor.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When an operand is not 1-D (a Python scalar is 0-d).
        /// DeviceError
        ///     When the two tensors are on different devices.
        ///
        /// Examples
        /// --------
        /// >>> remat.outer(remat.tensor([1.0, 2.0]), remat.tensor([1.0, 10.0, 100.0]))
        /// tensor([[  1.,  10., 100.],
        ///         [  2.,  20., 200.]])
        /// >>> remat.tensor([1, 2]).outer(remat.tensor([3, 4]))
        /// tensor([[3, 4],
        ///         [6, 8]])
        outer(vec2) => ops::outer;
        /// Elementwise power `a ** b`, with broadcasting.
        ///
        /// Either operand may be a Python scalar (it becomes a 0-d tensor of the other operand's
        /// dtype; a float next to an integer or bool tensor gives float32) or anything
        /// `remat.tensor` accepts (lists, NumPy arrays). Dtypes promote as in PyTorch. A Python
        /// scalar exponent uses the scalar power (a cheaper backward). As in PyTorch, integer
        /// tensors stay integer for integer exponents (a Python int or an integer tensor; a
        /// float exponent gives float32); a negative Python int exponent raises, while negative
        /// exponents in an integer tensor give integer results (`1`, `±1` for a base of `-1`,
        /// else `0`). A negative float base with a non-integer exponent gives `nan`.
        /// Differentiable for float tensors. `Tensor.pow(exponent)` is the method form (the
        /// tensor is `a`).
        ///
        /// Parameters
        /// ----------
        /// a : Tensor or scalar
        ///     The left operand.
        /// b : Tensor or scalar
        ///     The right operand (`exponent` in the method form).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     `a ** b` elementwise, of the broadcast shape and the promoted dtype.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When the shapes do not broadcast.
        /// ValueError
        ///     When an integer tensor meets a negative Python int exponent.
        /// DTypeError
        ///     When an operand cannot be made a tensor (e.g. a string).
        /// DeviceError
        ///     When the two tensors are on different devices.
        ///
        /// Examples
        /// --------
        /// >>> remat.pow(remat.tensor([1.0, 2.0, 3.0]), 2)
        /// tensor([1., 4., 9.])
        /// >>> remat.pow(2, remat.tensor([1.0, 2.0, 3.0]))
        /// tensor([2., 4., 8.])
        /// >>> remat.pow(remat.tensor([1, 2]), remat.tensor([2, 3]))
        /// tensor([1, 8])
        /// >>> x = remat.tensor([1.0, 2.0], requires_grad=True)
        /// >>> remat.pow(x, 2).sum().backward()
        /// >>> x.grad
        /// tensor([2., 4.])
        pow(exponent) => ops::pow, scalar ops::pow_number;
        /// Elementwise maximum of `a` and `b`, with broadcasting.
        ///
        /// Either operand may be a Python scalar (it becomes a 0-d tensor of the other operand's
        /// dtype; a float next to an integer or bool tensor gives float32) or anything
        /// `remat.tensor` accepts (lists, NumPy arrays). NaN propagates (a NaN on either side gives
        /// NaN); where the two are equal the gradient is split evenly between them.
        /// `Tensor.maximum(other)` is the method form (the tensor is `a`).
        ///
        /// Parameters
        /// ----------
        /// a : Tensor or scalar
        ///     The left operand.
        /// b : Tensor or scalar
        ///     The right operand (`other` in the method form).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     The larger value at each position, of the broadcast shape and the promoted dtype.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When the shapes do not broadcast.
        /// DTypeError
        ///     When an operand cannot be made a tensor (e.g. a string).
        /// DeviceError
        ///     When the two tensors are on different devices.
        ///
        /// Examples
        /// --------
        /// >>> remat.maximum(remat.tensor([1.0, 5.0, float("nan")]), remat.tensor([3.0, 2.0, 0.0]))
        /// tensor([3., 5., nan])
        /// >>> a = remat.tensor([1.0, 2.0], requires_grad=True)
        /// >>> remat.maximum(a, remat.tensor([1.0, 0.0])).sum().backward()
        /// >>> a.grad
        /// tensor([0.5000, 1.0000])
        maximum(other) => ops::maximum;
        /// Elementwise minimum of `a` and `b`, with broadcasting.
        ///
        /// Either operand may be a Python scalar (it becomes a 0-d tensor of the other operand's
        /// dtype; a float next to an integer or bool tensor gives float32) or anything
        /// `remat.tensor` accepts (lists, NumPy arrays). NaN propagates (a NaN on either side gives
        /// NaN); where the two are equal the gradient is split evenly between them.
        /// `Tensor.minimum(other)` is the method form (the tensor is `a`).
        ///
        /// Parameters
        /// ----------
        /// a : Tensor or scalar
        ///     The left operand.
        /// b : Tensor or scalar
        ///     The right operand (`other` in the method form).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     The smaller value at each position, of the broadcast shape and the promoted dtype.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When the shapes do not broadcast.
        /// DTypeError
        ///     When an operand cannot be made a tensor (e.g. a string).
        /// DeviceError
        ///     When the two tensors are on different devices.
        ///
        /// Examples
        /// --------
        /// >>> remat.minimum(remat.tensor([1.0, 5.0]), remat.tensor([3.0, 2.0]))
        /// tensor([1., 2.])
        /// >>> remat.tensor([1, 5]).minimum(3)
        /// tensor([1, 3])
        minimum(other) => ops::minimum;
        /// Elementwise arctangent of `a / b`, choosing the quadrant from both signs.
        ///
        /// The angle of the point ``(b, a)`` in radians, in ``[-pi, pi]``, as PyTorch's
        /// ``atan2`` and NumPy's ``arctan2``. Either operand may be a Python scalar (it becomes a
        /// 0-d tensor of the other operand's dtype) or anything `remat.tensor` accepts (lists,
        /// NumPy arrays). Integer and bool operands give float32. The gradients are
        /// ``b / (a^2 + b^2)`` and ``-a / (a^2 + b^2)`` (NaN at the origin, as in PyTorch).
        /// `Tensor.atan2(other)` is the method form (the tensor is `a`).
        ///
        /// Parameters
        /// ----------
        /// a : Tensor or scalar
        ///     The y coordinate (the numerator).
        /// b : Tensor or scalar
        ///     The x coordinate (the denominator; `other` in the method form).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     The angles, of the broadcast shape and the promoted float dtype.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When the shapes do not broadcast.
        /// DTypeError
        ///     When an operand cannot be made a tensor (e.g. a string).
        /// DeviceError
        ///     When the two tensors are on different devices.
        ///
        /// Examples
        /// --------
        /// >>> remat.atan2(remat.tensor([1.0, 1.0, -1.0]), remat.tensor([1.0, -1.0, 0.0]))
        /// tensor([ 0.7854,  2.3562, -1.5708])
        /// >>> remat.tensor([0.0]).atan2(-1.0)
        /// tensor([3.1416])
        atan2(other) => ops::atan2;
        /// Elementwise `a == b`, with broadcasting.
        ///
        /// Either operand may be a Python scalar (it becomes a 0-d tensor of the other operand's
        /// dtype; a float next to an integer or bool tensor gives float32) or anything
        /// `remat.tensor` accepts (lists, NumPy arrays). The operands are compared after dtype
        /// promotion. NaN is unequal to everything. Never differentiable. `Tensor.eq(other)` is the
        /// method form (the tensor is `a`).
        ///
        /// Parameters
        /// ----------
        /// a : Tensor or scalar
        ///     The left operand.
        /// b : Tensor or scalar
        ///     The right operand (`other` in the method form).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A bool tensor of the broadcast shape: `a == b` at each position.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When the shapes do not broadcast.
        /// DTypeError
        ///     When an operand cannot be made a tensor (e.g. a string).
        /// DeviceError
        ///     When the two tensors are on different devices.
        ///
        /// Examples
        /// --------
        /// >>> a = remat.tensor([1.0, 2.0, float("nan")])
        /// >>> remat.eq(a, remat.tensor([1.0, 3.0, float("nan")]))
        /// tensor([ True, False, False])
        /// >>> remat.tensor([1, 2, 3]).eq(2)
        /// tensor([False,  True, False])
        eq(other) => ops::eq;
        /// Elementwise `a != b`, with broadcasting.
        ///
        /// Either operand may be a Python scalar (it becomes a 0-d tensor of the other operand's
        /// dtype; a float next to an integer or bool tensor gives float32) or anything
        /// `remat.tensor` accepts (lists, NumPy arrays). The operands are compared after dtype
        /// promotion. NaN is unequal to everything. Never differentiable. `Tensor.ne(other)` is the
        /// method form (the tensor is `a`).
        ///
        /// Parameters
        /// ----------
        /// a : Tensor or scalar
        ///     The left operand.
        /// b : Tensor or scalar
        ///     The right operand (`other` in the method form).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A bool tensor of the broadcast shape: `a != b` at each position.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When the shapes do not broadcast.
        /// DTypeError
        ///     When an operand cannot be made a tensor (e.g. a string).
        /// DeviceError
        ///     When the two tensors are on different devices.
        ///
        /// Examples
        /// --------
        /// >>> a = remat.tensor([1.0, 2.0, float("nan")])
        /// >>> remat.ne(a, remat.tensor([1.0, 3.0, float("nan")]))
        /// tensor([False,  True,  True])
        ne(other) => ops::ne;
        /// Elementwise `a < b`, with broadcasting.
        ///
        /// Either operand may be a Python scalar (it becomes a 0-d tensor of the other operand's
        /// dtype; a float next to an integer or bool tensor gives float32) or anything
        /// `remat.tensor` accepts (lists, NumPy arrays). The operands are compared after dtype
        /// promotion. A NaN compares False. Never differentiable. `Tensor.lt(other)` is the method
        /// form (the tensor is `a`).
        ///
        /// Parameters
        /// ----------
        /// a : Tensor or scalar
        ///     The left operand.
        /// b : Tensor or scalar
        ///     The right operand (`other` in the method form).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A bool tensor of the broadcast shape: `a < b` at each position.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When the shapes do not broadcast.
        /// DTypeError
        ///     When an operand cannot be made a tensor (e.g. a string).
        /// DeviceError
        ///     When the two tensors are on different devices.
        ///
        /// Examples
        /// --------
        /// >>> remat.lt(remat.tensor([1, 2, 3]), 2)
        /// tensor([ True, False, False])
        /// >>> remat.lt(2, remat.tensor([1, 2, 3]))
        /// tensor([False, False,  True])
        lt(other) => ops::lt;
        /// Elementwise `a <= b`, with broadcasting.
        ///
        /// Either operand may be a Python scalar (it becomes a 0-d tensor of the other operand's
        /// dtype; a float next to an integer or bool tensor gives float32) or anything
        /// `remat.tensor` accepts (lists, NumPy arrays). The operands are compared after dtype
        /// promotion. A NaN compares False. Never differentiable. `Tensor.le(other)` is the method
        /// form (the tensor is `a`).
        ///
        /// Parameters
        /// ----------
        /// a : Tensor or scalar
        ///     The left operand.
        /// b : Tensor or scalar
        ///     The right operand (`other` in the method form).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A bool tensor of the broadcast shape: `a <= b` at each position.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When the shapes do not broadcast.
        /// DTypeError
        ///     When an operand cannot be made a tensor (e.g. a string).
        /// DeviceError
        ///     When the two tensors are on different devices.
        ///
        /// Examples
        /// --------
        /// >>> remat.le(remat.tensor([1, 2, 3]), 2)
        /// tensor([ True,  True, False])
        /// >>> remat.le(remat.tensor([1.0, float("nan")]), 1.0)
        /// tensor([ True, False])
        le(other) => ops::le;
        /// Elementwise `a > b`, with broadcasting.
        ///
        /// Either operand may be a Python scalar (it becomes a 0-d tensor of the other operand's
        /// dtype; a float next to an integer or bool tensor gives float32) or anything
        /// `remat.tensor` accepts (lists, NumPy arrays). The operands are compared after dtype
        /// promotion. A NaN compares False. Never differentiable. `Tensor.gt(other)` is the method
        /// form (the tensor is `a`).
        ///
        /// Parameters
        /// ----------
        /// a : Tensor or scalar
        ///     The left operand.
        /// b : Tensor or scalar
        ///     The right operand (`other` in the method form).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A bool tensor of the broadcast shape: `a > b` at each position.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When the shapes do not broadcast.
        /// DTypeError
        ///     When an operand cannot be made a tensor (e.g. a string).
        /// DeviceError
        ///     When the two tensors are on different devices.
        ///
        /// Examples
        /// --------
        /// >>> remat.gt(remat.tensor([1, 2, 3]), 2)
        /// tensor([False, False,  True])
        /// >>> remat.gt(remat.tensor([[1], [3]]), remat.tensor([0, 2, 4]))
        /// tensor([[ True, False, False],
        ///         [ True,  True, False]])
        gt(other) => ops::gt;
        /// Elementwise `a >= b`, with broadcasting.
        ///
        /// Either operand may be a Python scalar (it becomes a 0-d tensor of the other operand's
        /// dtype; a float next to an integer or bool tensor gives float32) or anything
        /// `remat.tensor` accepts (lists, NumPy arrays). The operands are compared after dtype
        /// promotion. A NaN compares False. Never differentiable. `Tensor.ge(other)` is the method
        /// form (the tensor is `a`).
        ///
        /// Parameters
        /// ----------
        /// a : Tensor or scalar
        ///     The left operand.
        /// b : Tensor or scalar
        ///     The right operand (`other` in the method form).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A bool tensor of the broadcast shape: `a >= b` at each position.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When the shapes do not broadcast.
        /// DTypeError
        ///     When an operand cannot be made a tensor (e.g. a string).
        /// DeviceError
        ///     When the two tensors are on different devices.
        ///
        /// Examples
        /// --------
        /// >>> remat.ge(remat.tensor([1, 2, 3]), 2)
        /// tensor([False,  True,  True])
        ge(other) => ops::ge;
        /// Alias of `ne`: elementwise `a != b`, with broadcasting.
        ///
        /// Either operand may be a Python scalar (it becomes a 0-d tensor of the other operand's
        /// dtype; a float next to an integer or bool tensor gives float32) or anything
        /// `remat.tensor` accepts (lists, NumPy arrays). The operands are compared after dtype
        /// promotion. NaN is unequal to everything. Never differentiable. `Tensor.not_equal(other)`
        /// is the method form (the tensor is `a`).
        ///
        /// Parameters
        /// ----------
        /// a : Tensor or scalar
        ///     The left operand.
        /// b : Tensor or scalar
        ///     The right operand (`other` in the method form).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A bool tensor of the broadcast shape: `a != b` at each position.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When the shapes do not broadcast.
        /// DTypeError
        ///     When an operand cannot be made a tensor (e.g. a string).
        /// DeviceError
        ///     When the two tensors are on different devices.
        ///
        /// Examples
        /// --------
        /// >>> remat.not_equal(remat.tensor([1, 2]), 2)
        /// tensor([ True, False])
        not_equal(other) => ops::ne;
        /// Alias of `lt`: elementwise `a < b`, with broadcasting.
        ///
        /// Either operand may be a Python scalar (it becomes a 0-d tensor of the other operand's
        /// dtype; a float next to an integer or bool tensor gives float32) or anything
        /// `remat.tensor` accepts (lists, NumPy arrays). The operands are compared after dtype
        /// promotion. A NaN compares False. Never differentiable. `Tensor.less(other)` is the
        /// method form (the tensor is `a`).
        ///
        /// Parameters
        /// ----------
        /// a : Tensor or scalar
        ///     The left operand.
        /// b : Tensor or scalar
        ///     The right operand (`other` in the method form).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A bool tensor of the broadcast shape: `a < b` at each position.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When the shapes do not broadcast.
        /// DTypeError
        ///     When an operand cannot be made a tensor (e.g. a string).
        /// DeviceError
        ///     When the two tensors are on different devices.
        ///
        /// Examples
        /// --------
        /// >>> remat.less(remat.tensor([1, 2]), 2)
        /// tensor([ True, False])
        less(other) => ops::lt;
        /// Alias of `le`: elementwise `a <= b`, with broadcasting.
        ///
        /// Either operand may be a Python scalar (it becomes a 0-d tensor of the other operand's
        /// dtype; a float next to an integer or bool tensor gives float32) or anything
        /// `remat.tensor` accepts (lists, NumPy arrays). The operands are compared after dtype
        /// promotion. A NaN compares False. Never differentiable. `Tensor.less_equal(other)` is the
        /// method form (the tensor is `a`).
        ///
        /// Parameters
        /// ----------
        /// a : Tensor or scalar
        ///     The left operand.
        /// b : Tensor or scalar
        ///     The right operand (`other` in the method form).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A bool tensor of the broadcast shape: `a <= b` at each position.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When the shapes do not broadcast.
        /// DTypeError
        ///     When an operand cannot be made a tensor (e.g. a string).
        /// DeviceError
        ///     When the two tensors are on different devices.
        ///
        /// Examples
        /// --------
        /// >>> remat.less_equal(remat.tensor([1, 2]), 2)
        /// tensor([True, True])
        less_equal(other) => ops::le;
        /// Alias of `gt`: elementwise `a > b`, with broadcasting.
        ///
        /// Either operand may be a Python scalar (it becomes a 0-d tensor of the other operand's
        /// dtype; a float next to an integer or bool tensor gives float32) or anything
        /// `remat.tensor` accepts (lists, NumPy arrays). The operands are compared after dtype
        /// promotion. A NaN compares False. Never differentiable. `Tensor.greater(other)` is the
        /// method form (the tensor is `a`).
        ///
        /// Parameters
        /// ----------
        /// a : Tensor or scalar
        ///     The left operand.
        /// b : Tensor or scalar
        ///     The right operand (`other` in the method form).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A bool tensor of the broadcast shape: `a > b` at each position.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When the shapes do not broadcast.
        /// DTypeError
        ///     When an operand cannot be made a tensor (e.g. a string).
        /// DeviceError
        ///     When the two tensors are on different devices.
        ///
        /// Examples
        /// --------
        /// >>> remat.greater(remat.tensor([1, 2]), 1)
        /// tensor([False,  True])
        greater(other) => ops::gt;
        /// Alias of `ge`: elementwise `a >= b`, with broadcasting.
        ///
        /// Either operand may be a Python scalar (it becomes a 0-d tensor of the other operand's
        /// dtype; a float next to an integer or bool tensor gives float32) or anything
        /// `remat.tensor` accepts (lists, NumPy arrays). The operands are compared after dtype
        /// promotion. A NaN compares False. Never differentiable. `Tensor.greater_equal(other)` is
        /// the method form (the tensor is `a`).
        ///
        /// Parameters
        /// ----------
        /// a : Tensor or scalar
        ///     The left operand.
        /// b : Tensor or scalar
        ///     The right operand (`other` in the method form).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A bool tensor of the broadcast shape: `a >= b` at each position.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When the shapes do not broadcast.
        /// DTypeError
        ///     When an operand cannot be made a tensor (e.g. a string).
        /// DeviceError
        ///     When the two tensors are on different devices.
        ///
        /// Examples
        /// --------
        /// >>> remat.greater_equal(remat.tensor([1, 2]), 2)
        /// tensor([False,  True])
        greater_equal(other) => ops::ge;
        /// Elementwise logical and of `a` and `b`, with broadcasting.
        ///
        /// Any dtypes: nonzero (NaN included) is true. Either operand may be a Python scalar (it
        /// becomes a 0-d tensor of the other operand's dtype; a float next to an integer or bool
        /// tensor gives float32) or anything `remat.tensor` accepts (lists, NumPy arrays). Never
        /// differentiable. `Tensor.logical_and(other)` is the method form (the tensor is `a`).
        ///
        /// Parameters
        /// ----------
        /// a : Tensor or scalar
        ///     The left operand.
        /// b : Tensor or scalar
        ///     The right operand (`other` in the method form).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A bool tensor of the broadcast shape.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When the shapes do not broadcast.
        /// DTypeError
        ///     When an operand cannot be made a tensor (e.g. a string).
        /// DeviceError
        ///     When the two tensors are on different devices.
        ///
        /// Examples
        /// --------
        /// >>> a = remat.tensor([True, True, False])
        /// >>> remat.logical_and(a, remat.tensor([True, False, False]))
        /// tensor([ True, False, False])
        /// >>> remat.logical_and(remat.tensor([2.0, 0.0, 1.0]), remat.tensor([1, 1, 0]))
        /// tensor([ True, False, False])
        logical_and(other) => ops::logical_and;
        /// Elementwise logical or of `a` and `b`, with broadcasting.
        ///
        /// Any dtypes: nonzero (NaN included) is true. Either operand may be a Python scalar (it
        /// becomes a 0-d tensor of the other operand's dtype; a float next to an integer or bool
        /// tensor gives float32) or anything `remat.tensor` accepts (lists, NumPy arrays). Never
        /// differentiable. `Tensor.logical_or(other)` is the method form (the tensor is `a`).
        ///
        /// Parameters
        /// ----------
        /// a : Tensor or scalar
        ///     The left operand.
        /// b : Tensor or scalar
        ///     The right operand (`other` in the method form).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A bool tensor of the broadcast shape.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When the shapes do not broadcast.
        /// DTypeError
        ///     When an operand cannot be made a tensor (e.g. a string).
        /// DeviceError
        ///     When the two tensors are on different devices.
        ///
        /// Examples
        /// --------
        /// >>> remat.logical_or(remat.tensor([0, 1, 0]), remat.tensor([0, 0, 3]))
        /// tensor([False,  True,  True])
        logical_or(other) => ops::logical_or;
        /// Elementwise logical exclusive or of `a` and `b`, with broadcasting.
        ///
        /// Any dtypes: nonzero (NaN included) is true. Either operand may be a Python scalar (it
        /// becomes a 0-d tensor of the other operand's dtype; a float next to an integer or bool
        /// tensor gives float32) or anything `remat.tensor` accepts (lists, NumPy arrays). Never
        /// differentiable. `Tensor.logical_xor(other)` is the method form (the tensor is `a`).
        ///
        /// Parameters
        /// ----------
        /// a : Tensor or scalar
        ///     The left operand.
        /// b : Tensor or scalar
        ///     The right operand (`other` in the method form).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A bool tensor of the broadcast shape.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When the shapes do not broadcast.
        /// DTypeError
        ///     When an operand cannot be made a tensor (e.g. a string).
        /// DeviceError
        ///     When the two tensors are on different devices.
        ///
        /// Examples
        /// --------
        /// >>> remat.logical_xor(remat.tensor([0, 1, 2]), remat.tensor([0, 0, 3]))
        /// tensor([False,  True, False])
        logical_xor(other) => ops::logical_xor;
        /// Elementwise `a & b`: bitwise and of integer tensors, logical and of bools.
        ///
        /// Either operand may be a Python scalar (it becomes a 0-d tensor of the other operand's
        /// dtype; a float next to an integer or bool tensor gives float32) or anything
        /// `remat.tensor` accepts (lists, NumPy arrays). Integer and bool operands promote as in
        /// PyTorch (bool with int gives the integer dtype); float operands are refused.
        /// `Tensor.bitwise_and(other)` is the method form (the tensor is `a`).
        ///
        /// Parameters
        /// ----------
        /// a : Tensor or scalar
        ///     The left operand (integer or bool).
        /// b : Tensor or scalar
        ///     The right operand (integer or bool; `other` in the method form).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     An integer or bool tensor of the broadcast shape.
        ///
        /// Raises
        /// ------
        /// DTypeError
        ///     When an operand is a float tensor or a Python float, or cannot be made a tensor.
        /// ShapeError
        ///     When the shapes do not broadcast.
        /// DeviceError
        ///     When the two tensors are on different devices.
        ///
        /// Examples
        /// --------
        /// >>> remat.bitwise_and(remat.tensor([12, 10]), remat.tensor([10, 6]))
        /// tensor([8, 2])
        /// >>> remat.bitwise_and(remat.tensor([True, True]), remat.tensor([True, False]))
        /// tensor([ True, False])
        bitwise_and(other) => ops::bitwise_and;
        /// Elementwise `a | b`: bitwise or of integer tensors, logical or of bools.
        ///
        /// Either operand may be a Python scalar (it becomes a 0-d tensor of the other operand's
        /// dtype; a float next to an integer or bool tensor gives float32) or anything
        /// `remat.tensor` accepts (lists, NumPy arrays). Integer and bool operands promote as in
        /// PyTorch (bool with int gives the integer dtype); float operands are refused.
        /// `Tensor.bitwise_or(other)` is the method form (the tensor is `a`).
        ///
        /// Parameters
        /// ----------
        /// a : Tensor or scalar
        ///     The left operand (integer or bool).
        /// b : Tensor or scalar
        ///     The right operand (integer or bool; `other` in the method form).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     An integer or bool tensor of the broadcast shape.
        ///
        /// Raises
        /// ------
        /// DTypeError
        ///     When an operand is a float tensor or a Python float, or cannot be made a tensor.
        /// ShapeError
        ///     When the shapes do not broadcast.
        /// DeviceError
        ///     When the two tensors are on different devices.
        ///
        /// Examples
        /// --------
        /// >>> remat.bitwise_or(remat.tensor([12, 10]), remat.tensor([10, 6]))
        /// tensor([14, 14])
        bitwise_or(other) => ops::bitwise_or;
        /// Elementwise `a ^ b`: bitwise xor of integer tensors, logical xor of bools.
        ///
        /// Either operand may be a Python scalar (it becomes a 0-d tensor of the other operand's
        /// dtype; a float next to an integer or bool tensor gives float32) or anything
        /// `remat.tensor` accepts (lists, NumPy arrays). Integer and bool operands promote as in
        /// PyTorch (bool with int gives the integer dtype); float operands are refused.
        /// `Tensor.bitwise_xor(other)` is the method form (the tensor is `a`).
        ///
        /// Parameters
        /// ----------
        /// a : Tensor or scalar
        ///     The left operand (integer or bool).
        /// b : Tensor or scalar
        ///     The right operand (integer or bool; `other` in the method form).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     An integer or bool tensor of the broadcast shape.
        ///
        /// Raises
        /// ------
        /// DTypeError
        ///     When an operand is a float tensor or a Python float, or cannot be made a tensor.
        /// ShapeError
        ///     When the shapes do not broadcast.
        /// DeviceError
        ///     When the two tensors are on different devices.
        ///
        /// Examples
        /// --------
        /// >>> remat.bitwise_xor(remat.tensor([12, 10]), remat.tensor([10, 6]))
        /// tensor([ 6, 12])
        /// >>> remat.bitwise_xor(remat.tensor([True, False]), remat.tensor([True, True]))
        /// tensor([False,  True])
        bitwise_xor(other) => ops::bitwise_xor;
        /// Elementwise `a // b`: division rounded toward -inf, with broadcasting.
        ///
        /// Either operand may be a Python scalar (it becomes a 0-d tensor of the other operand's
        /// dtype; a float next to an integer or bool tensor gives float32) or anything
        /// `remat.tensor` accepts (lists, NumPy arrays). Integers are divided exactly (and stay
        /// integer); floats give `floor(a / b)` (division by zero gives `inf`/`nan`). Not
        /// differentiable: the result never requires grad. `Tensor.floor_divide(other)` is the
        /// method form (the tensor is `a`).
        ///
        /// Parameters
        /// ----------
        /// a : Tensor or scalar
        ///     The dividend.
        /// b : Tensor or scalar
        ///     The divisor (`other` in the method form).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     The floored quotient, of the broadcast shape and the promoted dtype.
        ///
        /// Raises
        /// ------
        /// ValueError
        ///     When integer division meets a zero divisor.
        /// DTypeError
        ///     When both operands are bool tensors, or one cannot be made a tensor.
        /// ShapeError
        ///     When the shapes do not broadcast.
        /// DeviceError
        ///     When the two tensors are on different devices.
        ///
        /// Examples
        /// --------
        /// >>> remat.floor_divide(remat.tensor([7, -7]), 2)
        /// tensor([ 3, -4])
        /// >>> remat.tensor([7.0, -7.0]).floor_divide(2)
        /// tensor([ 3., -4.])
        floor_divide(other) => ops::floor_divide;
        /// Elementwise `a % b`, with the sign of the divisor (Python's `%`), with broadcasting.
        ///
        /// Either operand may be a Python scalar (it becomes a 0-d tensor of the other operand's
        /// dtype; a float next to an integer or bool tensor gives float32) or anything
        /// `remat.tensor` accepts (lists, NumPy arrays). Integers stay integer; for floats the
        /// result is `a - floor(a / b) * b` (a zero divisor gives `nan`), differentiable in `a`
        /// (gradient 1). `Tensor.remainder(other)` is the method form (the tensor is `a`).
        ///
        /// Parameters
        /// ----------
        /// a : Tensor or scalar
        ///     The dividend.
        /// b : Tensor or scalar
        ///     The divisor (`other` in the method form).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     The remainder, of the broadcast shape and the promoted dtype.
        ///
        /// Raises
        /// ------
        /// ValueError
        ///     When integer division meets a zero divisor.
        /// DTypeError
        ///     When both operands are bool tensors, or one cannot be made a tensor.
        /// ShapeError
        ///     When the shapes do not broadcast.
        /// DeviceError
        ///     When the two tensors are on different devices.
        ///
        /// Examples
        /// --------
        /// >>> remat.remainder(remat.tensor([7, -7]), 3)
        /// tensor([1, 2])
        /// >>> remat.remainder(remat.tensor([7.5, -7.5]), 2)
        /// tensor([1.5000, 0.5000])
        /// >>> remat.tensor([7, 7]).remainder(-3)
        /// tensor([-2, -2])
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
        /// Samples category indices from the rows of `x`, as PyTorch's ``torch.multinomial``.
        ///
        /// Each row of `x` holds non-negative weights of its categories (they need not sum to
        /// 1). With ``replacement=True`` every draw is independent; without it, the indices of a
        /// row are distinct and come in the order they were drawn, each draw proportional to the
        /// weights not yet drawn. The draws come from the global generator
        /// (``remat.manual_seed``) or `generator`, and are replayed identically when a
        /// checkpoint recomputes them. `Tensor.multinomial(num_samples, replacement=False, *,
        /// generator=None)` is the method form (the tensor is `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     A 1-D ``(n,)`` or 2-D ``(m, n)`` float tensor of weights.
        /// num_samples : int
        ///     The draws per row (at most ``n`` without replacement).
        /// replacement : bool, optional
        ///     Whether a category can be drawn more than once. Default: ``False``.
        /// generator : Generator, optional
        ///     The random stream to draw from. Default: ``None`` (the global stream).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     int64 indices of shape ``(num_samples,)`` or ``(m, num_samples)``, on `x`'s
        ///     device.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When `x` is not 1-D or 2-D.
        /// ValueError
        ///     When a weight is negative, infinite or NaN, a row sums to 0, `num_samples` is not
        ///     positive, or more samples than categories with non-zero weight are asked for
        ///     without replacement.
        /// DTypeError
        ///     When `x` is not a float tensor.
        ///
        /// Examples
        /// --------
        /// >>> remat.multinomial(remat.tensor([0.0, 1.0, 0.0]), 2, replacement=True)
        /// tensor([1, 1])
        /// >>> g = remat.Generator().manual_seed(0)
        /// >>> sorted(remat.multinomial(remat.tensor([1.0, 2.0, 3.0]), 3, generator=g).tolist())
        /// [0, 1, 2]
        /// >>> remat.tensor([[0.0, 1.0], [1.0, 0.0]]).multinomial(1)
        /// tensor([[1],
        ///         [0]])
        #[pyo3(signature = (num_samples, replacement=false, *, generator=None))]
        fn multinomial(py, x, num_samples: i64, replacement: bool, generator: Option<&Bound<'_, crate::generator::PyGenerator>>) {
            let n = crate::sampling::sample_count(num_samples)?;
            crate::generator::drawing(generator, || {
                run(py, heavy(&[x]), || ops::multinomial(x, n, replacement))
            })
            .map(wrap)
        }
        /// Draws 0 or 1 for each element of `x`: 1 with the probability the element holds, as
        /// PyTorch's ``torch.bernoulli``.
        ///
        /// `Tensor.bernoulli(p=None, *, generator=None)` is the method form (the tensor is
        /// `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     A float tensor of probabilities in ``[0, 1]``.
        /// p : float, optional
        ///     One probability for every element instead of `x`'s values (only `x`'s shape,
        ///     dtype and device are used then). Default: ``None``.
        /// generator : Generator, optional
        ///     The random stream to draw from. Default: ``None`` (the global stream).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     0s and 1s of `x`'s shape, dtype and device; it does not require grad (the
        ///     samples are not differentiable).
        ///
        /// Raises
        /// ------
        /// ValueError
        ///     When a probability is outside ``[0, 1]``.
        /// DTypeError
        ///     When `x` is not a float tensor.
        ///
        /// Examples
        /// --------
        /// >>> remat.bernoulli(remat.tensor([0.0, 1.0, 1.0]))
        /// tensor([0., 1., 1.])
        /// >>> remat.zeros(2, 2).bernoulli(1.0)
        /// tensor([[1., 1.],
        ///         [1., 1.]])
        #[pyo3(signature = (p=None, *, generator=None))]
        fn bernoulli(py, x, p: Option<f64>, generator: Option<&Bound<'_, crate::generator::PyGenerator>>) {
            crate::generator::drawing(generator, || {
                run(py, heavy(&[x]), || {
                    ops::bernoulli(&crate::sampling::probabilities(x, p)?)
                })
            })
            .map(wrap)
        }
        /// Gaussian error linear unit, `x * Phi(x)` elementwise.
        ///
        /// `approximate="tanh"` uses the tanh approximation
        /// `0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))`. Integer and bool inputs
        /// give float32. `Tensor.gelu(approximate="none")` is the method form (the tensor is `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input (anything `remat.tensor` accepts: a Tensor, a list, a NumPy array).
        /// approximate : str, optional
        ///     `"none"` (the exact form, with `erf`) or `"tanh"`. Default: `"none"`.
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A tensor of `x`'s shape.
        ///
        /// Raises
        /// ------
        /// ValueError
        ///     When `approximate` is neither `"none"` nor `"tanh"`.
        ///
        /// Examples
        /// --------
        /// >>> x = remat.tensor([-1.0, 0.0, 1.0])
        /// >>> [round(v, 4) for v in remat.gelu(x).tolist()]
        /// [-0.1587, 0.0, 0.8413]
        /// >>> [round(v, 4) for v in remat.gelu(x, approximate="tanh").tolist()]
        /// [-0.1588, 0.0, 0.8412]
        #[pyo3(signature = (approximate="none"))]
        fn gelu(py, x, approximate: &str) {
            let tanh = gelu_mode(approximate)?;
            unary(py, x, |x| ops::gelu(x, tanh))
        }
        /// Round to the nearest integer, or to `decimals` decimal digits; ties to even.
        ///
        /// Halves round to the even neighbour, as in PyTorch and NumPy (``2.5`` gives ``2``).
        /// With ``decimals=d`` the result is PyTorch's ``round(x * 10**d) / 10**d`` (for a
        /// negative ``d``, ``round(x / 10**-d) * 10**-d``: digits before the point), computed
        /// in ``x``'s dtype, so a float32 result is the float32 nearest to the decimal
        /// (``round(2.675, decimals=2)`` is ``2.68`` in float32) and a scale beyond the dtype's
        /// range gives NaN, as in PyTorch. The result keeps the input's dtype. The gradient is
        /// zero everywhere. `Tensor.round(*, decimals=0)` is the method form (the tensor is
        /// `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor or array_like
        ///     The input. A list, NumPy array or Python number is converted to a tensor first
        ///     (as ``remat.tensor`` does).
        /// decimals : int, optional
        ///     Keyword-only. Decimal digits to keep (negative: round to tens, hundreds, ...).
        ///     Default: ``0``.
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     The rounded values, of ``x``'s shape and dtype. Integer inputs keep their dtype
        ///     with ``decimals=0`` (computed exactly), bool inputs give int64.
        ///
        /// Raises
        /// ------
        /// DTypeError
        ///     When ``x`` is an integer or bool tensor and ``decimals`` is not 0, or ``x`` is
        ///     not a tensor and holds no numbers (a string, ``None``, ...).
        /// ShapeError
        ///     When ``x`` is a ragged nested list.
        ///
        /// Examples
        /// --------
        /// >>> remat.round(remat.tensor([0.5, 1.5, 2.5, 1.7]))
        /// tensor([0., 2., 2., 2.])
        /// >>> remat.round(remat.tensor([1.25, -1.35], dtype=remat.float64), decimals=1)
        /// tensor([ 1.2000, -1.4000], dtype=remat.float64)
        /// >>> remat.tensor([1234.5, 1250.0]).round(decimals=-2)
        /// tensor([1200., 1200.])
        #[pyo3(signature = (*, decimals=0))]
        fn round(py, x, decimals: i64) {
            unary(py, x, |x| ops::round_decimals(x, decimals))
        }
        /// Softmax along one axis: `exp(x) / sum(exp(x))`, computed without overflow.
        ///
        /// The values along `dim` are positive and sum to 1. `Tensor.softmax(dim=None)` is the
        /// method form (the tensor is `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input, float32 or float64 (anything `remat.tensor` accepts).
        /// dim : int, optional
        ///     The axis to normalize over. Default: `None` (the last axis).
        /// axis : int, optional
        ///     NumPy's spelling of `dim` (pass one or the other). Default: `None`.
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A tensor of `x`'s shape and dtype.
        ///
        /// Raises
        /// ------
        /// DTypeError
        ///     When `x` is an integer or bool tensor (convert it with `.float()`).
        /// ShapeError
        ///     When `dim` is out of range.
        /// TypeError
        ///     When `dim` is a tuple or not an int, or both `dim` and `axis` are given.
        ///
        /// Examples
        /// --------
        /// >>> remat.softmax(remat.tensor([0.0, 0.0]))
        /// tensor([0.5000, 0.5000])
        /// >>> p = remat.softmax(remat.tensor([[1.0, 2.0, 3.0]]), dim=1)
        /// >>> [round(v, 4) for v in p[0].tolist()]
        /// [0.09, 0.2447, 0.6652]
        /// >>> remat.tensor([[1.0, 1.0], [0.0, 0.0]]).softmax(dim=0).shape
        /// (2, 2)
        #[pyo3(signature = (dim=None, *, axis=None))]
        #[text_signatures("(x, dim=None, *, axis=None)", "($self, dim=None, *, axis=None)")]
        fn softmax(py, x, dim: Option<&Bound<'_, PyAny>>, axis: Option<&Bound<'_, PyAny>>) {
            let d = ReduceArgs::new("softmax", dim, axis, false, None)?
                .single_dim("softmax")?
                .unwrap_or(-1);
            unary(py, x, |x| ops::softmax(x, d))
        }
        /// Log of the softmax along one axis: `x - logsumexp(x)`, computed stably.
        ///
        /// More accurate than `log(softmax(x))` for very negative values.
        /// `Tensor.log_softmax(dim=None)` is the method form (the tensor is `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input, float32 or float64 (anything `remat.tensor` accepts).
        /// dim : int, optional
        ///     The axis to normalize over. Default: `None` (the last axis).
        /// axis : int, optional
        ///     NumPy's spelling of `dim` (pass one or the other). Default: `None`.
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A tensor of `x`'s shape and dtype.
        ///
        /// Raises
        /// ------
        /// DTypeError
        ///     When `x` is an integer or bool tensor (convert it with `.float()`).
        /// ShapeError
        ///     When `dim` is out of range.
        /// TypeError
        ///     When `dim` is a tuple or not an int, or both `dim` and `axis` are given.
        ///
        /// Examples
        /// --------
        /// >>> [round(v, 4) for v in remat.log_softmax(remat.tensor([0.0, 0.0])).tolist()]
        /// [-0.6931, -0.6931]
        /// >>> remat.tensor([[0.0, 0.0]]).log_softmax(dim=1).shape
        /// (1, 2)
        #[pyo3(signature = (dim=None, *, axis=None))]
        #[text_signatures("(x, dim=None, *, axis=None)", "($self, dim=None, *, axis=None)")]
        fn log_softmax(py, x, dim: Option<&Bound<'_, PyAny>>, axis: Option<&Bound<'_, PyAny>>) {
            let d = ReduceArgs::new("log_softmax", dim, axis, false, None)?
                .single_dim("log_softmax")?
                .unwrap_or(-1);
            unary(py, x, |x| ops::log_softmax(x, d))
        }
        /// Sum of the elements over `dim`.
        ///
        /// `axis`/`keepdims` are NumPy's spellings of `dim`/`keepdim`. Integer and bool inputs sum
        /// to int64 (as in PyTorch) unless `dtype` says otherwise; the sum over no elements is 0.
        /// `Tensor.sum(dim=None, keepdim=False)` is the method form (the tensor is `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input (anything `remat.tensor` accepts: a Tensor, a list, a NumPy array).
        /// dim : int or tuple of int, optional
        ///     The axes to reduce (negative counts from the end). Default: `None` (all axes).
        /// keepdim : bool, optional
        ///     Keep the reduced axes with extent 1. Default: `False`.
        /// axis : int or tuple of int, optional
        ///     NumPy's spelling of `dim` (pass one or the other). Default: `None`.
        /// keepdims : bool, optional
        ///     NumPy's spelling of `keepdim`; when not `None` it wins over `keepdim`. Default:
        ///     `None`.
        /// dtype : DType or str, optional
        ///     Cast the input to this dtype first (differentiably), as PyTorch's `dtype=`. Default:
        ///     `None` (no cast).
        /// out : None, optional
        ///     Accepted so that NumPy's `np.sum(t)`-style calls work; only `None`. Default: `None`.
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     The sums: `x`'s shape without the reduced axes (with extent 1 under `keepdim`); 0-d
        ///     when all axes are reduced.
        ///
        /// Raises
        /// ------
        /// TypeError
        ///     When both `dim` and `axis` are given, an axis is not an int, or `out` is not None.
        /// ShapeError
        ///     When an axis is out of range or repeated.
        /// DTypeError
        ///     When `dtype` is not a dtype remat supports.
        ///
        /// Examples
        /// --------
        /// >>> x = remat.tensor([[1.0, 2.0], [3.0, 4.0]])
        /// >>> remat.sum(x)
        /// tensor(10.)
        /// >>> remat.sum(x, dim=1)
        /// tensor([3., 7.])
        /// >>> x.sum(axis=0, keepdims=True)
        /// tensor([[4., 6.]])
        /// >>> remat.sum(remat.tensor([True, True, False]))
        /// tensor(2)
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
            // With `dtype=` the result has that dtype (PyTorch accumulates in it): a bool or
            // int32 sum is otherwise int64.
            let want = crate::dtype::parse_opt_dtype(dtype)?;
            unary(py, x, |x| in_dtype(ops::sum(x, r.dims(), r.keepdim), want))
        }
        /// Arithmetic mean of the elements over `dim`.
        ///
        /// `axis`/`keepdims` are NumPy's spellings of `dim`/`keepdim`. Float inputs only, as in
        /// PyTorch: pass `dtype` to average integers. The mean of no elements is `nan`.
        /// `Tensor.mean(dim=None, keepdim=False)` is the method form (the tensor is `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input (anything `remat.tensor` accepts: a Tensor, a list, a NumPy array).
        /// dim : int or tuple of int, optional
        ///     The axes to reduce (negative counts from the end). Default: `None` (all axes).
        /// keepdim : bool, optional
        ///     Keep the reduced axes with extent 1. Default: `False`.
        /// axis : int or tuple of int, optional
        ///     NumPy's spelling of `dim` (pass one or the other). Default: `None`.
        /// keepdims : bool, optional
        ///     NumPy's spelling of `keepdim`; when not `None` it wins over `keepdim`. Default:
        ///     `None`.
        /// dtype : DType or str, optional
        ///     Cast the input to this dtype first (differentiably), as PyTorch's `dtype=`. Default:
        ///     `None` (no cast).
        /// out : None, optional
        ///     Accepted so that NumPy's `np.sum(t)`-style calls work; only `None`. Default: `None`.
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     The means: `x`'s shape without the reduced axes (with extent 1 under `keepdim`).
        ///
        /// Raises
        /// ------
        /// DTypeError
        ///     When `x` (after the `dtype` cast) is an integer or bool tensor.
        /// TypeError
        ///     When both `dim` and `axis` are given, an axis is not an int, or `out` is not None.
        /// ShapeError
        ///     When an axis is out of range or repeated.
        ///
        /// Examples
        /// --------
        /// >>> x = remat.tensor([[1.0, 2.0], [3.0, 4.0]])
        /// >>> remat.mean(x)
        /// tensor(2.5000)
        /// >>> remat.mean(x, dim=0)
        /// tensor([2., 3.])
        /// >>> remat.mean(remat.tensor([1, 2]), dtype=remat.float64)
        /// tensor(1.5000, dtype=remat.float64)
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
        /// The int64 index of the maximum along `dim`.
        ///
        /// With `dim=None`, the index into the flattened tensor. The first index wins among ties,
        /// and NaN counts as the maximum. Never differentiable.
        /// `Tensor.argmax(dim=None, keepdim=False)` is the method form (the tensor is `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input (anything `remat.tensor` accepts: a Tensor, a list, a NumPy array).
        /// dim : int, optional
        ///     The axis to search. Default: `None` (the flattened tensor).
        /// keepdim : bool, optional
        ///     Keep the searched axis with extent 1 (all axes when `dim` is None). Default:
        ///     `False`.
        /// axis : int, optional
        ///     NumPy's spelling of `dim` (pass one or the other). Default: `None`.
        /// keepdims : bool, optional
        ///     NumPy's spelling of `keepdim`; when not `None` it wins over `keepdim`. Default:
        ///     `None`.
        /// out : None, optional
        ///     Accepted so that NumPy's `np.sum(t)`-style calls work; only `None`. Default: `None`.
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     An int64 tensor: `x`'s shape without `dim`, or 0-d for `dim=None`.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When `dim` is out of range, or the searched axis (or tensor) is empty.
        /// TypeError
        ///     When `dim` is a tuple or not an int, both `dim` and `axis` are given, or `out` is
        ///     not None.
        ///
        /// Examples
        /// --------
        /// >>> x = remat.tensor([[1.0, 5.0], [7.0, 2.0]])
        /// >>> remat.argmax(x)
        /// tensor(2)
        /// >>> remat.argmax(x, dim=1)
        /// tensor([1, 0])
        /// >>> x.argmax(dim=1, keepdim=True)
        /// tensor([[1],
        ///         [0]])
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
        /// The int64 index of the minimum along `dim`.
        ///
        /// With `dim=None`, the index into the flattened tensor. The first index wins among ties,
        /// and NaN counts as the minimum. Never differentiable.
        /// `Tensor.argmin(dim=None, keepdim=False)` is the method form (the tensor is `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input (anything `remat.tensor` accepts: a Tensor, a list, a NumPy array).
        /// dim : int, optional
        ///     The axis to search. Default: `None` (the flattened tensor).
        /// keepdim : bool, optional
        ///     Keep the searched axis with extent 1 (all axes when `dim` is None). Default:
        ///     `False`.
        /// axis : int, optional
        ///     NumPy's spelling of `dim` (pass one or the other). Default: `None`.
        /// keepdims : bool, optional
        ///     NumPy's spelling of `keepdim`; when not `None` it wins over `keepdim`. Default:
        ///     `None`.
        /// out : None, optional
        ///     Accepted so that NumPy's `np.sum(t)`-style calls work; only `None`. Default: `None`.
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     An int64 tensor: `x`'s shape without `dim`, or 0-d for `dim=None`.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When `dim` is out of range, or the searched axis (or tensor) is empty.
        /// TypeError
        ///     When `dim` is a tuple or not an int, both `dim` and `axis` are given, or `out` is
        ///     not None.
        ///
        /// Examples
        /// --------
        /// >>> x = remat.tensor([[1.0, 5.0], [7.0, 2.0]])
        /// >>> remat.argmin(x)
        /// tensor(0)
        /// >>> remat.argmin(x, dim=0)
        /// tensor([0, 1])
        /// >>> remat.argmin(remat.tensor([2.0, float("nan"), 1.0]))
        /// tensor(1)
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
        /// Whether every element over `dim` is nonzero.
        ///
        /// Any input dtype: nonzero (NaN included) is true. Over no elements the result is True.
        /// Never differentiable. `Tensor.all(dim=None, keepdim=False)` is the method form (the
        /// tensor is `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input (anything `remat.tensor` accepts: a Tensor, a list, a NumPy array).
        /// dim : int or tuple of int, optional
        ///     The axes to reduce (negative counts from the end). Default: `None` (all axes).
        /// keepdim : bool, optional
        ///     Keep the reduced axes with extent 1. Default: `False`.
        /// axis : int or tuple of int, optional
        ///     NumPy's spelling of `dim` (pass one or the other). Default: `None`.
        /// keepdims : bool, optional
        ///     NumPy's spelling of `keepdim`; when not `None` it wins over `keepdim`. Default:
        ///     `None`.
        /// out : None, optional
        ///     Accepted so that NumPy's `np.sum(t)`-style calls work; only `None`. Default: `None`.
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A bool tensor: `x`'s shape without the reduced axes (with extent 1 under `keepdim`).
        ///
        /// Raises
        /// ------
        /// TypeError
        ///     When both `dim` and `axis` are given, an axis is not an int, or `out` is not None.
        /// ShapeError
        ///     When an axis is out of range or repeated.
        ///
        /// Examples
        /// --------
        /// >>> x = remat.tensor([[1, 0], [2, 3]])
        /// >>> remat.all(x)
        /// tensor(False)
        /// >>> remat.all(x, dim=1)
        /// tensor([False,  True])
        #[pyo3(signature = (dim=None, keepdim=false, *, axis=None, keepdims=None, out=None))]
        fn all(
            py, x, dim: Option<&Bound<'_, PyAny>>, keepdim: bool,
            axis: Option<&Bound<'_, PyAny>>, keepdims: Option<bool>, out: Option<&Bound<'_, PyAny>>
        ) {
            args::no_out("all", out)?;
            let r = ReduceArgs::new("all", dim, axis, keepdim, keepdims)?;
            unary(py, x, |x| ops::all(x, r.dims(), r.keepdim))
        }
        /// Whether any element over `dim` is nonzero.
        ///
        /// Any input dtype: nonzero (NaN included) is true. Over no elements the result is False.
        /// Never differentiable. `Tensor.any(dim=None, keepdim=False)` is the method form (the
        /// tensor is `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input (anything `remat.tensor` accepts: a Tensor, a list, a NumPy array).
        /// dim : int or tuple of int, optional
        ///     The axes to reduce (negative counts from the end). Default: `None` (all axes).
        /// keepdim : bool, optional
        ///     Keep the reduced axes with extent 1. Default: `False`.
        /// axis : int or tuple of int, optional
        ///     NumPy's spelling of `dim` (pass one or the other). Default: `None`.
        /// keepdims : bool, optional
        ///     NumPy's spelling of `keepdim`; when not `None` it wins over `keepdim`. Default:
        ///     `None`.
        /// out : None, optional
        ///     Accepted so that NumPy's `np.sum(t)`-style calls work; only `None`. Default: `None`.
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A bool tensor: `x`'s shape without the reduced axes (with extent 1 under `keepdim`).
        ///
        /// Raises
        /// ------
        /// TypeError
        ///     When both `dim` and `axis` are given, an axis is not an int, or `out` is not None.
        /// ShapeError
        ///     When an axis is out of range or repeated.
        ///
        /// Examples
        /// --------
        /// >>> x = remat.tensor([[0, 0], [2, 0]])
        /// >>> remat.any(x)
        /// tensor(True)
        /// >>> x.any(dim=0)
        /// tensor([ True, False])
        #[pyo3(signature = (dim=None, keepdim=false, *, axis=None, keepdims=None, out=None))]
        fn any(
            py, x, dim: Option<&Bound<'_, PyAny>>, keepdim: bool,
            axis: Option<&Bound<'_, PyAny>>, keepdims: Option<bool>, out: Option<&Bound<'_, PyAny>>
        ) {
            args::no_out("any", out)?;
            let r = ReduceArgs::new("any", dim, axis, keepdim, keepdims)?;
            unary(py, x, |x| ops::any(x, r.dims(), r.keepdim))
        }
        /// The maximum over `dim` (values only; see `max`/`min` for indices).
        ///
        /// Any dtype; NaN propagates. Where several elements share the maximum, they share the
        /// gradient evenly. `Tensor.amax(dim=None, keepdim=False)` is the method form (the tensor
        /// is `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input (anything `remat.tensor` accepts: a Tensor, a list, a NumPy array).
        /// dim : int or tuple of int, optional
        ///     The axes to reduce (negative counts from the end). Default: `None` (all axes).
        /// keepdim : bool, optional
        ///     Keep the reduced axes with extent 1. Default: `False`.
        /// axis : int or tuple of int, optional
        ///     NumPy's spelling of `dim` (pass one or the other). Default: `None`.
        /// keepdims : bool, optional
        ///     NumPy's spelling of `keepdim`; when not `None` it wins over `keepdim`. Default:
        ///     `None`.
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A tensor of `x`'s dtype: `x`'s shape without the reduced axes (with extent 1 under
        ///     `keepdim`).
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When an axis is out of range or repeated, or a reduced axis is empty.
        /// TypeError
        ///     When both `dim` and `axis` are given, or an axis is not an int.
        ///
        /// Examples
        /// --------
        /// >>> x = remat.tensor([[1.0, 5.0], [7.0, 2.0]])
        /// >>> remat.amax(x)
        /// tensor(7.)
        /// >>> remat.amax(x, dim=0)
        /// tensor([7., 5.])
        /// >>> y = remat.tensor([1.0, 3.0, 3.0], requires_grad=True)
        /// >>> remat.amax(y).backward()
        /// >>> y.grad
        /// tensor([0.0000, 0.5000, 0.5000])
        #[pyo3(signature = (dim=None, keepdim=false, *, axis=None, keepdims=None))]
        fn amax(
            py, x, dim: Option<&Bound<'_, PyAny>>, keepdim: bool,
            axis: Option<&Bound<'_, PyAny>>, keepdims: Option<bool>
        ) {
            let r = ReduceArgs::new("amax", dim, axis, keepdim, keepdims)?;
            unary(py, x, |x| ops::amax(x, r.dims(), r.keepdim))
        }
        /// The minimum over `dim` (values only; see `max`/`min` for indices).
        ///
        /// Any dtype; NaN propagates. Where several elements share the minimum, they share the
        /// gradient evenly. `Tensor.amin(dim=None, keepdim=False)` is the method form (the tensor
        /// is `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input (anything `remat.tensor` accepts: a Tensor, a list, a NumPy array).
        /// dim : int or tuple of int, optional
        ///     The axes to reduce (negative counts from the end). Default: `None` (all axes).
        /// keepdim : bool, optional
        ///     Keep the reduced axes with extent 1. Default: `False`.
        /// axis : int or tuple of int, optional
        ///     NumPy's spelling of `dim` (pass one or the other). Default: `None`.
        /// keepdims : bool, optional
        ///     NumPy's spelling of `keepdim`; when not `None` it wins over `keepdim`. Default:
        ///     `None`.
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A tensor of `x`'s dtype: `x`'s shape without the reduced axes (with extent 1 under
        ///     `keepdim`).
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When an axis is out of range or repeated, or a reduced axis is empty.
        /// TypeError
        ///     When both `dim` and `axis` are given, or an axis is not an int.
        ///
        /// Examples
        /// --------
        /// >>> x = remat.tensor([[1.0, 5.0], [7.0, 2.0]])
        /// >>> remat.amin(x, dim=1)
        /// tensor([1., 2.])
        /// >>> x.amin(dim=1, keepdim=True).shape
        /// (2, 1)
        #[pyo3(signature = (dim=None, keepdim=false, *, axis=None, keepdims=None))]
        fn amin(
            py, x, dim: Option<&Bound<'_, PyAny>>, keepdim: bool,
            axis: Option<&Bound<'_, PyAny>>, keepdims: Option<bool>
        ) {
            let r = ReduceArgs::new("amin", dim, axis, keepdim, keepdims)?;
            unary(py, x, |x| ops::amin(x, r.dims(), r.keepdim))
        }
        /// Product of the elements over one axis, or of all elements.
        ///
        /// The gradient is exact where elements are zero (no division by the product). Integer
        /// inputs keep their dtype; bool inputs stay bool. The product of no elements is 1.
        /// `Tensor.prod(dim=None, keepdim=False)` is the method form (the tensor is `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input (anything `remat.tensor` accepts: a Tensor, a list, a NumPy array).
        /// dim : int, optional
        ///     The axis to reduce. Default: `None` (all elements).
        /// keepdim : bool, optional
        ///     Keep the reduced axes with extent 1. Default: `False`.
        /// axis : int, optional
        ///     NumPy's spelling of `dim` (pass one or the other). Default: `None`.
        /// keepdims : bool, optional
        ///     NumPy's spelling of `keepdim`; when not `None` it wins over `keepdim`. Default:
        ///     `None`.
        /// dtype : DType or str, optional
        ///     Cast the input to this dtype first (differentiably), as PyTorch's `dtype=`. Default:
        ///     `None` (no cast).
        /// out : None, optional
        ///     Accepted so that NumPy's `np.sum(t)`-style calls work; only `None`. Default: `None`.
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     The products: `x`'s shape without `dim` (with extent 1 under `keepdim`); 0-d for
        ///     `dim=None` without `keepdim`.
        ///
        /// Raises
        /// ------
        /// TypeError
        ///     When `dim` is a tuple or not an int, both `dim` and `axis` are given, or `out` is
        ///     not None.
        /// ShapeError
        ///     When `dim` is out of range.
        /// DTypeError
        ///     When `dtype` is not a dtype remat supports.
        ///
        /// Examples
        /// --------
        /// >>> x = remat.tensor([[1.0, 2.0], [3.0, 4.0]])
        /// >>> remat.prod(x)
        /// tensor(24.)
        /// >>> remat.prod(x, dim=1)
        /// tensor([ 2., 12.])
        /// >>> y = remat.tensor([2.0, 0.0, 3.0], requires_grad=True)
        /// >>> remat.prod(y).backward()
        /// >>> y.grad
        /// tensor([0., 6., 0.])
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
            let want = crate::dtype::parse_opt_dtype(dtype)?;
            unary(py, x, |x| in_dtype(ops::prod(x, d, r.keepdim), want))
        }
        /// Variance over `dim`: `sum((x - mean)**2) / (N - correction)`.
        ///
        /// With `N <= correction` the result is `inf` or `nan`, as in PyTorch.
        /// `Tensor.var(dim=None, unbiased=None, keepdim=False)` is the method form (the tensor is
        /// `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input, float32 or float64 (anything `remat.tensor` accepts).
        /// dim : int or tuple of int, optional
        ///     The axes to reduce. Default: `None` (all axes). A bool here is PyTorch's older
        ///     positional `unbiased`.
        /// unbiased : bool, optional
        ///     PyTorch's older spelling: `True` is `correction=1`, `False` is `correction=0` (pass
        ///     this or `correction`, not both). Default: `None`.
        /// keepdim : bool, optional
        ///     Keep the reduced axes with extent 1. Default: `False`.
        /// correction : float, optional
        ///     Divide by `N - correction`, `N` the number of reduced elements. Default: `None` (1,
        ///     Bessel's correction).
        /// axis : int or tuple of int, optional
        ///     NumPy's spelling of `dim` (pass one or the other). Default: `None`.
        /// keepdims : bool, optional
        ///     NumPy's spelling of `keepdim`; when not `None` it wins over `keepdim`. Default:
        ///     `None`.
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     The variances: `x`'s shape without the reduced axes (with extent 1 under `keepdim`).
        ///
        /// Raises
        /// ------
        /// DTypeError
        ///     When `x` is an integer or bool tensor.
        /// TypeError
        ///     When both `unbiased` and `correction` are given, or both `dim` and `axis`, or an
        ///     axis is not an int.
        /// ShapeError
        ///     When an axis is out of range or repeated.
        ///
        /// Examples
        /// --------
        /// >>> x = remat.tensor([1.0, 2.0, 3.0, 4.0])
        /// >>> remat.var(x)
        /// tensor(1.6667)
        /// >>> remat.var(x, correction=0)
        /// tensor(1.2500)
        /// >>> remat.var(x, unbiased=False)
        /// tensor(1.2500)
        /// >>> remat.tensor([[1.0, 2.0], [3.0, 5.0]]).var(dim=1)
        /// tensor([0.5000, 2.0000])
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
        /// Standard deviation over `dim`: the square root of `var` with the same arguments.
        ///
        /// `Tensor.std(dim=None, unbiased=None, keepdim=False)` is the method form (the tensor is
        /// `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input, float32 or float64 (anything `remat.tensor` accepts).
        /// dim : int or tuple of int, optional
        ///     The axes to reduce. Default: `None` (all axes). A bool here is PyTorch's older
        ///     positional `unbiased`.
        /// unbiased : bool, optional
        ///     PyTorch's older spelling: `True` is `correction=1`, `False` is `correction=0` (pass
        ///     this or `correction`, not both). Default: `None`.
        /// keepdim : bool, optional
        ///     Keep the reduced axes with extent 1. Default: `False`.
        /// correction : float, optional
        ///     Divide by `N - correction`, `N` the number of reduced elements. Default: `None` (1,
        ///     Bessel's correction).
        /// axis : int or tuple of int, optional
        ///     NumPy's spelling of `dim` (pass one or the other). Default: `None`.
        /// keepdims : bool, optional
        ///     NumPy's spelling of `keepdim`; when not `None` it wins over `keepdim`. Default:
        ///     `None`.
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     The standard deviations: `x`'s shape without the reduced axes (with extent 1 under
        ///     `keepdim`).
        ///
        /// Raises
        /// ------
        /// DTypeError
        ///     When `x` is an integer or bool tensor.
        /// TypeError
        ///     When both `unbiased` and `correction` are given, or both `dim` and `axis`, or an
        ///     axis is not an int.
        /// ShapeError
        ///     When an axis is out of range or repeated.
        ///
        /// Examples
        /// --------
        /// >>> x = remat.tensor([1.0, 2.0, 3.0, 4.0])
        /// >>> remat.std(x)
        /// tensor(1.2910)
        /// >>> remat.std(x, correction=0)
        /// tensor(1.1180)
        /// >>> remat.std(remat.tensor([[1.0, 3.0], [2.0, 2.0]]), dim=1)
        /// tensor([1.4142, 0.0000])
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
        /// `log(sum(exp(x)))` over `dim`, computed without overflow.
        ///
        /// The maximum is subtracted before exponentiating, so large inputs stay finite. Over no
        /// elements the result is `-inf`. `Tensor.logsumexp(dim=None, keepdim=False)` is the method
        /// form (the tensor is `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input, float32 or float64 (anything `remat.tensor` accepts).
        /// dim : int or tuple of int, optional
        ///     The axes to reduce (negative counts from the end). Default: `None` (all axes).
        /// keepdim : bool, optional
        ///     Keep the reduced axes with extent 1. Default: `False`.
        /// axis : int or tuple of int, optional
        ///     NumPy's spelling of `dim` (pass one or the other). Default: `None`.
        /// keepdims : bool, optional
        ///     NumPy's spelling of `keepdim`; when not `None` it wins over `keepdim`. Default:
        ///     `None`.
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     `x`'s shape without the reduced axes (with extent 1 under `keepdim`).
        ///
        /// Raises
        /// ------
        /// DTypeError
        ///     When `x` is a bool tensor.
        /// TypeError
        ///     When both `dim` and `axis` are given, or an axis is not an int.
        /// ShapeError
        ///     When an axis is out of range or repeated.
        ///
        /// Examples
        /// --------
        /// >>> round(remat.logsumexp(remat.tensor([0.0, 0.0])).item(), 4)
        /// 0.6931
        /// >>> round(remat.logsumexp(remat.tensor([1000.0, 1000.0])).item(), 2)
        /// 1000.69
        /// >>> x = remat.tensor([[0.0, 0.0], [1.0, 1.0]])
        /// >>> [round(v, 4) for v in remat.logsumexp(x, dim=1).tolist()]
        /// [0.6931, 1.6931]
        /// >>> x.logsumexp(dim=1, keepdim=True).shape
        /// (2, 1)
        #[pyo3(signature = (dim=None, keepdim=false, *, axis=None, keepdims=None))]
        fn logsumexp(
            py, x, dim: Option<&Bound<'_, PyAny>>, keepdim: bool,
            axis: Option<&Bound<'_, PyAny>>, keepdims: Option<bool>
        ) {
            let r = ReduceArgs::new("logsumexp", dim, axis, keepdim, keepdims)?;
            unary(py, x, |x| ops::logsumexp(x, r.dims(), r.keepdim))
        }
        /// The vector `p`-norm over `dim`: `sum(abs(x)**p)**(1/p)`.
        ///
        /// The elements over `dim` are treated as one vector (a matrix with `dim=None` gives its
        /// Frobenius norm). `p=inf` is the largest absolute value, `p=-inf` the smallest, `p=0` the
        /// number of nonzeros. Integer inputs give float32.
        /// `Tensor.norm(p='fro', dim=None, keepdim=False)` is the method form (the tensor is `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input (anything `remat.tensor` accepts: a Tensor, a list, a NumPy array).
        /// p : float or str, optional
        ///     The order: a number (`inf`/`-inf` included) or `"fro"` (the same as 2). Default:
        ///     `"fro"` (None is accepted too).
        /// dim : int or tuple of int, optional
        ///     The axes to reduce (negative counts from the end). Default: `None` (all axes).
        /// keepdim : bool, optional
        ///     Keep the reduced axes with extent 1. Default: `False`.
        /// axis : int or tuple of int, optional
        ///     NumPy's spelling of `dim` (pass one or the other). Default: `None`.
        /// keepdims : bool, optional
        ///     NumPy's spelling of `keepdim`; when not `None` it wins over `keepdim`. Default:
        ///     `None`.
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A float tensor: `x`'s shape without the reduced axes (with extent 1 under
        ///     `keepdim`).
        ///
        /// Raises
        /// ------
        /// ValueError
        ///     When `p` is a string other than `"fro"`.
        /// TypeError
        ///     When `p` is neither a number nor a string, both `dim` and `axis` are given, or an
        ///     axis is not an int.
        /// ShapeError
        ///     When an axis is out of range or repeated.
        ///
        /// Examples
        /// --------
        /// >>> remat.norm(remat.tensor([3.0, 4.0]))
        /// tensor(5.)
        /// >>> remat.norm(remat.tensor([3.0, -4.0]), p=1)
        /// tensor(7.)
        /// >>> remat.norm(remat.tensor([3.0, -4.0]), p=float("inf"))
        /// tensor(4.)
        /// >>> remat.tensor([[3.0, 4.0], [6.0, 8.0]]).norm(dim=1)
        /// tensor([ 5., 10.])
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
        /// Inclusive cumulative sum along `dim`: `out[i] = x[0] + ... + x[i]`.
        ///
        /// As in PyTorch, integer and bool tensors sum exactly in int64 (no gradient); `dtype=`
        /// casts the input first. `Tensor.cumsum(dim=None)` is the method form (the tensor is
        /// `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input (anything `remat.tensor` accepts).
        /// dim : int
        ///     The axis to accumulate along (required, as `dim` or `axis`).
        /// axis : int, optional
        ///     NumPy's spelling of `dim` (pass one or the other). Default: `None`.
        /// dtype : DType or str, optional
        ///     Cast the input to this dtype first (differentiably), as PyTorch's `dtype=`.
        ///     Default: `None`.
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A tensor of `x`'s shape and dtype (int64 for integer and bool inputs).
        ///
        /// Raises
        /// ------
        /// TypeError
        ///     When neither `dim` nor `axis` is given, both are, or `dim` is a tuple or not an int.
        /// ShapeError
        ///     When `dim` is out of range.
        ///
        /// Examples
        /// --------
        /// >>> remat.cumsum(remat.tensor([1.0, 2.0, 3.0]), dim=0)
        /// tensor([1., 3., 6.])
        /// >>> remat.tensor([[1.0, 2.0], [3.0, 4.0]]).cumsum(axis=1)
        /// tensor([[1., 3.],
        ///         [3., 7.]])
        #[pyo3(signature = (dim=None, *, axis=None, dtype=None))]
        fn cumsum(
            py, x, dim: Option<&Bound<'_, PyAny>>, axis: Option<&Bound<'_, PyAny>>,
            dtype: Option<&Bound<'_, PyAny>>
        ) {
            let x = &as_dtype(x, dtype)?;
            let r = ReduceArgs::new("cumsum", dim, axis, false, None)?;
            let d = r.single_dim("cumsum")?.ok_or_else(|| {
                pyo3::exceptions::PyTypeError::new_err("cumsum: missing the dim argument")
            })?;
            unary(py, x, |x| ops::cumsum(x, d))
        }
        /// A view of `x` with a new axis of extent 1 at position `dim`.
        ///
        /// `Tensor.unsqueeze(dim)` is the method form (the tensor is `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input (anything `remat.tensor` accepts: a Tensor, a list, a NumPy array).
        /// dim : int
        ///     Where the new axis goes, in `[-x.ndim - 1, x.ndim]` (negative counts from the end of
        ///     the result).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A view with `x.ndim + 1` axes.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When `dim` is out of range.
        /// TypeError
        ///     When `dim` is not an int.
        ///
        /// Examples
        /// --------
        /// >>> x = remat.tensor([1.0, 2.0])
        /// >>> remat.unsqueeze(x, 0)
        /// tensor([[1., 2.]])
        /// >>> x.unsqueeze(-1).shape
        /// (2, 1)
        fn unsqueeze(_py, x, dim: isize) {
            ops::unsqueeze(x, dim).py().map(wrap)
        }
        /// A view of `x` without axes of extent 1.
        ///
        /// With `dim=None` every axis of extent 1 goes; otherwise only those listed in `dim` that
        /// have extent 1 (the others are kept silently, as in PyTorch). `Tensor.squeeze(dim=None)`
        /// is the method form (the tensor is `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input (anything `remat.tensor` accepts: a Tensor, a list, a NumPy array).
        /// dim : int or tuple of int, optional
        ///     The axes to remove if their extent is 1. Default: `None` (all such axes).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A view with the same elements.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When an axis in `dim` is out of range.
        /// TypeError
        ///     When `dim` holds something other than ints.
        ///
        /// Examples
        /// --------
        /// >>> x = remat.zeros(1, 2, 1)
        /// >>> remat.squeeze(x).shape
        /// (2,)
        /// >>> remat.squeeze(x, 0).shape
        /// (2, 1)
        /// >>> x.squeeze((0, 1)).shape
        /// (2, 1)
        #[pyo3(signature = (dim=None))]
        fn squeeze(_py, x, dim: Option<&Bound<'_, PyAny>>) {
            let dims = args::axes("squeeze", dim)?;
            ops::squeeze(x, dims.as_deref()).py().map(wrap)
        }
        /// Axes `start_dim` through `end_dim` (inclusive) merged into one.
        ///
        /// A view when the merged axes are contiguous, else a copy. A 0-d tensor becomes 1-D.
        /// `Tensor.flatten(start_dim=0, end_dim=-1)` is the method form (the tensor is `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input (anything `remat.tensor` accepts: a Tensor, a list, a NumPy array).
        /// start_dim : int, optional
        ///     The first axis to merge. Default: `0`.
        /// end_dim : int, optional
        ///     The last axis to merge. Default: `-1` (the last axis).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A tensor with the same elements, the axes `start_dim..=end_dim` merged into one.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When an axis is out of range or `start_dim` comes after `end_dim`.
        ///
        /// Examples
        /// --------
        /// >>> x = remat.zeros(2, 3, 4)
        /// >>> remat.flatten(x).shape
        /// (24,)
        /// >>> remat.flatten(x, 1).shape
        /// (2, 12)
        /// >>> x.flatten(0, 1).shape
        /// (6, 4)
        #[pyo3(signature = (start_dim=0, end_dim=-1))]
        #[text_signatures("(x, start_dim=0, end_dim=-1)", "($self, start_dim=0, end_dim=-1)")]
        fn flatten(py, x, start_dim: isize, end_dim: isize) {
            unary(py, x, |x| ops::flatten(x, start_dim, end_dim))
        }
        /// Axis `dim` split into several axes of extents `sizes`.
        ///
        /// The inverse of `flatten`; a view when `x` is contiguous. `Tensor.unflatten(dim, sizes)`
        /// is the method form (the tensor is `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input (anything `remat.tensor` accepts: a Tensor, a list, a NumPy array).
        /// dim : int
        ///     The axis to split.
        /// sizes : int or tuple of int
        ///     The new extents; their product must equal `x.shape[dim]`. One may be -1 (inferred).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A tensor with the same elements and `len(sizes) - 1` more axes.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When `dim` is out of range or `sizes` does not multiply up to the extent of `dim`.
        /// TypeError
        ///     When `sizes` holds something other than ints.
        ///
        /// Examples
        /// --------
        /// >>> x = remat.zeros(2, 6)
        /// >>> remat.unflatten(x, 1, (2, 3)).shape
        /// (2, 2, 3)
        /// >>> x.unflatten(1, (-1, 3)).shape
        /// (2, 2, 3)
        fn unflatten(py, x, dim: isize, sizes: &Bound<'_, PyAny>) {
            let sizes = args::int_list("unflatten", "sizes", sizes)?;
            unary(py, x, |x| ops::unflatten(x, dim, &sizes))
        }
        /// A view of `x` with axes `source` moved to positions `destination`.
        ///
        /// The other axes keep their relative order. `Tensor.movedim(source, destination)` is the
        /// method form (the tensor is `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input (anything `remat.tensor` accepts: a Tensor, a list, a NumPy array).
        /// source : int or tuple of int
        ///     The axes to move.
        /// destination : int or tuple of int
        ///     Their new positions (as many as `source`).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A view with the axes reordered.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When an axis is out of range or repeated, or `source` and `destination` differ in
        ///     length.
        /// TypeError
        ///     When an axis is not an int.
        ///
        /// Examples
        /// --------
        /// >>> x = remat.zeros(2, 3, 4)
        /// >>> remat.movedim(x, 0, -1).shape
        /// (3, 4, 2)
        /// >>> x.movedim((0, 1), (2, 0)).shape
        /// (3, 4, 2)
        fn movedim(_py, x, source: &Bound<'_, PyAny>, destination: &Bound<'_, PyAny>) {
            let src = args::int_list("movedim", "source", source)?;
            let dst = args::int_list("movedim", "destination", destination)?;
            ops::movedim(x, &src, &dst).py().map(wrap)
        }
        /// A view of the positions `start` to `start + length` (exclusive) along axis `dim`.
        ///
        /// `Tensor.narrow(dim, start, length)` is the method form (the tensor is `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input (anything `remat.tensor` accepts: a Tensor, a list, a NumPy array).
        /// dim : int
        ///     The axis to narrow.
        /// start : int
        ///     The first position (negative counts from the end).
        /// length : int
        ///     How many positions to keep (non-negative).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A view with extent `length` along `dim`.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When `dim` or `start` is out of range, `length` is negative, or `start + length`
        ///     exceeds the extent of `dim`.
        ///
        /// Examples
        /// --------
        /// >>> remat.narrow(remat.arange(6), 0, 2, 3)
        /// tensor([2, 3, 4])
        /// >>> remat.arange(6).narrow(0, -2, 2)
        /// tensor([4, 5])
        fn narrow(_py, x, dim: isize, start: isize, length: isize) {
            ops::narrow(x, dim, start, length).py().map(wrap)
        }
        /// A broadcast view of `x` with shape `size` (no data is copied).
        ///
        /// NumPy's broadcasting rules: axes of extent 1 stretch, new leading axes are added, and -1
        /// keeps the extent of an existing axis. `Tensor.broadcast_to(size)` is the method form
        /// (the tensor is `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input (anything `remat.tensor` accepts: a Tensor, a list, a NumPy array).
        /// size : int or tuple of int
        ///     The target shape.
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A view of shape `size`.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When `x` cannot be broadcast to `size`.
        /// TypeError
        ///     When `size` holds something other than ints.
        ///
        /// Examples
        /// --------
        /// >>> remat.broadcast_to(remat.tensor([1.0, 2.0]), (3, 2))
        /// tensor([[1., 2.],
        ///         [1., 2.],
        ///         [1., 2.]])
        /// >>> remat.tensor([[1.0], [2.0]]).broadcast_to((-1, 3)).shape
        /// (2, 3)
        fn broadcast_to(_py, x, size: &Bound<'_, PyAny>) {
            let size = args::int_list("broadcast_to", "size", size)?;
            ops::broadcast_to(x, &size).py().map(wrap)
        }
        /// A broadcast view of `x` with the shape of `other` (`broadcast_to(x, other.shape)`).
        ///
        /// `Tensor.expand_as(other)` is the method form (the tensor is `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input (anything `remat.tensor` accepts: a Tensor, a list, a NumPy array).
        /// other : Tensor
        ///     The tensor whose shape to take (anything `remat.tensor` accepts).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A view of shape `other.shape`.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When `x` cannot be broadcast to `other`'s shape.
        ///
        /// Examples
        /// --------
        /// >>> remat.expand_as(remat.tensor([[1.0], [2.0]]), remat.zeros(2, 3))
        /// tensor([[1., 1., 1.],
        ///         [2., 2., 2.]])
        fn expand_as(_py, x, other: &Bound<'_, PyAny>) {
            let other = convert::extract_tensor("expand_as", other)?;
            ops::expand_as(x, &other).py().map(wrap)
        }
        /// `beta * x + alpha * (mat1 @ mat2)` in one fused op.
        ///
        /// `mat1` and `mat2` are 2-D; `x` broadcasts to the `(n, p)` product (a bias row, say).
        /// With `beta=0`, `x` is ignored (NaN in it does not propagate). All three must have one
        /// dtype: float, or int64/int32 for an exact integer result (`beta` and `alpha` are then
        /// truncated to integers, as PyTorch does).
        /// `Tensor.addmm(mat1, mat2, *, beta=1.0, alpha=1.0)` is the method form (the tensor is
        /// `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The added term, broadcastable to the product's shape.
        /// mat1 : Tensor
        ///     An `(n, m)` matrix.
        /// mat2 : Tensor
        ///     An `(m, p)` matrix.
        /// beta : float, optional
        ///     The factor of `x` (keyword-only). Default: `1.0`.
        /// alpha : float, optional
        ///     The factor of the product (keyword-only). Default: `1.0`.
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     An `(n, p)` tensor.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When `mat1` or `mat2` is not 2-D, their inner extents differ, or `x` does not
        ///     broadcast to the product.
        /// DTypeError
        ///     When the dtypes differ, or the tensors are bool.
        /// DeviceError
        ///     When the tensors are on different devices.
        ///
        /// Examples
        /// --------
        /// >>> m = remat.tensor([[1.0, 2.0], [3.0, 4.0]])
        /// >>> remat.addmm(remat.tensor([1.0, 1.0]), m, remat.eye(2))
        /// tensor([[2., 3.],
        ///         [4., 5.]])
        /// >>> remat.tensor([1.0, 1.0]).addmm(m, remat.eye(2), beta=0.5, alpha=2)
        /// tensor([[2.5000, 4.5000],
        ///         [6.5000, 8.5000]])
        #[pyo3(signature = (mat1, mat2, *, beta=1.0, alpha=1.0))]
        fn addmm(py, x, mat1: &Bound<'_, PyAny>, mat2: &Bound<'_, PyAny>, beta: f64, alpha: f64) {
            let m1 = convert::extract_tensor("addmm", mat1)?;
            let m2 = convert::extract_tensor("addmm", mat2)?;
            run(py, heavy(&[x, &m1, &m2]), || ops::addmm(x, &m1, &m2, beta, alpha)).map(wrap)
        }
        /// `beta * x + alpha * (batch1 @ batch2)` for batches of matrices, fused.
        ///
        /// `batch1` and `batch2` are 3-D with equal batch sizes; `x` broadcasts to the `(B, n, p)`
        /// product. With `beta=0`, `x` is ignored, as in `addmm`. All three must have one dtype
        /// (float, or int64/int32 as in `addmm`).
        /// `Tensor.baddbmm(batch1, batch2, *, beta=1.0, alpha=1.0)` is the method form (the
        /// tensor is `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The added term, broadcastable to the product's shape.
        /// batch1 : Tensor
        ///     A `(B, n, m)` tensor.
        /// batch2 : Tensor
        ///     A `(B, m, p)` tensor.
        /// beta : float, optional
        ///     The factor of `x` (keyword-only). Default: `1.0`.
        /// alpha : float, optional
        ///     The factor of the product (keyword-only). Default: `1.0`.
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A `(B, n, p)` tensor.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When `batch1` or `batch2` is not 3-D, the batch sizes or inner extents differ, or
        ///     `x` does not broadcast to the product.
        /// DTypeError
        ///     When the dtypes differ, or the tensors are bool.
        /// DeviceError
        ///     When the tensors are on different devices.
        ///
        /// Examples
        /// --------
        /// >>> out = remat.baddbmm(remat.ones(1), remat.ones(2, 1, 3), remat.ones(2, 3, 1))
        /// >>> out.shape
        /// (2, 1, 1)
        /// >>> out.tolist()
        /// [[[4.0]], [[4.0]]]
        #[pyo3(signature = (batch1, batch2, *, beta=1.0, alpha=1.0))]
        fn baddbmm(
            py, x, batch1: &Bound<'_, PyAny>, batch2: &Bound<'_, PyAny>, beta: f64, alpha: f64
        ) {
            let b1 = convert::extract_tensor("baddbmm", batch1)?;
            let b2 = convert::extract_tensor("baddbmm", batch2)?;
            run(py, heavy(&[x, &b1, &b2]), || ops::baddbmm(x, &b1, &b2, beta, alpha)).map(wrap)
        }
        /// A copy of `x` in new, contiguous memory that gradients flow through.
        ///
        /// Unlike `detach`, the copy stays in the graph: the gradient of the copy reaches `x`.
        /// `Tensor.clone()` is the method form (the tensor is `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input (anything `remat.tensor` accepts: a Tensor, a list, a NumPy array).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A contiguous tensor of `x`'s shape, dtype and device.
        ///
        /// Raises
        /// ------
        /// DTypeError
        ///     When `x` cannot be made a tensor (function form).
        ///
        /// Examples
        /// --------
        /// >>> x = remat.tensor([1.0, 2.0], requires_grad=True)
        /// >>> y = remat.clone(x)
        /// >>> y
        /// tensor([1., 2.], grad_fn=<clone>)
        /// >>> (y * y).sum().backward()
        /// >>> x.grad
        /// tensor([2., 4.])
        fn clone(py, x) {
            unary(py, x, ops::clone)
        }
        /// Clamp each element into `[min, max]`.
        ///
        /// Each bound is None, a number or a tensor (broadcast against `x`); at least one must be
        /// given. When `min > max`, every element becomes `max`, as in PyTorch. NaN propagates. The
        /// gradient is 1 strictly inside the bounds and 0 outside them and at a number bound. A
        /// tensor bound gets the gradient where it is the result, as in PyTorch: on a tie with
        /// one tensor bound `x` and the bound get half each; with both bounds, ties split while
        /// `min < max`, `x == min == max` gives it all to `x`, and `min > max` all to `max`.
        /// The result keeps `x`'s dtype (a float bound on an integer tensor is truncated).
        /// `Tensor.clamp(min=None, max=None)` is the method form (the tensor is `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input (anything `remat.tensor` accepts: a Tensor, a list, a NumPy array).
        /// min : float or Tensor, optional
        ///     The lower bound. Default: `None` (no lower bound).
        /// max : float or Tensor, optional
        ///     The upper bound. Default: `None` (no upper bound).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A tensor of `x`'s shape and dtype.
        ///
        /// Raises
        /// ------
        /// ValueError
        ///     When both `min` and `max` are None.
        /// ShapeError
        ///     When a tensor bound does not broadcast against `x`.
        /// DTypeError
        ///     When a bound is neither a number nor convertible to a tensor.
        ///
        /// Examples
        /// --------
        /// >>> x = remat.tensor([-2.0, 0.5, 3.0])
        /// >>> remat.clamp(x, min=0.0, max=1.0)
        /// tensor([0.0000, 0.5000, 1.0000])
        /// >>> remat.clamp(x, max=0)
        /// tensor([-2.,  0.,  0.])
        /// >>> remat.clamp(x, min=remat.tensor([0.0, 1.0, 2.0]))
        /// tensor([0., 1., 3.])
        #[pyo3(signature = (min=None, max=None))]
        fn clamp(py, x, min: Option<&Bound<'_, PyAny>>, max: Option<&Bound<'_, PyAny>>) {
            clamp_args(py, "clamp", x, min, max)
        }
        /// Alias of `clamp`: clamp each element into `[min, max]`.
        ///
        /// Each bound is None, a number or a tensor (broadcast against `x`); at least one must be
        /// given. When `min > max`, every element becomes `max`, as in PyTorch. NaN propagates. The
        /// gradient is 1 strictly inside the bounds and 0 outside them and at a number bound. A
        /// tensor bound gets the gradient where it is the result, as in PyTorch: on a tie with
        /// one tensor bound `x` and the bound get half each; with both bounds, ties split while
        /// `min < max`, `x == min == max` gives it all to `x`, and `min > max` all to `max`.
        /// The result keeps `x`'s dtype (a float bound on an integer tensor is truncated).
        /// `Tensor.clip(min=None, max=None)` is the method form (the tensor is `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input (anything `remat.tensor` accepts: a Tensor, a list, a NumPy array).
        /// min : float or Tensor, optional
        ///     The lower bound. Default: `None` (no lower bound).
        /// max : float or Tensor, optional
        ///     The upper bound. Default: `None` (no upper bound).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A tensor of `x`'s shape and dtype.
        ///
        /// Raises
        /// ------
        /// ValueError
        ///     When both `min` and `max` are None.
        /// ShapeError
        ///     When a tensor bound does not broadcast against `x`.
        /// DTypeError
        ///     When a bound is neither a number nor convertible to a tensor.
        ///
        /// Examples
        /// --------
        /// >>> remat.clip(remat.tensor([-2.0, 0.5, 3.0]), 0, 1)
        /// tensor([0.0000, 0.5000, 1.0000])
        #[pyo3(signature = (min=None, max=None))]
        fn clip(py, x, min: Option<&Bound<'_, PyAny>>, max: Option<&Bound<'_, PyAny>>) {
            clamp_args(py, "clip", x, min, max)
        }
        /// Elementwise logical not: True where `x` is zero.
        ///
        /// Any dtype; NaN is nonzero, so it gives False. Never differentiable.
        /// `Tensor.logical_not()` is the method form (the tensor is `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input (anything `remat.tensor` accepts: a Tensor, a list, a NumPy array).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A bool tensor of `x`'s shape.
        ///
        /// Raises
        /// ------
        /// DTypeError
        ///     When `x` cannot be made a tensor (function form).
        ///
        /// Examples
        /// --------
        /// >>> remat.logical_not(remat.tensor([0.0, 1.5, float("nan")]))
        /// tensor([ True, False, False])
        /// >>> remat.tensor([0, 3]).logical_not()
        /// tensor([ True, False])
        fn logical_not(py, x) {
            unary(py, x, ops::logical_not)
        }
        /// Elementwise `~x`: bitwise not of an integer tensor, logical not of a bool tensor.
        ///
        /// For integers `~x == -x - 1`. `Tensor.bitwise_not()` is the method form (the tensor is
        /// `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     An integer or bool tensor (anything `remat.tensor` accepts).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A tensor of `x`'s shape and dtype.
        ///
        /// Raises
        /// ------
        /// DTypeError
        ///     When `x` is a float tensor.
        ///
        /// Examples
        /// --------
        /// >>> remat.bitwise_not(remat.tensor([0, 5, -1]))
        /// tensor([-1, -6,  0])
        /// >>> remat.tensor([True, False]).bitwise_not()
        /// tensor([False,  True])
        fn bitwise_not(py, x) {
            unary(py, x, ops::bitwise_not)
        }
        /// Elementwise test for NaN.
        ///
        /// Integer and bool tensors give all False. Never differentiable. `Tensor.isnan()` is the
        /// method form (the tensor is `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input (anything `remat.tensor` accepts: a Tensor, a list, a NumPy array).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A bool tensor of `x`'s shape.
        ///
        /// Raises
        /// ------
        /// DTypeError
        ///     When `x` cannot be made a tensor (function form).
        ///
        /// Examples
        /// --------
        /// >>> remat.isnan(remat.tensor([1.0, float("nan"), float("inf")]))
        /// tensor([False,  True, False])
        fn isnan(py, x) {
            unary(py, x, ops::isnan)
        }
        /// Elementwise test for `+inf` or `-inf`.
        ///
        /// Integer and bool tensors give all False. Never differentiable. `Tensor.isinf()` is the
        /// method form (the tensor is `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input (anything `remat.tensor` accepts: a Tensor, a list, a NumPy array).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A bool tensor of `x`'s shape.
        ///
        /// Raises
        /// ------
        /// DTypeError
        ///     When `x` cannot be made a tensor (function form).
        ///
        /// Examples
        /// --------
        /// >>> remat.isinf(remat.tensor([1.0, float("nan"), float("-inf")]))
        /// tensor([False, False,  True])
        fn isinf(py, x) {
            unary(py, x, ops::isinf)
        }
        /// Elementwise test for finite values (neither NaN nor infinite).
        ///
        /// Integer and bool tensors give all True. Never differentiable. `Tensor.isfinite()` is the
        /// method form (the tensor is `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input (anything `remat.tensor` accepts: a Tensor, a list, a NumPy array).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A bool tensor of `x`'s shape.
        ///
        /// Raises
        /// ------
        /// DTypeError
        ///     When `x` cannot be made a tensor (function form).
        ///
        /// Examples
        /// --------
        /// >>> remat.isfinite(remat.tensor([1.0, float("nan"), float("inf")]))
        /// tensor([ True, False, False])
        fn isfinite(py, x) {
            unary(py, x, ops::isfinite)
        }
        /// `value` where the bool `mask` is True, `x` elsewhere.
        ///
        /// `mask` and `x` broadcast together: the result has their broadcast shape, which may be
        /// larger than `x`'s (as in PyTorch; the in-place `masked_fill_` needs a mask that fits
        /// `x`). The result keeps `x`'s dtype (a float value on an integer tensor is truncated).
        /// Differentiable in `x`, with a zero gradient where masked.
        /// `Tensor.masked_fill(mask, value)` is the method form (the tensor is `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input (anything `remat.tensor` accepts: a Tensor, a list, a NumPy array).
        /// mask : Tensor
        ///     A bool tensor that broadcasts with `x`.
        /// value : float or Tensor
        ///     A number or a 0-d tensor.
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A tensor of `x`'s dtype and of the broadcast shape of `x` and `mask`.
        ///
        /// Raises
        /// ------
        /// DTypeError
        ///     When `mask` is not bool.
        /// ShapeError
        ///     When `mask` and `x` do not broadcast together, or `value` is a tensor that is not
        ///     0-d.
        /// DeviceError
        ///     When the tensors are on different devices.
        ///
        /// Examples
        /// --------
        /// >>> x = remat.tensor([[1.0, 2.0], [3.0, 4.0]])
        /// >>> remat.masked_fill(x, remat.tensor([True, False]), -1)
        /// tensor([[-1.,  2.],
        ///         [-1.,  4.]])
        /// >>> x.masked_fill(x > 2, float("-inf"))
        /// tensor([[1., 2.],
        ///         [-inf, -inf]])
        /// >>> remat.tensor([1.0, 2.0]).masked_fill(remat.tensor([[True], [False]]), 0.0)
        /// tensor([[0., 0.],
        ///         [1., 2.]])
        fn masked_fill(py, x, mask: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) {
            let mask = convert::extract_tensor("masked_fill", mask)?;
            let value = fill_value("masked_fill", value, x)?;
            run(py, heavy(&[x, &mask]), || ops::masked_fill(x, &mask, &value)).map(wrap)
        }
        /// Linear interpolation `x + weight * (end - x)`, with broadcasting.
        ///
        /// `end` and `weight` may be numbers or tensors; the three broadcast together. Integer
        /// inputs give float32. Differentiable in `x`, `end` and a tensor `weight`.
        /// `Tensor.lerp(end, weight)` is the method form (the tensor is `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input (anything `remat.tensor` accepts: a Tensor, a list, a NumPy array).
        /// end : Tensor or float
        ///     The end point.
        /// weight : float or Tensor
        ///     The interpolation weight (0 gives `x`, 1 gives `end`).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A float tensor of the broadcast shape.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When the shapes do not broadcast.
        /// DTypeError
        ///     When `end` or `weight` cannot be made a tensor.
        /// DeviceError
        ///     When the tensors are on different devices.
        ///
        /// Examples
        /// --------
        /// >>> start = remat.tensor([0.0, 10.0])
        /// >>> remat.lerp(start, remat.tensor([10.0, 20.0]), 0.5)
        /// tensor([ 5., 15.])
        /// >>> start.lerp(remat.tensor([10.0, 20.0]), remat.tensor([0.0, 1.0]))
        /// tensor([ 0., 20.])
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
        /// The elements of `x` in another shape.
        ///
        /// The shape is given as several ints or one tuple/list: `reshape(x, 2, 3)` or
        /// `reshape(x, (2, 3))`; one extent may be -1 (inferred). A view when `x` is contiguous,
        /// else a copy. `Tensor.reshape(*shape)` is the method form (the tensor is `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input (anything `remat.tensor` accepts: a Tensor, a list, a NumPy array).
        /// *shape : int or tuple of int
        ///     The new shape; its product must equal `x.numel()`.
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A tensor with the same elements in the new shape.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When the element count does not match, more than one extent is -1, or an extent is
        ///     below -1.
        /// TypeError
        ///     When an extent is not an int.
        ///
        /// Examples
        /// --------
        /// >>> remat.reshape(remat.arange(6), 2, 3)
        /// tensor([[0, 1, 2],
        ///         [3, 4, 5]])
        /// >>> remat.arange(6).reshape((3, -1)).shape
        /// (3, 2)
        fn reshape(py, x, *shape) {
            let dims = args::signed_dims("reshape", shape)?;
            let shape = ops::shape::infer_shape("reshape", x.shape(), &dims).py()?;
            run(py, heavy(&[x]), || ops::reshape(x, &shape)).map(wrap)
        }
        /// A view of `x` with its axes swapped or permuted.
        ///
        /// `transpose(x, a, b)` swaps axes `a` and `b` (PyTorch); `transpose(x, axes)` with a full
        /// permutation reorders them (NumPy); `transpose(x)` reverses all axes (like `x.T`).
        /// `Tensor.transpose(*axes)` is the method form (the tensor is `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input (anything `remat.tensor` accepts: a Tensor, a list, a NumPy array).
        /// *axes : int or tuple of int
        ///     Nothing, two axes to swap, or a permutation of all axes (as ints or one tuple).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A view with the axes reordered.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When an axis is out of range, or the axes (unless exactly two) are not a permutation
        ///     of all axes.
        /// TypeError
        ///     When an axis is not an int.
        ///
        /// Examples
        /// --------
        /// >>> x = remat.arange(6).reshape(2, 3)
        /// >>> remat.transpose(x, 0, 1)
        /// tensor([[0, 3],
        ///         [1, 4],
        ///         [2, 5]])
        /// >>> remat.zeros(2, 3, 4).transpose().shape
        /// (4, 3, 2)
        /// >>> remat.zeros(2, 3, 4).transpose((2, 0, 1)).shape
        /// (4, 2, 3)
        fn transpose(_py, x, *axes) {
            transpose_args(x, axes).map(wrap)
        }
        /// A view of `x` with its axes reordered: axis `i` of the result is `x`'s axis `axes[i]`.
        ///
        /// The axes are given as several ints or one tuple/list, and must be a permutation of all
        /// of `x`'s axes (negative counts from the end). `Tensor.permute(*axes)` is the method form
        /// (the tensor is `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input (anything `remat.tensor` accepts: a Tensor, a list, a NumPy array).
        /// *axes : int or tuple of int
        ///     A permutation of `range(x.ndim)`.
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A view with the axes reordered.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When `axes` is not a permutation of all axes.
        /// TypeError
        ///     When an axis is not an int.
        ///
        /// Examples
        /// --------
        /// >>> x = remat.zeros(2, 3, 4)
        /// >>> remat.permute(x, 2, 0, 1).shape
        /// (4, 2, 3)
        /// >>> x.permute((-1, 0, 1)).shape
        /// (4, 2, 3)
        fn permute(_py, x, *axes) {
            let axes = args::signed_dims("permute", axes)?;
            ops::permute(x, &axes).py().map(wrap)
        }
        /// A broadcast view of `x` with the given sizes (no data is copied).
        ///
        /// Sizes are several ints or one tuple/list: axes of extent 1 stretch, -1 keeps an extent,
        /// and extra leading sizes add axes. `Tensor.expand(*sizes)` is the method form (the tensor
        /// is `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input (anything `remat.tensor` accepts: a Tensor, a list, a NumPy array).
        /// *sizes : int or tuple of int
        ///     The target shape, at least one size per axis of `x`.
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A view of the target shape.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When a size does not fit (a non-1 extent changed, fewer sizes than axes, or -1 for a
        ///     new leading axis).
        /// TypeError
        ///     When a size is not an int.
        ///
        /// Examples
        /// --------
        /// >>> x = remat.tensor([[1.0], [2.0]])
        /// >>> remat.expand(x, 2, 3)
        /// tensor([[1., 1., 1.],
        ///         [2., 2., 2.]])
        /// >>> x.expand((3, -1, 2)).shape
        /// (3, 2, 2)
        fn expand(_py, x, *sizes) {
            let sizes = args::signed_dims("expand", sizes)?;
            ops::expand_sizes(x, &sizes).py().map(wrap)
        }
        /// `x` tiled `sizes[i]` times along axis `i` (a copy).
        ///
        /// Sizes are several ints or one tuple/list, at least as many as `x` has axes; extra
        /// leading sizes add axes (like `np.tile`). `Tensor.repeat(*sizes)` is the method form (the
        /// tensor is `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input (anything `remat.tensor` accepts: a Tensor, a list, a NumPy array).
        /// *sizes : int or tuple of int
        ///     The repeat count per axis (non-negative).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A tensor whose extents are `x`'s times the counts.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When there are fewer counts than axes of `x`, or a count is negative.
        /// TypeError
        ///     When a count is not an int.
        ///
        /// Examples
        /// --------
        /// >>> remat.repeat(remat.tensor([1, 2]), 2)
        /// tensor([1, 2, 1, 2])
        /// >>> remat.tensor([1, 2]).repeat(2, 2)
        /// tensor([[1, 2, 1, 2],
        ///         [1, 2, 1, 2]])
        fn repeat(py, x, *sizes) {
            let sizes = args::shape_from_args("repeat", sizes)?;
            unary(py, x, |x| ops::repeat(x, &sizes))
        }
        /// The elements of `x` in reverse order along the given axes (a copy).
        ///
        /// The axes are several ints or one tuple/list; none given means no axis (an unchanged
        /// copy). `Tensor.flip(*dims)` is the method form (the tensor is `x`).
        ///
        /// Parameters
        /// ----------
        /// x : Tensor
        ///     The input (anything `remat.tensor` accepts: a Tensor, a list, a NumPy array).
        /// *dims : int or tuple of int
        ///     The axes to reverse (negative counts from the end).
        ///
        /// Returns
        /// -------
        /// Tensor
        ///     A tensor of `x`'s shape and dtype.
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When an axis is out of range or repeated.
        /// TypeError
        ///     When an axis is not an int.
        ///
        /// Examples
        /// --------
        /// >>> x = remat.tensor([[1, 2], [3, 4]])
        /// >>> remat.flip(x, 0)
        /// tensor([[3, 4],
        ///         [1, 2]])
        /// >>> x.flip(0, 1)
        /// tensor([[4, 3],
        ///         [2, 1]])
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
    // PyTorch's promotion: an integer tensor clamped by a float (a Python float or a float
    // tensor) gives a float result (float32, or the float tensor's dtype).
    let float_of = |b: Option<&Bound<'_, PyAny>>| -> Option<remat_core::DType> {
        let b = b.filter(|b| !b.is_none())?;
        if b.is_instance_of::<pyo3::types::PyFloat>() {
            return Some(remat_core::DType::default_float());
        }
        let t = b.downcast::<PyTensor>().ok()?;
        let d = t.get().inner.dtype();
        d.is_float().then_some(d)
    };
    let promoted;
    let x = match float_of(min).or(float_of(max)) {
        Some(d) if !x.dtype().is_float() => {
            promoted = ops::to_dtype(x, d).py()?;
            &promoted
        }
        _ => x,
    };
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
/// `add(a, b, alpha=...)`: `a + alpha * b` (PyTorch's `alpha`).
fn add_alpha(
    py: Python<'_>,
    a: &Tensor,
    b: &Tensor,
    alpha: &Bound<'_, PyAny>,
) -> PyResult<PyTensor> {
    let scaled = scaled_by("add", b, alpha)?;
    binary(py, a, &scaled, ops::add)
}

/// `sub(a, b, alpha=...)`: `a - alpha * b` (PyTorch's `alpha`).
fn sub_alpha(
    py: Python<'_>,
    a: &Tensor,
    b: &Tensor,
    alpha: &Bound<'_, PyAny>,
) -> PyResult<PyTensor> {
    let scaled = scaled_by("sub", b, alpha)?;
    binary(py, a, &scaled, ops::sub)
}

/// `b * alpha`, with `alpha` made a 0-d tensor like `b` (differentiable in `b`).
fn scaled_by(op: &str, b: &Tensor, alpha: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    let al = operand(op, alpha, b)?;
    ops::mul(b, &al).py()
}

/// `div(a, b, rounding_mode=...)`: truncating or floor division (see `ops::div_rounded`).
fn div_rounded(
    py: Python<'_>,
    a: &Tensor,
    b: &Tensor,
    mode: &Bound<'_, PyAny>,
) -> PyResult<PyTensor> {
    let mode: String = mode.extract().map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err(format!(
            "div: rounding_mode must be a str or None, got {}",
            convert::type_name(mode)
        ))
    })?;
    run(py, heavy(&[a, b]), || ops::div_rounded(a, b, Some(&mode))).map(wrap)
}

/// A reduction's result in the `dtype=` asked for, if any.
fn in_dtype(
    r: remat_core::Result<Tensor>,
    want: Option<remat_core::DType>,
) -> remat_core::Result<Tensor> {
    match want {
        Some(d) => r.and_then(|t| {
            if t.dtype() == d {
                Ok(t)
            } else {
                ops::to_dtype(&t, d)
            }
        }),
        None => r,
    }
}

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

//! A tiny float64 n-d array with NumPy semantics (broadcasting, axes, matmul rules), written
//! independently of the engine, to build the references of the op registry.

use remat_core::Tensor;

/// A C-ordered float64 array.
#[derive(Clone, Debug, PartialEq)]
pub struct Arr {
    pub shape: Vec<usize>,
    pub data: Vec<f64>,
}

impl Arr {
    pub fn new(shape: &[usize], data: Vec<f64>) -> Arr {
        assert_eq!(
            shape.iter().product::<usize>(),
            data.len(),
            "shape {shape:?}"
        );
        Arr {
            shape: shape.to_vec(),
            data,
        }
    }

    /// The values of a (CPU) tensor of any float dtype.
    pub fn of(t: &Tensor) -> Arr {
        Arr::new(t.shape(), t.to_vec::<f64>())
    }

    fn at(&self, idx: &[usize]) -> f64 {
        self.data[offset(idx, &self.shape)]
    }
}

fn offset(idx: &[usize], shape: &[usize]) -> usize {
    idx.iter().zip(shape).fold(0, |acc, (&i, &n)| acc * n + i)
}

fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for k in (0..shape.len()).rev() {
        idx[k] = i % shape[k];
        i /= shape[k];
    }
    idx
}

/// Every index of `shape` in C order.
fn indices(shape: &[usize]) -> impl Iterator<Item = Vec<usize>> + '_ {
    (0..shape.iter().product::<usize>()).map(move |i| unravel(i, shape))
}

/// NumPy's broadcast of two shapes.
pub fn broadcast_shape(a: &[usize], b: &[usize]) -> Vec<usize> {
    let n = a.len().max(b.len());
    (0..n)
        .map(|k| {
            let da = if k + a.len() >= n {
                a[k + a.len() - n]
            } else {
                1
            };
            let db = if k + b.len() >= n {
                b[k + b.len() - n]
            } else {
                1
            };
            assert!(da == db || da == 1 || db == 1, "shapes {a:?} {b:?}");
            da.max(db)
        })
        .collect()
}

/// The index into an array of `shape` that the broadcast index `idx` reads.
fn source(idx: &[usize], shape: &[usize]) -> Vec<usize> {
    let skip = idx.len() - shape.len();
    shape
        .iter()
        .enumerate()
        .map(|(k, &n)| if n == 1 { 0 } else { idx[skip + k] })
        .collect()
}

pub fn map(a: &Arr, f: impl Fn(f64) -> f64) -> Arr {
    Arr::new(&a.shape, a.data.iter().map(|&v| f(v)).collect())
}

/// Elementwise `f` with broadcasting.
pub fn zip(a: &Arr, b: &Arr, f: impl Fn(f64, f64) -> f64) -> Arr {
    let shape = broadcast_shape(&a.shape, &b.shape);
    let data = indices(&shape)
        .map(|i| f(a.at(&source(&i, &a.shape)), b.at(&source(&i, &b.shape))))
        .collect();
    Arr::new(&shape, data)
}

pub fn reshape(a: &Arr, shape: &[usize]) -> Arr {
    Arr::new(shape, a.data.clone())
}

/// `np.transpose(a, perm)`.
pub fn permute(a: &Arr, perm: &[usize]) -> Arr {
    let shape: Vec<usize> = perm.iter().map(|&p| a.shape[p]).collect();
    let data = indices(&shape)
        .map(|i| {
            let mut src = vec![0; perm.len()];
            for (k, &p) in perm.iter().enumerate() {
                src[p] = i[k];
            }
            a.at(&src)
        })
        .collect();
    Arr::new(&shape, data)
}

#[derive(Clone, Copy)]
pub enum Reduce {
    Sum,
    Mean,
    Max,
}

/// A reduction over `axes` (non-negative, distinct).
pub fn reduce(a: &Arr, axes: &[usize], keepdims: bool, kind: Reduce) -> Arr {
    let kept: Vec<usize> = a
        .shape
        .iter()
        .enumerate()
        .map(|(k, &n)| if axes.contains(&k) { 1 } else { n })
        .collect();
    let count: usize = axes.iter().map(|&k| a.shape[k]).product();
    let init = match kind {
        Reduce::Max => f64::NEG_INFINITY,
        _ => 0.0,
    };
    let mut out = vec![init; kept.iter().product()];
    for i in indices(&a.shape) {
        let o = offset(&source(&i, &kept), &kept);
        let v = a.at(&i);
        out[o] = match kind {
            Reduce::Max => out[o].max(v),
            _ => out[o] + v,
        };
    }
    if let Reduce::Mean = kind {
        out.iter_mut().for_each(|v| *v /= count as f64);
    }
    let shape: Vec<usize> = if keepdims {
        kept
    } else {
        (0..a.shape.len())
            .filter(|k| !axes.contains(k))
            .map(|k| a.shape[k])
            .collect()
    };
    Arr::new(&shape, out)
}

/// `np.matmul`, 1-D operands included.
pub fn matmul(a: &Arr, b: &Arr) -> Arr {
    let a2 = if a.shape.len() == 1 {
        reshape(a, &[1, a.shape[0]])
    } else {
        a.clone()
    };
    let b2 = if b.shape.len() == 1 {
        reshape(b, &[b.shape[0], 1])
    } else {
        b.clone()
    };
    let (ra, rb) = (a2.shape.len(), b2.shape.len());
    let (n, k, m) = (a2.shape[ra - 2], a2.shape[ra - 1], b2.shape[rb - 1]);
    assert_eq!(k, b2.shape[rb - 2], "matmul inner dims");
    let batch = broadcast_shape(&a2.shape[..ra - 2], &b2.shape[..rb - 2]);
    let mut shape = batch.clone();
    shape.extend([n, m]);
    let data = indices(&shape)
        .map(|i| {
            let bi = &i[..batch.len()];
            let (row, col) = (i[batch.len()], i[batch.len() + 1]);
            let mut ia = source(bi, &a2.shape[..ra - 2]);
            let mut ib = source(bi, &b2.shape[..rb - 2]);
            (0..k)
                .map(|j| {
                    ia.truncate(ra - 2);
                    ia.extend([row, j]);
                    ib.truncate(rb - 2);
                    ib.extend([j, col]);
                    a2.at(&ia) * b2.at(&ib)
                })
                .sum()
        })
        .collect();
    let mut out = Arr::new(&shape, data);
    let mut squeezed = batch;
    if a.shape.len() != 1 {
        squeezed.push(n);
    }
    if b.shape.len() != 1 {
        squeezed.push(m);
    }
    out.shape = squeezed;
    out
}

/// Softmax along `axis`.
pub fn softmax(a: &Arr, axis: usize) -> Arr {
    let m = reduce(a, &[axis], true, Reduce::Max);
    let e = map(&zip(a, &m, |x, y| x - y), f64::exp);
    let s = reduce(&e, &[axis], true, Reduce::Sum);
    zip(&e, &s, |x, y| x / y)
}

/// Layer norm over the last axis.
pub fn layer_norm(a: &Arr, w: Option<&Arr>, b: Option<&Arr>, eps: f64) -> Arr {
    let last = a.shape.len() - 1;
    let mu = reduce(a, &[last], true, Reduce::Mean);
    let d = zip(a, &mu, |x, m| x - m);
    let var = reduce(&map(&d, |v| v * v), &[last], true, Reduce::Mean);
    let mut y = zip(&d, &var, |x, v| x / (v + eps).sqrt());
    if let Some(w) = w {
        y = zip(&y, w, |x, g| x * g);
    }
    if let Some(b) = b {
        y = zip(&y, b, |x, c| x + c);
    }
    y
}

/// The sub-array at the cartesian product of per-axis positions, with shape `shape`.
pub fn take(a: &Arr, positions: &[&[usize]], shape: &[usize]) -> Arr {
    let counts: Vec<usize> = positions.iter().map(|p| p.len()).collect();
    let data = indices(&counts)
        .map(|i| {
            let src: Vec<usize> = i
                .iter()
                .enumerate()
                .map(|(k, &j)| positions[k][j])
                .collect();
            a.at(&src)
        })
        .collect();
    Arr::new(shape, data)
}

/// `np.concatenate(arrs, axis)`.
pub fn concat(arrs: &[Arr], axis: usize) -> Arr {
    let mut shape = arrs[0].shape.clone();
    shape[axis] = arrs.iter().map(|a| a.shape[axis]).sum();
    let data = indices(&shape)
        .map(|mut i| {
            let mut which = 0;
            while i[axis] >= arrs[which].shape[axis] {
                i[axis] -= arrs[which].shape[axis];
                which += 1;
            }
            arrs[which].at(&i)
        })
        .collect();
    Arr::new(&shape, data)
}

/// erf by its Taylor series (accurate to ~1e-14 for |x| <= 3), independent of the engine's.
pub fn erf(x: f64) -> f64 {
    let mut term = x;
    let mut sum = x;
    for n in 1..80 {
        term *= -x * x / n as f64;
        sum += term / (2 * n + 1) as f64;
    }
    sum * 2.0 / std::f64::consts::PI.sqrt()
}

pub fn gelu(x: f64) -> f64 {
    0.5 * x * (1.0 + erf(x / std::f64::consts::SQRT_2))
}

pub fn gelu_tanh(x: f64) -> f64 {
    let k = (2.0 / std::f64::consts::PI).sqrt();
    0.5 * x * (1.0 + (k * (x + 0.044715 * x * x * x)).tanh())
}

/// `np.einsum` for equations of letters with an explicit output (`"ij,jk->ik"`): a plain
/// loop over every combination of the letters' positions.
pub fn einsum(equation: &str, arrs: &[&Arr]) -> Arr {
    let (lhs, out) = equation.split_once("->").expect("explicit output");
    let terms: Vec<Vec<char>> = lhs.split(',').map(|t| t.chars().collect()).collect();
    let out: Vec<char> = out.chars().collect();
    let mut letters: Vec<char> = Vec::new();
    let mut size: Vec<usize> = Vec::new();
    for (t, a) in terms.iter().zip(arrs) {
        for (&c, &n) in t.iter().zip(&a.shape) {
            match letters.iter().position(|&l| l == c) {
                Some(p) => assert_eq!(size[p], n, "extent of {c}"),
                None => {
                    letters.push(c);
                    size.push(n);
                }
            }
        }
    }
    let pos = |c: char| letters.iter().position(|&l| l == c).unwrap();
    let out_shape: Vec<usize> = out.iter().map(|&c| size[pos(c)]).collect();
    let mut data = vec![0.0; out_shape.iter().product()];
    for i in indices(&size) {
        let at = |t: &[char]| -> Vec<usize> { t.iter().map(|&c| i[pos(c)]).collect() };
        let v: f64 = terms.iter().zip(arrs).map(|(t, a)| a.at(&at(t))).product();
        data[offset(&at(&out), &out_shape)] += v;
    }
    Arr::new(&out_shape, data)
}

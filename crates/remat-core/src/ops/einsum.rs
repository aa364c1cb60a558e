//! `einsum(equation, operands)`: Einstein summation with PyTorch's (and NumPy's) equation
//! language, built from differentiable views, sums and batched matrix products — never a
//! loop over elements — so it runs on both devices and its gradients (of any order) come
//! from those ops.
//!
//! The equation: one term of subscripts per operand, separated by commas, optionally `->` and
//! the output's subscripts. A subscript is a letter (`a-z`, `A-Z`) or `...`, which stands for
//! the axes not named by letters (broadcast across operands as in NumPy, aligned on the right).
//! Without `->` (implicit output) the output is the `...` axes followed by the letters that
//! appear exactly once, in alphabetical order (`A-Z` before `a-z`). A letter on an axis of
//! extent 1 broadcasts against the same letter elsewhere (as in PyTorch). Spaces are ignored.
//!
//! How it runs:
//! 1. each operand: axes of extent 1 whose letter is larger elsewhere are squeezed (a view:
//!    broadcasting), and a letter repeated within the operand takes the diagonal (the two
//!    axes moved last, merged, and read with a stride of `n + 1`: a view when the axes merge
//!    without a copy);
//! 2. operands are contracted pairwise, left to right. Before each contraction, letters that
//!    only one side has and nothing after it needs are summed out. The remaining letters are
//!    batch letters (both sides, needed later), contracted letters (both sides, not needed
//!    later) and each side's own letters: each side is permuted (a view) to
//!    `(batch..., rows, cols)`, its row and column groups merged into one axis each (a view
//!    whenever the strides allow: groups are ordered by stride, and a side stored
//!    column-major is taken transposed), and one batched `matmul` (GEMM) contracts them (a
//!    broadcast `mul` when no letter is contracted: outer and elementwise products);
//! 3. letters that the output lacks are summed and the result is permuted to the output order.
//!
//! Operands must share a dtype (PyTorch's rule) and a device. Errors are `ShapeError`s that
//! name the equation.

use super::{check_same_device, check_same_dtype, contiguous_copy, view};
use crate::autograd::node::{apply, BackwardCtx, Op};
use crate::error::{Error, Result};
use crate::layout::{fmt_shape, Dims, Layout};
use crate::tensor::Tensor;

/// A subscript: a letter (`0..52`: `A-Z` then `a-z`, ASCII order, which the implicit output
/// follows) or axis `i` of the broadcast `...` axes (`ELL + i`).
type Label = u32;
const ELL: Label = 52;

fn letter(c: char) -> Option<Label> {
    match c {
        'A'..='Z' => Some(c as Label - 'A' as Label),
        'a'..='z' => Some(c as Label - 'a' as Label + 26),
        _ => None,
    }
}

fn label_name(l: Label) -> String {
    match l {
        0..=25 => char::from(b'A' + l as u8).to_string(),
        26..=51 => char::from(b'a' + (l - 26) as u8).to_string(),
        _ => "...".to_string(),
    }
}

/// One term of the equation: its letters and where `...` stands among them.
struct Term {
    letters: Vec<Label>,
    ellipsis: Option<usize>,
}

/// The parsed equation: a term per operand and the output term if one is given.
struct Equation {
    inputs: Vec<Term>,
    output: Option<Term>,
}

fn eq_error(equation: &str, msg: impl std::fmt::Display) -> Error {
    Error::shape("einsum", format!("{msg} in equation '{equation}'"))
}

fn parse_term(equation: &str, term: &str) -> Result<Term> {
    let mut t = Term {
        letters: Vec::new(),
        ellipsis: None,
    };
    let mut chars = term.chars().peekable();
    while let Some(c) = chars.next() {
        if let Some(l) = letter(c) {
            t.letters.push(l);
        } else if c == '.' {
            if chars.next() != Some('.') || chars.next() != Some('.') {
                return Err(eq_error(equation, "'.' must be part of '...'"));
            }
            if t.ellipsis.is_some() {
                return Err(eq_error(equation, "'...' appears twice in one term"));
            }
            t.ellipsis = Some(t.letters.len());
        } else {
            return Err(eq_error(
                equation,
                format!("invalid subscript {c:?} (subscripts are letters a-z, A-Z and '...')"),
            ));
        }
    }
    Ok(t)
}

fn parse(equation: &str) -> Result<Equation> {
    let compact: String = equation.chars().filter(|c| !c.is_whitespace()).collect();
    let (lhs, rhs) = match compact.split_once("->") {
        Some((l, r)) => (l, Some(r)),
        None => (compact.as_str(), None),
    };
    let inputs = lhs
        .split(',')
        .map(|t| parse_term(equation, t))
        .collect::<Result<Vec<_>>>()?;
    let output = rhs.map(|r| parse_term(equation, r)).transpose()?;
    Ok(Equation { inputs, output })
}

/// The extents of `shape` with groups of consecutive axes (`groups[i]` axes each) multiplied
/// together.
fn merged_shape(shape: &[usize], groups: &[usize]) -> Dims {
    let mut d = 0;
    groups
        .iter()
        .map(|&g| {
            d += g;
            shape[d - g..d].iter().product()
        })
        .collect()
}

/// `l` with groups of consecutive axes (`groups[i]` axes each, summing to its rank) merged
/// into one axis each, as a view; None when some group's strides do not allow it. A group of
/// no axes becomes an axis of extent 1.
fn merged_layout(l: &Layout, groups: &[usize]) -> Option<Layout> {
    let shape = merged_shape(&l.shape, groups);
    if l.numel() == 0 {
        return Some(Layout {
            offset: l.offset,
            ..Layout::contiguous(&shape)
        });
    }
    let mut strides = Dims::new();
    let mut d = 0;
    for &g in groups {
        let axes = d..d + g;
        d += g;
        // Innermost first: each axis (extent 1 aside) must step over the whole of the axes
        // inside it.
        let mut inner: Option<(usize, usize)> = None; // (stride of the innermost, span so far)
        for i in axes.rev() {
            if l.shape[i] == 1 {
                continue;
            }
            match inner {
                None => inner = Some((l.strides[i], l.strides[i] * l.shape[i])),
                Some((s, span)) if l.strides[i] == span => {
                    inner = Some((s, span * l.shape[i]));
                }
                Some(_) => return None,
            }
        }
        strides.push(inner.map_or(1, |(s, _)| s));
    }
    Some(Layout {
        shape,
        strides,
        offset: l.offset,
    })
}

/// Groups of consecutive axes merged into one axis each (see [`merged_layout`]): a view when
/// the strides allow, else a contiguous copy. Its gradient is the gradient reshaped back.
struct MergeOp {
    groups: Vec<usize>,
}

impl MergeOp {
    fn run(&self, x: &Tensor) -> Result<Tensor> {
        if self.groups.iter().sum::<usize>() != x.ndim() {
            return Err(Error::shape(
                "reshape",
                format!(
                    "expected a tensor of {} dimensions, got shape {}",
                    self.groups.iter().sum::<usize>(),
                    fmt_shape(x.shape())
                ),
            ));
        }
        if let Some(l) = merged_layout(x.layout(), &self.groups) {
            return Ok(view(x, l));
        }
        let c = contiguous_copy(x, x.dtype())?;
        let l = Layout {
            offset: c.layout().offset,
            ..Layout::contiguous(&merged_shape(c.shape(), &self.groups))
        };
        Ok(view(&c, l))
    }
}

impl Op for MergeOp {
    fn name(&self) -> &'static str {
        "reshape"
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        self.run(inputs[0])
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        self.run(inputs[0])
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(super::reshape(ctx.grad, &ctx.inputs[0].shape)?)])
    }
}

/// `x` with its axes grouped as `groups` (see [`MergeOp`]); `x` itself when every group is
/// one axis.
fn merge(x: &Tensor, groups: &[usize]) -> Result<Tensor> {
    if groups.iter().all(|&g| g == 1) {
        return Ok(x.clone());
    }
    apply(
        MergeOp {
            groups: groups.to_vec(),
        },
        &[x],
        &[],
    )
}

/// `x` permuted by `perm` (no op when it is the identity).
fn permuted(x: &Tensor, perm: &[usize]) -> Result<Tensor> {
    if perm.iter().enumerate().all(|(i, &p)| i == p) {
        return Ok(x.clone());
    }
    let p: Vec<isize> = perm.iter().map(|&p| p as isize).collect();
    super::permute(x, &p)
}

/// An operand during the contraction: the tensor and the label of each of its axes.
struct Labeled {
    t: Tensor,
    labels: Vec<Label>,
}

impl Labeled {
    fn pos(&self, l: Label) -> usize {
        self.labels
            .iter()
            .position(|&x| x == l)
            .expect("label of this operand")
    }

    /// Sum out the axes whose label `drop` selects.
    fn sum_out(self, drop: impl Fn(Label) -> bool) -> Result<Labeled> {
        let axes: Vec<isize> = (0..self.labels.len())
            .filter(|&i| drop(self.labels[i]))
            .map(|i| i as isize)
            .collect();
        if axes.is_empty() {
            return Ok(self);
        }
        let t = super::sum(&self.t, Some(&axes), false)?;
        let labels = self.labels.into_iter().filter(|&l| !drop(l)).collect();
        Ok(Labeled { t, labels })
    }

    /// The diagonal over every letter repeated within this operand: for a pair of axes with
    /// the same label, both move last, merge into one axis of `n * n` and are read with a
    /// stride of `n + 1`; the label then labels the new last axis.
    fn diagonals(mut self) -> Result<Labeled> {
        loop {
            let pair = (0..self.labels.len()).find_map(|p| {
                (p + 1..self.labels.len())
                    .find(|&q| self.labels[q] == self.labels[p])
                    .map(|q| (p, q))
            });
            let Some((p, q)) = pair else {
                return Ok(self);
            };
            let nd = self.labels.len();
            let n = self.t.shape()[p];
            let rest: Vec<usize> = (0..nd).filter(|&i| i != p && i != q).collect();
            let mut perm = rest.clone();
            perm.extend([p, q]);
            let x = permuted(&self.t, &perm)?;
            let mut groups = vec![1; rest.len()];
            groups.push(2);
            let x = merge(&x, &groups)?;
            let mut items = vec![super::IndexItem::Ellipsis];
            items.push(super::IndexItem::Slice {
                start: None,
                stop: None,
                step: (n + 1) as isize,
            });
            let t = super::index(&x, &items)?;
            let mut labels: Vec<Label> = rest.iter().map(|&i| self.labels[i]).collect();
            labels.push(self.labels[p]);
            self = Labeled { t, labels };
        }
    }

    /// Labels of `group` sorted by this operand's strides, largest first (stable): the
    /// order in which the group most likely merges into one axis without a copy.
    fn by_stride(&self, group: &mut [Label]) {
        let strides = &self.t.layout().strides;
        group.sort_by_key(|&l| std::cmp::Reverse(strides[self.pos(l)]));
    }

    /// This operand as a stack of matrices `(batch..., rows, cols)`, rows and columns being
    /// the products of the label groups `rows` / `cols` (a view whenever the strides allow).
    fn as_matrices(&self, batch: &[Label], rows: &[Label], cols: &[Label]) -> Result<Tensor> {
        let order = |first: &[Label], second: &[Label]| -> Vec<usize> {
            batch
                .iter()
                .chain(first)
                .chain(second)
                .map(|&l| self.pos(l))
                .collect()
        };
        let groups = |first: &[Label], second: &[Label]| -> Vec<usize> {
            let mut g = vec![1; batch.len()];
            g.extend([first.len(), second.len()]);
            g
        };
        let (rc, cr) = (order(rows, cols), order(cols, rows));
        let l = self.t.layout();
        let direct = merged_layout(&l.permute(&rc), &groups(rows, cols)).is_some();
        let transposed = !direct && merged_layout(&l.permute(&cr), &groups(cols, rows)).is_some();
        if transposed {
            // Stored column-major: merge as (cols, rows) and read it transposed.
            let m = merge(&permuted(&self.t, &cr)?, &groups(cols, rows))?;
            return super::transpose(&m, -2, -1);
        }
        merge(&permuted(&self.t, &rc)?, &groups(rows, cols))
    }
}

/// Contract `a` and `b`, keeping the labels in `keep` (the output's and later operands').
fn contract(a: Labeled, b: Labeled, keep: &[Label]) -> Result<Labeled> {
    let kept = |l: &Label| keep.contains(l);
    let (la, lb) = (a.labels.clone(), b.labels.clone());
    let a = a.sum_out(|l| !lb.contains(&l) && !kept(&l))?;
    let b = b.sum_out(|l| !la.contains(&l) && !kept(&l))?;
    let batch: Vec<Label> = a
        .labels
        .iter()
        .copied()
        .filter(|l| b.labels.contains(l) && kept(l))
        .collect();
    let mut inner: Vec<Label> = a
        .labels
        .iter()
        .copied()
        .filter(|l| b.labels.contains(l) && !kept(l))
        .collect();
    let mut rows: Vec<Label> = a
        .labels
        .iter()
        .copied()
        .filter(|l| !b.labels.contains(l))
        .collect();
    let mut cols: Vec<Label> = b
        .labels
        .iter()
        .copied()
        .filter(|l| !a.labels.contains(l))
        .collect();
    a.by_stride(&mut rows);
    a.by_stride(&mut inner);
    b.by_stride(&mut cols);
    let a3 = a.as_matrices(&batch, &rows, &inner)?;
    let b3 = b.as_matrices(&batch, &inner, &cols)?;
    // Nothing contracted: a broadcast product (rows x 1 times 1 x cols), no GEMM needed.
    let c = if inner.is_empty() {
        super::mul(&a3, &b3)?
    } else {
        super::matmul(&a3, &b3)?
    };
    let size = |x: &Labeled, l: Label| x.t.shape()[x.pos(l)];
    let shape: Dims = batch
        .iter()
        .map(|&l| size(&a, l))
        .chain(rows.iter().map(|&l| size(&a, l)))
        .chain(cols.iter().map(|&l| size(&b, l)))
        .collect();
    let t = super::reshape(&c, &shape)?;
    let labels = batch.into_iter().chain(rows).chain(cols).collect();
    Ok(Labeled { t, labels })
}

/// Einstein summation over `operands` as described by `equation` (PyTorch's and NumPy's
/// `einsum`): e.g. `"ij,jk->ik"` (matrix product), `"bhqd,bhkd->bhqk"` (attention scores),
/// `"ii->i"` (diagonal), `"ii"` (trace), `"...ij->...ji"`, `"i,j->ij"`. Operands are
/// contracted pairwise from left to right, each contraction one batched GEMM; see the module
/// documentation. The operands must share a dtype and a device.
pub fn einsum(equation: &str, operands: &[Tensor]) -> Result<Tensor> {
    let all: Vec<&Tensor> = operands.iter().collect();
    match crate::autocast::op_entry("einsum", &all)? {
        Some(cast) => einsum_now(equation, &cast.inputs),
        None => einsum_now(equation, operands),
    }
}

fn einsum_now(equation: &str, operands: &[Tensor]) -> Result<Tensor> {
    let refs: Vec<&Tensor> = operands.iter().collect();
    if operands.is_empty() {
        return Err(eq_error(equation, "expected at least one operand"));
    }
    check_same_device("einsum", &refs)?;
    check_same_dtype("einsum", &refs)?;
    let eq = parse(equation)?;
    if eq.inputs.len() != operands.len() {
        return Err(eq_error(
            equation,
            format!(
                "{} operand(s) given for {} term(s)",
                operands.len(),
                eq.inputs.len()
            ),
        ));
    }
    // The number of `...` axes: the most any operand has (they align on the right).
    let mut ell = 0;
    for (i, (term, x)) in eq.inputs.iter().zip(operands).enumerate() {
        let named = term.letters.len();
        let fits = match term.ellipsis {
            Some(_) => x.ndim() >= named,
            None => x.ndim() == named,
        };
        if !fits {
            return Err(eq_error(
                equation,
                format!(
                    "operand {i} of shape {} has {} dimension(s) but its subscripts name {named}",
                    fmt_shape(x.shape()),
                    x.ndim()
                ),
            ));
        }
        if term.ellipsis.is_some() {
            ell = ell.max(x.ndim() - named);
        }
    }
    let labels_of = |term: &Term, ndim: usize| -> Vec<Label> {
        let Some(at) = term.ellipsis else {
            return term.letters.clone();
        };
        let e = ndim - term.letters.len();
        let mut v = term.letters[..at].to_vec();
        v.extend((ell - e..ell).map(|j| ELL + j as Label));
        v.extend_from_slice(&term.letters[at..]);
        v
    };
    let labeled: Vec<Vec<Label>> = eq
        .inputs
        .iter()
        .zip(operands)
        .map(|(t, x)| labels_of(t, x.ndim()))
        .collect();
    // The extent of every label: equal everywhere, or 1 (broadcast); within one operand a
    // repeated letter must have one extent.
    let mut size: Vec<Option<(usize, usize)>> = vec![None; ELL as usize + ell]; // (extent, operand)
    for (i, (ls, x)) in labeled.iter().zip(operands).enumerate() {
        for (d, &l) in ls.iter().enumerate() {
            let n = x.shape()[d];
            if let Some(e) = ls[..d].iter().position(|&o| o == l) {
                if x.shape()[e] != n {
                    return Err(eq_error(
                        equation,
                        format!(
                            "subscript '{}' is repeated in operand {i} of shape {} with \
                             different extents {} and {n}",
                            label_name(l),
                            fmt_shape(x.shape()),
                            x.shape()[e]
                        ),
                    ));
                }
            }
            let slot = &mut size[l as usize];
            match *slot {
                None => *slot = Some((n, i)),
                Some((m, _)) if m == n || n == 1 => {}
                Some((1, _)) => *slot = Some((n, i)),
                Some((m, j)) => {
                    return Err(eq_error(
                        equation,
                        format!(
                            "subscript '{}' has extent {m} in operand {j} of shape {} but {n} \
                             in operand {i} of shape {} (they must be equal or 1)",
                            label_name(l),
                            fmt_shape(operands[j].shape()),
                            fmt_shape(x.shape())
                        ),
                    ))
                }
            }
        }
    }
    let output: Vec<Label> = match &eq.output {
        Some(out) => {
            for (k, &l) in out.letters.iter().enumerate() {
                if out.letters[..k].contains(&l) {
                    return Err(eq_error(
                        equation,
                        format!("output subscript '{}' appears twice", label_name(l)),
                    ));
                }
                if size[l as usize].is_none() {
                    return Err(eq_error(
                        equation,
                        format!(
                            "output subscript '{}' appears in no input term",
                            label_name(l)
                        ),
                    ));
                }
            }
            labels_of(
                out,
                out.letters.len() + if out.ellipsis.is_some() { ell } else { 0 },
            )
        }
        None => {
            let mut v: Vec<Label> = (0..ell).map(|j| ELL + j as Label).collect();
            let mut count = [0usize; ELL as usize];
            for t in &eq.inputs {
                for &l in &t.letters {
                    count[l as usize] += 1;
                }
            }
            v.extend((0..ELL).filter(|&l| count[l as usize] == 1));
            v
        }
    };
    // Broadcast axes (extent 1 where the label is larger elsewhere) squeezed, diagonals taken.
    let mut prepared = Vec::with_capacity(operands.len());
    for (x, ls) in operands.iter().zip(labeled) {
        let squeeze: Vec<isize> = (0..ls.len())
            .filter(|&d| x.shape()[d] == 1 && size[ls[d] as usize].is_some_and(|s| s.0 != 1))
            .map(|d| d as isize)
            .collect();
        let mut op = Labeled {
            t: x.clone(),
            labels: ls,
        };
        if !squeeze.is_empty() {
            op = Labeled {
                t: super::squeeze(&op.t, Some(&squeeze))?,
                labels: (0..op.labels.len())
                    .filter(|&d| !squeeze.contains(&(d as isize)))
                    .map(|d| op.labels[d])
                    .collect(),
            };
        }
        prepared.push(op.diagonals()?);
    }
    let mut rest = prepared.into_iter();
    let mut acc = rest.next().expect("at least one operand");
    let later: Vec<Vec<Label>> = {
        let ls: Vec<&Labeled> = rest.as_slice().iter().collect();
        (0..ls.len())
            .map(|i| {
                let mut keep = output.clone();
                for o in &ls[i + 1..] {
                    keep.extend_from_slice(&o.labels);
                }
                keep
            })
            .collect()
    };
    for (b, keep) in rest.zip(later) {
        acc = contract(acc, b, &keep)?;
    }
    let acc = acc.sum_out(|l| !output.contains(&l))?;
    let perm: Vec<usize> = output.iter().map(|&l| acc.pos(l)).collect();
    if operands.iter().any(|x| x.same(&acc.t)) {
        // The result would be an input itself (e.g. "ij->ij"): a view of it instead, as
        // PyTorch returns.
        let p: Vec<isize> = perm.iter().map(|&p| p as isize).collect();
        return super::permute(&acc.t, &p);
    }
    permuted(&acc.t, &perm)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_layouts() {
        // Contiguous (2, 3, 4) merges to (6, 4) and (2, 12).
        let l = Layout::contiguous(&[2, 3, 4]);
        let m = merged_layout(&l, &[2, 1]).unwrap();
        assert_eq!(
            (m.shape.as_slice(), m.strides.as_slice()),
            (&[6, 4][..], &[4, 1][..])
        );
        let m = merged_layout(&l, &[1, 2]).unwrap();
        assert_eq!(
            (m.shape.as_slice(), m.strides.as_slice()),
            (&[2, 12][..], &[12, 1][..])
        );
        // An empty group is an axis of extent 1.
        let m = merged_layout(&l, &[3, 0]).unwrap();
        assert_eq!(m.shape.as_slice(), &[24, 1]);
        // Permuted (4, 3) of a (3, 4): the group does not merge.
        let p = Layout::contiguous(&[3, 4]).permute(&[1, 0]);
        assert!(merged_layout(&p, &[2]).is_none());
    }

    #[test]
    fn parse_errors_name_the_equation() {
        let e = parse("ij,j1->i").err().unwrap().to_string();
        assert!(e.contains("'1'") && e.contains("ij,j1->i"), "{e}");
        let e = parse("i..j->").err().unwrap().to_string();
        assert!(e.contains("..."), "{e}");
    }
}

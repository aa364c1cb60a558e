//! bfloat16 matrix products on Intel AMX tiles (Sapphire Rapids and later), accumulating in
//! float32 as PyTorch's (oneDNN's) do.
//!
//! `tdpbf16ps` multiplies a 16 × 32 bf16 tile of A by a 32 × 16 tile of B (stored as 16
//! rows of bf16 pairs along `k`, the "VNNI" layout) into a 16 × 16 float32 tile: 16,384
//! flops per instruction. The micro-kernel holds a 32 × 32 block of C in four tile
//! registers and streams two A and two B tiles per 32-step of `k` through the other four.
//! The operands are packed once per product into 1 KiB tiles (64-byte aligned: a row split
//! across two cache lines halves the loads' rate), and the loops run `k` in blocks of
//! `KC` (512) and columns in blocks of `NC` (256) so that a block of packed B (256 KiB) stays in L2
//! while every row block of A passes over it.
//!
//! Measured on a 2-core Intel Xeon (AMX), one core, operands in L1: 2.4–3.0 TFLOP/s for the
//! four `tdpbf16ps` alone, 0.4–1.7 TFLOP/s with their tile loads. The shared machine varies
//! that much from run to run, so compare against PyTorch in alternating runs
//! (`benches/compare_torch.py`).
//!
//! Rust's AMX intrinsics are unstable, so the instructions are written as inline assembly
//! and the CPU is asked through `cpuid`. Linux hands a process the 8 KiB of tile state only
//! after `arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)`; [`available`] asks once and
//! is false where the kernel refuses (then the AVX512-BF16 kernel or float32 runs). Tile
//! configuration is per thread, so each parallel task loads it and releases the tiles when
//! done. Row blocks run in parallel, each summing `k` in the same order, so a product is
//! the same whatever the thread count.

use super::matmul::MatOperand;
use super::Workspace;
use half::bf16;
use rayon::prelude::*;

/// Rows (and columns) of a micro-block of C: two tiles of 16.
const MB: usize = 32;
/// `k` per tile step: 16 rows of 64 bytes hold 32 bf16 of A or 16 pairs of B.
const KB: usize = 32;
/// `k` per cache block (in tile steps of [`KB`]).
const KC: usize = 512 / KB;
/// Columns per cache block (in micro-blocks of [`MB`]).
const NC: usize = 256 / MB;
/// 16-bit words per packed tile (16 rows × 64 bytes).
const TILE: usize = 512;

/// Whether this CPU and kernel run AMX bf16 tiles for this process.
pub fn available() -> bool {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        use std::sync::OnceLock;
        static HAS: OnceLock<bool> = OnceLock::new();
        *HAS.get_or_init(|| {
            if std::env::var_os("REMAT_DISABLE_AMX").is_some() {
                return false;
            }
            // cpuid leaf 7 exists on every x86_64 CPU that can run this build.
            let leaf7 = std::arch::x86_64::__cpuid_count(7, 0);
            let (amx_bf16, amx_tile) = (leaf7.edx & (1 << 22) != 0, leaf7.edx & (1 << 24) != 0);
            if !(amx_bf16 && amx_tile) {
                return false;
            }
            const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
            const XFEATURE_XTILEDATA: libc::c_long = 18;
            // SAFETY: a plain syscall with integer arguments; it fails cleanly (nonzero) on
            // kernels without AMX support.
            unsafe {
                libc::syscall(
                    libc::SYS_arch_prctl,
                    ARCH_REQ_XCOMP_PERM,
                    XFEATURE_XTILEDATA,
                ) == 0
            }
        })
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    {
        false
    }
}

/// The tile configuration: palette 1, all eight tiles 16 rows × 64 bytes.
#[repr(C, align(64))]
struct TileConfig([u8; 64]);

const CONFIG: TileConfig = {
    let mut c = [0u8; 64];
    c[0] = 1;
    let mut t = 0;
    while t < 8 {
        c[16 + 2 * t] = 64;
        c[48 + t] = 16;
        t += 1;
    }
    TileConfig(c)
};

/// A counted scratch buffer of `n` bf16 whose usable part starts 64-byte aligned.
struct Aligned {
    buf: Workspace<bf16>,
    start: usize,
}

impl Aligned {
    /// `padded`: some tiles are only partly packed, so their other words must read as zero
    /// (packing rewrites the same words for every batch, so once is enough).
    fn new(n: usize, padded: bool) -> Self {
        let mut buf = Workspace::<bf16>::new(n + 32);
        if padded {
            buf.fill(bf16::ZERO);
        }
        let start = buf.as_ptr().align_offset(64);
        Aligned { buf, start }
    }
    fn words(&mut self) -> &mut [bf16] {
        let s = self.start;
        let len = self.buf.len() - 32;
        &mut self.buf[s..s + len]
    }
}

/// `out[b] = a[b] (m × k) · b[b] (k × n)` in float32, contiguous `(batch, m, n)`, for bf16
/// operands; None when AMX is not available.
pub fn batched(
    a: &MatOperand<'_>,
    b: &MatOperand<'_>,
    m: usize,
    k: usize,
    n: usize,
) -> Option<Vec<f32>> {
    if !available() {
        return None;
    }
    let batches = a.batch_offsets.len();
    if m == 0 || n == 0 || k == 0 {
        return Some(super::filled(batches * m * n, 0.0));
    }
    let mut out = super::alloc::<f32>(batches * m * n);
    let (av, bv) = (super::slice::<bf16>(a.data), super::slice::<bf16>(b.data));
    let (mb, nb, kb) = (m.div_ceil(MB), n.div_ceil(MB), k.div_ceil(KB));
    // Packed A: per row block, per k step, two 16-row tiles of 32 bf16 per row.
    let k_padded = !k.is_multiple_of(KB);
    let mut ap = Aligned::new(mb * kb * 2 * TILE, k_padded || !m.is_multiple_of(MB));
    // Packed B: per column block, per k step, two tiles of 16 pair rows × 16 columns.
    let mut bp = Aligned::new(nb * kb * 2 * TILE, k_padded || !n.is_multiple_of(MB));
    // Where the micro-blocks write: `out` itself when they tile it exactly, else a padded C.
    let exact = m.is_multiple_of(MB) && n.is_multiple_of(MB);
    let mut padded = if exact {
        None
    } else {
        Some(Workspace::<f32>::new(mb * MB * nb * MB))
    };
    for (batch, dst) in out.chunks_mut(m * n).enumerate() {
        let (oa, ob) = (
            a.batch_offsets[batch] as isize,
            b.batch_offsets[batch] as isize,
        );
        let at = Strided {
            data: av,
            offset: oa,
            rs: a.rs,
            cs: a.cs,
        };
        let bt = Strided {
            data: bv,
            offset: ob,
            rs: b.rs,
            cs: b.cs,
        };
        pack_a(ap.words(), &at, (m, k));
        pack_b(bp.words(), &bt, (k, n));
        let (c, ldc) = match padded.as_mut() {
            Some(p) => (&mut p[..], nb * MB),
            None => (&mut dst[..], n),
        };
        // SAFETY: `available()` checked the CPU and the kernel's permission; the packed
        // buffers hold mb (nb) × kb × 2 aligned tiles and c holds mb × MB rows of ldc floats.
        unsafe { product(ap.words(), bp.words(), c, ldc, (mb, nb, kb)) };
        if let Some(p) = padded.as_ref() {
            for (i, row) in dst.chunks_mut(n).enumerate() {
                row.copy_from_slice(&p[i * ldc..i * ldc + n]);
            }
        }
    }
    Some(out)
}

/// One batch's matrix in a storage: element `(i, j)` at `offset + i·rs + j·cs`.
struct Strided<'a> {
    data: &'a [bf16],
    offset: isize,
    rs: isize,
    cs: isize,
}

impl Strided<'_> {
    #[inline(always)]
    fn at(&self, i: usize, j: usize) -> bf16 {
        self.data[(self.offset + i as isize * self.rs + j as isize * self.cs) as usize]
    }
    /// Row `i`'s first `len` elements when a row is contiguous.
    #[inline(always)]
    fn row(&self, i: usize, len: usize) -> Option<&[bf16]> {
        let start = (self.offset + i as isize * self.rs) as usize;
        (self.cs == 1).then(|| &self.data[start..start + len])
    }
    /// Column `j`'s first `len` elements when a column is contiguous.
    #[inline(always)]
    fn column(&self, j: usize, len: usize) -> Option<&[bf16]> {
        let start = (self.offset + j as isize * self.cs) as usize;
        (self.rs == 1).then(|| &self.data[start..start + len])
    }
}

/// Packs A (m × k) into tiles of 16 rows × 32 `k`: a run of 32 is one copy where A's rows
/// are contiguous.
fn pack_a(dst: &mut [bf16], a: &Strided<'_>, (m, k): (usize, usize)) {
    let kb = k.div_ceil(KB);
    dst.par_chunks_mut(kb * 2 * TILE)
        .enumerate()
        .for_each(|(r, block)| {
            for i in 0..MB.min(m - r * MB) {
                let (half, row) = (i / 16, i % 16);
                let src = a.row(r * MB + i, k);
                for q in 0..kb {
                    let k0 = q * KB;
                    let len = KB.min(k - k0);
                    let words = &mut block[(q * 2 + half) * TILE + row * KB..][..len];
                    match src {
                        Some(src) => words.copy_from_slice(&src[k0..k0 + len]),
                        None => {
                            for (t, w) in words.iter_mut().enumerate() {
                                *w = a.at(r * MB + i, k0 + t);
                            }
                        }
                    }
                }
            }
        });
}

/// Packs B (k × n) into tiles of bf16 pairs along `k`, reading B's rows or its columns as
/// runs where they are contiguous (a row-major B, or the transposed weight of a linear).
fn pack_b(dst: &mut [bf16], b: &Strided<'_>, (k, n): (usize, usize)) {
    let kb = k.div_ceil(KB);
    // Pair row `within / 2` of step `kk / KB`, column `jj`, low or high half of the word.
    let slot = |kk: usize, jj: usize| {
        let (q, within) = (kk / KB, kk % KB);
        (q * 2 + jj / 16) * TILE + (within / 2) * 32 + (jj % 16) * 2 + within % 2
    };
    dst.par_chunks_mut(kb * 2 * TILE)
        .enumerate()
        .for_each(|(c, block)| {
            let cols = MB.min(n - c * MB);
            if b.cs == 1 {
                for kk in 0..k {
                    let row = b.row(kk, c * MB + cols).expect("rows are contiguous");
                    for (jj, &v) in row[c * MB..].iter().enumerate() {
                        block[slot(kk, jj)] = v;
                    }
                }
                return;
            }
            for jj in 0..cols {
                let j = c * MB + jj;
                match b.column(j, k) {
                    Some(col) => col
                        .iter()
                        .enumerate()
                        .for_each(|(kk, &v)| block[slot(kk, jj)] = v),
                    None => (0..k).for_each(|kk| block[slot(kk, jj)] = b.at(kk, j)),
                }
            }
        });
}

/// C (mb × MB rows of `ldc` floats) = packed A · packed B, cache-blocked.
///
/// # Safety
/// AMX must be available (see [`available`]) and the buffers sized as [`batched`] sizes them.
unsafe fn product(
    ap: &[bf16],
    bp: &[bf16],
    c: &mut [f32],
    ldc: usize,
    (mb, nb, kb): (usize, usize, usize),
) {
    let cp = c.as_mut_ptr() as usize;
    for q0 in (0..kb).step_by(KC) {
        let qn = KC.min(kb - q0);
        for j0 in (0..nb).step_by(NC) {
            let jn = NC.min(nb - j0);
            (0..mb).into_par_iter().for_each(|r| {
                // SAFETY: the caller's contract; each task writes only its own row block.
                unsafe {
                    load_config();
                    for j in j0..j0 + jn {
                        let a = ap.as_ptr().add((r * kb + q0) * 2 * TILE);
                        let b = bp.as_ptr().add((j * kb + q0) * 2 * TILE);
                        let cc = (cp as *mut f32).add(r * MB * ldc + j * MB);
                        micro(a, b, qn, cc, ldc, q0 > 0);
                    }
                    release();
                }
            });
        }
    }
}

#[cfg(target_arch = "x86_64")]
unsafe fn load_config() {
    // SAFETY: CONFIG is a valid 64-byte palette-1 configuration.
    unsafe { std::arch::asm!("ldtilecfg [{}]", in(reg) CONFIG.0.as_ptr(), options(nostack)) };
}

#[cfg(target_arch = "x86_64")]
unsafe fn release() {
    // SAFETY: releasing the tiles only returns them to their initial state.
    unsafe { std::arch::asm!("tilerelease", options(nostack, nomem)) };
}

/// One 32 × 32 block of C += Σ over `steps` k steps of A's two tiles × B's two tiles
/// (`accumulate` false: C starts from zero and is not read).
///
/// # Safety
/// AMX configured by [`load_config`]; `a` and `b` hold `steps` pairs of 1 KiB tiles; `c`
/// addresses 32 rows of `ldc` floats, 32 of them per row.
#[cfg(target_arch = "x86_64")]
unsafe fn micro(
    a: *const bf16,
    b: *const bf16,
    steps: usize,
    c: *mut f32,
    ldc: usize,
    accumulate: bool,
) {
    use std::arch::asm;
    let stride = ldc * 4;
    // SAFETY: the caller's contract: every address below lies in the buffers it describes.
    unsafe {
        let (c1, c2) = (c.add(16), c.add(16 * ldc));
        let c3 = c2.add(16);
        if accumulate {
            asm!("tileloadd tmm0, [{0} + {s}*1]", "tileloadd tmm1, [{1} + {s}*1]",
                 "tileloadd tmm2, [{2} + {s}*1]", "tileloadd tmm3, [{3} + {s}*1]",
                 in(reg) c, in(reg) c1, in(reg) c2, in(reg) c3, s = in(reg) stride,
                 options(nostack, readonly));
        } else {
            asm!(
                "tilezero tmm0",
                "tilezero tmm1",
                "tilezero tmm2",
                "tilezero tmm3",
                options(nostack, nomem)
            );
        }
        for step in 0..steps {
            asm!(
                "tileloadd tmm4, [{a} + {s}*1]",
                "tileloadd tmm6, [{b} + {s}*1]",
                "tdpbf16ps tmm0, tmm4, tmm6",
                "tileloadd tmm7, [{b} + {s}*1 + 1024]",
                "tdpbf16ps tmm1, tmm4, tmm7",
                "tileloadd tmm5, [{a} + {s}*1 + 1024]",
                "tdpbf16ps tmm2, tmm5, tmm6",
                "tdpbf16ps tmm3, tmm5, tmm7",
                a = in(reg) a.add(step * 2 * TILE), b = in(reg) b.add(step * 2 * TILE),
                s = in(reg) 64usize, options(nostack, readonly));
        }
        asm!("tilestored [{0} + {s}*1], tmm0", "tilestored [{1} + {s}*1], tmm1",
             "tilestored [{2} + {s}*1], tmm2", "tilestored [{3} + {s}*1], tmm3",
             in(reg) c, in(reg) c1, in(reg) c2, in(reg) c3, s = in(reg) stride,
             options(nostack));
    }
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn load_config() {}
#[cfg(not(target_arch = "x86_64"))]
unsafe fn release() {}
#[cfg(not(target_arch = "x86_64"))]
unsafe fn micro(_: *const bf16, _: *const bf16, _: usize, _: *mut f32, _: usize, _: bool) {
    unreachable!("available() is false off x86_64")
}

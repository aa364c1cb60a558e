//! The profiler's memory timeline: live bytes over time, with checkpoint, recompute and
//! backward events, in bounded memory, and its export as a Chrome / Perfetto trace.
//!
//! Every allocation and free while tracking adds a sample. The buffer holds at most
//! [`CAPACITY`] entries: when full, neighbouring memory samples are merged pairwise, keeping
//! the higher one (so peaks survive and the curve keeps its shape at half the resolution);
//! should events alone still fill most of it, the oldest half is dropped.

use crate::device::Device;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// The most entries the timeline holds, however long tracking runs.
pub const CAPACITY: usize = 1 << 16;

/// What an entry records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Live bytes changed on a device (an allocation or a free).
    Memory(Device),
    /// A checkpoint (segment, group, tensor or scope) was made; the name's index.
    Checkpoint(u32),
    /// A recompute ran for this long (nanoseconds); the name's index.
    Recompute(u32, u64),
    /// A backward pass ran for this long (nanoseconds).
    Backward(u64),
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    /// Nanoseconds since tracking started (for spans: when they began).
    t_ns: u64,
    /// Live bytes on the entry's device (events: the latest sample's when recorded).
    bytes: usize,
    kind: Kind,
}

/// One row of [`super::profiler::memory_timeline`]: seconds since tracking started, live bytes, the event
/// (`"memory"`, `"memory cuda:0"`, `"checkpoint:NAME"`, `"recompute:NAME"`,
/// `"recompute_end:NAME"`, `"backward"`, `"backward_end"`).
pub type TimelineRow = (f64, usize, String);

/// Live bytes over time with the checkpoint events, bounded by [`CAPACITY`].
pub(crate) struct Timeline {
    start: Instant,
    entries: Vec<Entry>,
    names: Vec<String>,
    name_index: HashMap<String, u32>,
    last_bytes: usize,
}

impl Timeline {
    pub(crate) fn new(start_bytes: usize) -> Timeline {
        let mut t = Timeline {
            start: Instant::now(),
            entries: Vec::new(),
            names: Vec::new(),
            name_index: HashMap::new(),
            last_bytes: start_bytes,
        };
        t.push(0, start_bytes, Kind::Memory(Device::Cpu));
        t
    }

    fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    fn name_id(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.name_index.get(name) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(name.to_string());
        self.name_index.insert(name.to_string(), i);
        i
    }

    fn push(&mut self, t_ns: u64, bytes: usize, kind: Kind) {
        if self.entries.len() >= CAPACITY {
            self.compact();
        }
        self.entries.push(Entry { t_ns, bytes, kind });
    }

    /// Halve the memory samples (pairs of neighbours keep the higher); if events still fill
    /// three quarters of the buffer, forget the oldest half.
    fn compact(&mut self) {
        let mut out: Vec<Entry> = Vec::with_capacity(self.entries.len());
        let mut pending: Option<Entry> = None;
        for e in self.entries.drain(..) {
            if !matches!(e.kind, Kind::Memory(_)) {
                out.extend(pending.take());
                out.push(e);
                continue;
            }
            match pending.take() {
                Some(p) if p.kind == e.kind => out.push(if e.bytes > p.bytes { e } else { p }),
                Some(p) => {
                    out.push(p);
                    pending = Some(e);
                }
                None => pending = Some(e),
            }
        }
        out.extend(pending);
        if out.len() > CAPACITY * 3 / 4 {
            out.drain(..out.len() / 2);
        }
        self.entries = out;
    }

    /// Live bytes on `device` are now `bytes`.
    pub(crate) fn memory(&mut self, device: Device, bytes: usize) {
        let t = self.now_ns();
        self.last_bytes = bytes;
        self.push(t, bytes, Kind::Memory(device));
    }

    /// A checkpoint named `name` was made.
    pub(crate) fn checkpoint(&mut self, name: &str) {
        let (t, id) = (self.now_ns(), self.name_id(name));
        self.push(t, self.last_bytes, Kind::Checkpoint(id));
    }

    /// A recompute of `name` that took `dt` just ended.
    pub(crate) fn recompute(&mut self, name: &str, dt: Duration) {
        let dur = dt.as_nanos() as u64;
        let (t, id) = (self.now_ns().saturating_sub(dur), self.name_id(name));
        self.push(t, self.last_bytes, Kind::Recompute(id, dur));
    }

    /// A backward pass that took `dt` just ended.
    pub(crate) fn backward(&mut self, dt: Duration) {
        let dur = dt.as_nanos() as u64;
        let t = self.now_ns().saturating_sub(dur);
        self.push(t, self.last_bytes, Kind::Backward(dur));
    }

    /// Entries held (bounded by [`CAPACITY`]).
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The timeline as rows sorted by time; spans appear as a start and an end row.
    pub(crate) fn rows(&self) -> Vec<TimelineRow> {
        let mut rows: Vec<(u64, usize, String)> = Vec::with_capacity(self.entries.len());
        for e in &self.entries {
            match e.kind {
                Kind::Memory(Device::Cpu) => rows.push((e.t_ns, e.bytes, "memory".into())),
                Kind::Memory(d) => rows.push((e.t_ns, e.bytes, format!("memory {d}"))),
                Kind::Checkpoint(i) => rows.push((
                    e.t_ns,
                    e.bytes,
                    format!("checkpoint:{}", self.names[i as usize]),
                )),
                Kind::Recompute(i, dur) => {
                    let name = &self.names[i as usize];
                    rows.push((e.t_ns, e.bytes, format!("recompute:{name}")));
                    rows.push((e.t_ns + dur, e.bytes, format!("recompute_end:{name}")));
                }
                Kind::Backward(dur) => {
                    rows.push((e.t_ns, e.bytes, "backward".into()));
                    rows.push((e.t_ns + dur, e.bytes, "backward_end".into()));
                }
            }
        }
        rows.sort_by_key(|r| r.0);
        // An event row shows the live bytes of its moment: the latest sample before it (a
        // span's end is only known later, so what was stored with it is stale).
        let mut live = self.entries.first().map_or(0, |e| e.bytes);
        rows.into_iter()
            .map(|(t, b, ev)| {
                if ev.starts_with("memory") {
                    live = b;
                }
                (t as f64 * 1e-9, live, ev)
            })
            .collect()
    }

    /// The timeline in the Trace Event Format (JSON object form) that Perfetto and
    /// chrome://tracing open: a counter track of live bytes per device, complete events for
    /// recomputes and backward passes, instant events for checkpoints.
    pub(crate) fn chrome_trace(&self) -> String {
        let us = |ns: u64| ns as f64 * 1e-3;
        let mut s = String::from("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[");
        s.push_str(
            "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\
             \"args\":{\"name\":\"remat\"}},\
             {\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,\
             \"args\":{\"name\":\"checkpoints\"}},\
             {\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":2,\
             \"args\":{\"name\":\"autograd\"}}",
        );
        for e in &self.entries {
            s.push(',');
            // Writing to a String cannot fail.
            let _ = match e.kind {
                Kind::Memory(d) => write!(
                    s,
                    "{{\"name\":\"live bytes ({d})\",\"ph\":\"C\",\"ts\":{:.3},\"pid\":1,\
                     \"tid\":0,\"args\":{{\"bytes\":{}}}}}",
                    us(e.t_ns),
                    e.bytes
                ),
                Kind::Checkpoint(i) => write!(
                    s,
                    "{{\"name\":{},\"cat\":\"checkpoint\",\"ph\":\"i\",\"s\":\"t\",\
                     \"ts\":{:.3},\"pid\":1,\"tid\":1}}",
                    json_string(&format!("checkpoint {}", self.names[i as usize])),
                    us(e.t_ns)
                ),
                Kind::Recompute(i, dur) => write!(
                    s,
                    "{{\"name\":{},\"cat\":\"recompute\",\"ph\":\"X\",\"ts\":{:.3},\
                     \"dur\":{:.3},\"pid\":1,\"tid\":1}}",
                    json_string(&format!("recompute {}", self.names[i as usize])),
                    us(e.t_ns),
                    us(dur)
                ),
                Kind::Backward(dur) => write!(
                    s,
                    "{{\"name\":\"backward\",\"cat\":\"autograd\",\"ph\":\"X\",\"ts\":{:.3},\
                     \"dur\":{:.3},\"pid\":1,\"tid\":2}}",
                    us(e.t_ns),
                    us(dur)
                ),
            };
        }
        s.push_str("]}");
        s
    }
}

/// `v` as a JSON string literal.
fn json_string(v: &str) -> String {
    let mut s = String::with_capacity(v.len() + 2);
    s.push('"');
    for c in v.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\r' => s.push_str("\\r"),
            '\t' => s.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(s, "\\u{:04x}", c as u32);
            }
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stays_bounded_and_keeps_the_peak() {
        let mut t = Timeline::new(0);
        for i in 0..(CAPACITY * 5) {
            // A saw-tooth with one tall spike in the middle.
            let b = if i == CAPACITY * 2 + 7 {
                1 << 40
            } else {
                i % 1000
            };
            t.memory(Device::Cpu, b);
            if i % 97 == 0 {
                t.checkpoint("blocks.3");
            }
        }
        assert!(t.len() <= CAPACITY);
        let peak = t.rows().iter().map(|r| r.1).max();
        assert_eq!(peak, Some(1 << 40));
    }

    #[test]
    fn rows_are_sorted_and_spans_have_ends() {
        let mut t = Timeline::new(10);
        t.checkpoint("a\"b");
        t.memory(Device::Cpu, 20);
        t.recompute("a\"b", Duration::from_nanos(0));
        t.backward(Duration::from_nanos(0));
        let rows = t.rows();
        assert!(rows.windows(2).all(|w| w[0].0 <= w[1].0));
        let events: Vec<&str> = rows.iter().map(|r| r.2.as_str()).collect();
        for e in [
            "memory",
            "checkpoint:a\"b",
            "recompute:a\"b",
            "recompute_end:a\"b",
        ] {
            assert!(events.contains(&e), "{e} missing from {events:?}");
        }
        assert!(events.contains(&"backward") && events.contains(&"backward_end"));
        assert!(t.chrome_trace().contains("\"recompute a\\\"b\""));
    }
}

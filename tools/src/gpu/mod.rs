//! What the tools need from a GPU beyond the library's runtime: memory, copies,
//! streams, graphs and events, for the correctness suite, benchmarks and tuning.
//! Loaded at run time from the same runtime library the library uses (HIP on AMD,
//! the CUDA driver on NVIDIA); none of this is in `libskinnylt.so`.

mod cuda;
mod hip;

use std::ffi::c_void;
use std::ops::Deref;
use std::sync::OnceLock;

use skinnylt::gpu::{Backend, Context, Runtime};

pub type Result<T> = std::result::Result<T, String>;

/// An opaque runtime handle (stream, graph, event), passed through, never read.
pub type Raw = *mut c_void;

/// The host-side operations of one runtime. Device pointers are `u64`; streams,
/// graphs and events are the runtime's opaque handles.
pub trait Harness: Send + Sync {
    /// Makes `ctx`'s device current on the calling thread.
    fn make_current(&self, ctx: Context) -> Result<()>;
    fn malloc(&self, bytes: usize) -> Result<u64>;
    fn free(&self, p: u64);
    fn htod_bytes(&self, dst: u64, src: &[u8]) -> Result<()>;
    fn dtoh_bytes(&self, dst: &mut [u8], src: u64) -> Result<()>;
    /// Fills `count` 16-bit elements at `dst` with `value`; finished on return.
    fn memset16(&self, dst: u64, value: u16, count: usize) -> Result<()>;
    /// Device-to-device copy, enqueued on `stream`.
    fn copy_async(&self, dst: u64, src: u64, bytes: usize, stream: Raw) -> Result<()>;
    /// A stream that does not synchronise with the null stream.
    fn stream_create(&self) -> Result<Raw>;
    fn stream_destroy(&self, s: Raw);
    fn sync(&self, s: Raw) -> Result<()>;
    fn device_sync(&self) -> Result<()>;
    /// A stream that synchronises with the null stream (created with no flags).
    fn stream_create_blocking(&self) -> Result<Raw>;
    fn begin_capture(&self, s: Raw) -> Result<()>;
    /// Begins a capture in global mode (the runtimes' default): while it runs,
    /// unsafe calls from any thread in global mode are refused and end it.
    fn begin_capture_global(&self, s: Raw) -> Result<()>;
    /// Ends the capture on `s` and instantiates the graph.
    fn end_capture(&self, s: Raw) -> Result<Raw>;
    fn graph_launch(&self, exec: Raw, s: Raw) -> Result<()>;
    fn graph_destroy(&self, exec: Raw);
    fn event(&self) -> Result<Raw>;
    fn record(&self, e: Raw, s: Raw) -> Result<()>;
    /// Milliseconds between two recorded events (waits for the second).
    fn elapsed_ms(&self, a: Raw, b: Raw) -> Result<f32>;
    fn event_destroy(&self, e: Raw);
}

impl dyn Harness {
    pub fn htod<T: Copy>(&self, dst: u64, src: &[T]) -> Result<()> {
        // SAFETY: any initialised `Copy` value may be read as its bytes; the slice
        // covers exactly `src`.
        self.htod_bytes(dst, unsafe { std::slice::from_raw_parts(src.as_ptr().cast(), std::mem::size_of_val(src)) })
    }
    /// `T` must be a plain number type (every bit pattern valid), as the tools use it.
    pub fn dtoh<T: Copy>(&self, dst: &mut [T], src: u64) -> Result<()> {
        let bytes = std::mem::size_of_val(dst);
        // SAFETY: the tools read back u16 and f32 buffers, for which every byte
        // pattern is a value; the slice covers exactly `dst`.
        self.dtoh_bytes(unsafe { std::slice::from_raw_parts_mut(dst.as_mut_ptr().cast(), bytes) }, src)
    }
    /// Captures what `f` enqueues on `s` into an instantiated graph.
    pub fn capture(&self, s: Raw, f: impl FnOnce() -> Result<()>) -> Result<Raw> {
        self.begin_capture(s)?;
        let r = f();
        let end = self.end_capture(s);
        r?;
        end
    }
}

/// The library's runtime and the tools' harness for the same runtime library.
pub struct Gpu {
    pub rt: &'static dyn Runtime,
    harness: Box<dyn Harness>,
}

impl Deref for Gpu {
    type Target = dyn Harness;
    fn deref(&self) -> &(dyn Harness + 'static) {
        self.harness.as_ref()
    }
}

impl Gpu {
    /// The process's GPU, or `None` on a machine without one.
    pub fn get() -> Option<&'static Gpu> {
        static GPU: OnceLock<Option<Gpu>> = OnceLock::new();
        GPU.get_or_init(|| {
            let rt = skinnylt::gpu::runtime()?;
            let harness: Box<dyn Harness> = match rt.backend() {
                Backend::Cuda => Box::new(cuda::Cuda::load(rt)?),
                Backend::Hip => Box::new(hip::Hip::load(rt)?),
            };
            Some(Gpu { rt, harness })
        })
        .as_ref()
    }

    pub fn backend(&self) -> Backend {
        self.rt.backend()
    }
}

/// A device buffer freed on drop.
pub struct Buf<'a>(pub &'a Gpu, pub u64);

impl Drop for Buf<'_> {
    fn drop(&mut self) {
        self.0.free(self.1);
    }
}

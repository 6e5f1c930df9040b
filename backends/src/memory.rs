//! Freed host memory kept for reuse.
//!
//! flex and ndarray allocate every tensor anew: a multi-head attention forward at B=8, T=256,
//! D=512 allocates and frees a dozen blocks of 4 MiB. With glibc's defaults a block freed at the
//! top of the heap is handed back to the kernel once more than the trim threshold lies free there,
//! and a block above the mmap threshold is mapped and unmapped on its own, so the next tensor
//! starts on fresh pages: each is faulted in and zeroed by the kernel on first write. Measured on
//! flex (2 cores): that forward takes 28.8–29.8 ms with the memory kept, 33.7–34.7 ms without.
//!
//! Zeroed memory is the other half. Rust asks for it where a kernel builds an output of zeros and
//! then adds into it (`vec![0.0; n]`: `calloc`), and glibc hands fresh pages back untouched, known
//! to be zero. The kernel maps such a page to its one shared page of zeros on the first read and
//! copies it on the first write, flushing the page from every core's TLB (an interrupt to the
//! other threads). [`ZeroWritingAllocator`] writes the zeros instead, as PyTorch's `zeros` does.

use std::alloc::{GlobalAlloc, Layout, System};

/// The process's peak resident memory so far in MiB (`VmHWM` of `/proc/self/status`), or `None`
/// where the kernel does not report it (not Linux). The memory figures of the examples.
pub fn peak_resident_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// Has the C allocator keep freed memory for the next tensor instead of handing it back to the
/// kernel: process-wide, once at start. On glibc it sets `M_MMAP_THRESHOLD` to 32 MiB (the most
/// glibc's adaptive threshold reaches by itself), so blocks below that come from the heap, and
/// `M_TRIM_THRESHOLD` to 256 MiB, so up to that much freed memory stays with the process. Other C
/// libraries keep their own policy: there it does nothing. The attnzoo command line calls it.
pub fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only changes two of glibc's allocation parameters.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
    }
}

/// Hands the C allocator's freed memory back to the kernel now (glibc's `malloc_trim(0)`: every
/// whole free page of the heap), the counterpart of [`keep_freed_memory`] after a one-off burst of
/// allocations whose memory the rest of the run will not reuse. attnzoo's language model calls it
/// after building a GGUF file's tokenizer (~150 MiB of short-lived strings and maps for Gemma 3's
/// 262,144 tokens), before the weights are mapped. Elsewhere it does nothing.
pub fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only returns free pages of the allocator's heaps to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The system allocator, except that zeroed memory is allocated and then written with zeros, so
/// that its pages are written before they are read (see the module's introduction). Install it in
/// a program with `#[global_allocator] static ALLOCATOR: ZeroWritingAllocator =
/// ZeroWritingAllocator;`; the attnzoo command line does. Measured on flex (2 cores): training
/// the Bahdanau RNN translator about 4 % faster, MiniLM embeddings and the Transformer level
/// (docs/MEASUREMENTS.md, "Process settings the numbers assume").
pub struct ZeroWritingAllocator;

// SAFETY: every call is the system allocator's, with the same arguments; `alloc_zeroed` writes
// zeros over the `layout.size()` bytes that `System.alloc` returned.
unsafe impl GlobalAlloc for ZeroWritingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            unsafe { ptr.write_bytes(0, layout.size()) };
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeroed_memory_is_zero_where_freed_memory_was_written() {
        // The same size again after a free is glibc's freed block (and another block anywhere
        // else): only the written zeros make it all zero.
        let layout = Layout::from_size_align(1 << 20, 64).unwrap();
        for _ in 0..4 {
            unsafe {
                let dirty = ZeroWritingAllocator.alloc(layout);
                assert!(!dirty.is_null());
                dirty.write_bytes(0xA5, layout.size());
                ZeroWritingAllocator.dealloc(dirty, layout);
                let zeroed = ZeroWritingAllocator.alloc_zeroed(layout);
                assert!(!zeroed.is_null());
                let bytes = std::slice::from_raw_parts(zeroed, layout.size());
                assert!(bytes.iter().all(|&b| b == 0));
                ZeroWritingAllocator.dealloc(zeroed, layout);
            }
        }
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn zeroed_memory_is_resident_before_it_is_read() {
        // 64 MiB is above glibc's mmap threshold: fresh pages, which `calloc` leaves unmapped
        // until they are read (`mincore` says which pages are resident). Rust's own alignment of
        // 16, so that the system allocator would call `calloc`.
        let layout = Layout::from_size_align(64 << 20, 16).unwrap();
        let page = 4096;
        let mut resident = vec![0u8; layout.size() / page - 1];
        unsafe {
            let zeroed = ZeroWritingAllocator.alloc_zeroed(layout);
            assert!(!zeroed.is_null());
            let first_page = zeroed.add(zeroed.align_offset(page));
            let status = libc::mincore(
                first_page.cast(),
                resident.len() * page,
                resident.as_mut_ptr(),
            );
            assert_eq!(status, 0);
            ZeroWritingAllocator.dealloc(zeroed, layout);
        }
        assert!(resident.iter().all(|&r| r & 1 == 1));
    }
}

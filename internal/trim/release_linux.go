package trim

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// releaseSelf drops this process's droppable executable pages and returns
// the Go heap's free pages to the kernel.
func releaseSelf() (Result, error) {
	var res Result
	before, err := resident()
	if err != nil {
		return res, err
	}
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return res, err
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return res, err
	}
	spans, err := droppable(f, exe)
	_ = f.Close()
	if err != nil {
		return res, err
	}
	for _, s := range spans {
		// MADV_DONTNEED rather than MADV_PAGEOUT: it needs no write access
		// to the file and leaves the page cache alone, so the pages are
		// only unmapped from this process.
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, uintptr(s.start), uintptr(s.length), unix.MADV_DONTNEED); errno != 0 {
			return res, fmt.Errorf("madvise %#x+%#x: %w", s.start, s.length, errno)
		}
		res.Dropped += s.length
	}
	debug.FreeOSMemory()
	after, err := resident()
	res.Before, res.After = before, after
	return res, err
}

// resident reads the resident set size from /proc/self/statm (pages).
func resident() (uint64, error) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, fmt.Errorf("statm: %q", b)
	}
	pages, err := strconv.ParseUint(f[1], 10, 64)
	return pages * uint64(os.Getpagesize()), err
}

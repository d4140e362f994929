package source

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// inBackground runs f on an OS thread of its own at the lowest CPU
// priority (nice 19). Writing a large tree to the cache decompresses the
// layer again and writes thousands of files; at normal priority that
// competed for the node's cores with the first installs it exists to
// serve. The thread is never unlocked, so the runtime retires it with the
// goroutine instead of handing its priority to other goroutines.
func inBackground(f func()) {
	go func() {
		runtime.LockOSThread()
		// A failure (a sandbox that forbids it) only costs the priority.
		_ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), 19)
		f()
	}()
}

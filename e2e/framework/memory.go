package framework

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Memory is a process's resident set in MiB, split as the kernel reports
// it: Anon is the process's own memory (heap, stacks, runtime), File the
// pages mapped from files, for a Go binary its executable.
type Memory struct{ RSS, Anon, File float64 }

// ReadMemory reads VmRSS, RssAnon and RssFile from /proc/<pid>/status.
func ReadMemory(pid int) (Memory, error) {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return Memory{}, err
	}
	var m Memory
	fields := map[string]*float64{"VmRSS:": &m.RSS, "RssAnon:": &m.Anon, "RssFile:": &m.File}
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || fields[f[0]] == nil {
			continue
		}
		kb, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			return Memory{}, err
		}
		*fields[f[0]] = kb / 1024
	}
	if m.RSS == 0 {
		return Memory{}, fmt.Errorf("no VmRSS for pid %d", pid)
	}
	return m, nil
}

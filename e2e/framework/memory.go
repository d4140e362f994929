package framework

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
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

// PeakSampler reads a process's anonymous memory every interval until
// Stop and keeps the largest reading: the kernel records a peak only for
// the whole resident set (VmHWM), which counts the executable's pages too.
type PeakSampler struct {
	stop chan struct{}
	done chan struct{}
	peak float64
	err  error
}

// SamplePeak starts sampling pid's RssAnon every interval.
func SamplePeak(pid int, interval time.Duration) *PeakSampler {
	s := &PeakSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			m, err := ReadMemory(pid)
			if err != nil {
				s.err = err
				return
			}
			s.peak = max(s.peak, m.Anon)
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// Stop ends the sampling and returns the largest RssAnon seen, in MiB.
func (s *PeakSampler) Stop() (float64, error) {
	close(s.stop)
	<-s.done
	return s.peak, s.err
}

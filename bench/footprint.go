package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/cozystack/tenant-operator/e2e/framework"
	"github.com/cozystack/tenant-operator/e2e/world"
)

// sampleEvery is how often a peak sampler reads /proc: a Go heap grows
// over many such periods, so a peak between two readings is missed by
// at most what one period allocates.
const sampleEvery = 50 * time.Millisecond

// processFootprint is what one process holds: anonymous memory at idle and
// at its peak while it installed the tenant, and its executable's size.
type processFootprint struct {
	name     string
	idle     framework.Memory
	peakAnon float64
	binary   int64
}

// fluxFootprint is helm-controller's and source-controller's footprint
// after reconciling the whole tenant's releases.
type fluxFootprint struct {
	releases int
	procs    []processFootprint
}

// sums adds up the processes' anonymous memory at idle and at peak, and
// their binaries' sizes.
func (f fluxFootprint) sums() (idle, peak float64, binary int64) {
	for _, p := range f.procs {
		idle += p.idle.Anon
		peak += p.peakAnon
		binary += p.binary
	}
	return idle, peak, binary
}

// footprintProbe samples Flux's controllers from their start until the
// chain is Ready, then reads them again after hold, the operator's settle
// period and idle window.
type footprintProbe struct {
	hold     time.Duration
	res      fluxFootprint
	samplers []*framework.PeakSampler
	pids     []int
}

var fluxControllers = []string{world.HelmController, world.SourceController}

func (p *footprintProbe) start(w *world.World) error {
	for _, name := range fluxControllers {
		pid, err := pidOf(w, name)
		if err != nil {
			return err
		}
		size, err := binarySize(pid)
		if err != nil {
			return err
		}
		p.pids = append(p.pids, pid)
		p.samplers = append(p.samplers, framework.SamplePeak(pid, sampleEvery))
		p.res.procs = append(p.res.procs, processFootprint{name: name, binary: size})
	}
	return nil
}

func (p *footprintProbe) finish(ctx context.Context) error {
	for i, s := range p.samplers {
		peak, err := s.Stop()
		if err != nil {
			return fmt.Errorf("%s: %w", p.res.procs[i].name, err)
		}
		p.res.procs[i].peakAnon = peak
	}
	// The measurement is the window itself: nothing is awaited here.
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(p.hold):
	}
	for i, pid := range p.pids {
		m, err := framework.ReadMemory(pid)
		if err != nil {
			return fmt.Errorf("%s: %w", p.res.procs[i].name, err)
		}
		p.res.procs[i].idle = m
	}
	return nil
}

// measureFluxFootprint installs the whole tenant's releases with the
// management side's chain and measures helm-controller and source-
// controller the way the idle world measures the operator.
func measureFluxFootprint(ctx context.Context, nodes int, hold time.Duration) (fluxFootprint, error) {
	probe := &footprintProbe{hold: hold}
	_, releases, err := measureManagementChain(ctx, nodes, probe)
	probe.res.releases = releases
	return probe.res, err
}

// binarySize is the size of the executable pid runs.
func binarySize(pid int) (int64, error) {
	fi, err := os.Stat(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

package world

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// outageReady is how each component that can be taken down is known to be
// back: the same checks Start waits for.
func (w *World) outageReady(name string) (func(context.Context) (bool, error), error) {
	switch name {
	case KubeAPIServer:
		return func(ctx context.Context) (bool, error) {
			_, err := w.Clientset.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
			return err == nil, err
		}, nil
	case Registry:
		return httpOK("http://" + w.RegistryHost + "/v2/"), nil
	case KubeControllerManager, KubeScheduler:
		// They serve no port here (--secure-port=0): running is all there
		// is to see.
		return func(context.Context) (bool, error) { return true, nil }, nil
	}
	return nil, fmt.Errorf("an outage of %q is not supported (only %s, %s, %s and %s)", name,
		KubeAPIServer, KubeControllerManager, KubeScheduler, Registry)
}

// Outage kills a world component (KubeAPIServer, KubeControllerManager,
// KubeScheduler or Registry) with SIGKILL, as a crashed control-plane host or
// registry would go. Its state (etcd, the
// registry's storage) survives; Resume starts it again with the same command
// line, ports and certificates.
func (w *World) Outage(name string) error {
	if _, err := w.outageReady(name); err != nil {
		return err
	}
	p := w.process(name)
	if p == nil {
		return fmt.Errorf("no %s process", name)
	}
	return p.kill()
}

// Resume ends an Outage: the component is started again from the same spec
// and Resume returns once it answers the check Start used for it.
func (w *World) Resume(ctx context.Context, name string) error {
	ready, err := w.outageReady(name)
	if err != nil {
		return err
	}
	old := w.process(name)
	if old == nil {
		return fmt.Errorf("no %s process", name)
	}
	if !old.exited() {
		return fmt.Errorf("%s is running: no outage to end", name)
	}
	p, err := startProcess(old.spec)
	if err != nil {
		return err
	}
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		_ = p.kill()
		return errStopped
	}
	// Replace, so Stop and PIDs see the running process and not the dead one.
	i := slices.Index(w.procs, old)
	w.procs[i] = p
	w.mu.Unlock()
	return waitFor(ctx, name+" after an outage", 2*time.Minute, []*process{p}, ready)
}

package main

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/cozystack/tenant-operator/e2e/world"
)

// supervisor restarts a process whenever it exits, as the kubelet restarts a
// container, and counts the exits. A restart needs a ServiceAccount token
// from the API server, so while that is down it is tried again each second.
type supervisor struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	exits  int
}

func supervise(ctx context.Context, p *world.Proc) *supervisor {
	ctx, cancel := context.WithCancel(ctx)
	s := &supervisor{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			if _, err := p.Wait(ctx); err != nil {
				return
			}
			s.mu.Lock()
			s.exits++
			s.mu.Unlock()
			restarted := func(ctx context.Context) (bool, error) { return p.Restart(ctx) == nil, nil }
			if wait.PollUntilContextCancel(ctx, time.Second, true, restarted) != nil {
				return
			}
		}
	}()
	return s
}

func (s *supervisor) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exits
}

// stop ends supervision before the world is torn down, so its teardown is
// not taken for a crash.
func (s *supervisor) stop() {
	s.cancel()
	<-s.done
}

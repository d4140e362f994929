package helm

import (
	"errors"
	"maps"
	"slices"
	"sync"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
)

// actionStorage is the release storage of one install or upgrade. Helm reads
// a release's history several times in one action: an install checks the name
// is free and then lists the history again to replace a failed revision; an
// upgrade reads the last revision, then the deployed one, then the history
// again to prune it. Each read is a consistent list of Secrets, which the API
// server answers only once its watch cache has caught up with etcd, and it
// asks etcd for that progress at most every 100 ms: the second of two lists a
// few milliseconds apart waited up to 100 ms, on the critical path of every
// install, while a rollout moved etcd on. Here the first read of a release's
// history goes to the API server and the action's later reads are answered
// from it and from the action's own writes, which pass through. Nothing else
// writes the history while the action runs (the operator holds the lease, and
// Helm takes no lock between its reads either), so the answers are the ones
// the API server would have given.
type actionStorage struct {
	driver.Driver
	// mu guards history: an install Helm gives up on when its context ends
	// goes on writing in the background.
	mu sync.Mutex
	// history is each release's revisions as first read and then written
	// by this action.
	history map[string][]*release.Release
}

// newActionStorage keeps at most MaxHistory revisions per release, installs
// included: Helm prunes only where it is told to, and a first install that
// fails again and again adds a failed revision each time.
func newActionStorage(d driver.Driver) *storage.Storage {
	s := storage.Init(&actionStorage{Driver: d, history: map[string][]*release.Release{}})
	s.MaxHistory = MaxHistory
	return s
}

// Query answers Helm's history reads ({name, owner=helm}, optionally with a
// status) of a release from the action's view of it; any other query goes
// to the API server.
func (s *actionStorage) Query(labels map[string]string) ([]*release.Release, error) {
	name, status, ok := historyQuery(labels)
	if !ok {
		return s.Driver.Query(labels)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	revs, known := s.history[name]
	if !known {
		all, err := s.Driver.Query(map[string]string{"name": name, "owner": "helm"})
		if err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
			return nil, err
		}
		revs = all
		s.history[name] = revs
	}
	var out []*release.Release
	for _, r := range revs {
		if status == "" || (r.Info != nil && string(r.Info.Status) == status) {
			out = append(out, clone(r))
		}
	}
	if len(out) == 0 {
		return nil, driver.ErrReleaseNotFound
	}
	return out, nil
}

// historyQuery recognises Helm's history reads of one release.
func historyQuery(labels map[string]string) (name, status string, ok bool) {
	for k, v := range labels {
		switch k {
		case "name":
			name = v
		case "status":
			status = v
		case "owner":
			if v != "helm" {
				return "", "", false
			}
		default:
			return "", "", false
		}
	}
	return name, status, name != "" && labels["owner"] == "helm"
}

func (s *actionStorage) Create(key string, r *release.Release) error {
	if err := s.Driver.Create(key, r); err != nil {
		return err
	}
	s.record(r)
	return nil
}

func (s *actionStorage) Update(key string, r *release.Release) error {
	if err := s.Driver.Update(key, r); err != nil {
		return err
	}
	s.record(r)
	return nil
}

func (s *actionStorage) Delete(key string) (*release.Release, error) {
	r, err := s.Driver.Delete(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil || r == nil {
		// Whether it is gone is not certain: the next reads go to the
		// API server.
		clear(s.history)
		return r, err
	}
	if revs, known := s.history[r.Name]; known {
		s.history[r.Name] = without(revs, r.Version)
	}
	return r, nil
}

// record puts a revision the action wrote into its view of the history,
// replacing an earlier state of the same revision.
func (s *actionStorage) record(r *release.Release) {
	s.mu.Lock()
	defer s.mu.Unlock()
	revs, known := s.history[r.Name]
	if !known {
		return // never read: the next read goes to the API server
	}
	s.history[r.Name] = append(without(revs, r.Version), clone(r))
}

// without is revs less the given revision, in a new slice.
func without(revs []*release.Release, version int) []*release.Release {
	return slices.DeleteFunc(slices.Clone(revs), func(o *release.Release) bool { return o.Version == version })
}

// clone copies what Helm changes on a revision it read (its status and
// description, its labels) so that a change it never writes stays out of
// the action's view; the chart, manifest and hooks are shared.
func clone(r *release.Release) *release.Release {
	c := *r
	if r.Info != nil {
		info := *r.Info
		c.Info = &info
	}
	c.Labels = maps.Clone(r.Labels)
	return &c
}

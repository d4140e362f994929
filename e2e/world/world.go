// Package world runs a simulated Kubernetes cluster on loopback for e2e suites
// and the demo: real etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and an OCI registry as processes, kwok fake nodes whose
// network and cloud initialisation are simulated so that ordering bugs fail
// here the way they fail on real VMs, and a runner that starts our own
// Deployments as local processes with the credentials their pods would get.
//
// The binaries come from hack/build-world.sh (bin/, or $TENANT_WORLD_BIN).
// Everything listens on 127.0.0.1 on free ports, so several worlds (a tenant
// and a management cluster) can run in one process:
//
//	w, err := world.Start(ctx, world.Options{
//		Name:           "tenant",
//		Nodes:          []world.NodeSpec{{Name: "worker-1"}, {Name: "worker-2"}},
//		CNIPodSelector: map[string]string{"k8s-app": "cilium"},
//	})
//	...
//	defer w.Stop(failed)
package world

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Component names, as used by LogPath and Options.ExtraArgs.
const (
	Etcd                  = "etcd"
	KubeAPIServer         = "kube-apiserver"
	KubeControllerManager = "kube-controller-manager"
	KubeScheduler         = "kube-scheduler"
	Kwok                  = "kwok"
	Registry              = "registry"
	SourceController      = "source-controller"
	HelmController        = "helm-controller"
)

// NodeSpec describes a fake node the world registers the way a kubelet would.
type NodeSpec struct {
	Name       string
	Labels     map[string]string
	ProviderID string // optional; set at creation
	// Uninitialized adds node.cloudprovider.kubernetes.io/uninitialized=true:NoSchedule,
	// as a kubelet started with --cloud-provider=external does.
	Uninitialized bool
	InternalIP    string // optional; default from 192.0.2.0/24
}

// Options configure a world. Zero values get defaults.
type Options struct {
	// Name is short, used in directory names, log prefixes and artifacts ("tenant", "mgmt").
	Name string
	// ArtifactsDir receives the logs (under Name) when Stop keeps them or Start
	// fails; default $ARTIFACTS or <repo>/_artifacts.
	ArtifactsDir string
	// Nodes are created, and waited for, before Start returns.
	Nodes []NodeSpec
	// CNIPodSelector selects the CNI DaemonSet pods for the node-network
	// simulator. Nil disables it: nodes are then created Ready and every
	// scheduled pod gets a sandbox at once.
	CNIPodSelector map[string]string
	ServiceCIDR    string // default 10.95.0.0/16
	PodCIDR        string // default 10.243.0.0/16; kcm allocates a /24 per node
	// ExtraArgs are appended to a component's command line, keyed by component
	// name (KubeAPIServer, ...).
	ExtraArgs map[string][]string
}

func (o Options) withDefaults() (Options, error) {
	if o.Name == "" {
		o.Name = "world"
	}
	if o.ServiceCIDR == "" {
		o.ServiceCIDR = "10.95.0.0/16"
	}
	if o.PodCIDR == "" {
		o.PodCIDR = "10.243.0.0/16"
	}
	if o.ArtifactsDir == "" {
		o.ArtifactsDir = os.Getenv("ARTIFACTS")
	}
	if o.ArtifactsDir == "" {
		root, err := RepoRoot()
		if err != nil {
			return o, err
		}
		o.ArtifactsDir = filepath.Join(root, "_artifacts")
	}
	return o, nil
}

// World is one running simulated cluster.
type World struct {
	Name, Dir string
	// Kubeconfig is the admin kubeconfig (client certificate in O=system:masters).
	Kubeconfig string
	Config     *rest.Config
	// Client is an admin client with client-go's scheme and apiextensions/v1.
	Client    client.Client
	Clientset kubernetes.Interface
	APIHost   string // 127.0.0.1
	APIPort   int
	CAFile    string // cluster CA, PEM
	// RegistryHost is "127.0.0.1:<port>" of a plain-HTTP OCI registry.
	RegistryHost string

	opts Options
	pki  *worldPKI

	// ctx lives until Stop; simulators run under it, not under the ctx given
	// to Start, which may be a setup node's context that ends early.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu         sync.Mutex
	procs      []*process
	workloads  []*Workload
	nodeIPNext int
	stopped    bool
	flux       bool
	// apiReady is set once /readyz answered: only then is there state to dump.
	apiReady bool
}

// StartError is returned by Start when the world failed to come up. Start has
// stopped everything it started by then; PIDs lists those processes.
type StartError struct {
	Name string
	// PIDs of every process Start had started, all ended.
	PIDs []int
	// Logs is where the logs were copied, if that worked.
	Logs string
	Err  error
}

func (e *StartError) Error() string {
	msg := fmt.Sprintf("world %q failed to start: %v", e.Name, e.Err)
	if e.Logs != "" {
		msg += " (logs in " + e.Logs + ")"
	}
	return msg
}

func (e *StartError) Unwrap() error { return e.Err }

// Start brings a world up and returns once the API server is ready, kcm has
// created the default ServiceAccount, the registry answers, and every node in
// opts.Nodes has a pod CIDR and a kwok-held Lease. On failure everything
// started is stopped and a *StartError returned.
func Start(ctx context.Context, opts Options) (_ *World, err error) {
	opts, err = opts.withDefaults()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "world-"+opts.Name+"-")
	if err != nil {
		return nil, err
	}
	w := &World{Name: opts.Name, Dir: dir, opts: opts, APIHost: "127.0.0.1"}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	defer func() {
		if err == nil {
			return
		}
		pids := w.PIDs()
		logs, stopErr := w.stop(true, false)
		err = &StartError{Name: opts.Name, PIDs: pids, Logs: logs, Err: errors.Join(err, stopErr)}
	}()

	for _, sub := range []string{"pki", "logs", "etcd", "registry", "kwok", "home", "workloads"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, err
		}
	}
	if err := w.startControlPlane(ctx); err != nil {
		return nil, err
	}
	if err := w.startNetworkSimulator(); err != nil {
		return nil, err
	}
	for _, n := range opts.Nodes {
		if err := w.AddNode(ctx, n); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// connect builds the admin clients once the API server answers.
func (w *World) connect() error {
	cfg, err := clientcmd.BuildConfigFromFlags("", w.Kubeconfig)
	if err != nil {
		return err
	}
	// Suites create and poll many objects; the default 5 QPS would throttle
	// them into flakes.
	cfg.QPS, cfg.Burst = 100, 200
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	w.Config, w.Client, w.Clientset = cfg, c, cs
	return nil
}

// LogPath is the log file of a component (Etcd, KubeAPIServer, ...).
func (w *World) LogPath(component string) string {
	return filepath.Join(w.Dir, "logs", component+".log")
}

// PIDs lists every process the world started and still tracks, including
// Flux and workload processes (restarted ones under their latest PID).
func (w *World) PIDs() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	var pids []int
	for _, p := range w.procs {
		pids = append(pids, p.pid())
	}
	for _, wl := range w.workloads {
		for _, p := range wl.Procs {
			pids = append(pids, p.allPIDs()...)
		}
	}
	return pids
}

var errStopped = errors.New("world is stopped")

// addGoroutines registers n goroutines Stop must wait for, unless Stop has
// begun: adding to a WaitGroup being waited on at zero is a race.
func (w *World) addGoroutines(n int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return false
	}
	w.wg.Add(n)
	return true
}

// track records p for Stop; a process started while Stop runs is killed
// at once rather than leaked.
func (w *World) track(p *process) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		_ = p.kill()
		return errStopped
	}
	w.procs = append(w.procs, p)
	return nil
}

func (w *World) process(name string) *process {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range slices.Backward(w.procs) {
		if p.name == name {
			return p
		}
	}
	return nil
}

// startComponent starts a world process logging to LogPath(name), with
// Options.ExtraArgs appended and HOME/TMPDIR inside the world's directory so
// nothing reads or writes the user's home.
func (w *World) startComponent(name string, argv []string, extraEnv ...string) (*process, error) {
	home := filepath.Join(w.Dir, "home", name)
	if err := os.MkdirAll(home, 0o755); err != nil {
		return nil, err
	}
	argv = append(argv, w.opts.ExtraArgs[name]...)
	env := append(baseEnv(), "HOME="+home, "TMPDIR="+home)
	p, err := startProcess(processSpec{
		name: name, argv: argv, env: append(env, extraEnv...), dir: home, logPath: w.LogPath(name),
	})
	if err != nil {
		return nil, err
	}
	if err := w.track(p); err != nil {
		return nil, err
	}
	return p, nil
}

// baseEnv is the test process's environment without variables that would
// point a child at some other cluster or home.
func baseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "KUBECONFIG", "HOME", "TMPDIR", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// Stop ends every process of the world (SIGTERM to its process group, SIGKILL
// after a bounded wait), stops the simulators, and removes Dir. With keepLogs
// it dumps cluster state into the logs first, copies the logs to
// ArtifactsDir/<Name> and keeps Dir. Calling it again is a no-op.
func (w *World) Stop(keepLogs bool) error {
	_, err := w.stop(keepLogs, keepLogs)
	return err
}

func (w *World) stop(copyLogs, keepDir bool) (string, error) {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return "", nil
	}
	w.stopped = true
	components := slices.Clone(w.procs)
	var workloads []*process
	for _, wl := range w.workloads {
		for _, p := range wl.Procs {
			if cur := p.current(); cur != nil {
				workloads = append(workloads, cur)
			}
		}
	}
	w.mu.Unlock()

	var errs []error
	if copyLogs && w.apiReady {
		if err := w.dumpState(); err != nil {
			errs = append(errs, fmt.Errorf("dump cluster state: %w", err))
		}
	}
	w.cancel()
	w.wg.Wait()
	// Clients first, then the API server, then etcd: each waits on
	// connections from the layer above when that is still up.
	apiserver, etcd, rest := []*process{}, []*process{}, workloads
	for _, p := range components {
		switch p.name {
		case KubeAPIServer:
			apiserver = append(apiserver, p)
		case Etcd:
			etcd = append(etcd, p)
		default:
			rest = append(rest, p)
		}
	}
	errs = append(errs, stopAll(rest), stopAll(apiserver), stopAll(etcd))
	var logs string
	if copyLogs {
		var err error
		if logs, err = w.copyLogs(); err != nil {
			errs = append(errs, fmt.Errorf("copy logs: %w", err))
		}
	}
	if !keepDir {
		if err := os.RemoveAll(w.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	return logs, errors.Join(errs...)
}

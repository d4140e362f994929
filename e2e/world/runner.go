package world

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// serviceAccountDir is where a pod finds its token; the runner maps it to a
// local directory holding the same three files.
const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// RunOptions tell RunWorkload which local binary stands for which image.
type RunOptions struct {
	// Binaries maps an image repository (no tag or digest) to a local binary.
	Binaries map[string]string
	// ExtraEnv is added to every container, over the manifest's values.
	ExtraEnv map[string]string
	// NodeName is what spec.nodeName resolves to; default the template's
	// nodeName, else the first node of the world by name.
	NodeName string
}

// Workload is a Deployment, DaemonSet, StatefulSet or Pod of ours running as
// local processes, one per container, as one replica.
type Workload struct {
	Name  string // namespace/pod-name of the simulated pod
	Procs []*Proc
}

// Proc is one container running as a local process.
type Proc struct {
	Name string // container name

	w       *World
	launch  launch
	logPath string

	mu      sync.Mutex
	cur     *process
	history []*process
}

// launch is everything needed to start a container again.
type launch struct {
	argv           []string
	env            []string
	dir            string
	procDir        string
	namespace      string
	serviceAccount string
	server         string
}

// RunWorkload runs obj's pod template as local processes with the
// credentials its pod would have: a token for its ServiceAccount from the
// TokenRequest API in a kubeconfig whose server is
// https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT from the
// container's own env (KUBECONFIG points at it), the world CA, and env,
// args, emptyDir/configMap/secret volumes resolved like the kubelet does.
// The object itself need not exist in the cluster.
func (w *World) RunWorkload(ctx context.Context, obj client.Object, opts RunOptions) (*Workload, error) {
	tmpl, err := podTemplate(obj)
	if err != nil {
		return nil, err
	}
	if len(tmpl.Spec.InitContainers) > 0 {
		return nil, fmt.Errorf("%s: init containers are not supported by the process runner", obj.GetName())
	}
	ns := obj.GetNamespace()
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	pod := podIdentity{
		name:           obj.GetName() + "-" + rand.String(5),
		namespace:      ns,
		uid:            string(uuid.NewUUID()),
		nodeName:       opts.NodeName,
		serviceAccount: tmpl.Spec.ServiceAccountName,
		labels:         tmpl.Labels,
		annotations:    tmpl.Annotations,
		podIP:          "127.0.0.1",
		hostIP:         "127.0.0.1",
	}
	if pod.serviceAccount == "" {
		pod.serviceAccount = "default"
	}
	if pod.nodeName == "" {
		pod.nodeName = tmpl.Spec.NodeName
	}
	if pod.nodeName == "" {
		if pod.nodeName, err = w.firstNodeName(ctx); err != nil {
			return nil, err
		}
	}
	// A pod is refused admission without its ServiceAccount; so is this.
	if _, err := w.Clientset.CoreV1().ServiceAccounts(ns).Get(ctx, pod.serviceAccount, metav1.GetOptions{}); err != nil {
		return nil, fmt.Errorf("serviceaccount %s/%s: %w", ns, pod.serviceAccount, err)
	}

	podDir := filepath.Join(w.Dir, "workloads", ns+"_"+pod.name)
	mounts, err := w.prepareVolumes(ctx, podDir, ns, tmpl.Spec.Volumes)
	if err != nil {
		return nil, err
	}
	resolver := &envResolver{w: w, ctx: ctx, pod: pod}
	wl := &Workload{Name: ns + "/" + pod.name}
	for i := range tmpl.Spec.Containers {
		p, err := w.prepareProc(resolver, podDir, mounts, &tmpl.Spec.Containers[i], tmpl.Spec.AutomountServiceAccountToken, opts)
		if err != nil {
			return nil, err
		}
		wl.Procs = append(wl.Procs, p)
	}
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return nil, errStopped
	}
	w.workloads = append(w.workloads, wl)
	w.mu.Unlock()
	for _, p := range wl.Procs {
		if err := p.start(ctx); err != nil {
			return nil, errors.Join(err, wl.Stop())
		}
	}
	return wl, nil
}

func podTemplate(obj client.Object) (*corev1.PodTemplateSpec, error) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return &o.Spec.Template, nil
	case *appsv1.DaemonSet:
		return &o.Spec.Template, nil
	case *appsv1.StatefulSet:
		return &o.Spec.Template, nil
	case *corev1.Pod:
		return &corev1.PodTemplateSpec{ObjectMeta: o.ObjectMeta, Spec: o.Spec}, nil
	}
	return nil, fmt.Errorf("process runner: unsupported object %T", obj)
}

func (w *World) firstNodeName(ctx context.Context) (string, error) {
	nodes, err := w.Clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	if len(nodes.Items) == 0 {
		return "", nil
	}
	names := make([]string, 0, len(nodes.Items))
	for _, n := range nodes.Items {
		names = append(names, n.Name)
	}
	sort.Strings(names)
	return names[0], nil
}

// prepareVolumes materialises the volumes the runner understands and
// returns volume name -> local directory.
func (w *World) prepareVolumes(ctx context.Context, podDir, ns string, volumes []corev1.Volume) (map[string]string, error) {
	dirs := map[string]string{}
	for _, v := range volumes {
		dir := filepath.Join(podDir, "volumes", v.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		files := map[string][]byte{}
		var items []corev1.KeyToPath
		switch {
		case v.EmptyDir != nil:
		case v.ConfigMap != nil:
			cm, err := w.Clientset.CoreV1().ConfigMaps(ns).Get(ctx, v.ConfigMap.Name, metav1.GetOptions{})
			if err != nil && !optional(v.ConfigMap.Optional) {
				return nil, fmt.Errorf("volume %s: %w", v.Name, err)
			}
			if err == nil {
				for k, val := range cm.Data {
					files[k] = []byte(val)
				}
				for k, val := range cm.BinaryData {
					files[k] = val
				}
			}
			items = v.ConfigMap.Items
		case v.Secret != nil:
			s, err := w.Clientset.CoreV1().Secrets(ns).Get(ctx, v.Secret.SecretName, metav1.GetOptions{})
			if err != nil && !optional(v.Secret.Optional) {
				return nil, fmt.Errorf("volume %s: %w", v.Name, err)
			}
			if err == nil {
				files = s.Data
			}
			items = v.Secret.Items
		default:
			// Unknown volumes stay unmapped; a mount of one is refused below.
			continue
		}
		if len(items) > 0 {
			selected := map[string][]byte{}
			for _, it := range items {
				if data, ok := files[it.Key]; ok {
					selected[it.Path] = data
				}
			}
			files = selected
		}
		for name, data := range files {
			path := filepath.Join(dir, name)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return nil, err
			}
			if err := os.WriteFile(path, data, 0o600); err != nil {
				return nil, err
			}
		}
		dirs[v.Name] = dir
	}
	return dirs, nil
}

func (w *World) prepareProc(r *envResolver, podDir string, volumes map[string]string, c *corev1.Container,
	automount *bool, opts RunOptions) (*Proc, error) {
	repo := imageRepository(c.Image)
	bin, ok := opts.Binaries[repo]
	if !ok {
		return nil, fmt.Errorf("container %s: no binary for image repository %q (RunOptions.Binaries)", c.Name, repo)
	}
	vars, err := r.resolve(c)
	if err != nil {
		return nil, fmt.Errorf("container %s: %w", c.Name, err)
	}
	for _, k := range slices.Sorted(maps.Keys(opts.ExtraEnv)) {
		vars = slices.DeleteFunc(vars, func(e corev1.EnvVar) bool { return e.Name == k })
		vars = append(vars, corev1.EnvVar{Name: k, Value: opts.ExtraEnv[k]})
	}

	procDir := filepath.Join(podDir, "containers", c.Name)
	for _, sub := range []string{"home", "tmp", "serviceaccount"} {
		if err := os.MkdirAll(filepath.Join(procDir, sub), 0o755); err != nil {
			return nil, err
		}
	}
	// Container paths -> local paths, longest first so nested mounts win.
	rewrites := map[string]string{}
	if automount == nil || *automount {
		rewrites[serviceAccountDir] = filepath.Join(procDir, "serviceaccount")
	}
	for _, m := range c.VolumeMounts {
		dir, ok := volumes[m.Name]
		if !ok {
			return nil, fmt.Errorf("container %s: volume %s of mount %s is not supported by the process runner (emptyDir, configMap, secret are)", c.Name, m.Name, m.MountPath)
		}
		if m.SubPath != "" {
			dir = filepath.Join(dir, m.SubPath)
		}
		rewrites[m.MountPath] = dir
	}
	froms := slices.Sorted(maps.Keys(rewrites))
	slices.SortStableFunc(froms, func(a, b string) int { return len(b) - len(a) })
	rewrite := func(s string) string {
		for _, from := range froms {
			s = rewritePath(s, from, rewrites[from])
		}
		return s
	}

	values := map[string]string{}
	env := baseEnv()
	var host, port string
	for _, e := range vars {
		values[e.Name] = e.Value
		env = append(env, e.Name+"="+rewrite(e.Value))
		switch e.Name {
		case "KUBERNETES_SERVICE_HOST":
			host = e.Value
		case "KUBERNETES_SERVICE_PORT":
			port = e.Value
		}
	}
	if host == "" || port == "" {
		return nil, fmt.Errorf("container %s: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set in its env: "+
			"the Service IP does not route before the CNI, so our pods name the API endpoint explicitly", c.Name)
	}
	lookup := func(n string) (string, bool) { v, ok := values[n]; return v, ok }
	argv := []string{bin}
	if len(c.Command) > 1 {
		argv = append(argv, c.Command[1:]...)
	}
	argv = append(argv, c.Args...)
	for i := 1; i < len(argv); i++ {
		argv[i] = rewrite(expandVars(argv[i], lookup))
	}
	dir := filepath.Join(procDir, "home")
	if c.WorkingDir != "" {
		if wd := rewrite(c.WorkingDir); wd != c.WorkingDir {
			dir = wd
		}
	}
	kubeconfig := filepath.Join(procDir, "kubeconfig")
	env = append(env,
		"HOME="+filepath.Join(procDir, "home"),
		"TMPDIR="+filepath.Join(procDir, "tmp"),
		"KUBECONFIG="+kubeconfig)

	return &Proc{
		Name: c.Name,
		w:    w,
		launch: launch{
			argv: argv, env: env, dir: dir, procDir: procDir,
			namespace: r.pod.namespace, serviceAccount: r.pod.serviceAccount,
			server: "https://" + net.JoinHostPort(host, port),
		},
		logPath: filepath.Join(w.Dir, "logs", "workloads", r.pod.namespace+"_"+r.pod.name+"_"+c.Name+".log"),
	}, nil
}

// imageRepository strips the digest and the tag: "r.io:5000/a/b:v1@sha256:…" -> "r.io:5000/a/b".
func imageRepository(image string) string {
	if i := strings.Index(image, "@"); i >= 0 {
		image = image[:i]
	}
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		image = image[:i]
	}
	return image
}

// start writes fresh credentials, as a new pod would get, and starts the
// process.
func (p *Proc) start(ctx context.Context) error {
	l := p.launch
	expiry := int64(3600)
	tr, err := p.w.Clientset.CoreV1().ServiceAccounts(l.namespace).CreateToken(ctx, l.serviceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}},
		metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("token for serviceaccount %s/%s: %w", l.namespace, l.serviceAccount, err)
	}
	token := tr.Status.Token
	sa := filepath.Join(l.procDir, "serviceaccount")
	for name, data := range map[string][]byte{"token": []byte(token), "ca.crt": p.w.pki.ca.certPEM, "namespace": []byte(l.namespace)} {
		if err := os.WriteFile(filepath.Join(sa, name), data, 0o600); err != nil {
			return err
		}
	}
	kubeconfig := filepath.Join(l.procDir, "kubeconfig")
	if err := writeKubeconfig(kubeconfig, l.server, p.w.pki.ca.certPEM, "system:serviceaccount:"+l.namespace+":"+l.serviceAccount,
		kubeconfigAuth{token: token}); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p.logPath), 0o755); err != nil {
		return err
	}
	proc, err := startProcess(processSpec{name: p.Name, argv: l.argv, env: l.env, dir: l.dir, logPath: p.logPath})
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.cur = proc
	p.history = append(p.history, proc)
	p.mu.Unlock()
	p.w.mu.Lock()
	stopped := p.w.stopped
	p.w.mu.Unlock()
	if stopped {
		_ = proc.kill()
		return errStopped
	}
	return nil
}

func (p *Proc) current() *process {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cur
}

func (p *Proc) allPIDs() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	pids := make([]int, 0, len(p.history))
	for _, h := range p.history {
		pids = append(pids, h.pid())
	}
	return pids
}

// PID of the current process, 0 before the first start.
func (p *Proc) PID() int {
	if cur := p.current(); cur != nil {
		return cur.pid()
	}
	return 0
}

// Started is when the current process was started (zero before the first
// start): the clock of anything timed from a process's start.
func (p *Proc) Started() time.Time {
	if cur := p.current(); cur != nil {
		return cur.started
	}
	return time.Time{}
}

// Kill is kill -9 of the process group; it returns once the process is gone.
func (p *Proc) Kill() error {
	if cur := p.current(); cur != nil {
		return cur.kill()
	}
	return nil
}

// Restart stops the process if it still runs and starts it again with the
// same env and args and a fresh token, like a container restart.
func (p *Proc) Restart(ctx context.Context) error {
	if cur := p.current(); cur != nil {
		if err := cur.stop(); err != nil {
			return err
		}
	}
	return p.start(ctx)
}

// ExitCode of the current process: 128+n when killed by signal n.
func (p *Proc) ExitCode() (code int, exited bool) {
	if cur := p.current(); cur != nil {
		return cur.exitCode()
	}
	return 0, false
}

// Wait blocks until the current process exits or ctx ends.
func (p *Proc) Wait(ctx context.Context) (int, error) {
	cur := p.current()
	if cur == nil {
		return 0, errors.New("process never started")
	}
	return cur.wait(ctx)
}

// LogPath is the file collecting stdout and stderr of every run.
func (p *Proc) LogPath() string { return p.logPath }

// Stop ends every container: SIGTERM, then SIGKILL after a bounded wait.
func (wl *Workload) Stop() error {
	var procs []*process
	for _, p := range wl.Procs {
		if cur := p.current(); cur != nil {
			procs = append(procs, cur)
		}
	}
	return stopAll(procs)
}

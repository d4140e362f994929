package world

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type worldPKI struct {
	ca        *keyPair
	apiserver *keyPair
	saPub     string
	saKey     string
}

// Kubeconfig paths of the components, next to the admin one.
func (w *World) componentKubeconfig(component string) string {
	return filepath.Join(w.Dir, "pki", component+".kubeconfig")
}

func (w *World) apiServerURL() string {
	return "https://" + net.JoinHostPort(w.APIHost, strconv.Itoa(w.APIPort))
}

func (w *World) writePKI() error {
	dir := filepath.Join(w.Dir, "pki")
	ca, err := newCA(dir, "ca", w.Name+"-ca")
	if err != nil {
		return err
	}
	ips := []net.IP{net.ParseIP("127.0.0.1")}
	// The first Service IP is the "kubernetes" Service; pods that use it
	// after the CNI is up verify the certificate against it. A bad CIDR is
	// left for the API server to reject, so Start fails the way it would.
	if prefix, err := netip.ParsePrefix(w.opts.ServiceCIDR); err == nil {
		ips = append(ips, net.IP(prefix.Masked().Addr().Next().AsSlice()))
	}
	apiserver, err := ca.issue(dir, "apiserver", certRequest{
		commonName: "kube-apiserver",
		dnsNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
		ips:    ips,
		server: true,
	})
	if err != nil {
		return err
	}
	saPub, saKey, err := writeServiceAccountKeys(dir)
	if err != nil {
		return err
	}
	w.pki = &worldPKI{ca: ca, apiserver: apiserver, saPub: saPub, saKey: saKey}
	w.CAFile = ca.certFile

	users := []struct {
		file, cn string
		orgs     []string
	}{
		{"admin", w.Name + "-admin", []string{"system:masters"}},
		{KubeControllerManager, "system:kube-controller-manager", nil},
		{KubeScheduler, "system:kube-scheduler", nil},
		// kwok patches status of nodes and pods and holds node Leases; it
		// stands in for every kubelet at once, so it gets full rights.
		{Kwok, "kwok", []string{"system:masters"}},
	}
	for _, u := range users {
		kp, err := ca.issue(dir, u.file+"-client", certRequest{commonName: u.cn, organization: u.orgs, client: true})
		if err != nil {
			return err
		}
		if err := writeKubeconfig(w.componentKubeconfig(u.file), w.apiServerURL(), ca.certPEM, u.cn,
			kubeconfigAuth{certPEM: kp.certPEM, keyPEM: kp.keyPEM}); err != nil {
			return err
		}
	}
	w.Kubeconfig = w.componentKubeconfig("admin")
	return nil
}

func (w *World) startControlPlane(ctx context.Context) error {
	ports, err := freePorts(4)
	if err != nil {
		return err
	}
	etcdClient, etcdPeer, registryPort := ports[0], ports[1], ports[3]
	w.APIPort = ports[2]
	w.RegistryHost = net.JoinHostPort("127.0.0.1", strconv.Itoa(registryPort))
	if err := w.writePKI(); err != nil {
		return fmt.Errorf("pki: %w", err)
	}

	etcd, err := w.startEtcd(etcdClient, etcdPeer)
	if err != nil {
		return err
	}
	// The registry does not depend on the cluster: start it now so it comes
	// up while the API server does.
	registry, err := w.startRegistry(registryPort)
	if err != nil {
		return err
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdClient)
	if err := waitFor(ctx, "etcd health", time.Minute, []*process{etcd}, httpOK(etcdURL+"/health")); err != nil {
		return err
	}

	apiserver, err := w.startAPIServer(etcdURL)
	if err != nil {
		return err
	}
	if err := w.connect(); err != nil {
		return err
	}
	if err := waitFor(ctx, "kube-apiserver /readyz", 2*time.Minute, []*process{etcd, apiserver}, func(ctx context.Context) (bool, error) {
		_, err := w.Clientset.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil, err
	}); err != nil {
		return err
	}
	w.apiReady = true

	kcm, err := w.startControllerManager()
	if err != nil {
		return err
	}
	scheduler, err := w.startScheduler()
	if err != nil {
		return err
	}
	kwok, err := w.startKwok()
	if err != nil {
		return err
	}
	all := []*process{etcd, apiserver, kcm, scheduler, kwok, registry}
	// Pods are refused until their ServiceAccount exists; kcm creating the
	// default one is also the sign that its controllers run.
	if err := waitFor(ctx, "the default ServiceAccount (kube-controller-manager)", 2*time.Minute, all, func(ctx context.Context) (bool, error) {
		_, err := w.Clientset.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	}); err != nil {
		return err
	}
	return waitFor(ctx, "registry /v2/", time.Minute, all, httpOK("http://"+w.RegistryHost+"/v2/"))
}

func (w *World) startEtcd(clientPort, peerPort int) (*process, error) {
	bin, err := binary(Etcd)
	if err != nil {
		return nil, err
	}
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	return w.startComponent(Etcd, []string{bin,
		"--name=" + w.Name,
		"--data-dir=" + filepath.Join(w.Dir, "etcd"),
		"--listen-client-urls=" + clientURL,
		"--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=" + w.Name + "=" + peerURL,
		// The data is thrown away at Stop; fsync only costs time.
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	})
}

func (w *World) startAPIServer(etcdURL string) (*process, error) {
	bin, err := binary(KubeAPIServer)
	if err != nil {
		return nil, err
	}
	certDir := filepath.Join(w.Dir, "home", KubeAPIServer, "certs")
	if err := os.MkdirAll(certDir, 0o755); err != nil {
		return nil, err
	}
	return w.startComponent(KubeAPIServer, []string{bin,
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(w.APIPort),
		// The default reconciler would publish 127.0.0.1 as the endpoint of
		// the kubernetes Service and fight over it; nothing routes it anyway.
		"--endpoint-reconciler-type=none",
		"--cert-dir=" + certDir,
		"--tls-cert-file=" + w.pki.apiserver.certFile,
		"--tls-private-key-file=" + w.pki.apiserver.keyFile,
		"--client-ca-file=" + w.pki.ca.certFile,
		"--authorization-mode=Node,RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + w.pki.saPub,
		"--service-account-signing-key-file=" + w.pki.saKey,
		"--service-cluster-ip-range=" + w.opts.ServiceCIDR,
		"--allow-privileged=true",
		"--profiling=false",
		"--v=1",
	})
}

func (w *World) startControllerManager() (*process, error) {
	bin, err := binary(KubeControllerManager)
	if err != nil {
		return nil, err
	}
	return w.startComponent(KubeControllerManager, []string{bin,
		"--kubeconfig=" + w.componentKubeconfig(KubeControllerManager),
		"--secure-port=0",
		"--leader-elect=false",
		"--controllers=*",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + w.pki.saKey,
		"--root-ca-file=" + w.pki.ca.certFile,
		"--cluster-signing-cert-file=" + w.pki.ca.certFile,
		"--cluster-signing-key-file=" + w.pki.ca.keyFile,
		"--cluster-name=" + w.Name,
		"--allocate-node-cidrs=true",
		"--cluster-cidr=" + w.opts.PodCIDR,
		"--node-cidr-mask-size=24",
		"--service-cluster-ip-range=" + w.opts.ServiceCIDR,
		"--profiling=false",
		"--v=1",
	})
}

func (w *World) startScheduler() (*process, error) {
	bin, err := binary(KubeScheduler)
	if err != nil {
		return nil, err
	}
	return w.startComponent(KubeScheduler, []string{bin,
		"--kubeconfig=" + w.componentKubeconfig(KubeScheduler),
		"--secure-port=0",
		"--leader-elect=false",
		"--profiling=false",
		"--v=1",
	})
}

func (w *World) startKwok() (*process, error) {
	bin, err := binary(Kwok)
	if err != nil {
		return nil, err
	}
	stages := filepath.Join(w.Dir, "kwok", "stages.yaml")
	if err := os.WriteFile(stages, []byte(kwokStages), 0o644); err != nil {
		return nil, err
	}
	// No --server-address: kwok then opens no port at all.
	return w.startComponent(Kwok, []string{bin,
		"--kubeconfig=" + w.componentKubeconfig(Kwok),
		"--config=" + stages,
		"--manage-nodes-with-annotation-selector=" + FakeNodeAnnotation + "=fake",
		"--node-lease-duration-seconds=40",
	})
}

func (w *World) startRegistry(port int) (*process, error) {
	bin, err := binary(Registry)
	if err != nil {
		return nil, err
	}
	config := fmt.Sprintf(`version: 0.1
log:
  level: info
  formatter: text
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: 127.0.0.1:%d
`, filepath.Join(w.Dir, "registry", "data"), port)
	path := filepath.Join(w.Dir, "registry", "config.yml")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		return nil, err
	}
	// Tracing would otherwise try an OTLP exporter on localhost.
	return w.startComponent(Registry, []string{bin, "serve", path}, "OTEL_TRACES_EXPORTER=none")
}

// waitFor polls cond until it holds, the timeout passes, ctx ends, or one of
// the watched processes exits; in the last case the error carries its log tail
// so a broken flag is diagnosed without digging.
func waitFor(ctx context.Context, what string, timeout time.Duration, watch []*process, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		for _, p := range watch {
			if p.exited() {
				code, _ := p.exitCode()
				return fmt.Errorf("%s exited with code %d while waiting for %s; end of %s:\n%s",
					p.name, code, what, p.logPath, logTail(p.logPath, 25))
			}
		}
		ok, err := cond(ctx)
		if ok {
			return nil
		}
		if err != nil {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last error: %v)", what, ctx.Err(), lastErr)
		case <-tick.C:
		}
	}
}

func httpOK(url string) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Errorf("%s: %s", url, resp.Status)
	}
}

func logTail(path string, lines int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// nodeLeaseExists tells whether kwok holds the node's Lease: then it manages
// the node and its pods.
func (w *World) nodeLeaseExists(ctx context.Context, name string) (bool, error) {
	_, err := w.Clientset.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

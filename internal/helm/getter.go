package helm

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// restGetter hands Helm the operator's own rest.Config. Helm expects a
// kubeconfig-shaped getter; a hostNetwork pod with an explicit endpoint has
// no kubeconfig, so one is synthesised that only carries the namespace.
type restGetter struct {
	config    *rest.Config
	namespace string
	discovery discovery.CachedDiscoveryInterface
	mapper    meta.RESTMapper
}

var _ genericclioptions.RESTClientGetter = (*restGetter)(nil)

func newRESTGetter(cfg *rest.Config, namespace string, dc discovery.CachedDiscoveryInterface, mapper meta.RESTMapper) *restGetter {
	return &restGetter{config: rest.CopyConfig(cfg), namespace: namespace, discovery: dc, mapper: mapper}
}

func (g *restGetter) ToRESTConfig() (*rest.Config, error) { return rest.CopyConfig(g.config), nil }

func (g *restGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return g.discovery, nil
}

func (g *restGetter) ToRESTMapper() (meta.RESTMapper, error) { return g.mapper, nil }

func (g *restGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	cfg := clientcmdapi.NewConfig()
	cfg.Contexts["default"] = &clientcmdapi.Context{Namespace: g.namespace}
	cfg.CurrentContext = "default"
	return clientcmd.NewDefaultClientConfig(*cfg, &clientcmd.ConfigOverrides{})
}

// newDiscovery returns a memory-cached discovery client and a mapper over
// it. The mapper retries an unknown kind only while the cache is stale, and
// Helm's capability read leaves it fresh, so every install and upgrade
// resets the mapper (see rendering): CRDs installed by one chart are usable
// by the next without a restart.
func newDiscovery(cfg *rest.Config) (discovery.CachedDiscoveryInterface, meta.RESTMapper, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	cached := memory.NewMemCacheClient(dc)
	return cached, restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(cached), cached, nil), nil
}

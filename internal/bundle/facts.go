package bundle

import (
	"fmt"
	"maps"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/cozystack/tenant-operator/internal/values"
)

// Facts are the cluster facts a bundle can put into values. The set is
// closed so a typo in a bundle is caught when it is loaded.
type Facts map[string]any

var knownFacts = map[string]bool{
	"apiEndpoint": true, "apiHost": true, "apiPort": true,
	"podCIDR": true, "serviceCIDR": true, "dnsServiceIP": true,
	"kubeProxyReplacement": true, FactGatewayAPI: true,
	"storageClasses": true, "credentialsSecret": true, "kubeMinor": true,
}

// FactGatewayAPI is true when the Gateway API is on (spec.cluster.gatewayAPI).
const FactGatewayAPI = "gatewayAPI"

// KnownFact reports whether name is a fact bundles may use.
func KnownFact(name string) bool { return knownFacts[name] }

// Bool reads a boolean fact; anything else is false.
func (f Facts) Bool(name string) bool {
	b, _ := f[name].(bool)
	return b
}

// ClusterInput is what the TenantBundle says about the cluster.
type ClusterInput struct {
	APIEndpoint, PodCIDR, ServiceCIDR, DNSServiceIP string
	// GatewayAPI says whether the Gateway API is on.
	GatewayAPI bool
	// StorageClasses is the chart-shaped storage class map (name ->
	// {infraStorageClass, default}).
	StorageClasses map[string]any
	// CredentialsSecret is the name of the tenant-owned credentials Secret.
	CredentialsSecret string
	// KubeMinor is the minor version of the cluster's Kubernetes.
	KubeMinor string
}

// FieldError is an invalid input; Field is the path in the TenantBundle.
type FieldError struct {
	Field, Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// NewFacts validates the input and derives what is missing. The DNS IP
// defaults to the tenth address of the service CIDR, as kubeadm and
// Cozystack (10.95.0.10) do.
func NewFacts(in ClusterInput, settings map[string]any) (Facts, error) {
	if in.APIEndpoint == "" {
		return nil, &FieldError{"spec.cluster.apiEndpoint", "is required: the API server as reachable from nodes before the CNI runs"}
	}
	host, portStr, err := net.SplitHostPort(in.APIEndpoint)
	port, perr := strconv.Atoi(portStr)
	if err != nil || perr != nil || host == "" || port < 1 || port > 65535 {
		return nil, &FieldError{"spec.cluster.apiEndpoint", fmt.Sprintf("%q is not host:port", in.APIEndpoint)}
	}
	svc, err := netip.ParsePrefix(in.ServiceCIDR)
	if err != nil {
		return nil, &FieldError{"spec.cluster.serviceCIDR", fmt.Sprintf("%q is not a CIDR", in.ServiceCIDR)}
	}
	if _, err := netip.ParsePrefix(in.PodCIDR); err != nil {
		return nil, &FieldError{"spec.cluster.podCIDR", fmt.Sprintf("%q is not a CIDR", in.PodCIDR)}
	}
	dns := in.DNSServiceIP
	if dns == "" {
		addr := svc.Masked().Addr()
		for range 10 {
			addr = addr.Next()
		}
		if !svc.Contains(addr) {
			return nil, &FieldError{"spec.cluster.serviceCIDR", "too small to derive the DNS service IP"}
		}
		dns = addr.String()
	} else if ip, err := netip.ParseAddr(dns); err != nil || !svc.Contains(ip) {
		return nil, &FieldError{"spec.cluster.dnsServiceIP", fmt.Sprintf("%q is not an address inside %s", dns, in.ServiceCIDR)}
	}
	f := Facts{
		"apiEndpoint": in.APIEndpoint, "apiHost": host, "apiPort": int64(port),
		"podCIDR": in.PodCIDR, "serviceCIDR": in.ServiceCIDR, "dnsServiceIP": dns,
		FactGatewayAPI: in.GatewayAPI,
	}
	if in.StorageClasses != nil {
		f["storageClasses"] = in.StorageClasses
	}
	if in.CredentialsSecret != "" {
		f["credentialsSecret"] = in.CredentialsSecret
	}
	if in.KubeMinor != "" {
		f["kubeMinor"] = in.KubeMinor
	}
	for k, v := range settings {
		if KnownFact(k) {
			f[k] = v
		}
	}
	return f, nil
}

// Values computes a component's values: static values (with those of
// ValuesIf whose fact is true), then facts at their paths, then the
// override. The override is merged last and never
// reverted, so a tenant admin's edit survives every reconcile.
func Values(c Component, facts Facts, override map[string]any) map[string]any {
	injected := map[string]any{}
	for p, name := range c.Facts {
		setPath(injected, strings.Split(p, "."), facts[name])
	}
	static := c.Values
	for _, name := range slices.Sorted(maps.Keys(c.ValuesIf)) {
		if facts.Bool(name) {
			static = values.Merge(static, c.ValuesIf[name])
		}
	}
	return values.Merge(values.Merge(static, injected), override)
}

// NullOmittedDefaults makes a map-valued fact replace the chart's default
// map at its path instead of merging into it: Helm merges user values into
// a chart's defaults key by key and removes a default key only when the
// user value is null. Without it, kubevirt-csi-node's default StorageClasses
// (one of them marked default) would be created beside those the
// TenantBundle names. Keys the override sets are kept. vals is changed in
// place (the fact's own map is not); chartDefaults are the chart's values.
func NullOmittedDefaults(c Component, facts Facts, chartDefaults, vals map[string]any) {
	for p, name := range c.Facts {
		if _, isMap := facts[name].(map[string]any); !isMap {
			continue
		}
		keys := strings.Split(p, ".")
		defaults, _ := lookupPath(chartDefaults, keys).(map[string]any)
		wanted, _ := lookupPath(vals, keys).(map[string]any)
		if wanted == nil {
			continue
		}
		replaced := maps.Clone(wanted) // wanted may be the fact's own map
		for k := range defaults {
			if _, ok := replaced[k]; !ok {
				replaced[k] = nil
			}
		}
		setPath(vals, keys, replaced)
	}
}

func lookupPath(m map[string]any, keys []string) any {
	var cur any = m
	for _, k := range keys {
		next, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = next[k]
	}
	return cur
}

// factRef names a fact in a string as ${fact}: only the braced form, so
// that a literal "$" in a configuration text stays as it is.
var factRef = regexp.MustCompile(`\$\{([A-Za-z][A-Za-z0-9]*)\}`)

// Expand replaces ${fact} in s (chart versions such as 2.${kubeMinor}.x);
// a reference to no known fact stays as it is.
func (f Facts) Expand(s string) string {
	return factRef.ReplaceAllStringFunc(s, func(ref string) string {
		name := factRef.FindStringSubmatch(ref)[1]
		if v, ok := f[name]; ok && KnownFact(name) {
			return fmt.Sprint(v)
		}
		return ref
	})
}

func setPath(m map[string]any, keys []string, v any) {
	for _, k := range keys[:len(keys)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[keys[len(keys)-1]] = v
}

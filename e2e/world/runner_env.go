package world

import (
	"context"
	"fmt"
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podIdentity is what the downward API of the simulated pod resolves to.
type podIdentity struct {
	name, namespace, uid string
	nodeName             string
	serviceAccount       string
	labels, annotations  map[string]string
	// The process really runs on loopback, so that is its pod and host IP:
	// anything binding to $(POD_IP) must be able to.
	podIP, hostIP string
}

// envResolver turns a container's env/envFrom into plain values, reading
// Secrets and ConfigMaps from the world like the kubelet does.
type envResolver struct {
	w   *World
	ctx context.Context
	pod podIdentity
}

// resolve returns the container's variables in definition order; later ones
// win, and $(VAR) refers to variables defined earlier, as in Kubernetes.
func (r *envResolver) resolve(c *corev1.Container) ([]corev1.EnvVar, error) {
	var out []corev1.EnvVar
	values := map[string]string{}
	set := func(name, value string) {
		if _, ok := values[name]; ok {
			for i := range out {
				if out[i].Name == name {
					out[i].Value = value
				}
			}
		} else {
			out = append(out, corev1.EnvVar{Name: name, Value: value})
		}
		values[name] = value
	}
	for _, from := range c.EnvFrom {
		data, err := r.envFromSource(from)
		if err != nil {
			return nil, err
		}
		for k, v := range data {
			set(from.Prefix+k, v)
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			set(e.Name, expandVars(e.Value, func(n string) (string, bool) { v, ok := values[n]; return v, ok }))
			continue
		}
		v, err := r.valueFrom(c, e.Name, e.ValueFrom)
		if err != nil {
			return nil, err
		}
		set(e.Name, v)
	}
	return out, nil
}

func (r *envResolver) envFromSource(from corev1.EnvFromSource) (map[string]string, error) {
	switch {
	case from.ConfigMapRef != nil:
		cm, err := r.w.Clientset.CoreV1().ConfigMaps(r.pod.namespace).Get(r.ctx, from.ConfigMapRef.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) && optional(from.ConfigMapRef.Optional) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("envFrom configMap %s: %w", from.ConfigMapRef.Name, err)
		}
		return cm.Data, nil
	case from.SecretRef != nil:
		s, err := r.w.Clientset.CoreV1().Secrets(r.pod.namespace).Get(r.ctx, from.SecretRef.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) && optional(from.SecretRef.Optional) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("envFrom secret %s: %w", from.SecretRef.Name, err)
		}
		data := map[string]string{}
		for k, v := range s.Data {
			data[k] = string(v)
		}
		return data, nil
	}
	return nil, nil
}

func (r *envResolver) valueFrom(c *corev1.Container, name string, src *corev1.EnvVarSource) (string, error) {
	switch {
	case src.FieldRef != nil:
		return r.field(src.FieldRef.FieldPath)
	case src.ResourceFieldRef != nil:
		return resourceField(c, src.ResourceFieldRef)
	case src.ConfigMapKeyRef != nil:
		ref := src.ConfigMapKeyRef
		cm, err := r.w.Clientset.CoreV1().ConfigMaps(r.pod.namespace).Get(r.ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) && optional(ref.Optional) {
				return "", nil
			}
			return "", fmt.Errorf("env %s: configMap %s: %w", name, ref.Name, err)
		}
		if v, ok := cm.Data[ref.Key]; ok {
			return v, nil
		}
		if v, ok := cm.BinaryData[ref.Key]; ok {
			return string(v), nil
		}
		if optional(ref.Optional) {
			return "", nil
		}
		return "", fmt.Errorf("env %s: configMap %s has no key %q", name, ref.Name, ref.Key)
	case src.SecretKeyRef != nil:
		ref := src.SecretKeyRef
		s, err := r.w.Clientset.CoreV1().Secrets(r.pod.namespace).Get(r.ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) && optional(ref.Optional) {
				return "", nil
			}
			return "", fmt.Errorf("env %s: secret %s: %w", name, ref.Name, err)
		}
		if v, ok := s.Data[ref.Key]; ok {
			return string(v), nil
		}
		if optional(ref.Optional) {
			return "", nil
		}
		return "", fmt.Errorf("env %s: secret %s has no key %q", name, ref.Name, ref.Key)
	}
	return "", fmt.Errorf("env %s: unsupported valueFrom", name)
}

func optional(b *bool) bool { return b != nil && *b }

func (r *envResolver) field(path string) (string, error) {
	p := r.pod
	switch path {
	case "metadata.name":
		return p.name, nil
	case "metadata.namespace":
		return p.namespace, nil
	case "metadata.uid":
		return p.uid, nil
	case "spec.nodeName":
		return p.nodeName, nil
	case "spec.serviceAccountName":
		return p.serviceAccount, nil
	case "status.podIP", "status.podIPs":
		return p.podIP, nil
	case "status.hostIP", "status.hostIPs":
		return p.hostIP, nil
	}
	for prefix, m := range map[string]map[string]string{"metadata.labels": p.labels, "metadata.annotations": p.annotations} {
		if key, ok := strings.CutPrefix(path, prefix+"['"); ok {
			return m[strings.TrimSuffix(key, "']")], nil
		}
	}
	return "", fmt.Errorf("unsupported fieldRef %q", path)
}

// resourceField resolves limits/requests like the kubelet: rounded up to the
// divisor, and a missing limit falls back to the node's allocatable.
func resourceField(c *corev1.Container, ref *corev1.ResourceFieldSelector) (string, error) {
	kind, res, ok := strings.Cut(ref.Resource, ".")
	if !ok {
		return "", fmt.Errorf("unsupported resourceFieldRef %q", ref.Resource)
	}
	list := c.Resources.Limits
	if kind == "requests" {
		list = c.Resources.Requests
	}
	q, ok := list[corev1.ResourceName(res)]
	if !ok {
		q, ok = initialNodeStatus("", "", true).Allocatable[corev1.ResourceName(res)]
		if !ok {
			return "0", nil
		}
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if res == "cpu" {
		return fmt.Sprint(int64(math.Ceil(float64(q.MilliValue()) / float64(divisor.MilliValue())))), nil
	}
	return fmt.Sprint(int64(math.Ceil(float64(q.Value()) / float64(divisor.Value())))), nil
}

// expandVars implements Kubernetes' $(VAR) syntax: known variables are
// replaced, unknown references stay as written, and $$ escapes a dollar.
func expandVars(s string, lookup func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// rewritePath replaces a container path by a local directory wherever it
// appears as a whole path component: "/cache" matches "/cache" and
// "/cache/x" but not "/cached".
func rewritePath(s, from, to string) string {
	if from == "" || from == "/" || !strings.Contains(s, from) {
		return s
	}
	from = strings.TrimSuffix(from, "/")
	var b strings.Builder
	for {
		i := strings.Index(s, from)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + len(from)
		boundaryBefore := i == 0 || !isPathChar(s[i-1])
		boundaryAfter := end == len(s) || s[end] == '/' || !isPathChar(s[end])
		b.WriteString(s[:i])
		if boundaryBefore && boundaryAfter {
			b.WriteString(to)
		} else {
			b.WriteString(from)
		}
		s = s[end:]
	}
}

func isPathChar(c byte) bool {
	return c == '/' || c == '.' || c == '-' || c == '_' ||
		('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

package source

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// ErrBadPullSecret means a pull secret cannot give credentials for a URL.
var ErrBadPullSecret = errors.New("bad pull secret")

// Credentials returns the username and password a dockerconfigjson Secret
// holds for the registry of an oci:// URL.
func Credentials(s *corev1.Secret, url string) (string, string, error) {
	var cfg struct {
		Auths map[string]struct {
			Username string `json:"username"`
			Password string `json:"password"`
		} `json:"auths"`
	}
	if err := json.Unmarshal(s.Data[corev1.DockerConfigJsonKey], &cfg); err != nil {
		return "", "", fmt.Errorf("%s/%s is not a dockerconfigjson Secret: %w", s.Namespace, s.Name, ErrBadPullSecret)
	}
	host := strings.SplitN(strings.TrimPrefix(url, "oci://"), "/", 2)[0]
	a, ok := cfg.Auths[host]
	if !ok {
		return "", "", fmt.Errorf("%s/%s has no credentials for %s: %w", s.Namespace, s.Name, host, ErrBadPullSecret)
	}
	return a.Username, a.Password, nil
}

package framework

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// AdmissionGate is a validating webhook on 127.0.0.1 that holds the creation
// of one Deployment until it is closed: a deterministic way to freeze a
// Helm install half way and crash the installer there.
type AdmissionGate struct {
	// Held receives once when the gated request arrived.
	Held chan struct{}

	c       client.Client
	srv     *http.Server
	release chan struct{}
	once    sync.Once
	name    string
}

// StartAdmissionGate registers the gate for Deployment ns/name.
func StartAdmissionGate(ctx context.Context, c client.Client, ns, name string) (*AdmissionGate, error) {
	cert, caPEM, err := selfSigned()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	g := &AdmissionGate{Held: make(chan struct{}, 1), c: c, release: make(chan struct{}), name: "e2e-gate-" + name}
	g.srv = &http.Server{Handler: http.HandlerFunc(g.serve), TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
	go func() { _ = g.srv.ServeTLS(ln, "", "") }()

	url := fmt.Sprintf("https://%s/validate", ln.Addr())
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: g.name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "gate.e2e.tenant.cozystack.io",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caPEM},
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			TimeoutSeconds:          ptr.To[int32](30),
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
			}},
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name:       "only-the-gated-deployment",
				Expression: fmt.Sprintf("object.metadata.namespace == %q && object.metadata.name == %q", ns, name),
			}},
		}},
	}
	if err := c.Create(ctx, cfg); err != nil {
		_ = g.srv.Close()
		return nil, err
	}
	return g, nil
}

func (g *AdmissionGate) serve(w http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	select {
	case g.Held <- struct{}{}:
	default:
	}
	select {
	case <-g.release:
	case <-r.Context().Done():
		return
	}
	review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
	_ = json.NewEncoder(w).Encode(review)
}

// Close removes the webhook and lets held requests through.
func (g *AdmissionGate) Close(ctx context.Context) error {
	var err error
	g.once.Do(func() {
		err = client.IgnoreNotFound(g.c.Delete(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: g.name}}))
		close(g.release)
		shutdown, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_ = g.srv.Shutdown(shutdown)
	})
	return err
}

func selfSigned() (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    time.Now().Add(-time.Minute), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	return cert, certPEM, err
}

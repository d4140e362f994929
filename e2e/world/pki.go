package world

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// keyPair is a certificate with its key, both also written as PEM files.
type keyPair struct {
	cert     *x509.Certificate
	key      *ecdsa.PrivateKey
	certPEM  []byte
	keyPEM   []byte
	certFile string
	keyFile  string
}

type certRequest struct {
	commonName   string
	organization []string
	dnsNames     []string
	ips          []net.IP
	server       bool
	client       bool
}

func newKey() (*ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
}

// writeKeyPair stores the pair as <dir>/<name>.crt and <dir>/<name>.key.
func (kp *keyPair) write(dir, name string) error {
	kp.certFile = filepath.Join(dir, name+".crt")
	kp.keyFile = filepath.Join(dir, name+".key")
	if err := os.WriteFile(kp.certFile, kp.certPEM, 0o644); err != nil {
		return err
	}
	return os.WriteFile(kp.keyFile, kp.keyPEM, 0o600)
}

func newCA(dir, name, commonName string) (*keyPair, error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	kp := &keyPair{cert: cert, key: key, keyPEM: keyPEM,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
	return kp, kp.write(dir, name)
}

func (ca *keyPair) issue(dir, name string, req certRequest) (*keyPair, error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: req.commonName, Organization: req.organization},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		DNSNames:     req.dnsNames,
		IPAddresses:  req.ips,
	}
	if req.server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	if req.client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	kp := &keyPair{cert: cert, key: key, keyPEM: keyPEM,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
	return kp, kp.write(dir, name)
}

// writeServiceAccountKeys writes the token signing key pair the API server
// signs with and verifies against, and which kcm's token controller uses.
func writeServiceAccountKeys(dir string) (pub, priv string, err error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return "", "", err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", "", err
	}
	pub = filepath.Join(dir, "sa.pub")
	priv = filepath.Join(dir, "sa.key")
	if err := os.WriteFile(pub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o644); err != nil {
		return "", "", err
	}
	return pub, priv, os.WriteFile(priv, keyPEM, 0o600)
}

// kubeconfigAuth is either a client certificate or a bearer token.
type kubeconfigAuth struct {
	certPEM, keyPEM []byte
	token           string
}

func writeKubeconfig(path, server string, caPEM []byte, user string, auth kubeconfigAuth) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["world"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{
		ClientCertificateData: auth.certPEM,
		ClientKeyData:         auth.keyPEM,
		Token:                 auth.token,
	}
	cfg.Contexts["world"] = &clientcmdapi.Context{Cluster: "world", AuthInfo: user}
	cfg.CurrentContext = "world"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return os.Chmod(path, 0o600)
}

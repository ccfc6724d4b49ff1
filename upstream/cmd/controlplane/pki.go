package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// validity is how long every certificate lives: long enough that a data directory kept
// between test runs never sees one expire.
const validity = 20 * 365 * 24 * time.Hour

// authority is the cluster's CA: it signs the serving certificate and every client
// certificate, and the API server trusts it for client authentication (--client-ca-file).
type authority struct {
	cert    *x509.Certificate
	certPEM []byte
	key     crypto.Signer
}

// pki is what lives in DIR/pki: the CA, the API server's serving pair and the service
// account key pair. Each is created once, when missing, and reused at every later start,
// so kubeconfigs written by an earlier start stay valid.
type pki struct {
	dir                     string
	ca                      authority
	caCert, caKey           string
	servingCert, servingKey string
	saKey, saPub            string
}

// loadOrCreatePKI reads DIR/pki, creating whatever of it is missing.
func loadOrCreatePKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &pki{
		dir:    dir,
		caCert: filepath.Join(dir, "ca.crt"), caKey: filepath.Join(dir, "ca.key"),
		servingCert: filepath.Join(dir, "apiserver.crt"), servingKey: filepath.Join(dir, "apiserver.key"),
		saKey: filepath.Join(dir, "sa.key"), saPub: filepath.Join(dir, "sa.pub"),
	}
	if !exists(p.caCert) || !exists(p.caKey) {
		if err := createCA(p.caCert, p.caKey); err != nil {
			return nil, err
		}
	}
	ca, err := loadCA(p.caCert, p.caKey)
	if err != nil {
		return nil, err
	}
	p.ca = *ca
	if !exists(p.servingCert) || !exists(p.servingKey) {
		certPEM, keyPEM, err := p.ca.issue(serving())
		if err != nil {
			return nil, err
		}
		if err := writeFiles(p.servingCert, certPEM, p.servingKey, keyPEM); err != nil {
			return nil, err
		}
	}
	if !exists(p.saKey) || !exists(p.saPub) {
		if err := createSAKeys(p.saKey, p.saPub); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// createCA writes a new self-signed ECDSA P-256 CA (P-256: fast to generate, and every
// client we care about, kube-rs with rustls included, verifies it).
func createCA(certPath, keyPath string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "podstatus-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return err
	}
	keyPEM, err := pkcs8PEM(key)
	if err != nil {
		return err
	}
	return writeFiles(certPath, pemBlock("CERTIFICATE", der), keyPath, keyPEM)
}

// loadCA reads the CA written by createCA.
func loadCA(certPath, keyPath string) (*authority, error) {
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return nil, fmt.Errorf("reading the CA: %w", err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, err
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, errors.New("the CA key cannot sign")
	}
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, err
	}
	return &authority{cert: cert, certPEM: certPEM, key: signer}, nil
}

// serving is the template of the API server's serving certificate: loopback by address
// and name, and the names in-cluster clients use for the kubernetes Service.
func serving() *x509.Certificate {
	return &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
	}
}

// client is the template of a client certificate: the API server's x509 authenticator
// takes the user name from CN and the groups from O.
func client(user string, groups []string) *x509.Certificate {
	return &x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: groups},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
}

// issue signs tmpl, with a fresh P-256 key, and returns the certificate and its key as
// PEM (the key as PKCS#8 "PRIVATE KEY", which Go, kubectl and rustls all read).
func (ca *authority) issue(tmpl *x509.Certificate) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl.SerialNumber = serial()
	tmpl.NotBefore = time.Now().Add(-time.Hour) // tolerate a little clock skew
	tmpl.NotAfter = time.Now().Add(validity)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err = pkcs8PEM(key)
	if err != nil {
		return nil, nil, err
	}
	return pemBlock("CERTIFICATE", der), keyPEM, nil
}

// createSAKeys writes the key pair the API server signs service account tokens with
// (sa.key, --service-account-signing-key-file) and verifies them with (sa.pub,
// --service-account-key-file).
func createSAKeys(keyPath, pubPath string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	keyPEM, err := pkcs8PEM(key)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return err
	}
	return writeFiles(keyPath, keyPEM, pubPath, pemBlock("PUBLIC KEY", pub))
}

// writeKubeconfig mints a client certificate for user in groups and writes a kubeconfig
// at path that embeds it, its key and the CA, pointing at server. It returns the pair.
func (p *pki) writeKubeconfig(path, server, user string, groups []string) (tls.Certificate, error) {
	certPEM, keyPEM, err := p.ca.issue(client(user, groups))
	if err != nil {
		return tls.Certificate{}, err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["podstatus"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: p.ca.certPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts["podstatus"] = &clientcmdapi.Context{Cluster: "podstatus", AuthInfo: user}
	cfg.CurrentContext = "podstatus"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

// serial is a random 128-bit certificate serial number.
func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n
}

// pkcs8PEM encodes key as a PKCS#8 "PRIVATE KEY" PEM block.
func pkcs8PEM(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pemBlock("PRIVATE KEY", der), nil
}

// pemBlock encodes der as one PEM block of type kind.
func pemBlock(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}

// writeFiles writes a certificate or public key (world-readable) and its private key
// (owner only).
func writeFiles(pubPath string, pubPEM []byte, keyPath string, keyPEM []byte) error {
	if err := os.WriteFile(keyPath, keyPEM, 0o600); err != nil {
		return err
	}
	return os.WriteFile(pubPath, pubPEM, 0o644)
}

// exists reports whether path names an existing file.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

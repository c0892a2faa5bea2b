package redistest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TLSServer is a Server that also serves TLS on a second loopback port,
// with a certificate for 127.0.0.1 signed by a certificate authority made
// for this one server. The plaintext port stays open so that Do, Restart and
// the readiness check keep working; tests that want a TLS-only endpoint dial
// TLSAddr.
type TLSServer struct {
	*Server
	tlsPort int
	roots   *x509.CertPool
}

// StartTLS starts a redis-server like Start, plus a TLS listener (tls-port)
// on its own free loopback port, and returns once a TLS client verified the
// certificate and got an answer. Clients need no certificate of their own
// (tls-auth-clients no). The key, certificate and CA are generated with
// crypto/x509 into t.TempDir().
//
// A redis-server built without TLS support fails the test when
// LOCKWATCH_REQUIRE_INTEGRATION=1 and skips it otherwise, saying so.
func StartTLS(t testing.TB, extraArgs ...string) *TLSServer {
	t.Helper()
	Require(t)
	certDir := t.TempDir()
	roots, err := writeCertificates(certDir)
	if err != nil {
		t.Fatalf("redistest: TLS certificates: %v", err)
		return nil
	}
	tlsArgs := []string{
		"--tls-cert-file", filepath.Join(certDir, "server.pem"),
		"--tls-key-file", filepath.Join(certDir, "server.key"),
		"--tls-ca-cert-file", filepath.Join(certDir, "ca.pem"),
		"--tls-auth-clients", "no",
	}
	// Start retries a lost race for the plaintext port only; a lost race
	// for the TLS port is retried here, with a new one.
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatalf("redistest: pick a free TLS port: %v", err)
			return nil
		}
		args := append(append([]string{"--tls-port", strconv.Itoa(port)}, tlsArgs...), extraArgs...)
		s, err := Launch(t.TempDir(), args...)
		switch {
		case err == nil:
			t.Cleanup(func() {
				if err := s.Kill(); err != nil {
					t.Errorf("redistest: kill %s: %v", s.Addr(), err)
				}
				s.closeParked()
			})
			ts := &TLSServer{Server: s, tlsPort: port, roots: roots}
			if err := ts.ping(); err != nil {
				t.Fatalf("redistest: TLS port of %s: %v", s.Addr(), err)
				return nil
			}
			return ts
		case tlsUnsupported(err):
			msg := fmt.Sprintf("redistest: this redis-server has no TLS support (build it with BUILD_TLS=yes): %v", err)
			if os.Getenv(requireEnv) == "1" {
				t.Fatalf("%s", msg)
				return nil
			}
			t.Skipf("%s (set %s=1 to make this a failure)", msg, requireEnv)
			return nil
		case errors.Is(err, errAddrInUse) && attempt < maxStartAttempts:
			continue
		default:
			t.Fatalf("%v", err)
			return nil
		}
	}
}

// tlsUnsupported reports whether a start failed because redis-server was
// built without TLS: it then rejects the tls-* directives.
func tlsUnsupported(err error) bool {
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "tls") &&
		(strings.Contains(msg, "not supported") || strings.Contains(msg, "bad directive"))
}

// TLSAddr returns "127.0.0.1:port" of the TLS listener.
func (s *TLSServer) TLSAddr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.tlsPort)) }

// TLSConfig returns a client configuration that trusts only this server's
// certificate authority and verifies the certificate for 127.0.0.1. Each
// call returns a new one.
func (s *TLSServer) TLSConfig() *tls.Config {
	return &tls.Config{RootCAs: s.roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
}

// TLSClient returns a client for the TLS listener, closed on t.Cleanup. opts
// adjust the options after Addr and TLSConfig are filled in.
func (s *TLSServer) TLSClient(t testing.TB, opts ...func(*redis.Options)) *redis.Client {
	t.Helper()
	o := &redis.Options{Addr: s.TLSAddr(), TLSConfig: s.TLSConfig()}
	for _, opt := range opts {
		opt(o)
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// ping checks the TLS listener with one verified handshake and a PING. The
// listener is bound before redis-server answers on its plaintext port, so
// one try is enough. A bare connection rather than go-redis: a go-redis pool
// that fails to dial keeps a redialer running after Close.
func (s *TLSServer) ping() error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	d := tls.Dialer{Config: s.TLSConfig()}
	conn, err := d.DialContext(ctx, "tcp", s.TLSAddr())
	if err != nil {
		return err
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	reply := make([]byte, len("+PONG\r\n"))
	if _, err := io.ReadFull(conn, reply); err != nil {
		return err
	}
	if string(reply) != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", reply)
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// writeCertificates writes ca.pem, server.pem and server.key into dir: a
// one-day certificate authority and a server certificate it signed for the
// IP address 127.0.0.1. It returns a pool holding the authority.
func writeCertificates(dir string) (*x509.CertPool, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTemplate := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "redistest CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	for _, f := range []struct {
		name, typ string
		der       []byte
		mode      os.FileMode
	}{
		{"ca.pem", "CERTIFICATE", caDER, 0o644},
		{"server.pem", "CERTIFICATE", leafDER, 0o644},
		{"server.key", "PRIVATE KEY", keyDER, 0o600},
	} {
		data := pem.EncodeToMemory(&pem.Block{Type: f.typ, Bytes: f.der})
		if err := os.WriteFile(filepath.Join(dir, f.name), data, f.mode); err != nil {
			return nil, err
		}
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	return roots, nil
}
